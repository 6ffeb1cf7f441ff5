package loadgen

import (
	"math"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// DefaultExactBytes bounds what a Tally keeps of a run's requests for numpy-exact statistics:
// 8 MiB holds the timings of about a million tokens (1,000 requests of 1,000 output tokens).
// A run that passes it goes on in constant memory, its percentiles HDR estimates.
const DefaultExactBytes = 8 << 20

// keptTimingBytes is what one kept request costs besides its inter-token latencies.
const keptTimingBytes = 96

// The streaming estimates' histograms: nanoseconds up to a day, 3 significant digits (about
// 300 KB each).
const (
	sketchMax    = int64(24 * time.Hour)
	sketchDigits = 3
)

// Tally turns a run's results into vllm bench serve's statistics as they finish, in bounded
// memory: the successful requests' timings are kept while they fit in ExactBytes (then the
// statistics are exact, as numpy computes them), and past that bound every metric goes on in an
// HDR histogram with a streaming mean and deviation, and the token peak in one-second bins
// (memory then grows with the run's length in seconds, and 16 bytes a request for the exact
// peak of requests in flight). Safe for concurrent use.
type Tally struct {
	mu       sync.Mutex
	goodput  Goodput
	maxBytes int

	n int
	resultCounts
	fromUsage bool
	good      int

	kept      []timing // exact: each successful request's timings
	keptBytes int
	inFlight  spans
	perReq    []perRequest
	est       *estimates // past the bound: nil until then
	detail    *detailSpill
}

// resultCounts counts finished requests: those that succeeded with their tokens, and the
// failures by class (a cancellation is neither).
type resultCounts struct {
	completed, failed   int
	failures            map[ErrorClass]int
	inTokens, outTokens int
	lastFailure         FailureStreak // the latest failure's class, status and message
}

// add counts r and reports whether it succeeded.
func (c *resultCounts) add(r *Result) bool {
	if !r.OK() {
		if r.Error != ErrCanceled {
			c.failed++
			c.failures[r.Error]++
			c.lastFailure = FailureStreak{Last: r.Error, LastStatus: r.Status, LastMsg: r.ErrorMessage}
		}
		return false
	}
	c.completed++
	c.inTokens += r.PromptTokens
	c.outTokens += r.OutputTokens
	return true
}

// timing is what the statistics need of one successful request.
type timing struct {
	start            time.Time
	ttft, e2el, wait time.Duration
	tpot             time.Duration
	hasTPOT          bool
	itls             []time.Duration
}

// NewTally makes a tally for the goodput objectives g (none when g is zero) that keeps exact
// timings up to DefaultExactBytes.
func NewTally(g Goodput) *Tally {
	return &Tally{goodput: g, maxBytes: DefaultExactBytes, resultCounts: resultCounts{failures: map[ErrorClass]int{}}, fromUsage: true}
}

// SetExactBytes sets the bound of exact timings (see DefaultExactBytes); call it before Add.
func (t *Tally) SetExactBytes(n int) { t.maxBytes = n }

// Add counts one result; warm-ups are skipped. It is a Runner sink.
func (t *Tally) Add(r Result) {
	if r.Warmup {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	if t.detail != nil {
		t.detail.add(&r)
	}
	t.note(&r)
	if !t.add(&r) {
		return
	}
	t.fromUsage = t.fromUsage && r.OutputFromUsage
	if t.goodput.good(&r) {
		t.good++
	}
	tm := timing{start: r.Start, ttft: r.TTFT, e2el: r.E2EL, wait: r.QueueDelay()}
	if r.FromIntended && !r.Intended.IsZero() {
		tm.start = r.Intended // so that start + TTFT is still when the first token came
	}
	tm.tpot, tm.hasTPOT = r.TPOT()
	t.inFlight.add(r.Start, tm.start.Add(tm.e2el))
	if t.est != nil {
		tm.itls = r.ITLs
		t.est.add(&tm)
		return
	}
	tm.itls = append([]time.Duration(nil), r.ITLs...)
	t.kept = append(t.kept, tm)
	t.keptBytes += keptTimingBytes + 8*len(tm.itls)
	if t.keptBytes > t.maxBytes {
		t.estimate()
	}
}

// estimate moves the kept timings into the estimates and forgets them.
func (t *Tally) estimate() {
	origin := t.kept[0].start
	for i := range t.kept {
		if t.kept[i].start.Before(origin) {
			origin = t.kept[i].start
		}
	}
	t.est = newEstimates(origin)
	for i := range t.kept {
		t.est.add(&t.kept[i])
	}
	t.kept, t.keptBytes = nil, 0
}

// Count is the number of measured results added, whatever their outcome.
func (t *Tally) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// Summary is the run's statistics for a run of the given duration, with percentiles ps.
func (t *Tally) Summary(duration time.Duration, ps []float64) Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Summary{Duration: duration, FailuresByClass: map[ErrorClass]int{}, OutputFromUsage: t.fromUsage, RequestGoodput: math.NaN(),
		Completed: t.completed, Failed: t.failed, TotalInputTokens: t.inTokens, TotalOutputTokens: t.outTokens}
	if t.failed > 0 {
		s.LastFailure = t.lastFailure.Cause()
	}
	s.Latencies, s.QueueTimes = t.arrays()
	for c, n := range t.failures {
		s.FailuresByClass[c] = n
	}
	if sec := duration.Seconds(); sec > 0 {
		s.RequestThroughput = float64(s.Completed) / sec
		s.OutputThroughput = float64(s.TotalOutputTokens) / sec
		s.TotalTokenThroughput = float64(s.TotalInputTokens+s.TotalOutputTokens) / sec
		if t.goodput.Set() {
			s.RequestGoodput = float64(t.good) / sec
		}
	}
	if t.est != nil {
		e := t.est
		s.TTFT, s.TPOT, s.ITL, s.E2EL, s.Queue = e.ttft.dist(ps), e.tpot.dist(ps), e.itl.dist(ps), e.e2el.dist(ps), e.wait.dist(ps)
		s.E2ELInclQueue = e.e2eq.dist(ps)
		s.MaxOutputTokensPerS = e.peakTokens()
		s.MaxConcurrent = t.inFlight.peak()
		s.Estimated = true
		return s
	}
	var ttft, tpot, itl, e2el, queue, e2eq []float64
	for i := range t.kept {
		tm := &t.kept[i]
		ttft = append(ttft, ms(tm.ttft))
		if tm.hasTPOT {
			tpot = append(tpot, ms(tm.tpot))
		}
		for _, d := range tm.itls {
			itl = append(itl, ms(d))
		}
		e2el = append(e2el, ms(tm.e2el))
		queue = append(queue, ms(tm.wait))
		e2eq = append(e2eq, ms(tm.e2el+tm.wait))
	}
	s.E2ELInclQueue = dist(e2eq, ps)
	s.TTFT, s.TPOT, s.ITL, s.E2EL, s.Queue = dist(ttft, ps), dist(tpot, ps), dist(itl, ps), dist(e2el, ps), dist(queue, ps)
	s.MaxOutputTokensPerS = peakTokens(t.kept)
	s.MaxConcurrent = t.inFlight.peak()
	return s
}

// peakTokens finds the busiest second for output tokens, as vLLM does: each chunk's arrival
// (start + TTFT + ITLs) in one-second bins from the first start.
func peakTokens(kept []timing) float64 {
	if len(kept) == 0 {
		return 0
	}
	first := kept[0].start
	for i := range kept {
		if kept[i].start.Before(first) {
			first = kept[i].start
		}
	}
	b := newBins(first)
	for i := range kept {
		b.add(&kept[i])
	}
	return b.peak()
}

// bins counts chunk arrivals per second from an origin.
type bins struct {
	origin time.Time
	tokens map[int64]int
}

func newBins(origin time.Time) *bins {
	return &bins{origin: origin, tokens: map[int64]int{}}
}

// sec is t's bin: whole seconds since the origin, truncated as Python's int() truncates.
func (b *bins) sec(t time.Time) int64 { return int64(t.Sub(b.origin) / time.Second) }

func (b *bins) add(tm *timing) {
	t := tm.start.Add(tm.ttft)
	b.tokens[b.sec(t)]++
	for _, d := range tm.itls {
		t = t.Add(d)
		b.tokens[b.sec(t)]++
	}
}

func (b *bins) peak() float64 {
	top := 0
	for _, n := range b.tokens {
		top = max(top, n)
	}
	return float64(top)
}

// estimates are a run's statistics past the bound of exact timings.
type estimates struct {
	ttft, tpot, itl, e2el, wait, e2eq *sketch
	bins                              *bins
}

func newEstimates(origin time.Time) *estimates {
	return &estimates{ttft: newSketch(), tpot: newSketch(), itl: newSketch(), e2el: newSketch(), wait: newSketch(), e2eq: newSketch(), bins: newBins(origin)}
}

func (e *estimates) add(tm *timing) {
	e.ttft.add(tm.ttft)
	if tm.hasTPOT {
		e.tpot.add(tm.tpot)
	}
	for _, d := range tm.itls {
		e.itl.add(d)
	}
	e.e2el.add(tm.e2el)
	e.wait.add(tm.wait)
	e.e2eq.add(tm.e2el + tm.wait)
	e.bins.add(tm)
}

func (e *estimates) peakTokens() float64 { return e.bins.peak() }

// sketch is one metric in constant memory: an HDR histogram for the percentiles, Welford's
// running mean and variance (in milliseconds) for the mean and deviation.
type sketch struct {
	h        *hdrhistogram.Histogram
	n        int
	mean, m2 float64
}

func newSketch() *sketch { return &sketch{h: hdrhistogram.New(1, sketchMax, sketchDigits)} }

func (k *sketch) add(d time.Duration) {
	_ = k.h.RecordValue(min(max(int64(d), 0), sketchMax))
	k.n++
	x := ms(d)
	delta := x - k.mean
	k.mean += delta / float64(k.n)
	k.m2 += delta * (x - k.mean)
}

func (k *sketch) dist(ps []float64) Dist {
	d := Dist{N: k.n, Percentiles: map[float64]float64{}}
	q := func(p float64) float64 {
		if k.n == 0 {
			return 0
		}
		return float64(k.h.ValueAtQuantile(p)) / float64(time.Millisecond)
	}
	for _, p := range ps {
		d.Percentiles[p] = q(p)
	}
	if k.n == 0 {
		return d
	}
	d.Mean, d.Std, d.Median = k.mean, math.Sqrt(k.m2/float64(k.n)), q(50)
	return d
}
