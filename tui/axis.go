package tui

import (
	"math"
	"strconv"
	"time"
)

// chartWindows are the spans the z key cycles through; defaultWindow indexes the first one.
var chartWindows = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

const defaultWindow = 1 // 5 minutes

// timeWindow is the span every chart shows, ending at the same instant, so one event lines up
// across charts: the same range, the same ticks, the same columns.
type timeWindow struct {
	End  time.Time // the right edge, on a whole second
	Span time.Duration
}

// newTimeWindow ends at now rounded down to the second: every chart drawn in one refresh
// shares it, and charts drawn a second apart move by whole seconds.
func newTimeWindow(now time.Time, span time.Duration) timeWindow {
	return timeWindow{End: now.Truncate(time.Second), Span: span}
}

// minFitted is the narrowest fitted window: the first seconds of data are not stretched
// across the whole chart.
const minFitted = 30 * time.Second

// fittedWindow is the chosen window while the data fill it, else one that starts at the
// first sample (rounded up to 10 s, at least minFitted): the data span the chart from the
// start instead of huddling at its right edge, and it scrolls once full.
func fittedWindow(now time.Time, chosen time.Duration, first time.Time) timeWindow {
	w := newTimeWindow(now, chosen)
	if first.IsZero() {
		return w
	}
	age := w.End.Sub(first)
	span := max((age+10*time.Second-1)/(10*time.Second)*(10*time.Second), minFitted)
	w.Span = min(span, chosen)
	return w
}

// Start is the left edge.
func (w timeWindow) Start() time.Time { return w.End.Add(-w.Span) }

// col is the column (0..cols-1) that holds instant t, or -1 outside the window.
func (w timeWindow) col(t time.Time, cols int) int {
	if cols <= 0 || t.Before(w.Start()) || t.After(w.End) {
		return -1
	}
	c := int(float64(t.Sub(w.Start())) / float64(w.Span) * float64(cols))
	return min(c, cols-1)
}

// xTick is one time tick: its instant, its column and its label.
type xTick struct {
	At    time.Time
	Col   int
	Label string
}

// xSteps are the tick spacings, from the finest: round instants a clock shows.
var xSteps = []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}

// xTicks places time ticks on round instants (multiples of a step from xSteps since the Unix
// epoch, so 12:04:30, 12:05:00, ...), the finest step whose labels keep two cells apart in
// cols columns. Labels are clock times, seconds shown only when the step is below a minute.
func xTicks(w timeWindow, cols int) []xTick {
	if cols <= 0 || w.Span <= 0 {
		return nil
	}
	for _, step := range xSteps {
		label := tickFormat(step)
		room := len(label) + 2
		n := int(w.Span / step)
		if n*room > cols && step != xSteps[len(xSteps)-1] {
			continue
		}
		var ticks []xTick
		first := w.Start().Truncate(step)
		if first.Before(w.Start()) {
			first = first.Add(step)
		}
		for t := first; !t.After(w.End); t = t.Add(step) {
			ticks = append(ticks, xTick{At: t, Col: w.col(t, cols), Label: t.Format(label)})
		}
		return ticks
	}
	return nil
}

func tickFormat(step time.Duration) string {
	if step < time.Minute {
		return "15:04:05"
	}
	return "15:04"
}

// yScale is a chart's vertical range: 0 to Top, with ticks at multiples of Step.
type yScale struct {
	Top, Step float64
}

// Ticks are the tick values from 0 to Top.
func (s yScale) Ticks() []float64 {
	if s.Step <= 0 {
		return nil
	}
	n := int(math.Round(s.Top / s.Step))
	out := make([]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		out = append(out, float64(i)*s.Step)
	}
	return out
}

// niceScale is the smallest range from 0 that covers maxV with at most maxIntervals intervals
// of a 1-2-5 step (1, 2, 5, 10, 20, 50, ...). Without data (maxV not positive) the range is
// 0..1.
func niceScale(maxV float64, maxIntervals int) yScale {
	maxIntervals = max(maxIntervals, 1)
	if !(maxV > 0) || math.IsInf(maxV, 0) {
		maxV = 1
	}
	p := math.Pow(10, math.Floor(math.Log10(maxV/float64(maxIntervals))))
	for {
		for _, m := range []float64{1, 2, 5} {
			step := m * p
			if n := math.Ceil(maxV/step - 1e-9); n <= float64(maxIntervals) {
				return yScale{Top: n * step, Step: step}
			}
		}
		p *= 10
	}
}

// maxIntervals is how many Y intervals fit in rows: a label every other row at most, and never
// more than five.
func maxIntervals(rows int) int { return min(max((rows-1)/2, 1), 5) }

// unit is what a chart's Y axis measures.
type unit int

const (
	unitMs unit = iota
	unitTokPerSec
	unitPercent
	unitRequests
)

func (u unit) String() string {
	switch u {
	case unitMs:
		return "ms"
	case unitTokPerSec:
		return "tok/s"
	case unitPercent:
		return "%"
	case unitRequests:
		return "req"
	}
	return "?"
}

// axisLabel is a Y tick's label with its unit: "0", "20ms", "1.5s", "2k tok/s", "40%", "8 req".
func axisLabel(v float64, u unit) string {
	if v == 0 {
		return "0"
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	switch u {
	case unitMs:
		if v >= 1000 {
			return num(roundSig(v/1000)) + "s"
		}
		return num(roundSig(v)) + "ms"
	case unitTokPerSec:
		return siAxis(v) + " tok/s"
	case unitPercent:
		return num(roundSig(v)) + "%"
	case unitRequests:
		return siAxis(v) + " req"
	}
	return num(v)
}

// value is a reading in the chart's unit, for a legend: "38ms", "1.2k tok/s", "45%".
func (u unit) value(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	switch u {
	case unitMs:
		return fmtMs(v)
	case unitTokPerSec:
		return siNumber(v)
	case unitPercent:
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	case unitRequests:
		return siNumber(v)
	}
	return siNumber(v)
}

// siAxis is a tick value with a k/M suffix and no needless digits: "500", "2k", "1.5k", "2M".
func siAxis(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(roundSig(v/1e6), 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(roundSig(v/1e3), 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(roundSig(v), 'f', -1, 64)
}

// roundSig drops the float noise of a tick (0.30000000000000004 becomes 0.3).
func roundSig(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return r
}
