package loadgen

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func msd(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

func TestPercentileIsNumpyLinear(t *testing.T) {
	x := []float64{1, 2, 3, 4, 10}
	// numpy.percentile([1,2,3,4,10], p): 50 -> 3, 90 -> 7.6, 99 -> 9.76, 0 -> 1, 100 -> 10
	for p, want := range map[float64]float64{0: 1, 50: 3, 90: 7.6, 99: 9.76, 100: 10, 25: 2} {
		assert.InDelta(t, want, Percentile(x, p), 1e-9, "p%v", p)
	}
	assert.Equal(t, 5.0, Percentile([]float64{5}, 99))
	assert.Zero(t, Percentile(nil, 50))
}

func TestSummaryDefinitions(t *testing.T) {
	t0 := time.Unix(1000, 0)
	results := []Result{
		// TTFT 100 ms, E2EL 500 ms, 5 tokens: TPOT = 400/4 = 100 ms; ITLs as received.
		{Start: t0, Intended: t0, TTFT: msd(100), E2EL: msd(500), OutputTokens: 5, PromptTokens: 10, OutputFromUsage: true,
			ITLs: []time.Duration{msd(100), msd(100), msd(100), msd(100)}},
		// One output token: no TPOT, but it counts everywhere else.
		{Start: t0, Intended: t0, TTFT: msd(300), E2EL: msd(300), OutputTokens: 1, PromptTokens: 20, OutputFromUsage: true},
		// Multi-token chunks (spec decode): 6 tokens in 3 chunks: two ITLs, TPOT from tokens.
		{Start: t0.Add(time.Second), Intended: t0.Add(time.Second - msd(50)), TTFT: msd(200), E2EL: msd(700), OutputTokens: 6, PromptTokens: 30, OutputFromUsage: true,
			ITLs: []time.Duration{msd(250), msd(250)}},
		// Failed requests are excluded from every statistic but the failure count.
		{Start: t0, TTFT: msd(1), E2EL: msd(1), OutputTokens: 99, Error: ErrHTTP5xx},
		{Start: t0, Error: ErrTruncated},
		// Cancelled by the user: neither success nor failure.
		{Start: t0, Error: ErrCanceled},
		{Start: t0, Warmup: true, TTFT: msd(9999), OutputTokens: 1000},
	}
	s := Summarize(results, 2*time.Second, []float64{50, 99}, Goodput{})
	assert.Equal(t, 3, s.Completed)
	assert.Equal(t, 2, s.Failed)
	assert.Equal(t, map[ErrorClass]int{ErrHTTP5xx: 1, ErrTruncated: 1}, s.FailuresByClass)
	assert.Equal(t, 60, s.TotalInputTokens)
	assert.Equal(t, 12, s.TotalOutputTokens)
	assert.InDelta(t, 1.5, s.RequestThroughput, 1e-9)
	assert.InDelta(t, 6.0, s.OutputThroughput, 1e-9)
	assert.InDelta(t, 36.0, s.TotalTokenThroughput, 1e-9)
	assert.True(t, math.IsNaN(s.RequestGoodput), "no objectives given")

	assert.InDelta(t, 200, s.TTFT.Mean, 1e-9)
	assert.InDelta(t, 200, s.TTFT.Median, 1e-9)
	assert.InDelta(t, 81.6496580927726, s.TTFT.Std, 1e-9, "population std of 100, 300, 200")
	assert.InDelta(t, 298, s.TTFT.Percentiles[99], 1e-9)
	require.Equal(t, 2, s.TPOT.N, "the one-token request has no TPOT")
	assert.InDelta(t, 100, s.TPOT.Percentiles[50], 1e-9) // (100 + 100) / 2
	assert.InDelta(t, 100, s.TPOT.Mean, 1e-9)
	assert.Equal(t, 6, s.ITL.N, "ITLs are per chunk, not per token")
	assert.InDelta(t, (400+500)/6.0, s.ITL.Mean, 1e-9)
	assert.InDelta(t, 500, s.E2EL.Mean, 1e-9)
	assert.InDelta(t, 50.0/3, s.Queue.Mean, 1e-9, "client-side wait of the third request")

	g, err := ParseGoodput([]string{"ttft:250 tpot:100"})
	require.NoError(t, err)
	s = Summarize(results, 2*time.Second, []float64{99}, g)
	// Request 1 meets both; request 2 has TTFT 300 > 250; request 3 has TPOT 100 but TTFT 200: good.
	assert.InDelta(t, 1.0, s.RequestGoodput, 1e-9)
}

func TestParseGoodputErrors(t *testing.T) {
	for _, bad := range []string{"ttft", "ttft:x", "foo:10", "tpot:-1"} {
		_, err := ParseGoodput([]string{bad})
		assert.Error(t, err, bad)
	}
	g, err := ParseGoodput([]string{"e2el:1500"})
	require.NoError(t, err)
	assert.Equal(t, 1500*time.Millisecond, g.E2EL)
}

func TestLiveWindowIsBoundedAndCorrect(t *testing.T) {
	t0 := time.Unix(0, 0)
	l := NewLive(3, 5, t0)
	for sec := 1; sec <= 10; sec++ {
		for i := 0; i < 10; i++ {
			l.Add(Result{TTFT: time.Duration(sec) * 10 * time.Millisecond, E2EL: time.Second, OutputTokens: 11,
				ITLs: []time.Duration{5 * time.Millisecond}})
		}
		l.Add(Result{Error: ErrHTTP429})
		p := l.Tick(t0.Add(time.Duration(sec) * time.Second))
		assert.Equal(t, 10, p.Requests)
		assert.InDelta(t, 110, p.OutputTokensPerSec, 1e-9)
		assert.InDelta(t, float64(sec)*10, float64(p.TTFT.P99)/1e6, float64(sec)*10*0.01, "2 significant digits: within 1%")
	}
	assert.Len(t, l.Points(), 5, "the point ring keeps the newest 5")
	assert.Equal(t, t0.Add(10*time.Second), l.Points()[4].At)
	w := l.Window()
	assert.Equal(t, 30, w.Requests, "the window holds the last 3 intervals")
	assert.Equal(t, 3, w.FailuresByClass[ErrHTTP429])
	assert.Equal(t, 3*time.Second, w.Span)
	assert.InDelta(t, 90, float64(w.TTFT.P50)/1e6, 0.9)
	assert.InDelta(t, 100, float64(w.TTFT.P99)/1e6, 1)
	assert.EqualValues(t, 30, w.ITL.N)
	assert.Equal(t, w, l.Window(), "the merge scratch starts empty every time")
	c := l.WindowCounts()
	assert.Equal(t, w.Requests, c.Requests)
	assert.Equal(t, w.RequestsPerSec, c.RequestsPerSec)
	assert.Zero(t, c.TTFT.N, "no histograms merged")
}

func TestLiveMemoryIsFixedAndSmall(t *testing.T) {
	l := NewLive(LiveSlots(0), 600, time.Unix(0, 0))
	before := l.footprint()
	// A default window (10 one-second intervals) held 58 MB of histograms at three digits
	// and a one-minute window; it must stay in single megabytes, and not grow with the load.
	assert.Less(t, before, 2<<20, "bytes of histograms")
	for i := 0; i < 20000; i++ {
		l.Add(Result{TTFT: time.Duration(i) * time.Microsecond, E2EL: time.Duration(i) * time.Millisecond,
			ITLs: []time.Duration{time.Duration(i%977) * time.Microsecond}})
		if i%2000 == 0 {
			l.Tick(time.Unix(int64(i), 0))
		}
	}
	_ = l.Window()
	assert.Equal(t, before, l.footprint())
	assert.Equal(t, 10, LiveSlots(0))
	assert.Equal(t, 3, LiveSlots(2500*time.Millisecond), "a part second is a slot")
}

func TestEpochsKeepTheNewestAndSummarise(t *testing.T) {
	e := NewEpochs(2)
	t0 := time.Unix(100, 0)
	for ep := 1; ep <= 3; ep++ {
		for i := 0; i < 4; i++ {
			e.Add(Result{Epoch: ep, Start: t0.Add(time.Duration(i) * time.Second), TTFT: time.Duration(ep) * 100 * time.Millisecond,
				E2EL: time.Second, OutputTokens: 11, PromptTokens: 5})
		}
		e.Add(Result{Epoch: ep, Start: t0, Error: ErrHTTP5xx})
	}
	all := e.All()
	require.Len(t, all, 2, "only the newest two epochs are kept")
	assert.Equal(t, 2, all[0].Epoch)
	assert.Equal(t, 4, all[1].Requests)
	assert.Equal(t, 1, all[1].Failures)
	assert.Equal(t, 44, all[1].OutputTokens)
	assert.InDelta(t, 300, float64(all[1].TTFT.P50)/1e6, 3, "two significant digits")
	assert.Equal(t, 4*time.Second, all[1].Duration())
	assert.InDelta(t, 11.0, all[1].OutputTokensPerSec(), 1e-9)
}

func TestEpochsCountGoodRequests(t *testing.T) {
	e := NewEpochs(4)
	t0 := time.Unix(100, 0)
	add := func(ttft time.Duration) {
		e.Add(Result{Epoch: 1, Start: t0, TTFT: ttft, E2EL: time.Second, OutputTokens: 11})
	}
	add(100 * time.Millisecond)
	assert.Zero(t, e.All()[0].Good, "no objectives: nothing is counted good")
	e.SetGoodput(Goodput{TTFT: 200 * time.Millisecond})
	add(100 * time.Millisecond)
	add(300 * time.Millisecond)
	e.Add(Result{Epoch: 1, Start: t0, Error: ErrHTTP5xx})
	got := e.All()[0]
	assert.Equal(t, 1, got.Good, "one of the two later requests met the TTFT objective; a failure never does")
	assert.Equal(t, 3, got.Requests)
}
