// Package curve holds the shape of a tuning curve (latency against throughput, one series per
// server setting, each series' knee and the SLO line) and draws it: to PNG or SVG with
// gonum/plot, or as a small text plot for a terminal. It knows nothing of where the points
// come from (it imports only the sanitiser), so the CLI and the dashboard draw the same data.
package curve

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/vllmtop/vllmtop/internal/base/outfile"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// Point is one run: its throughput (X), its latency (Y), and what was set (Label, e.g. "C=48").
type Point struct {
	X, Y  float64
	Label string
}

// Series is one server setting's curve, its points in the order to join them (by load).
type Series struct {
	Name   string
	Points []Point
	// Knee is the index in Points of the highest load that met the SLO; -1 for none.
	Knee int
}

// Chart is what is drawn: the series, the axes' names, and the SLO's bound on Y.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// SLO is the bound on Y drawn as a line; SLOLabel names it ("p99_ttft_ms<=500"). No line
	// when SLOLabel is "".
	SLO      float64
	SLOLabel string
}

// points counts every point of every series.
func (c Chart) points() int {
	n := 0
	for _, s := range c.Series {
		n += len(s.Points)
	}
	return n
}

// ErrFormat is a file name that ends neither in .png nor in .svg.
var ErrFormat = errors.New("want a file name ending in .png or .svg")

// Save draws the chart to path: PNG or SVG by its extension, 8 by 5 inches. A file there is
// replaced (the command checked before its run that the user let it be), a link refused.
func Save(path string, c Chart) error {
	return Write(path, c, outfile.Options{Mode: outfile.Overwrite})
}

// Write draws the chart as Save does, opening the file as opts say (outfile.Create: a link
// at path is never written through).
func Write(path string, c Chart, opts outfile.Options) error {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("%s: %w", path, ErrFormat)
	}
	if c.points() == 0 {
		return errors.New("nothing to plot: no run finished")
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = c.Title, c.XLabel, c.YLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	for i, s := range c.Series {
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j].X, xys[j].Y = pt.X, pt.Y
		}
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		line.Width = vg.Points(1.5)
		pts.Shape = plotutil.Shape(i)
		p.Add(line, pts)
		p.Legend.Add(s.Name, line, pts)
		if s.Knee >= 0 && s.Knee < len(s.Points) {
			k := s.Points[s.Knee]
			ring, err := plotter.NewScatter(plotter.XYs{{X: k.X, Y: k.Y}})
			if err != nil {
				return err
			}
			ring.Shape, ring.Radius, ring.Color = draw.RingGlyph{}, vg.Points(7), plotutil.Color(i)
			labels, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: k.X, Y: k.Y}}, Labels: []string{"knee " + k.Label}})
			if err != nil {
				return err
			}
			labels.Offset = vg.Point{X: vg.Points(8), Y: vg.Points(4)}
			if i%2 == 1 { // neighbouring series' knees often sit close: one label above, one below
				labels.Offset.Y = vg.Points(-14)
			}
			p.Add(ring, labels)
		}
	}
	if c.SLOLabel != "" {
		slo := plotter.NewFunction(func(float64) float64 { return c.SLO })
		slo.Color, slo.Dashes, slo.Width = color.Gray{Y: 60}, []vg.Length{vg.Points(6), vg.Points(4)}, vg.Points(1.5)
		p.Add(slo)
		p.Legend.Add("SLO "+c.SLOLabel, slo)
		p.Y.Max = math.Max(p.Y.Max, c.SLO*1.1)
	}
	p.X.Min = math.Min(p.X.Min, 0)
	if lo, hi := yRange(c); lo > 0 && hi/lo > 20 {
		// Latency past the knee grows by orders of magnitude: a log axis keeps the knee readable.
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Label.Text = lo/1.2, c.YLabel+" (log scale)"
	} else {
		p.Y.Min = math.Min(p.Y.Min, 0)
	}
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, ext[1:])
	if err != nil {
		return err
	}
	f, err := outfile.Create(path, opts)
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// yRange is the least and greatest Y of the points.
func yRange(c Chart) (lo, hi float64) {
	lo = math.Inf(1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
		}
	}
	return lo, hi
}

// Markers are the text plot's symbols, one per series; a knee is drawn as K, and a cell where
// several series meet as #.
var Markers = []rune{'*', '+', 'o', 'x', '#', '@'}

// Text draws the chart in a width x height character grid with its axes' ranges, each series
// with its marker, the knees as K and the SLO line as dashes, then a legend line. It never
// returns lines wider than width (given at least 30).
func Text(c Chart, width, height int) string {
	width, height = max(width, 30), max(height, 5)
	if c.points() == 0 {
		return "(no points)\n"
	}
	xmax, ymax, clipped := axisEnds(c)
	ylab := axisNumber(ymax)
	gutter := len(ylab) + 1
	plotW := width - gutter - 1
	grid, shared := plotGrid(c, xmax, ymax, plotW, height)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (y) against %s (x)\n", printable(c.YLabel), printable(c.XLabel))
	for i, line := range grid {
		label := ""
		switch i {
		case 0:
			label = ylab
		case height - 1:
			label = "0"
		}
		fmt.Fprintf(&b, "%*s|%s\n", gutter-1, label, strings.TrimRight(string(line), " "))
	}
	xlab := axisNumber(xmax)
	fmt.Fprintf(&b, "%*s+%s\n", gutter-1, "", strings.Repeat("-", plotW))
	fmt.Fprintf(&b, "%*s0%*s\n", gutter-1, "", plotW, xlab)
	for _, l := range wrap(strings.Join(legend(c, ymax, clipped, shared), "   "), width) {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// axisEnds are the round ends of the axes over every point and the SLO; clipped is true when
// the y axis stops at four times the SLO, so that the knee stays in view.
func axisEnds(c Chart) (xmax, ymax float64, clipped bool) {
	for _, s := range c.Series {
		for _, p := range s.Points {
			xmax, ymax = math.Max(xmax, p.X), math.Max(ymax, p.Y)
		}
	}
	if c.SLOLabel != "" {
		ymax = math.Max(ymax, c.SLO)
		if ymax > 4*c.SLO && c.SLO > 0 { // the knee is the point: keep the SLO in view
			ymax, clipped = 4*c.SLO, true
		}
	}
	return niceCeil(xmax), niceCeil(ymax), clipped
}

// plotGrid draws the SLO line and the series' points in a plotW x height grid; shared is true
// when two series' points fell in one cell.
func plotGrid(c Chart, xmax, ymax float64, plotW, height int) (grid [][]rune, shared bool) {
	grid = make([][]rune, height)
	for i := range grid {
		grid[i] = []rune(strings.Repeat(" ", plotW))
	}
	row := func(y float64) int { return height - 1 - int(math.Round(y/ymax*float64(height-1))) }
	col := func(x float64) int { return int(math.Round(x / xmax * float64(plotW-1))) }
	if c.SLOLabel != "" {
		r := row(c.SLO)
		for i := range grid[r] {
			grid[r][i] = '-'
		}
	}
	for i, s := range c.Series {
		m := Markers[i%len(Markers)]
		for j, p := range s.Points {
			r, k := row(math.Min(p.Y, ymax)), col(p.X)
			if p.Y > ymax {
				grid[r][k] = '^' // above the plot
				continue
			}
			switch prev := grid[r][k]; {
			case j == s.Knee:
				grid[r][k] = 'K'
			case prev == 'K':
			case prev != ' ' && prev != '-' && prev != m:
				grid[r][k], shared = '#', true // two settings' points in one cell
			default:
				grid[r][k] = m
			}
		}
	}
	return grid, shared
}

// legend names each series' marker and the other marks the chart uses.
func legend(c Chart, ymax float64, clipped, shared bool) []string {
	var legend []string
	for i, s := range c.Series {
		legend = append(legend, string(Markers[i%len(Markers)])+" "+printable(s.Name))
	}
	for _, s := range c.Series {
		if s.Knee >= 0 {
			legend = append(legend, "K knee")
			break
		}
	}
	if c.SLOLabel != "" {
		legend = append(legend, "--- SLO "+c.SLOLabel)
	}
	if clipped {
		legend = append(legend, "^ above "+axisNumber(ymax))
	}
	if shared {
		legend = append(legend, "# several")
	}
	return legend
}

// axisNumber writes an axis end: 10000, 0.5, 2e+07 only past a million.
func axisNumber(x float64) string {
	if x >= 1e6 {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// printable is a name that may come from a server (a model id) made safe for a terminal, so
// the text plot cannot move the cursor or retitle the window.
func printable(s string) string { return sanitize.Text(s) }

// niceCeil rounds x up to 1, 2 or 5 times a power of ten, so the axis ends on a round number.
func niceCeil(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// wrap breaks s at spaces into lines of at most width runes.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Split(s, "   ") {
		switch {
		case line == "":
			line = w
		case len([]rune(line))+3+len([]rune(w)) <= width:
			line += "   " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	lines = append(lines, line)
	for i, l := range lines {
		if r := []rune(l); len(r) > width {
			lines[i] = string(r[:width])
		}
	}
	return lines
}
