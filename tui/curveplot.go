package tui

import (
	"math"
	"strings"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/NimbleMarkets/ntcharts/canvas/graph"
	"github.com/vllmtop/vllmtop/loadgen/curve"
)

// The Curves view draws its own plot of the tuning curves rather than curve.Text (the CLI's
// plain-text plot): ticks with units on both axes, each probe labelled with its load, the
// series' points joined, and a point that would hide another's shifted a cell and said so.

// curveGrid is the plot being drawn: its cells and what it had to do.
type curveGrid struct {
	cells   [][]cell
	points  map[[2]int]bool // cells that hold a probe's mark
	overlap bool            // a point was shifted off another's
	above   bool            // a point above the clipped top
}

// curveAxes are the plot's ranges and where a value falls.
type curveAxes struct {
	x, y       yScale
	rows, cols int
	ms         bool // Y is in milliseconds
	clipped    bool // Y stops at four times the SLO
}

func (a curveAxes) row(v float64) int {
	r := a.rows - 1 - int(math.Round(math.Min(v, a.y.Top)/a.y.Top*float64(a.rows-1)))
	return min(max(r, 0), a.rows-1)
}

func (a curveAxes) col(v float64) int {
	c := int(math.Round(v / a.x.Top * float64(a.cols-1)))
	return min(max(c, 0), a.cols-1)
}

func (a curveAxes) yLabel(v float64) string {
	if a.ms {
		return axisLabel(v, unitMs)
	}
	if v == 0 {
		return "0"
	}
	return siAxis(v)
}

// newCurveAxes sets the ranges over every point and the SLO, Y clipped at four times the SLO
// so that the knee stays in view.
func newCurveAxes(ch curve.Chart, rows, cols int, ms bool) curveAxes {
	xmax, ymax, clipped := 0.0, 0.0, false
	for _, s := range ch.Series {
		for _, p := range s.Points {
			xmax, ymax = math.Max(xmax, p.X), math.Max(ymax, p.Y)
		}
	}
	if ch.SLOLabel != "" {
		ymax = math.Max(ymax, ch.SLO)
		if ch.SLO > 0 && ymax > 4*ch.SLO {
			ymax, clipped = 4*ch.SLO, true
		}
	}
	return curveAxes{x: niceScale(xmax, min(max(cols/12, 1), 8)), y: niceScale(ymax, maxIntervals(rows)),
		rows: rows, cols: cols, ms: ms, clipped: clipped}
}

// renderCurves is the plot in width cells: rows of plot, the X axis and its labels, and the
// legend (at most two lines). unitName names the load ("C" or "req/s").
func renderCurves(st *Styles, ch curve.Chart, width, rows int, ms bool, unitName string) []string {
	gutter := 0
	probe := newCurveAxes(ch, rows, 10, ms)
	for _, v := range probe.y.Ticks() {
		gutter = max(gutter, len(probe.yLabel(v)))
	}
	cols := width - gutter - 1
	if cols < 10 || rows < 3 {
		return nil
	}
	ax := newCurveAxes(ch, rows, cols, ms)
	g := &curveGrid{cells: make([][]cell, rows), points: map[[2]int]bool{}}
	for r := range g.cells {
		g.cells[r] = make([]cell, cols)
	}
	if ch.SLOLabel != "" {
		for c := range g.cells[ax.row(ch.SLO)] {
			g.cells[ax.row(ch.SLO)][c] = cell{r: '-', style: styBad}
		}
	}
	for i, s := range ch.Series {
		g.join(ax, s, i)
	}
	for i, s := range ch.Series {
		g.mark(ax, s, i)
	}
	for _, s := range ch.Series {
		g.label(ax, s)
	}
	ticks := map[int]string{}
	for _, v := range ax.y.Ticks() {
		ticks[ax.row(v)] = ax.yLabel(v)
	}
	out := make([]string, 0, rows+4)
	for r, row := range g.cells {
		label, tick := ticks[r]
		axis := "│"
		if tick {
			axis = "┤"
		}
		out = append(out, st.Axis.Render(padLeft(label, gutter)+axis)+renderCells(st, row))
	}
	out = append(out, curveXAxis(st, ax, gutter)...)
	return append(out, curveLegend(st, ch, g, ax, unitName, width)...)
}

// join draws the lines between a series' consecutive points, in its colour, where nothing else
// is drawn.
func (g *curveGrid) join(ax curveAxes, s curve.Series, i int) {
	for j := 1; j < len(s.Points); j++ {
		a, b := s.Points[j-1], s.Points[j]
		from := canvas.Point{X: ax.col(a.X), Y: ax.row(a.Y)}
		to := canvas.Point{X: ax.col(b.X), Y: ax.row(b.Y)}
		for _, pt := range graph.GetLinePoints(from, to) {
			if c := &g.cells[pt.Y][pt.X]; c.r == 0 {
				*c = cell{r: '·', style: stySeries + i}
			}
		}
	}
}

// mark draws a series' probes with its marker (K at its knee, ^ above the top). A cell that
// holds another probe already moves this one to the nearest free neighbour.
func (g *curveGrid) mark(ax curveAxes, s curve.Series, i int) {
	m := curve.Markers[i%len(curve.Markers)]
	for j, p := range s.Points {
		r, c := ax.row(p.Y), ax.col(p.X)
		glyph, style := m, stySeries+i
		switch {
		case p.Y > ax.y.Top:
			glyph, g.above = '^', true
		case j == s.Knee:
			glyph, style = 'K', styGood
		}
		if g.points[[2]int{r, c}] {
			for _, d := range [][2]int{{0, 1}, {0, -1}, {-1, 0}, {1, 0}, {-1, 1}, {1, 1}, {-1, -1}, {1, -1}} {
				nr, nc := r+d[0], c+d[1]
				if nr >= 0 && nr < ax.rows && nc >= 0 && nc < ax.cols && !g.points[[2]int{nr, nc}] {
					r, c, g.overlap = nr, nc, true
					break
				}
			}
		}
		g.points[[2]int{r, c}] = true
		g.cells[r][c] = cell{r: glyph, style: style}
	}
}

// label writes each probe's load beside its mark, right of it or else left, where it covers
// no probe and no other label and touches none but its own mark: run together with another
// ("31K28+31K") the numbers cannot be told apart, and the list under the plot has them all.
func (g *curveGrid) label(ax curveAxes, s curve.Series) {
	for _, p := range s.Points {
		r, c := ax.row(p.Y), ax.col(p.X)
		text := []rune(p.Label)
		for _, start := range []int{c + 1, c - len(text)} {
			if start < 0 || start+len(text) > ax.cols || !g.free(r, start, len(text)) {
				continue
			}
			if l, rt := start-1, start+len(text); l >= 0 && l != c && g.points[[2]int{r, l}] || rt < ax.cols && rt != c && g.points[[2]int{r, rt}] {
				continue
			}
			for k, ch := range text {
				g.cells[r][start+k] = cell{r: ch, style: styPlain}
				g.points[[2]int{r, start + k}] = true
			}
			break
		}
	}
}

// free reports whether n cells from c on row r hold no probe or label (a line or the SLO
// may be written over).
func (g *curveGrid) free(r, c, n int) bool {
	for k := c; k < c+n; k++ {
		if g.points[[2]int{r, k}] {
			return false
		}
	}
	return true
}

// curveXAxis is the X axis with a tick at each round throughput, and the ticks' labels with
// their unit ("2k tok/s"), a label left out where it would touch the one before.
func curveXAxis(st *Styles, ax curveAxes, gutter int) []string {
	line := []rune(strings.Repeat("─", ax.cols))
	labels := []rune(strings.Repeat(" ", ax.cols))
	end := -1
	for _, v := range ax.x.Ticks() {
		c := ax.col(v)
		line[c] = '┴'
		l := []rune(axisLabel(v, unitTokPerSec))
		start := min(c, ax.cols-len(l))
		if start <= end || start < 0 {
			continue
		}
		copy(labels[start:], l)
		end = start + len(l)
	}
	pad := strings.Repeat(" ", gutter)
	return []string{st.Axis.Render(pad + "└" + string(line)), st.Axis.Render(pad + " " + strings.TrimRight(string(labels), " "))}
}

// curveLegend names each series' marker and the marks the plot used, on at most two lines.
func curveLegend(st *Styles, ch curve.Chart, g *curveGrid, ax curveAxes, unitName string, width int) []string {
	var items []string
	for i, s := range ch.Series {
		items = append(items, st.series(i).Style.Render(string(curve.Markers[i%len(curve.Markers)])+" "+clean(s.Name)))
	}
	for _, s := range ch.Series {
		if s.Knee >= 0 {
			items = append(items, st.Good.Render("K")+" knee")
			break
		}
	}
	if ch.SLOLabel != "" {
		items = append(items, st.Bad.Render("---")+" SLO "+clean(ch.SLOLabel))
	}
	items = append(items, st.Muted.Render("numbers: "+unitName+" of each probe"))
	if g.above || ax.clipped {
		items = append(items, "^ above "+ax.yLabel(ax.y.Top))
	}
	if g.overlap {
		items = append(items, st.Warn.Render("curves overlap: a point shifted a cell off another"))
	}
	return wrapItems(items, "   ", width, 2)
}
