package loadgen

import (
	"sort"
	"sync"
	"time"
)

// EpochStats summarises the requests of one epoch (one load setting or one server run).
type EpochStats struct {
	Epoch              int
	First, Last        time.Time // first start and last finish
	Requests, Failures int
	OutputTokens       int
	PromptTokens       int
	TTFT, TPOT, ITL    Quantiles
	E2EL               Quantiles
}

// Duration is the span from the first start to the last finish.
func (e EpochStats) Duration() time.Duration { return e.Last.Sub(e.First) }

// OutputTokensPerSec is the epoch's output throughput.
func (e EpochStats) OutputTokensPerSec() float64 {
	if d := e.Duration().Seconds(); d > 0 {
		return float64(e.OutputTokens) / d
	}
	return 0
}

// Epochs keeps per-epoch statistics (HDR histograms) for the newest MaxEpochs epochs, so runs
// can be compared side by side with bounded memory. Safe for concurrent use.
type Epochs struct {
	mu     sync.Mutex
	max    int
	epochs map[int]*epochAcc
}

type epochAcc struct {
	lat        latencies
	stats      EpochStats
	first, end time.Time
}

// NewEpochs keeps at most max epochs (the oldest are dropped).
func NewEpochs(max int) *Epochs { return &Epochs{max: max, epochs: map[int]*epochAcc{}} }

// Add records a result in its epoch (warm-ups and cancellations are not counted).
func (e *Epochs) Add(r Result) {
	if r.Warmup || r.Error == ErrCanceled {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a, ok := e.epochs[r.Epoch]
	if !ok {
		if len(e.epochs) >= e.max {
			oldest := -1
			for k := range e.epochs {
				if oldest < 0 || k < oldest {
					oldest = k
				}
			}
			delete(e.epochs, oldest)
		}
		// Two significant digits: enough to compare runs, a quarter of the memory per epoch.
		a = &epochAcc{lat: newLatenciesDigits(2), stats: EpochStats{Epoch: r.Epoch}}
		e.epochs[r.Epoch] = a
	}
	if a.first.IsZero() || r.Start.Before(a.first) {
		a.first = r.Start
	}
	if end := r.Start.Add(r.E2EL); end.After(a.end) {
		a.end = end
	}
	if !r.OK() {
		a.stats.Failures++
		return
	}
	a.stats.Requests++
	a.stats.OutputTokens += r.OutputTokens
	a.stats.PromptTokens += r.PromptTokens
	record(a.lat.ttft, r.TTFT)
	record(a.lat.e2el, r.E2EL)
	if t, ok := r.TPOT(); ok {
		record(a.lat.tpot, t)
	}
	for _, d := range r.ITLs {
		record(a.lat.itl, d)
	}
}

// All returns every kept epoch's statistics, oldest first.
func (e *Epochs) All() []EpochStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]EpochStats, 0, len(e.epochs))
	for _, a := range e.epochs {
		s := a.stats
		s.First, s.Last = a.first, a.end
		s.TTFT, s.TPOT, s.ITL, s.E2EL = quantiles(a.lat.ttft), quantiles(a.lat.tpot), quantiles(a.lat.itl), quantiles(a.lat.e2el)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Epoch < out[j].Epoch })
	return out
}
