package sweepcli

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// ParetoArgs is `vllmtop sweep plot_pareto`, vllm bench sweep plot_pareto's flags.
type ParetoArgs struct {
	OutputDir    string
	UserCountVar string   // --user-count-var, max_concurrency by default
	GPUCountVar  string   // --gpu-count-var; "": tensor x pipeline x data parallel size
	LabelBy      []string // --label-by: what each point is labelled with
	DryRun       bool
	Format       string // png (vLLM's) or svg
}

// paretoPoint is one run: its tokens/s per user and per GPU, and its label.
type paretoPoint struct {
	User, GPU float64
	Label     string
}

// PlotPareto draws OUTPUT_DIR/pareto/PARETO.png: every run's output tokens/s per user against
// per GPU, and the Pareto frontier of the two.
func PlotPareto(a ParetoArgs, stdout io.Writer) error {
	recs, err := LoadRecords(a.OutputDir)
	if err != nil {
		return err
	}
	figDir := filepath.Join(a.OutputDir, "pareto")
	if err := os.MkdirAll(figDir, 0o755); err != nil {
		return err
	}
	var pts []paretoPoint
	skipped := 0
	for _, r := range recs {
		tput, ok := r.Num("output_throughput")
		if !ok {
			return fmt.Errorf("cannot find throughput metric 'output_throughput' in run data; available keys: %s", strings.Join(columns([]Record{r}), ", "))
		}
		users, ok := userCount(r, a.UserCountVar)
		if !ok {
			skipped++
			continue
		}
		gpus := gpuCount(r, a.GPUCountVar)
		pts = append(pts, paretoPoint{User: tput / users, GPU: tput / gpus, Label: pointLabel(r, a.LabelBy, gpus)})
	}
	if skipped > 0 {
		fmt.Fprintf(stdout, "Skipped %d runs without a user count (`max_concurrency` or `max_concurrent_requests`).\n", skipped)
	}
	if len(pts) == 0 {
		return errors.New("no data points with both throughput and user count available to plot Pareto frontier")
	}
	path := figPath(figDir, []string{"PARETO"}, a.Format)
	fmt.Fprintf(stdout, "[BEGIN FIGURE]\nGroup: {}\nOutput file: %s\n", path)
	if a.DryRun {
		fmt.Fprintln(stdout, "[END FIGURE]")
		return nil
	}
	front := ParetoFrontier(pts)
	if err := drawPareto(path, pts, front, a.Format); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Plotted %d points; Pareto frontier size: %d.\n[END FIGURE]\n", len(pts), len(front))
	return nil
}

// firstNum is the first of keys (in its - or _ spelling) the record has as a number.
func firstNum(r Record, keys ...string) (float64, bool) {
	for _, k := range keys {
		for _, c := range []string{k, strings.ReplaceAll(k, "_", "-"), strings.ReplaceAll(k, "-", "_")} {
			if _, present := r[c]; present {
				return r.Num(c)
			}
		}
	}
	return 0, false
}

// userCount is the run's concurrent users: --user-count-var (or request_rate), else the peak
// of concurrent requests the run saw; zero counts as missing.
func userCount(r Record, v string) (float64, bool) {
	var keys []string
	if v != "" {
		keys = append(keys, v)
	}
	if n, ok := firstNum(r, append(keys, "request_rate")...); ok && n != 0 {
		return n, true
	}
	n, ok := firstNum(r, "max_concurrent_requests")
	return n, ok && n != 0
}

// gpuCount is --gpu-count-var's value, else tensor x pipeline x data parallel size.
func gpuCount(r Record, v string) float64 {
	if v != "" {
		if n, ok := firstNum(r, v); ok && n != 0 {
			return n
		}
	}
	world := 1.0
	for _, k := range [][2]string{{"tensor_parallel_size", "tp"}, {"pipeline_parallel_size", "pp"}, {"data_parallel_size", "dp"}} {
		if n, ok := firstNum(r, k[0], k[1]); ok && n != 0 {
			world *= n
		}
	}
	return world
}

// pointLabel is a point's --label-by values; gpu_count, when no run sets it, is the estimate.
func pointLabel(r Record, keys []string, gpus float64) string {
	var parts []string
	for _, k := range keys {
		if _, ok := r[k]; ok {
			parts = append(parts, k+"="+r.Str(k))
		} else if k == "gpu_count" {
			parts = append(parts, fmt.Sprintf("gpu_count=%g", gpus))
		}
	}
	return strings.Join(parts, ", ")
}

// ParetoFrontier is the points no other beats on both axes, in order of tokens/s per user:
// from the highest per-user rate down, each point whose per-GPU rate is at least the best
// so far (within 1e-9), as vLLM's plot_pareto picks them.
func ParetoFrontier(pts []paretoPoint) []paretoPoint {
	sorted := append([]paretoPoint(nil), pts...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].User != sorted[j].User {
			return sorted[i].User > sorted[j].User
		}
		return sorted[i].GPU > sorted[j].GPU
	})
	best := math.Inf(-1)
	var front []paretoPoint
	for _, p := range sorted {
		if p.GPU >= best-1e-9 {
			front = append(front, p)
			best = math.Max(best, p.GPU)
		}
	}
	sort.SliceStable(front, func(i, j int) bool { return front[i].User < front[j].User })
	return front
}

func drawPareto(path string, pts, front []paretoPoint, format string) error {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = "Tokens/s/user", "Tokens/s/GPU"
	p.Add(plotter.NewGrid())
	all, line := make(plotter.XYs, len(pts)), make(plotter.XYs, len(front))
	labels := plotter.XYLabels{XYs: make(plotter.XYs, len(front)), Labels: make([]string, len(front))}
	for i, q := range pts {
		all[i] = plotter.XY{X: q.User, Y: q.GPU}
	}
	for i, q := range front { // only the frontier's points are labelled: the others crowd
		line[i] = plotter.XY{X: q.User, Y: q.GPU}
		labels.XYs[i], labels.Labels[i] = line[i], q.Label
	}
	sc, err := plotter.NewScatter(all)
	if err != nil {
		return err
	}
	sc.Color = color.Gray{Y: 128}
	l, lp, err := plotter.NewLinePoints(line)
	if err != nil {
		return err
	}
	l.Color, lp.Color = plotutil.Color(0), plotutil.Color(0)
	lbl, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	lbl.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(4)}
	p.Add(sc, l, lp, lbl)
	p.Legend.Add("All runs", sc)
	p.Legend.Add("Pareto frontier", l, lp)
	p.Legend.Top = true
	return saveGrid(path, [][]*plot.Plot{{p}}, format, [2]vg.Length{8, 6})
}
