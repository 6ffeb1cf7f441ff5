package tui

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/vllmtop/vllmtop/loadgen"
)

func TestJudgeColoursOnlyWhatIsOutsideTheNoise(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	q := func(p50, p90, p99 float64, n int64) loadgen.Quantiles {
		return loadgen.Quantiles{P50: ms(p50), P90: ms(p90), P99: ms(p99), N: n}
	}
	cases := []struct {
		name        string
		a, b        estimate
		lowerBetter bool
		want        verdict
	}{
		// Rates: Poisson counts.
		{"10% more requests of 100 is noise", rateEstimate(100, 10), rateEstimate(110, 10), false, verdictNoise},
		{"10% more requests of 1000 is real", rateEstimate(1000, 10), rateEstimate(1100, 10), false, verdictBetter},
		{"fewer requests is worse", rateEstimate(1000, 10), rateEstimate(800, 10), false, verdictWorse},
		{"tokens follow their requests", perRequestRate(128000, 1000, 10), perRequestRate(140800, 1000, 10), false, verdictBetter},
		{"tokens of few requests are noise", perRequestRate(1280, 10, 10), perRequestRate(1408, 10, 10), false, verdictNoise},
		// Quantiles: order statistics.
		{"p50 38 vs 40ms over 2000 samples is real", quantileEstimate(q(38, 45, 60, 2000), 0.5), quantileEstimate(q(40, 47, 62, 2000), 0.5), true, verdictWorse},
		{"p50 38 vs 40ms over 40 samples is noise", quantileEstimate(q(38, 45, 60, 40), 0.5), quantileEstimate(q(40, 47, 62, 40), 0.5), true, verdictNoise},
		{"p99 of 300 samples is too few", quantileEstimate(q(38, 45, 90, 300), 0.99), quantileEstimate(q(38, 45, 60, 300), 0.99), true, verdictFew},
		{"p99 halved over 5000 samples is better", quantileEstimate(q(38, 45, 120, 5000), 0.99), quantileEstimate(q(38, 45, 60, 5000), 0.99), true, verdictBetter},
		// Sad paths.
		{"nothing measured", quantileEstimate(loadgen.Quantiles{}, 0.5), quantileEstimate(q(1, 2, 3, 100), 0.5), true, verdictNone},
		{"no time", rateEstimate(10, 0), rateEstimate(10, 1), false, verdictNone},
		{"no failures in either is nothing to judge", rateEstimate(0, 20), rateEstimate(0, 30), true, verdictNone},
		{"a quantile not kept", quantileEstimate(q(1, 2, 3, 100), 0.9), quantileEstimate(q(1, 2, 3, 100), 0.9), true, verdictNone},
	}
	for _, c := range cases {
		_, got := judge(c.a, c.b, c.lowerBetter)
		assert.Equal(t, c.want, got, c.name)
	}
	pct, _ := judge(rateEstimate(100, 10), rateEstimate(150, 10), false)
	assert.InDelta(t, 50, pct, 1e-9, "the change reads from A to B")
	pct, _ = judge(estimate{V: 0, OK: true}, estimate{V: 1, OK: true}, false)
	assert.True(t, math.IsNaN(pct), "no percentage from zero")
	assert.Equal(t, "~ noise", verdictNoise.String())
}
