package loadgen

import (
	"sort"
	"sync"
	"time"
)

// EpochStats is one epoch (one load setting or one server run): when and why it began, and
// the statistics of its requests.
type EpochStats struct {
	Epoch    int
	Start    time.Time // when it began (zero for an epoch only known by its results)
	Settings string    // the load it began with: "C=4", "rate 2/s"
	Label    string    // why it began besides a load change, e.g. "restart"; "" for none

	First, Last        time.Time // first start and last finish
	Requests, Failures int
	OutputTokens       int
	PromptTokens       int
	TTFT, TPOT, ITL    Quantiles
	E2EL               Quantiles

	// Good counts the requests that met every goodput objective (see Epochs.SetGoodput);
	// without objectives it stays 0.
	Good int
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

// Epochs keeps the newest epochs (at most max) with per-epoch statistics in HDR histograms, so
// runs can be compared side by side with bounded memory. Safe for concurrent use.
type Epochs struct {
	mu     sync.Mutex
	max    int
	slo    Goodput
	epochs map[int]*epochAcc
}

type epochAcc struct {
	lat        latencies
	stats      EpochStats
	first, end time.Time
	fresh      bool // stats' quantiles are up to date with lat
}

// NewEpochs keeps at most max epochs (the oldest are dropped).
func NewEpochs(max int) *Epochs { return &Epochs{max: max, epochs: map[int]*epochAcc{}} }

// SetGoodput sets the objectives results are counted against from now on (EpochStats.Good).
func (e *Epochs) SetGoodput(g Goodput) {
	e.mu.Lock()
	e.slo = g
	e.mu.Unlock()
}

// Begin records that epoch n began at start with the load settings and why (label), before any
// of its results arrive.
func (e *Epochs) Begin(n int, settings, label string, start time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.acc(n)
	a.stats.Start, a.stats.Settings, a.stats.Label = start, settings, label
}

// acc returns epoch n's accumulator, made (and the oldest dropped beyond max) if new. e.mu is
// held.
func (e *Epochs) acc(n int) *epochAcc {
	if a, ok := e.epochs[n]; ok {
		return a
	}
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
	a := &epochAcc{lat: newLatenciesDigits(2), stats: EpochStats{Epoch: n}}
	e.epochs[n] = a
	return a
}

// Add records a result in its epoch (warm-ups and cancellations are not counted).
func (e *Epochs) Add(r Result) {
	if !r.measured() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.acc(r.Epoch)
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
	a.fresh = false
	a.stats.Requests++
	a.stats.OutputTokens += r.OutputTokens
	a.stats.PromptTokens += r.PromptTokens
	if e.slo.Set() && e.slo.good(&r) {
		a.stats.Good++
	}
	record(a.lat.ttft, r.TTFT)
	record(a.lat.e2el, r.E2EL)
	if t, ok := r.TPOT(); ok {
		record(a.lat.tpot, t)
	}
	for _, d := range r.ITLs {
		record(a.lat.itl, d)
	}
}

// AddITL records one inter-token latency of a request in epoch n as it arrives (see
// RunnerConfig.ITL).
func (e *Epochs) AddITL(n int, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.acc(n)
	a.fresh = false
	record(a.lat.itl, d)
}

// All returns every kept epoch's statistics, oldest first. Quantiles are computed again only
// for epochs with new results since the last call.
func (e *Epochs) All() []EpochStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]EpochStats, 0, len(e.epochs))
	for _, a := range e.epochs {
		if !a.fresh {
			s := &a.stats
			s.TTFT, s.TPOT, s.ITL, s.E2EL = quantiles(a.lat.ttft), quantiles(a.lat.tpot), quantiles(a.lat.itl), quantiles(a.lat.e2el)
			a.fresh = true
		}
		s := a.stats
		s.First, s.Last = a.first, a.end
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Epoch < out[j].Epoch })
	return out
}
