package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/NimbleMarkets/ntcharts/canvas/runes"
	tslc "github.com/NimbleMarkets/ntcharts/linechart/timeserieslinechart"
	"github.com/charmbracelet/lipgloss"
)

// series is one line of a chart: a bounded ring of per-second samples.
type series struct {
	name   string
	times  []time.Time
	values []float64
}

const maxSamples = 600 // ten minutes at one sample a second

func (s *series) push(t time.Time, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if len(s.times) == maxSamples {
		copy(s.times, s.times[1:])
		copy(s.values, s.values[1:])
		s.times, s.values = s.times[:maxSamples-1], s.values[:maxSamples-1]
	}
	s.times = append(s.times, t)
	s.values = append(s.values, v)
}

// chart is a titled time-series panel over a sliding window. It keeps its own rings (ntcharts'
// buffers only grow), recomputes the Y range from the visible window (ntcharts' auto range
// only grows), and caches its rendered string: ntcharts renders cell by cell, so it is drawn
// only when the data or the size change.
type chart struct {
	title  string
	unit   string
	series []*series
	window time.Duration
	w, h   int
	cache  string
	epochs []time.Time
}

func newChart(title, unit string, names ...string) *chart {
	c := &chart{title: title, unit: unit, window: 3 * time.Minute}
	for _, n := range names {
		c.series = append(c.series, &series{name: n})
	}
	return c
}

func (c *chart) push(t time.Time, values ...float64) {
	for i, v := range values {
		if i < len(c.series) {
			c.series[i].push(t, v)
		}
	}
}

func (c *chart) markEpoch(t time.Time) {
	c.epochs = append(c.epochs, t)
	if len(c.epochs) > 100 {
		c.epochs = c.epochs[1:]
	}
}

func (c *chart) firstTime() (time.Time, bool) {
	var first time.Time
	for _, s := range c.series {
		if len(s.times) > 0 && (first.IsZero() || s.times[0].Before(first)) {
			first = s.times[0]
		}
	}
	return first, !first.IsZero()
}

func (c *chart) setSize(w, h int) { c.w, c.h = w, h }

// latest is the newest value of series i, and whether there is one.
func (c *chart) latest(i int) (float64, bool) {
	s := c.series[i]
	if len(s.values) == 0 {
		return 0, false
	}
	return s.values[len(s.values)-1], true
}

// render draws the chart into its cache, ending at now.
func (c *chart) render(st Styles, now time.Time) {
	w, h := c.w, c.h
	legend := c.legend(st)
	if w < 20 || h < 5 {
		c.cache = lipgloss.NewStyle().Width(max(w, 0)).Render(truncate(st.Title.Render(c.title)+" "+legend, w))
		return
	}
	// The window grows from the first sample up to its full span, so a new chart is not a
	// line squeezed against its right edge.
	from := now.Add(-c.window)
	if first, ok := c.firstTime(); ok && first.After(from) {
		from = first
		if now.Sub(from) < 30*time.Second {
			from = now.Add(-30 * time.Second)
		}
	}
	maxY := 0.0
	for _, s := range c.series {
		for i, t := range s.times {
			if !t.Before(from) {
				maxY = math.Max(maxY, s.values[i])
			}
		}
	}
	maxY = niceCeil(maxY)
	unit := c.unit
	m := tslc.New(w, h-1,
		tslc.WithTimeRange(from, now),
		tslc.WithYRange(0, maxY),
		tslc.WithXYSteps(4, 2),
		tslc.WithAxesStyles(st.Muted, st.Muted),
		tslc.WithXLabelFormatter(func(_ int, v float64) string {
			return "-" + fmtAgo(now.Sub(time.Unix(int64(v), 0)))
		}),
		tslc.WithYLabelFormatter(func(_ int, v float64) string { return fmtAxis(v, unit) }),
	)
	m.SetViewTimeAndYRange(from, now, 0, maxY)
	for i, s := range c.series {
		style := st.Base
		if len(st.Series) > 0 {
			style = st.Series[i%len(st.Series)]
		}
		m.SetDataSetStyle(s.name, style)
		m.SetDataSetLineStyle(s.name, runes.ArcLineStyle)
		for j, t := range s.times {
			if !t.Before(from) {
				m.PushDataSet(s.name, tslc.TimePoint{Time: t, Value: s.values[j]})
			}
		}
	}
	for _, e := range c.epochs {
		if e.After(from) {
			m.SetColumnBackgroundStyle(e, st.Selected)
		}
	}
	m.DrawBrailleAll()
	body := m.View()
	title := truncate(st.Title.Render(c.title)+"  "+legend, w)
	c.cache = lipgloss.JoinVertical(lipgloss.Left, title, clampLines(body, w, h-1))
}

func (c *chart) legend(st Styles) string {
	var parts []string
	for i, s := range c.series {
		style := st.Base
		if len(st.Series) > 0 {
			style = st.Series[i%len(st.Series)]
		}
		v := "–"
		if x, ok := c.latest(i); ok {
			v = fmtValue(x, c.unit)
		}
		parts = append(parts, style.Render("━ "+s.name)+" "+st.Value.Render(v))
	}
	return strings.Join(parts, "  ")
}

func (c *chart) view() string { return c.cache }

// niceCeil rounds up to 1, 2 or 5 times a power of ten, so axis labels read well.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtAgo(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s >= 60 {
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%ds", s)
}

func fmtAxis(v float64, unit string) string {
	switch unit {
	case "ms":
		if v >= 1000 {
			return fmt.Sprintf("%.1fs", v/1000)
		}
		return fmt.Sprintf("%.0fms", v)
	case "%":
		if v < 10 && v != math.Trunc(v) {
			return fmt.Sprintf("%.1f%%", v)
		}
		return fmt.Sprintf("%.0f%%", v)
	}
	return siNumber(v)
}

func fmtValue(v float64, unit string) string {
	switch unit {
	case "ms":
		if v >= 1000 {
			return fmt.Sprintf("%.2fs", v/1000)
		}
		if v >= 100 {
			return fmt.Sprintf("%.0fms", v)
		}
		return fmt.Sprintf("%.1fms", v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	case "/s":
		return siNumber(v) + "/s"
	}
	return siNumber(v)
}

func siNumber(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
