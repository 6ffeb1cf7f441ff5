package tui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen/curve"
)

// curvesScreen is the Curves view of the demo tuning at w x h, without styles.
func curvesScreen(t *testing.T, w, h int, edit func(*tuneState)) string {
	t.Helper()
	d := newDriver(t, w, h, func(dp *Deps) { dp.NoColor = true })
	d.second()
	d.m.c.s.tune = demoTune()
	if edit != nil {
		edit(&d.m.c.s.tune)
	}
	d.showView(curvesTab)
	d.second()
	out := d.view()
	require.LessOrEqual(t, maxLineWidth(out), w)
	return ansi.Strip(out)
}

// plotArea is the lines between the plot's title and its X labels.
func plotArea(out string) (plot []string, xLabels string) {
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "(y) against"):
			in = true
		case in && strings.Contains(l, "└"):
			in = false
		case in:
			plot = append(plot, l)
		case xLabels == "" && plot != nil:
			xLabels = l
		}
	}
	return plot, xLabels
}

func TestCurvesTickBothAxesWithUnitsAndLabelEachProbe(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		out := curvesScreen(t, sz[0], sz[1], nil)
		plot, xl := plotArea(out)
		require.NotEmpty(t, plot, "%v", sz)
		var yTicks []string
		for _, l := range plot {
			if m := regexp.MustCompile(`^ *(\S+)┤`).FindStringSubmatch(l); m != nil {
				yTicks = append(yTicks, m[1])
			}
		}
		assert.GreaterOrEqual(t, len(yTicks), 3, "%v: ticks between the ends: %v", sz, yTicks)
		for _, y := range yTicks {
			assert.Regexp(t, `^(0|[\d.]+(ms|s))$`, y, "%v: a Y tick with its unit", sz)
		}
		x := regexp.MustCompile(`[\d.]+k? tok/s`).FindAllString(xl, -1)
		assert.GreaterOrEqual(t, len(x), 3, "%v: X ticks with units between the ends: %q", sz, xl)
		body := strings.Join(plot, "\n")
		for _, c := range []string{"8", "16", "48", "64"} {
			assert.Regexp(t, `[*+K]`+c+`\b|\b`+c+`[*+K]`, body, "%v: the probe at C=%s is labelled", sz, c)
		}
		assert.Contains(t, out, "numbers: C of each probe", "%v", sz)
	}
}

// Two settings that measured the same: both curves stay visible, and the legend says why one
// is a cell off.
func TestIdenticalCurvesStayDistinguishable(t *testing.T) {
	out := curvesScreen(t, 120, 40, func(tn *tuneState) {
		tn.curves[1].Probes = tn.curves[0].Probes
		tn.curves[1].Knee = tn.curves[0].Knee
	})
	plot, _ := plotArea(out)
	body := strings.Join(plot, "\n")
	assert.NotContains(t, body, "#", "no collapsed mark")
	assert.GreaterOrEqual(t, strings.Count(body, "+"), 4, "the second curve's points are drawn")
	assert.GreaterOrEqual(t, strings.Count(body, "*"), 4, "and the first's")
	assert.Contains(t, out, "curves overlap")
	sep := curvesScreen(t, 120, 40, func(tn *tuneState) { tn.curves = tn.curves[:1] })
	assert.NotContains(t, sep, "curves overlap", "one curve overlaps nothing")
}

// A probe's number goes where it touches no other mark or number, however close the curves:
// "31K28+31" cannot be read. Here the right of the probe at column 10 ends against another
// curve's mark at 13, so its number goes to its left.
func TestCurveLabelsNeverRunTogether(t *testing.T) {
	ax := curveAxes{x: yScale{Top: 100}, y: yScale{Top: 100}, rows: 5, cols: 40}
	g := &curveGrid{points: map[[2]int]bool{}}
	g.cells = make([][]cell, ax.rows)
	for r := range g.cells {
		g.cells[r] = make([]cell, ax.cols)
	}
	row, col := ax.row(50), ax.col(10*100/39.0)
	require.Equal(t, 10, col)
	g.points[[2]int{row, col}] = true     // the probe's own mark
	g.points[[2]int{row, col + 3}] = true // another curve's, two cells right
	g.label(ax, curve.Series{Points: []curve.Point{{X: 10 * 100 / 39.0, Y: 50, Label: "28"}}})
	assert.Equal(t, '2', g.cells[row][col-2].r, "the number goes left")
	assert.Equal(t, '8', g.cells[row][col-1].r)
	assert.Zero(t, g.cells[row][col+1].r, "not into the gap before the other mark")
}
