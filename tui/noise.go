package tui

import (
	"math"
	"time"

	"github.com/vllmtop/vllmtop/loadgen"
)

// estimate is a figure of one run with its standard error, and whether enough samples stand
// behind it for a comparison to mean anything.
type estimate struct {
	V, SE float64
	OK    bool
}

// minSamples is how many observations a rate needs, and how many must fall beyond a quantile
// (n·(1-q) for p99), before a difference in it is judged at all.
const minSamples = 10

// rateEstimate is count events in seconds as a rate: counts of independent arrivals are
// Poisson, so the standard error of the count is its square root.
func rateEstimate(count int, seconds float64) estimate {
	if seconds <= 0 {
		return estimate{V: math.NaN()}
	}
	return estimate{V: float64(count) / seconds, SE: math.Sqrt(float64(max(count, 1))) / seconds, OK: count >= minSamples}
}

// perRequestRate is total/seconds of a quantity that arrives in requests (tokens): its noise is
// that of the request count, the same relative error.
func perRequestRate(total float64, requests int, seconds float64) estimate {
	if seconds <= 0 || requests <= 0 {
		return estimate{V: math.NaN()}
	}
	v := total / seconds
	return estimate{V: v, SE: v / math.Sqrt(float64(requests)), OK: requests >= minSamples}
}

// quantileEstimate is the p50 or p99 of q in milliseconds with its standard error from the order
// statistics: the rank of a sample quantile has a standard error of sqrt(n·p·(1-p)), which the
// local slope of the distribution (read from the neighbouring quantile) turns into time. A
// floor of 1% stands for the histograms' own resolution.
func quantileEstimate(q loadgen.Quantiles, p float64) estimate {
	n := float64(q.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	var v, slope float64
	switch p {
	case 0.5:
		v, slope = ms(q.P50), (ms(q.P90)-ms(q.P50))/0.4
	case 0.99:
		v, slope = ms(q.P99), (ms(q.P99)-ms(q.P90))/0.09
	default:
		return estimate{V: math.NaN()}
	}
	if q.N == 0 {
		return estimate{V: math.NaN()}
	}
	se := math.Max(math.Sqrt(p*(1-p)/n)*math.Abs(slope), 0.01*v)
	return estimate{V: v, SE: se, OK: n*math.Min(p, 1-p) >= minSamples}
}

// verdict is how a difference between two runs reads.
type verdict int

const (
	verdictNone   verdict = iota // not comparable (a setting, or a figure missing)
	verdictFew                   // too few samples behind one of the figures to judge
	verdictNoise                 // within the noise of the two samples
	verdictBetter                // outside the noise, for the better
	verdictWorse                 // outside the noise, for the worse
)

func (v verdict) String() string {
	switch v {
	case verdictNone:
		return ""
	case verdictFew:
		return "few samples"
	case verdictNoise:
		return "~ noise"
	case verdictBetter:
		return "better"
	case verdictWorse:
		return "worse"
	}
	return "?"
}

// judge compares run A with run B: the change from A to B in percent, and whether it is
// beyond two standard errors of the difference.
func judge(a, b estimate, lowerBetter bool) (pct float64, v verdict) {
	if math.IsNaN(a.V) || math.IsNaN(b.V) {
		return math.NaN(), verdictNone
	}
	if a.V == 0 && b.V == 0 {
		return math.NaN(), verdictNone // nothing in either (no failures): nothing to judge
	}
	pct = math.NaN()
	if a.V != 0 {
		pct = (b.V - a.V) / a.V * 100
	}
	switch d := b.V - a.V; {
	case !a.OK || !b.OK:
		return pct, verdictFew
	case math.Abs(d) <= 2*math.Hypot(a.SE, b.SE):
		return pct, verdictNoise
	case (d < 0) == lowerBetter:
		return pct, verdictBetter
	}
	return pct, verdictWorse
}
