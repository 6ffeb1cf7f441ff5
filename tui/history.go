package tui

import (
	"math"
	"time"
)

// sampleKind says what a chart sample is: a value, or only a bound on one (a server quantile
// that fell in a histogram's first bucket is known only to be at most that bucket's edge; one in
// the +Inf bucket only to be at least the last finite edge).
type sampleKind uint8

const (
	noSample   sampleKind = iota // missing: drawn as a gap
	valueKind                    // a measurement
	upperBound                   // the value is at most V (legend "≤V")
	lowerBound                   // the value is at least V (legend "≥V")
)

// sample is one reading of one series.
type sample struct {
	V    float64
	Kind sampleKind
}

func value(v float64) sample {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return sample{}
	}
	return sample{V: v, Kind: valueKind}
}

// aggregate is how a coarser slot or a plot column combines several samples of a series.
type aggregate uint8

const (
	aggMean aggregate = iota // rates and gauges
	aggMax                   // quantiles: a column shows the worst second in it
)

// tier is a ring of slots of res seconds each, keyed by the slot's start (Unix seconds), so
// a missing second stays missing and every series shares one clock.
type tier struct {
	res   int64
	at    []int64 // slot start; 0 when never written
	vals  []float64
	kinds []sampleKind
}

func newTier(res int64, slots, series int) tier {
	return tier{res: res, at: make([]int64, slots), vals: make([]float64, slots*series), kinds: make([]sampleKind, slots*series)}
}

// history keeps every chart series once a second for fineSlots seconds, and folded into
// coarseRes-second slots for an hour: fixed memory whatever the session's length. The fine ring
// draws the 1, 5 and 15 minute windows, the coarse one the hour.
type history struct {
	n      int
	aggs   []aggregate
	fine   tier
	coarse tier
	// acc folds the fine samples of the coarse slot being filled.
	accAt    int64
	accSum   []float64
	accN     []int
	accMax   []float64
	accBound []sample
	// first is the oldest second pushed (0: none), where a chart's fitted window begins.
	first int64
}

const (
	fineSlots   = 960 // 16 minutes of seconds: the 15-minute window with room
	coarseRes   = 10  // seconds per coarse slot
	coarseSlots = 372 // an hour and a little of coarse slots
)

func newHistory(aggs []aggregate) *history {
	n := len(aggs)
	return &history{n: n, aggs: aggs, fine: newTier(1, fineSlots, n), coarse: newTier(coarseRes, coarseSlots, n),
		accSum: make([]float64, n), accN: make([]int, n), accMax: make([]float64, n), accBound: make([]sample, n)}
}

// push records the samples of second t (one per series, in order); a second pushed twice keeps
// the later samples.
func (h *history) push(t time.Time, samples []sample) {
	sec := t.Unix()
	if h.first == 0 || sec < h.first {
		h.first = sec
	}
	h.fine.put(sec, samples, h.n)
	slot := sec - sec%coarseRes
	if h.accAt != 0 && slot != h.accAt {
		h.flush()
	}
	h.accAt = slot
	for i := 0; i < h.n && i < len(samples); i++ {
		s := samples[i]
		switch s.Kind {
		case valueKind:
			h.accSum[i] += s.V
			h.accMax[i] = math.Max(h.accMax[i], s.V)
			h.accN[i]++
		case upperBound, lowerBound:
			h.accBound[i] = s
		case noSample:
		}
	}
	// The slot being filled is written as it grows, so the hour view is current too.
	h.coarse.put(slot, h.folded(), h.n)
}

func (h *history) folded() []sample {
	out := make([]sample, h.n)
	for i := range out {
		switch {
		case h.accN[i] > 0 && h.aggs[i] == aggMax:
			out[i] = sample{V: h.accMax[i], Kind: valueKind}
		case h.accN[i] > 0:
			out[i] = sample{V: h.accSum[i] / float64(h.accN[i]), Kind: valueKind}
		default:
			out[i] = h.accBound[i]
		}
	}
	return out
}

func (h *history) flush() {
	h.coarse.put(h.accAt, h.folded(), h.n)
	for i := range h.accSum {
		h.accSum[i], h.accN[i], h.accMax[i], h.accBound[i] = 0, 0, 0, sample{}
	}
}

func (t *tier) put(start int64, samples []sample, n int) {
	i := int((start / t.res) % int64(len(t.at)))
	t.at[i] = start
	for j := 0; j < n; j++ {
		s := sample{}
		if j < len(samples) {
			s = samples[j]
		}
		t.vals[i*n+j], t.kinds[i*n+j] = s.V, s.Kind
	}
}

// get is series j's sample in the slot that starts at start, if the ring still holds it.
func (t *tier) get(start int64, j, n int) sample {
	i := int((start / t.res) % int64(len(t.at)))
	if t.at[i] != start {
		return sample{}
	}
	return sample{V: t.vals[i*n+j], Kind: t.kinds[i*n+j]}
}

// bin is one plot column's worth of a series: its sample, and whether the line joins it to
// the previous bin that has one (false across a gap in the data).
type bin struct {
	sample
	Joined bool
}

// bins divides window w into cols columns and gives series j's sample in each: the columns'
// aggregate of values, else a bound, else nothing. Columns narrower than a slot repeat the
// slot's sample only in the column where it starts and are joined to it, so a fine plot of a
// coarse series is a line, not dots.
func (h *history) bins(j int, w timeWindow, cols int) []bin {
	out := make([]bin, cols)
	if cols <= 0 || j < 0 || j >= h.n {
		return out
	}
	t := &h.fine
	if w.Span > time.Duration(len(h.fine.at)-30)*time.Second {
		t = &h.coarse
	}
	res := t.res
	start, end := w.Start().Unix(), w.End.Unix()
	first := start - start%res
	lastCol, lastSlot := -1, int64(0)
	sum, n, seen := 0.0, 0, false
	var bound sample
	emit := func(c int) {
		switch {
		case n > 0 && h.aggs[j] == aggMax:
			out[c].sample = sample{V: sum, Kind: valueKind}
		case n > 0:
			out[c].sample = sample{V: sum / float64(n), Kind: valueKind}
		case bound.Kind != noSample:
			out[c].sample = bound
		}
	}
	for s := first; s <= end; s += res {
		c := w.col(time.Unix(max(s, start), 0), cols)
		if c < 0 {
			continue
		}
		if c != lastCol {
			if lastCol >= 0 {
				emit(lastCol)
			}
			sum, n, seen, bound, lastCol = 0, 0, false, sample{}, c
		}
		smp := t.get(s, j, h.n)
		if smp.Kind == noSample {
			continue
		}
		if !seen {
			// Joined when no slot between this column's first sample and the last one was empty.
			out[c].Joined, seen = lastSlot != 0 && s-lastSlot == res, true
		}
		lastSlot = s
		switch smp.Kind {
		case valueKind:
			if h.aggs[j] == aggMax {
				sum = math.Max(sum, smp.V)
			} else {
				sum += smp.V
			}
			n++
		case upperBound, lowerBound:
			bound = smp
		case noSample:
		}
	}
	if lastCol >= 0 {
		emit(lastCol)
	}
	return out
}
