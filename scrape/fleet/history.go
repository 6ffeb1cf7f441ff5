package fleet

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/scrape"
)

// Metric is a row's number kept over time for charts.
type Metric int

// Metrics kept in History.
const (
	MetricRunning Metric = iota
	MetricWaiting
	MetricKVCacheUsage
	MetricGenTokens
	MetricTTFTP99
	numMetrics
)

// Metrics lists the metrics History keeps.
var Metrics = []Metric{MetricRunning, MetricWaiting, MetricKVCacheUsage, MetricGenTokens, MetricTTFTP99}

// String names the metric as a chart title does.
func (m Metric) String() string {
	switch m {
	case MetricRunning:
		return "running"
	case MetricWaiting:
		return "waiting"
	case MetricKVCacheUsage:
		return "KV cache"
	case MetricGenTokens:
		return "generation tokens/s"
	case MetricTTFTP99:
		return "TTFT p99"
	case numMetrics:
	}
	return "?"
}

func (m Metric) of(s *Row) scrape.Value {
	switch m {
	case MetricRunning:
		return s.Running
	case MetricWaiting:
		return s.Waiting
	case MetricKVCacheUsage:
		return s.KVCacheUsage
	case MetricGenTokens:
		return s.GenerationTokensPerSec
	case MetricTTFTP99:
		return s.TTFTP99.V
	case numMetrics:
	}
	return scrape.Value{}
}

// Point is one value of a series. Absent values are not stored: a chart shows a gap.
type Point struct {
	T time.Time
	V float64
}

// History keeps, per row and metric, at most Capacity points at least Step apart: the last
// Step×Capacity of each series (an hour at the defaults). Series of rows not seen for that
// long are dropped. It is safe for concurrent use.
type History struct {
	step     time.Duration
	capacity int

	mu     sync.Mutex
	series map[Key]*[numMetrics]ring
	adds   int
}

// Defaults of a History: one point per 5 s, an hour.
const (
	DefaultHistoryStep     = 5 * time.Second
	DefaultHistoryCapacity = 720
)

// NewHistory keeps capacity points step apart per series (defaults for zero values).
func NewHistory(step time.Duration, capacity int) *History {
	if step <= 0 {
		step = DefaultHistoryStep
	}
	if capacity <= 0 {
		capacity = DefaultHistoryCapacity
	}
	return &History{step: step, capacity: capacity, series: map[Key]*[numMetrics]ring{}}
}

// Step is the spacing of points.
func (h *History) Step() time.Duration { return h.step }

// Span is how far back the history reaches when full.
func (h *History) Span() time.Duration { return h.step * time.Duration(h.capacity) }

type ring struct {
	pts   []Point
	start int
}

func (r *ring) last() (Point, bool) {
	if len(r.pts) == 0 {
		return Point{}, false
	}
	return r.pts[(r.start+len(r.pts)-1)%len(r.pts)], true
}

func (r *ring) add(p Point, capacity int) {
	if len(r.pts) < capacity {
		r.pts = append(r.pts, p)
		return
	}
	r.pts[r.start] = p
	r.start = (r.start + 1) % len(r.pts)
}

func (r *ring) copy() []Point {
	out := make([]Point, 0, len(r.pts))
	for i := range r.pts {
		out = append(out, r.pts[(r.start+i)%len(r.pts)])
	}
	return out
}

// Record adds every metric of every row at time t, skipping rows whose numbers are frozen
// and absent values, and at most one point per Step.
func (h *History) Record(t time.Time, rows []Row) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range rows {
		r := &rows[i]
		if r.Frozen {
			continue
		}
		s := h.series[r.Key]
		if s == nil {
			s = &[numMetrics]ring{}
			h.series[r.Key] = s
		}
		for _, m := range Metrics {
			v := m.of(r)
			if !v.OK || math.IsNaN(v.V) || math.IsInf(v.V, 0) {
				continue
			}
			if last, ok := s[m].last(); ok && t.Sub(last.T) < h.step {
				continue
			}
			s[m].add(Point{T: t, V: v.V}, h.capacity)
		}
	}
	h.adds++
	if h.adds%64 == 0 {
		h.prune(t)
	}
}

// Backfill replaces a series with points read elsewhere (Prometheus's query_range), oldest
// first; points closer than Step to the previous one are skipped.
func (h *History) Backfill(k Key, m Metric, pts []Point) {
	if m < 0 || m >= numMetrics {
		return
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
	var r ring
	for _, p := range pts {
		if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
			continue
		}
		if last, ok := r.last(); ok && p.T.Sub(last.T) < h.step {
			continue
		}
		r.add(p, h.capacity)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[k]
	if s == nil {
		s = &[numMetrics]ring{}
		h.series[k] = s
	}
	s[m] = r
}

// Series returns a copy of one series, oldest first.
func (h *History) Series(k Key, m Metric) []Point {
	if m < 0 || m >= numMetrics {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[k]
	if s == nil {
		return nil
	}
	return s[m].copy()
}

// Keys lists the rows that have history, sorted.
func (h *History) Keys() []Key {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Key, 0, len(h.series))
	for k := range h.series {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i], out[j]) })
	return out
}

// prune drops the series whose newest point is older than the span.
func (h *History) prune(now time.Time) {
	limit := now.Add(-h.Span())
	for k, s := range h.series {
		newest := time.Time{}
		for m := range s {
			if p, ok := s[m].last(); ok && p.T.After(newest) {
				newest = p.T
			}
		}
		if newest.Before(limit) {
			delete(h.series, k)
		}
	}
}
