package loadgen

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms record microseconds from 1 µs to an hour.
const (
	hdrMin = 1
	hdrMax = int64(time.Hour / time.Microsecond)
)

// liveDigits is the precision of the live window's per-interval histograms. Two significant
// digits (values within 1%) are finer than a chart row and take a seventh of three digits'
// memory (27 KB against 188 KB a histogram): the window keeps five per interval, so at three
// digits a one-minute window held 58 MB before a single request.
const liveDigits = 2

// DefaultLiveWindow is the span of the live window's percentiles: long enough to hold some
// tens of requests at a low concurrency, short enough to follow a load change within seconds.
const DefaultLiveWindow = 10 * time.Second

type latencies struct {
	ttft, tpot, itl, e2el, queue *hdrhistogram.Histogram
}

// newLatenciesDigits makes the histograms with the given significant digits (2 takes a seventh
// of the memory of 3).
func newLatenciesDigits(digits int) latencies {
	h := func() *hdrhistogram.Histogram { return hdrhistogram.New(hdrMin, hdrMax, digits) }
	return latencies{h(), h(), h(), h(), h()}
}

func (l latencies) reset() {
	for _, h := range l.all() {
		h.Reset()
	}
}

func (l latencies) all() []*hdrhistogram.Histogram {
	return []*hdrhistogram.Histogram{l.ttft, l.tpot, l.itl, l.e2el, l.queue}
}

func (l latencies) merge(o latencies) {
	a, b := l.all(), o.all()
	for i := range a {
		a[i].Merge(b[i])
	}
}

func record(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(int64(d/time.Microsecond), hdrMin), hdrMax))
}

type interval struct {
	lat latencies
	resultCounts
	start, end time.Time
}

func newInterval() *interval {
	return &interval{lat: newLatenciesDigits(liveDigits), resultCounts: resultCounts{failures: map[ErrorClass]int{}}}
}

func (iv *interval) reset(start time.Time) {
	iv.lat.reset()
	clear(iv.failures)
	iv.resultCounts = resultCounts{failures: iv.failures}
	iv.start, iv.end = start, time.Time{}
}

// Quantiles are latency percentiles (p50, p90, p99) of one metric; N is the sample count.
type Quantiles struct {
	P50, P90, P99 time.Duration
	N             int64
}

func quantiles(h *hdrhistogram.Histogram) Quantiles {
	q := func(p float64) time.Duration { return time.Duration(h.ValueAtQuantile(p)) * time.Microsecond }
	return Quantiles{P50: q(50), P90: q(90), P99: q(99), N: h.TotalCount()}
}

// Point is the load over one interval: what a chart plots.
type Point struct {
	At                 time.Time
	Requests           int // finished successfully in the interval
	Failures           int
	RequestsPerSec     float64
	OutputTokensPerSec float64
	TTFT, TPOT, ITL    Quantiles
	E2EL, Queue        Quantiles
}

// WindowStats summarises the last window of intervals.
type WindowStats struct {
	Span               time.Duration
	Requests, Failures int
	FailuresByClass    map[ErrorClass]int
	RequestsPerSec     float64
	OutputTokensPerSec float64
	TTFT, TPOT, ITL    Quantiles
	E2EL, Queue        Quantiles
}

// Live aggregates results for a live view with bounded memory: the current interval, a
// sliding window of closed intervals (HDR histograms of liveDigits significant digits), and a
// ring of per-interval points for charts. Its memory is fixed at construction, whatever the
// load: windowSlots+2 sets of histograms (the window, the current interval, and one to merge
// the window into, reused). Safe for concurrent use: Add is called from request goroutines,
// Tick and Window from the view's ticker.
type Live struct {
	mu     sync.Mutex
	cur    *interval
	slots  []*interval // ring of closed intervals, for the sliding window
	next   int
	filled int
	merged latencies // Window's scratch: merging into fresh histograms each second was garbage
	points []Point   // ring of per-interval points
	pNext  int
	pLen   int
}

// NewLive keeps windowSlots closed intervals for the window and maxPoints chart points.
func NewLive(windowSlots, maxPoints int, now time.Time) *Live {
	l := &Live{cur: newInterval(), slots: make([]*interval, max(1, windowSlots)), points: make([]Point, max(1, maxPoints)),
		merged: newLatenciesDigits(liveDigits)}
	for i := range l.slots {
		l.slots[i] = newInterval()
	}
	l.cur.start = now
	return l
}

// LiveSlots is how many one-second intervals make a live window of span d (DefaultLiveWindow
// when d is not positive).
func LiveSlots(d time.Duration) int {
	if d <= 0 {
		d = DefaultLiveWindow
	}
	return max(1, int((d+time.Second-1)/time.Second))
}

// Add records one finished request (warm-ups and cancellations are not counted).
func (l *Live) Add(r Result) {
	if !r.measured() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	iv := l.cur
	if !iv.add(&r) {
		return
	}
	record(iv.lat.ttft, r.TTFT)
	record(iv.lat.e2el, r.E2EL)
	record(iv.lat.queue, r.QueueDelay())
	if t, ok := r.TPOT(); ok {
		record(iv.lat.tpot, t)
	}
	for _, d := range r.ITLs {
		record(iv.lat.itl, d)
	}
}

// AddITL records one inter-token latency as it arrives (see RunnerConfig.ITL): the window's ITL
// quantiles are then of the last seconds' tokens, not of the requests that ended in them.
func (l *Live) AddITL(d time.Duration) {
	l.mu.Lock()
	record(l.cur.lat.itl, d)
	l.mu.Unlock()
}

// Tick closes the current interval at now, adds it to the window and the chart points, and
// returns its point.
func (l *Live) Tick(now time.Time) Point {
	l.mu.Lock()
	defer l.mu.Unlock()
	iv := l.cur
	iv.end = now
	p := Point{At: now, Requests: iv.completed, Failures: iv.failed,
		TTFT: quantiles(iv.lat.ttft), TPOT: quantiles(iv.lat.tpot), ITL: quantiles(iv.lat.itl),
		E2EL: quantiles(iv.lat.e2el), Queue: quantiles(iv.lat.queue)}
	if sec := now.Sub(iv.start).Seconds(); sec > 0 {
		p.RequestsPerSec = float64(iv.completed) / sec
		p.OutputTokensPerSec = float64(iv.outTokens) / sec
	}
	l.points[l.pNext] = p
	l.pNext = (l.pNext + 1) % len(l.points)
	l.pLen = min(l.pLen+1, len(l.points))
	// Swap the closed interval into the ring; the evicted slot becomes the new current one.
	evicted := l.slots[l.next]
	l.slots[l.next] = iv
	l.next = (l.next + 1) % len(l.slots)
	l.filled = min(l.filled+1, len(l.slots))
	evicted.reset(now)
	l.cur = evicted
	return p
}

// Points returns the chart points, oldest first.
func (l *Live) Points() []Point {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Point, 0, l.pLen)
	for i := 0; i < l.pLen; i++ {
		out = append(out, l.points[(l.pNext-l.pLen+i+len(l.points))%len(l.points)])
	}
	return out
}

// Window merges the closed intervals of the window, latency histograms included.
func (l *Live) Window() WindowStats { return l.window(true) }

// WindowCounts is Window without the latency quantiles: counts and rates only, and cheap.
func (l *Live) WindowCounts() WindowStats { return l.window(false) }

func (l *Live) window(withLatency bool) WindowStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	merged := l.merged
	if withLatency {
		merged.reset()
	}
	w := WindowStats{FailuresByClass: map[ErrorClass]int{}}
	var out int
	var first, last time.Time
	for i := 0; i < l.filled; i++ {
		iv := l.slots[(l.next-1-i+len(l.slots))%len(l.slots)]
		if withLatency {
			merged.merge(iv.lat)
		}
		w.Requests += iv.completed
		w.Failures += iv.failed
		for k, v := range iv.failures {
			w.FailuresByClass[k] += v
		}
		out += iv.outTokens
		if first.IsZero() || iv.start.Before(first) {
			first = iv.start
		}
		if iv.end.After(last) {
			last = iv.end
		}
	}
	w.Span = last.Sub(first)
	if sec := w.Span.Seconds(); sec > 0 {
		w.RequestsPerSec = float64(w.Requests) / sec
		w.OutputTokensPerSec = float64(out) / sec
	}
	if withLatency {
		w.TTFT, w.TPOT, w.ITL = quantiles(merged.ttft), quantiles(merged.tpot), quantiles(merged.itl)
		w.E2EL, w.Queue = quantiles(merged.e2el), quantiles(merged.queue)
	}
	return w
}

// footprint is the bytes the histograms hold: fixed whatever the load.
func (l *Live) footprint() int {
	n := 0
	for _, iv := range append([]*interval{l.cur}, l.slots...) {
		for _, h := range iv.lat.all() {
			n += h.ByteSize()
		}
	}
	for _, h := range l.merged.all() {
		n += h.ByteSize()
	}
	return n
}

// measured reports whether a result counts in live statistics: not a warm-up, not cancelled.
func (r *Result) measured() bool { return !r.Warmup && r.Error != ErrCanceled }
