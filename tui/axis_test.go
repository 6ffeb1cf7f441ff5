package tui

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/themes"
)

// is125 reports whether v is 1, 2 or 5 times a power of ten.
func is125(v float64) bool {
	e := math.Floor(math.Log10(v))
	m := v / math.Pow(10, e)
	for _, x := range []float64{1, 2, 5, 10} {
		if math.Abs(m-x) < 1e-9 {
			return true
		}
	}
	return false
}

func TestNiceScale(t *testing.T) {
	cases := []struct {
		max       float64
		intervals int
		top, step float64
	}{
		{38, 3, 40, 20},
		{467, 4, 600, 200}, // not the 467ms top the issue saw: 0, 200, 400, 600
		{100, 4, 100, 50},
		{100, 5, 100, 20},
		{4.7, 4, 6, 2},
		{0.3, 3, 0.3, 0.1},
		{1, 1, 1, 1},
		{12500, 5, 15000, 5000},
		{7, 5, 8, 2},
		// Sad paths: no data, NaN, infinities, zero intervals.
		{0, 3, 1, 0.5},
		{math.NaN(), 3, 1, 0.5},
		{math.Inf(1), 3, 1, 0.5},
		{-3, 3, 1, 0.5},
		{50, 0, 50, 50},
	}
	for _, c := range cases {
		s := niceScale(c.max, c.intervals)
		ticks := s.Ticks()
		require.NotEmpty(t, ticks, "%v", c.max)
		assert.True(t, is125(s.Step), "%v: step %v is a 1-2-5 multiple", c.max, s.Step)
		assert.Zero(t, ticks[0], "%v: ticks start at 0", c.max)
		for i, v := range ticks {
			assert.InDelta(t, float64(i)*s.Step, v, 1e-9, "%v: ticks are multiples of the step", c.max)
		}
		assert.LessOrEqual(t, len(ticks)-1, max(c.intervals, 1), "%v: at most the intervals asked for", c.max)
		if c.max > 0 && !math.IsInf(c.max, 0) {
			assert.GreaterOrEqual(t, s.Top, c.max, "%v: the range covers the data", c.max)
			assert.Less(t, s.Top-s.Step, c.max, "%v: and no more than a step beyond it", c.max)
		}
	}
}

func TestAxisLabelsHaveUnits(t *testing.T) {
	cases := []struct {
		v    float64
		u    unit
		want string
	}{
		{0, unitMs, "0"},
		{20, unitMs, "20ms"},
		{0.5, unitMs, "0.5ms"},
		{1500, unitMs, "1.5s"},
		{2000, unitMs, "2s"},
		{2000, unitTokPerSec, "2k tok/s"},
		{500, unitTokPerSec, "500 tok/s"},
		{1.5e6, unitTokPerSec, "1.5M tok/s"},
		{40, unitPercent, "40%"},
		{8, unitRequests, "8 req"},
		{0.30000000000000004, unitMs, "0.3ms"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, axisLabel(c.v, c.u), "%v %v", c.v, c.u)
	}
}

func TestXTicksAreRoundInstants(t *testing.T) {
	end := time.Date(2026, 11, 30, 12, 4, 37, 0, time.UTC)
	cases := []struct {
		span time.Duration
		cols int
		step time.Duration // the finest spacing whose labels fit
	}{
		{time.Minute, 200, 5 * time.Second},
		{time.Minute, 60, 10 * time.Second},
		{time.Minute, 50, 15 * time.Second},
		{time.Minute, 30, 30 * time.Second},
		{5 * time.Minute, 50, time.Minute},
		{5 * time.Minute, 200, 15 * time.Second},
		{15 * time.Minute, 50, 2 * time.Minute},
		{time.Hour, 90, 5 * time.Minute},
		{time.Hour, 60, 10 * time.Minute},
		{time.Hour, 10, time.Hour},
	}
	for _, c := range cases {
		w := timeWindow{End: end, Span: c.span}
		ticks := xTicks(w, c.cols)
		require.NotEmpty(t, ticks, "%v/%d", c.span, c.cols)
		for i, tk := range ticks {
			assert.Zero(t, tk.At.Unix()%int64(c.step/time.Second), "%v/%d: %v is a round instant", c.span, c.cols, tk.At)
			assert.False(t, tk.At.Before(w.Start()) || tk.At.After(w.End), "inside the window")
			if i > 0 {
				assert.Equal(t, c.step, tk.At.Sub(ticks[i-1].At), "%v/%d: evenly spaced", c.span, c.cols)
				assert.Greater(t, tk.Col, ticks[i-1].Col)
			}
			assert.Equal(t, w.col(tk.At, c.cols), tk.Col)
			assert.Equal(t, tk.At.Format(tickFormat(c.step)), tk.Label)
		}
		assert.LessOrEqual(t, len(ticks)*(len(ticks[0].Label)+2), c.cols+len(ticks[0].Label)+2, "%v/%d: the labels fit", c.span, c.cols)
	}
	// Sad paths.
	assert.Empty(t, xTicks(timeWindow{End: end, Span: time.Minute}, 0))
	assert.Empty(t, xTicks(timeWindow{End: end}, 40))
}

func TestEveryChartHasTheSameTicks(t *testing.T) {
	// What the user sees: at every size and every window, the four charts' time axes are
	// the same characters in the same columns, and every label is a round instant.
	label := regexp.MustCompile(`┴(\d\d:\d\d(:\d\d)?)`)
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		d := scripted(t, sz[0], sz[1], "dark", false)
		d.m.show(overviewTab)
		for range chartWindows {
			span := chartWindows[d.m.c.s.window]
			out := d.view()
			var axes []string
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "└") {
					axes = append(axes, l)
				}
			}
			require.Len(t, axes, 2, "%dx%d %v: two rows of charts", sz[0], sz[1], span)
			assert.Equal(t, axes[0], axes[1], "%dx%d %v: top and bottom axes identical", sz[0], sz[1], span)
			cells := []rune(axes[0])
			w := (sz[0] - 1) / 2
			assert.Equal(t, string(cells[:w]), string(cells[w+1:2*w+1]), "%dx%d %v: left and right axes identical", sz[0], sz[1], span)
			var at []time.Time
			for _, m := range label.FindAllStringSubmatch(string(cells[:w]), -1) {
				layout := "15:04"
				if m[2] != "" {
					layout = "15:04:05"
				}
				tm, err := time.Parse(layout, m[1])
				require.NoError(t, err)
				at = append(at, tm)
			}
			t.Logf("%dx%d %v: %q", sz[0], sz[1], span, axes[0])
			require.NotEmpty(t, at, "%dx%d %v: a labelled tick in %q", sz[0], sz[1], span, axes[0])
			if len(at) < 2 {
				d.press("z")
				continue
			}
			step := at[1].Sub(at[0])
			assert.Contains(t, []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
				time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}, step,
				"%dx%d %v: a round step", sz[0], sz[1], span)
			for i, tm := range at {
				assert.Zero(t, tm.Sub(tm.Truncate(step)), "%dx%d %v: %v is a round instant", sz[0], sz[1], span, tm)
				if i > 0 {
					assert.Equal(t, step, tm.Sub(at[i-1]), "%dx%d %v: evenly spaced", sz[0], sz[1], span)
				}
			}
			d.press("z")
		}
	}
	d := scripted(t, 120, 40, "dark", false)
	win := newTimeWindow(d.m.c.now(), chartWindows[d.m.c.s.window])
	assert.Equal(t, d.m.c.now().Truncate(time.Second), win.End, "the window ends on a whole second")
}

func TestABoundNeverMovesTheYRange(t *testing.T) {
	h := newHistory([]aggregate{aggMax, aggMax})
	start := t0
	for i := 0; i < 60; i++ {
		// A real TTFT near 40 ms, and a queue p99 known only to be at most 300 ms.
		h.push(start.Add(time.Duration(i)*time.Second), []sample{value(38 + float64(i%5)), {V: 300, Kind: upperBound}})
	}
	w := newTimeWindow(start.Add(59*time.Second), time.Minute)
	bins := h.bins(1, w, 100)
	assert.Zero(t, valueMax(bins), "bounds are not values")
	got := max(valueMax(h.bins(0, w, 100)), valueMax(bins))
	s := niceScale(got, 3)
	assert.Equal(t, 60.0, s.Top, "the axis is the real values' (at most 42ms), not the bound's 300ms")

	// A lower bound above the range is an arrow on the top row, an upper bound is not drawn.
	th, _ := themes.ByName("dark")
	st := NewStyles(th, false)
	lines := renderPlot(&st, plotSpec{W: w, Cols: 50, Rows: 6, Gutter: 5, Scale: s, Unit: unitMs, Series: []plotSeries{
		{Bins: h.bins(0, w, 100), Style: 0}, {Bins: bins, Style: 1},
	}})
	require.Len(t, lines, 7)
	for _, l := range lines {
		assert.NotContains(t, l, string(boundTick), "an upper bound above the top is not drawn")
	}
	lower := make([]bin, 100)
	lower[50] = bin{sample: sample{V: 9000, Kind: lowerBound}}
	lines = renderPlot(&st, plotSpec{W: w, Cols: 50, Rows: 6, Gutter: 5, Scale: s, Unit: unitMs, Series: []plotSeries{{Bins: lower}}})
	assert.Contains(t, lines[0], "^", "a lower bound above the top points up")
	// A bound within the range is one tick at the bound, in its own column.
	in := make([]bin, 100)
	in[10] = bin{sample: sample{V: 20, Kind: upperBound}}
	lines = renderPlot(&st, plotSpec{W: w, Cols: 50, Rows: 6, Gutter: 5, Scale: s, Unit: unitMs, Series: []plotSeries{{Bins: in}}})
	assert.Equal(t, 1, strings.Count(strings.Join(lines, "\n"), string(boundTick)))
}

// A quantile known only by its bucket bound for the whole window is a single tick at the right
// edge, at the bound's row, never a line across the chart.
func TestABoundOnlyQuantileIsATickAtTheEdgeNotALine(t *testing.T) {
	th, _ := themes.ByName("dark")
	for _, noColor := range []bool{false, true} {
		st := NewStyles(th, noColor)
		w := newTimeWindow(t0.Add(59*time.Second), time.Minute)
		n := subCols(&st, 40)
		bound := make([]bin, n)
		for i := range bound {
			bound[i] = bin{sample: sample{V: 300, Kind: upperBound}}
		}
		lines := renderPlot(&st, plotSpec{W: w, Cols: 40, Rows: 6, Gutter: 6, Scale: niceScale(500, 5), Unit: unitMs,
			Series: []plotSeries{{Bins: bound}}})
		plain := ansi.Strip(strings.Join(lines, "\n"))
		require.Equal(t, 1, strings.Count(plain, string(boundTick)), "noColor %v:\n%s", noColor, plain)
		for _, l := range strings.Split(plain, "\n") {
			if strings.Contains(l, string(boundTick)) {
				assert.True(t, strings.HasSuffix(l, string(boundTick)), "the tick is on the right edge: %q", l)
				assert.Contains(t, l, "300ms┤", "at the bound's row")
			}
		}
	}
}

// A label at the right edge sits left of its tick; close to the label before, it would read as
// that tick's, so it is left out.
func TestAFlippedTickLabelKeepsClearOfTheOneBefore(t *testing.T) {
	th, _ := themes.ByName("dark")
	st := NewStyles(th, true)
	axis := func(second int) string {
		return timeAxis(&st, plotSpec{Cols: 30, Ticks: []xTick{{Col: 14, Label: "12:02"}, {Col: second, Label: "12:04"}}})
	}
	assert.Contains(t, axis(29), "┴12:02────12:04┴", "room enough: left of its tick")
	assert.NotContains(t, axis(26), "12:04", "one cell after 12:02 it would read as the tick between them")
	assert.Contains(t, axis(26), "┴12:02──────┴")
}

func TestChartWindowFitsTheDataUntilItFills(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 40, 0, time.UTC)
	w := fittedWindow(now, 5*time.Minute, now.Add(-40*time.Second))
	assert.Equal(t, 40*time.Second, w.Span, "40 s of data span the chart, not its right eighth")
	assert.Equal(t, minFitted, fittedWindow(now, 5*time.Minute, now.Add(-3*time.Second)).Span)
	assert.Equal(t, 5*time.Minute, fittedWindow(now, 5*time.Minute, now.Add(-10*time.Minute)).Span, "never more than the chosen window")
	assert.Equal(t, time.Minute, fittedWindow(now, time.Minute, now.Add(-45*time.Minute)).Span)
	assert.Equal(t, 5*time.Minute, fittedWindow(now, 5*time.Minute, time.Time{}).Span, "no data: the chosen window")
}
