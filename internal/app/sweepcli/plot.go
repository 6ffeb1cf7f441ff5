package sweepcli

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/vllmtop/vllmtop/internal/base/outfile"
	"github.com/vllmtop/vllmtop/loadgen"
)

// PlotArgs is `vllmtop sweep plot`, vllm bench sweep plot's flags.
type PlotArgs struct {
	OutputDir, FigDir            string // FigDir is relative to OutputDir ("" is OutputDir)
	FigBy, RowBy, ColBy, CurveBy []string
	VarX, VarY                   string
	Filters                      []Filter
	Bins                         []Binner
	ScaleX, ScaleY               string // "", "linear", "log" or "sqrt"
	DryRun                       bool
	FigName                      string // the files' name prefix, "FIGURE" by default
	Format                       string // png (vLLM's) or svg
}

// Plot draws one figure per --fig-by group: a grid of --row-by rows and --col-by columns,
// a curve per --curve-by group, VarY against VarX (the mean where runs share an x).
func Plot(a PlotArgs, stdout io.Writer) error {
	recs, err := LoadRecords(a.OutputDir)
	if err != nil {
		return err
	}
	figDir := filepath.Join(a.OutputDir, a.FigDir)
	if err := os.MkdirAll(figDir, 0o755); err != nil {
		return err
	}
	names, groups := groupBy(recs, a.FigBy)
	for i, g := range groups {
		if err := a.figure(figDir, names[i], g, stdout); err != nil {
			return err
		}
	}
	return nil
}

// figure draws one figure.
func (a PlotArgs) figure(figDir string, name []string, recs []Record, stdout io.Writer) error {
	rowNames, _ := groupBy(recs, a.RowBy)
	colNames, _ := groupBy(recs, a.ColBy)
	path := figPath(figDir, append([]string{a.FigName}, name...), a.Format)
	fmt.Fprintln(stdout, "[BEGIN FIGURE]")
	fmt.Fprintf(stdout, "Group: %s\nGrid: %d rows x %d cols\nOutput file: %s\n", pyGroup(name), len(rowNames), len(colNames), path)
	if a.DryRun {
		fmt.Fprintln(stdout, "[END FIGURE]")
		return nil
	}
	for _, k := range append(append(append([]string{a.VarX, a.VarY}, a.RowBy...), a.ColBy...), a.CurveBy...) {
		if !anyHas(recs, k) {
			return fmt.Errorf("cannot find %q in parameter sweep results; available variables: %s", k, strings.Join(columns(recs), ", "))
		}
	}
	recs = filterAndBin(recs, a.Filters, a.Bins)
	plots := make([][]*plot.Plot, len(rowNames))
	drawn := 0
	for i, rn := range rowNames {
		plots[i] = make([]*plot.Plot, len(colNames))
		for j, cn := range colNames {
			p, n, err := a.panel(recs, rn, cn)
			if err != nil {
				return err
			}
			plots[i][j], drawn = p, drawn+n
		}
	}
	if drawn == 0 {
		return fmt.Errorf("nothing to plot in %s: no run has %s and %s as finite numbers%s", pyGroup(name), a.VarX, a.VarY, a.logNote())
	}
	if err := saveGrid(path, plots, a.Format, [2]vg.Length{4, 3.5}); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "[END FIGURE]")
	return nil
}

// logNote is what the error of an empty figure adds about log axes.
func (a PlotArgs) logNote() string {
	if a.ScaleX == "log" || a.ScaleY == "log" {
		return " (above 0 on a log axis)"
	}
	return ""
}

// panel is one cell of the grid: the records of row rn and column cn, a curve per group, and
// how many points it drew.
func (a PlotArgs) panel(recs []Record, rn, cn []string) (*plot.Plot, int, error) {
	p := plot.New()
	p.Title.Text = strings.Join(append(append([]string(nil), rn...), cn...), "\n")
	p.X.Label.Text, p.Y.Label.Text = a.VarX, a.VarY
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(8) // curve names of several keys run long
	var cell []Record
	for _, r := range recs {
		if slicesEqual(group(r, a.RowBy), rn) && slicesEqual(group(r, a.ColBy), cn) {
			cell = append(cell, r)
		}
	}
	names, curves := groupBy(cell, a.CurveBy)
	drawn := 0
	for i, c := range curves {
		// A log axis leaves out the values it cannot place (0 and below), as matplotlib's
		// masks them.
		xys := slices.DeleteFunc(meanByX(c, a.VarX, a.VarY), func(p plotter.XY) bool {
			return a.ScaleX == "log" && p.X <= 0 || a.ScaleY == "log" && p.Y <= 0
		})
		if len(xys) == 0 {
			continue
		}
		drawn += len(xys)
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, 0, err
		}
		line.Color, pts.Color, pts.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(line, pts)
		if len(a.CurveBy) > 0 {
			p.Legend.Add(strings.Join(names[i], ", "), line, pts)
		}
	}
	if drawn > 0 { // an empty panel keeps linear axes: a log one has no range to draw
		setScale(&p.X, a.ScaleX)
		setScale(&p.Y, a.ScaleY)
		pad(&p.X, a.ScaleX)
		pad(&p.Y, a.ScaleY)
	}
	return p, drawn, nil
}

// pad widens an axis by 5% of its span at each end, as matplotlib's margins do, so that the
// points at the ends are drawn whole inside the frame (on a log axis, 5% of its decades).
func pad(ax *plot.Axis, scale string) {
	lo, hi := ax.Min, ax.Max
	switch {
	case math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi):
	case scale == "log" && lo > 0 && hi > 0:
		f := math.Pow(hi/lo, 0.05)
		if hi == lo {
			f = 1.1
		}
		ax.Min, ax.Max = lo/f, hi*f
	case hi > lo:
		m := (hi - lo) * 0.05
		ax.Min, ax.Max = lo-m, hi+m
	}
}

// meanByX is the curve's points in order of x, the mean y where several runs share an x
// (as seaborn's lineplot draws them).
func meanByX(recs []Record, x, y string) plotter.XYs {
	sum, n := map[float64]float64{}, map[float64]int{}
	for _, r := range recs {
		xv, ok1 := r.Num(x)
		yv, ok2 := r.Num(y)
		if ok1 && ok2 && !math.IsNaN(xv) && !math.IsNaN(yv) && !math.IsInf(xv, 0) && !math.IsInf(yv, 0) {
			sum[xv] += yv
			n[xv]++
		}
	}
	var out plotter.XYs
	for xv, s := range sum {
		out = append(out, plotter.XY{X: xv, Y: s / float64(n[xv])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].X < out[j].X })
	return out
}

// setScale sets an axis to --scale-x/--scale-y's scale.
func setScale(ax *plot.Axis, scale string) {
	switch scale {
	case "log":
		ax.Scale, ax.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	case "sqrt":
		ax.Scale = sqrtScale{}
	}
}

type sqrtScale struct{}

func (sqrtScale) Normalize(lo, hi, x float64) float64 {
	lo, hi = math.Sqrt(math.Max(lo, 0)), math.Sqrt(math.Max(hi, 0))
	if hi == lo {
		return 0.5
	}
	return (math.Sqrt(math.Max(x, 0)) - lo) / (hi - lo)
}

// saveGrid draws the panels as tiles, each tile (width and height) inches, into path. The
// plotting library panics on what it cannot draw (a log axis without a positive value); that
// becomes the error, with nothing written.
func saveGrid(path string, plots [][]*plot.Plot, format string, tile [2]vg.Length) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot draw %s: %v", filepath.Base(path), r)
		}
	}()
	rows, cols := len(plots), len(plots[0])
	w, h := vg.Length(cols)*tile[0]*vg.Inch, vg.Length(rows)*tile[1]*vg.Inch
	var c vg.CanvasWriterTo
	if format == "svg" {
		c = vgsvg.New(w, h)
	} else {
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	f, err := outfile.Create(path, outfile.Options{Mode: outfile.Overwrite}) // never through a link
	if err != nil {
		return err
	}
	_, err = c.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// figPath is FIG_DIR/NAME-k=v-....png, sanitised as vLLM's.
func figPath(dir string, parts []string, format string) string {
	if format == "" {
		format = "png"
	}
	return filepath.Join(dir, loadgen.SanitizeFilename(strings.Join(parts, "-")+"."+format))
}

// pyGroup is a group as Python prints dict(group): {'k': 'v'}.
func pyGroup(g []string) string {
	parts := make([]string, len(g))
	for i, kv := range g {
		k, v, _ := strings.Cut(kv, "=")
		parts[i] = "'" + k + "': '" + v + "'"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func anyHas(recs []Record, k string) bool {
	for _, r := range recs {
		if _, ok := r[k]; ok {
			return true
		}
	}
	return false
}

// columns are the keys the records have, sorted.
func columns(recs []Record) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range recs {
		for k := range r {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }
