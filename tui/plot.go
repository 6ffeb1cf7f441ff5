package tui

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/NimbleMarkets/ntcharts/canvas/graph"
	"github.com/NimbleMarkets/ntcharts/canvas/runes"
	"github.com/charmbracelet/lipgloss"
)

// The plot is drawn here rather than by ntcharts' line charts, whose axes cannot put ticks on
// round instants or share columns between charts, and which join every point (no gaps): the
// braille raster and the line rasteriser are ntcharts' (runes.PatternDotsGrid,
// graph.GetLinePoints); the axes, ticks, gaps, bounds and epoch rules are ours.

// epochMark is where an epoch began, for a vertical rule labelled with its number.
type epochMark struct {
	At time.Time
	N  int
}

// plotSeries is one line of a plot: a bin per sub-column (two per cell with braille, one
// without colour) and the index of its style.
type plotSeries struct {
	Bins  []bin
	Style int
}

// plotSpec is everything one plot needs. Charts drawn in one refresh share W, Cols, Gutter and
// Ticks, so their columns line up.
type plotSpec struct {
	W      timeWindow
	Cols   int // plot cells, right of the axis
	Rows   int // plot rows, above the time axis
	Gutter int // cells for the Y labels
	Scale  yScale
	Unit   unit
	Series []plotSeries
	Epochs []epochMark
	Ticks  []xTick
	Name   string // written on the top row's left, where the plot is one band of a chart
}

// subCols is the number of bins a plot of cols cells takes: braille has two dots a cell.
func subCols(st *Styles, cols int) int {
	if st.NoColor {
		return cols
	}
	return 2 * cols
}

// cell styles: plain, axis, rule, good, bad, then series i at stySeries+i (-1: a blank cell).
const (
	styPlain = iota
	styAxis
	styRule
	styGood
	styBad
	stySeries
)

type cell struct {
	r     rune
	style int
}

// renderPlot draws the plot: Rows lines of Y labels, axis and data, then the time axis. Every
// line is Gutter+1+Cols cells wide.
func renderPlot(st *Styles, p plotSpec) []string {
	if p.Cols <= 0 || p.Rows <= 0 {
		return nil
	}
	cells := make([][]cell, p.Rows)
	for r := range cells {
		cells[r] = make([]cell, p.Cols)
	}
	top := p.Scale.Top
	if !(top > 0) {
		top = 1
	}
	subRows := 4 * p.Rows
	if st.NoColor {
		subRows = p.Rows
	}
	// gy is the sub-row of value v (0 at the top), clamped into the plot.
	gy := func(v float64) int {
		y := (subRows - 1) - int(math.Round(v/top*float64(subRows-1)))
		return min(max(y, 0), subRows-1)
	}
	rowOf := func(v float64) int {
		if st.NoColor {
			return gy(v)
		}
		return gy(v) / 4
	}
	if st.NoColor {
		drawGlyphs(st, p, cells, rowOf)
	} else {
		drawBraille(p, cells, gy)
	}
	drawBounds(st, p, cells, rowOf, top)
	drawEpochs(p, cells)
	for i, r := range []rune(p.Name) {
		if i < p.Cols-1 {
			cells[0][i] = cell{r: r, style: styRule}
		}
	}

	tickRows := map[int]string{}
	for _, v := range p.Scale.Ticks() {
		tickRows[rowOf(v)] = axisLabel(v, p.Unit)
	}
	out := make([]string, 0, p.Rows+1)
	for r := 0; r < p.Rows; r++ {
		label, isTick := tickRows[r]
		axis := "│"
		if isTick {
			axis = "┤"
		}
		line := st.Axis.Render(padLeft(label, p.Gutter)+axis) + renderCells(st, cells[r])
		out = append(out, line)
	}
	return append(out, timeAxis(st, p))
}

// drawBraille rasterises each series into its own dot grid and merges them: a cell shows the
// dots of every series in it, in the colour of the first series (the most important) present.
func drawBraille(p plotSpec, cells [][]cell, gy func(float64) int) {
	w, h := 2*p.Cols, 4*p.Rows
	for si := len(p.Series) - 1; si >= 0; si-- {
		s := p.Series[si]
		g := runes.NewPatternDotsGrid(w, h)
		px, py, have := 0, 0, false
		for x, b := range s.Bins {
			if x >= w {
				break
			}
			if b.Kind != valueKind {
				if b.Kind != noSample {
					have = false // a bound breaks the line
				}
				continue
			}
			y := gy(b.V)
			if have && b.Joined {
				for _, pt := range graph.GetLinePoints(canvas.Point{X: px, Y: py}, canvas.Point{X: x, Y: y}) {
					g.Set(pt.X, pt.Y)
				}
			} else {
				g.Set(x, y)
			}
			px, py, have = x, y, true
		}
		for r, row := range g.BraillePatterns() {
			for c, pat := range row {
				if pat == runes.BrailleBlockOffset || r >= len(cells) || c >= len(cells[r]) {
					continue
				}
				cl := &cells[r][c]
				if cl.r != 0 {
					pat = runes.CombineBraillePatterns(cl.r, pat)
				}
				cells[r][c] = cell{r: pat, style: stySeries + s.Style}
			}
		}
	}
}

// drawGlyphs marks each series with its own character, one a column: without colour, the
// shape tells the lines apart. The first series wins a cell.
func drawGlyphs(st *Styles, p plotSpec, cells [][]cell, rowOf func(float64) int) {
	for _, s := range p.Series {
		glyph := []rune(st.series(s.Style).Glyph)[0]
		for c, b := range s.Bins {
			if c >= p.Cols || b.Kind != valueKind {
				continue
			}
			if cl := &cells[rowOf(b.V)][c]; cl.r == 0 {
				*cl = cell{r: glyph, style: stySeries + s.Style}
			}
		}
	}
}

// boundTick is the mark of a bound-only quantile: in the legend and as a short tick at the
// plot's edge, never a line across it (where the value is, under the bound, is not known).
const boundTick = '◂'

// drawBounds marks a series whose latest sample is a bound with a tick at the bound, in the
// column of that sample (the right edge while it is current). Older bounds are not drawn.
// Bounds never set the range: an upper bound above the top is not drawn (the value is somewhere
// below it), a lower bound above the top is an arrow on the top row.
func drawBounds(st *Styles, p plotSpec, cells [][]cell, rowOf func(float64) int, top float64) {
	per := 2
	if st.NoColor {
		per = 1
	}
	for _, s := range p.Series {
		x := len(s.Bins) - 1
		for x >= 0 && s.Bins[x].Kind == noSample {
			x--
		}
		if x < 0 || x/per >= p.Cols {
			continue
		}
		b := s.Bins[x]
		if b.Kind != upperBound && b.Kind != lowerBound {
			continue
		}
		r, m := rowOf(b.V), boundTick
		if b.V > top {
			if b.Kind == upperBound {
				continue
			}
			r, m = 0, '^'
		}
		cells[r][x/per] = cell{r: m, style: stySeries + s.Style}
	}
}

// drawEpochs draws a dotted vertical rule where each epoch began, its number on the top row.
// Numbers that would touch the next one to their right are left out, the newest kept: epochs
// close together would otherwise read as one number ("3678").
func drawEpochs(p plotSpec, cells [][]cell) {
	type mark struct{ col, n int }
	var marks []mark
	for _, e := range p.Epochs {
		c := p.W.col(e.At, p.Cols)
		if c < 0 {
			continue
		}
		for r := range cells {
			if cells[r][c].r == 0 {
				cells[r][c] = cell{r: '┊', style: styRule}
			}
		}
		marks = append(marks, mark{c, e.N})
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].col < marks[j].col })
	limit := p.Cols + 1 // one column before the first taken by a label to the right
	for i := len(marks) - 1; i >= 0; i-- {
		label := strconv.Itoa(marks[i].n)
		c := min(marks[i].col, p.Cols-len(label)) // the newest, at the edge, moves left to fit
		if c < 0 || c+len(label) >= limit {
			continue // it would touch the label to its right
		}
		for j, d := range label {
			cells[0][c+j] = cell{r: d, style: styRule}
		}
		limit = c
	}
}

// renderCells renders a row of cells, one Render call per run of one style.
func renderCells(st *Styles, row []cell) string {
	var b strings.Builder
	var run []rune
	cur := -1
	flush := func() {
		switch {
		case len(run) == 0:
		case cur < 0:
			b.WriteString(string(run)) // blank cells need no style, and most cells are blank
		default:
			b.WriteString(cellStyle(st, cur).Render(string(run)))
		}
		run = run[:0]
	}
	for _, c := range row {
		r, s := c.r, c.style
		if r == 0 {
			r, s = ' ', -1
		}
		if s != cur {
			flush()
			cur = s
		}
		run = append(run, r)
	}
	flush()
	return b.String()
}

func cellStyle(st *Styles, id int) lipgloss.Style {
	switch id {
	case styAxis:
		return st.Axis
	case styRule:
		return st.Rule
	case styGood:
		return st.Good
	case styBad:
		return st.Bad
	case styPlain:
		return st.Base
	}
	return st.series(id - stySeries).Style
}

// timeAxis is the bottom line: the axis with a ┴ at each tick and the tick's clock time beside
// it, labels that would overlap another left out.
func timeAxis(st *Styles, p plotSpec) string {
	line := []rune(strings.Repeat("─", p.Cols))
	end := -1
	for _, t := range p.Ticks {
		if t.Col < 0 || t.Col >= p.Cols {
			continue
		}
		line[t.Col] = '┴'
		lw := len(t.Label)
		// Just right of its tick (just left of it at the right edge), left out if it would
		// touch another.
		start := t.Col + 1
		gap := 1
		if start+lw > p.Cols {
			// Left of its tick, a label close to the one before reads as that tick's.
			start, gap = t.Col-lw, 3
		}
		if start < end+gap || start < 0 {
			continue
		}
		copy(line[start:], []rune(t.Label))
		end = start + lw
	}
	return st.Axis.Render(strings.Repeat(" ", p.Gutter) + "└" + string(line))
}
