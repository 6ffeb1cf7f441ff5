package tui

import (
	"fmt"
	"math"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/loadgen/curve"
)

const curvesTab = "Curves"

// curvesPanel plots the tuning runs' probes: output throughput against the SLO's metric, one
// series per server setting, the SLO line and each series' knee; below, each setting's knee
// and probes. The plot is the dashboard's own (renderCurves), of the chart curve.Text draws
// for the CLI.
type curvesPanel struct {
	noKeys
	c     *common
	w, h  int
	cache string
}

func newCurves(c *common) panel { return &curvesPanel{c: c} }

func (p *curvesPanel) SetSize(w, h int) { p.w, p.h = w, h }

func (p *curvesPanel) View() string { return p.cache }

func (p *curvesPanel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case refreshMsg:
		// The plot changes with a probe, at most once a second: redrawing it at every tick
		// would cost a styled render per cell.
		if !msg.second && p.cache != "" {
			return nil
		}
		p.cache = fit(p.render(), p.w, p.h)
	case restyleMsg, tea.KeyMsg:
		p.cache = fit(p.render(), p.w, p.h)
	}
	return nil
}

// tuneChart is the curves as curve's chart: X the output throughput, Y the SLO's first metric.
func tuneChart(t *tuneState) curve.Chart {
	metric := sloMetric(t.slo)
	c := curve.Chart{XLabel: "output tok/s", YLabel: metric}
	if len(t.slo) > 0 {
		c.SLO, c.SLOLabel = t.slo[0].Target, t.slo[0].Metric+t.slo[0].Op+trimFloat(t.slo[0].Target)
	}
	for _, cv := range t.curves {
		s := curve.Series{Name: cv.Name, Knee: -1}
		for _, pr := range (loadgen.SLOResult{Probes: cv.Probes}).ByValue() {
			x, _ := docNumber(pr.Docs, "output_throughput")
			y, ok := docNumber(pr.Docs, metric)
			if !ok || math.IsNaN(y) {
				continue
			}
			if cv.Knee > 0 && pr.Value == cv.Knee {
				s.Knee = len(s.Points)
			}
			s.Points = append(s.Points, curve.Point{X: x, Y: y, Label: fmt.Sprint(pr.Value)})
		}
		c.Series = append(c.Series, s)
	}
	return c
}

func (p *curvesPanel) render() string {
	st := &p.c.styles
	t := &p.c.s.tune
	out := p.title()
	chart := tuneChart(t)
	points := 0
	for _, s := range chart.Series {
		points += len(s.Points)
	}
	if points == 0 {
		out = append(out, "")
		out = append(out, wrapWords("No tuning run yet. S searches the load for the largest concurrency (or rate, in rate mode) that meets "+
			"the SLO (--sla, or typed when asked); W restarts the server at each --sweep-utils value and searches at each. "+
			"Each probe is a run in Runs; E exports them.", p.w)...)
		return strings.Join(out, "\n")
	}
	// The per-setting lines under the plot, then the plot in what is left. A setting's probes
	// wrap onto as many lines as leave the plot minPlot rows; the last one is cut if it must be.
	const minPlot = 8
	spare := p.h - len(out) - 1 - 4 - minPlot - len(t.curves)
	perCurve := 1
	if len(t.curves) > 0 {
		perCurve += max(spare, 0) / len(t.curves)
	}
	var notes []string
	for i, cv := range t.curves {
		notes = append(notes, p.curveNotes(i, cv, perCurve)...)
	}
	legendNote := st.Muted.Render(fmt.Sprintf("each probe: %s / output tok/s", sloMetric(t.slo)))
	room := p.h - len(out) - len(notes) - 1
	metric := sloMetric(t.slo)
	out = append(out, st.Label.Render(truncate(clean(metric)+" (y) against output tok/s (x)", p.w)))
	// The plot takes what is left but its title, axis, labels and a legend of up to two lines.
	unitName := curvesUnit(t.curves)
	out = append(out, renderCurves(st, chart, p.w, max(room-5, 5), strings.HasSuffix(metric, "_ms"), unitName)...)
	out = append(out, notes...)
	out = append(out, legendNote)
	return strings.Join(out, "\n")
}

// title is the panel's title and, while a run is under way, its progress.
func (p *curvesPanel) title() []string {
	st := &p.c.styles
	t := &p.c.s.tune
	title := st.Title.Render("Tuning curves")
	switch {
	case t.kind == tuneSearch:
		title += st.Muted.Render("  (SLO search under way)")
	case t.kind == tuneSweep:
		title += st.Muted.Render("  (utilisation sweep under way)")
	}
	out := []string{title}
	if t.kind != tuneIdle && t.progress != "" {
		out = append(out, st.Warn.Render(truncate(t.progress+" · "+sloMetric(t.slo)+" of the last probe · S/W stops", p.w)))
	}
	return out
}

// curveNotes are the i-th setting's lines under the plot: its knee, then its probes, on at
// most lines lines.
func (p *curvesPanel) curveNotes(i int, cv tuneCurve, lines int) []string {
	st := &p.c.styles
	t := &p.c.s.tune
	glyph := string(curve.Markers[i%len(curve.Markers)])
	line := st.series(i).Style.Render(glyph+" "+cv.Name) + "  "
	if cv.Err != "" {
		return []string{truncate(line+st.Bad.Render(cv.errText()), p.w)}
	}
	if cv.Knee > 0 {
		line += st.Good.Render("knee " + loadValue(cv.Variable, cv.Knee))
	} else if cv.SLO != nil && len(cv.Probes) > 0 {
		line += st.Bad.Render("no probe met the SLO")
	}
	var probes []string
	for _, pr := range (loadgen.SLOResult{Probes: cv.Probes}).ByValue() {
		y, _ := docNumber(pr.Docs, sloMetric(t.slo))
		x, _ := docNumber(pr.Docs, "output_throughput")
		mark := ""
		if cv.SLO != nil {
			mark = map[bool]string{true: "✓", false: "✗"}[pr.Passed()]
		}
		if pr.Unsustained != "" {
			mark = "✗ fell behind" // its latencies are a queue's first, not the rate's
		}
		probes = append(probes, st.Muted.Render(fmt.Sprintf("%s %s/%s%s", loadValue(cv.Variable, pr.Value), fmtMs(y), siNumber(x), mark)))
	}
	items := []string{strings.TrimRight(line, " ")}
	if cv.SLO != nil && cv.SLO.Text(",") != t.slo.Text(",") {
		items = append(items, st.Muted.Render("for "+cv.SLO.Text(", "))) // an earlier run's SLO
	}
	if note := cv.notTheLimit(cv.SLO.Text(", ")); note != "" {
		// Right after the knee, in two pieces that wrap: it says what the knee is not.
		first, rest, _ := strings.Cut(note, "; ")
		items = append(items, st.Warn.Render(first+";"), st.Warn.Render(rest))
	}
	var out []string
	for j, l := range wrapItems(append(items, probes...), "  ", p.w-2, lines) {
		if j > 0 {
			l = "  " + l // a continuation of the setting above
		}
		out = append(out, l)
	}
	return out
}

// curvesUnit names what the numbers on the plot are: the load variable of the curves, or
// both where runs searched both.
func curvesUnit(cs []tuneCurve) string {
	conc, rate := false, false
	for _, cv := range cs {
		if cv.Variable == loadgen.SLORate {
			rate = true
		} else {
			conc = true
		}
	}
	switch {
	case conc && rate:
		return "C or req/s (see each setting)"
	case rate:
		return "req/s"
	}
	return "C"
}
