package benchcli

import (
	"errors"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/vllmtop/vllmtop/internal/base/outfile"
)

// DatasetStatsSuffix replaces the result file's extension in --plot-dataset-stats' figure's
// name, as vLLM names it.
const DatasetStatsSuffix = ".dataset_stats.png"

// vLLM's matplotlib colours: steelblue, coral, mediumseagreen.
var (
	statsPrompt = color.RGBA{R: 0x46, G: 0x82, B: 0xB4, A: 0xFF}
	statsOutput = color.RGBA{R: 0xFF, G: 0x7F, B: 0x50, A: 0xFF}
	statsTotal  = color.RGBA{R: 0x3C, G: 0xB3, B: 0x71, A: 0xFF}
)

// statsHist is one panel: the distribution of values in 30 bins, as vLLM draws it.
func statsHist(title, xlabel string, values []float64, c color.Color) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, "Frequency"
	p.Add(plotter.NewGrid())
	h, err := plotter.NewHist(plotter.Values(values), 30)
	if err != nil {
		return nil, err
	}
	h.FillColor = c
	p.Add(h)
	return p, nil
}

// statsBars is the fourth panel: each request's prompt tokens, its output tokens on top.
func statsBars(prompt, output []float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = "Tokens per Request (Stacked)", "Request ID", "Tokens"
	p.Add(plotter.NewGrid())
	w := vg.Points(max(0.5, 300/float64(len(prompt))))
	in, err := plotter.NewBarChart(plotter.Values(prompt), w)
	if err != nil {
		return nil, err
	}
	out, err := plotter.NewBarChart(plotter.Values(output), w)
	if err != nil {
		return nil, err
	}
	in.Color, out.Color = statsPrompt, statsOutput
	in.LineStyle.Width, out.LineStyle.Width = 0, 0
	out.StackOn(in)
	p.Add(in, out)
	p.Legend.Top = true
	p.Legend.Add("Prompt Tokens", in)
	p.Legend.Add("Output Tokens", out)
	return p, nil
}

// writeDatasetStats draws vLLM's dataset statistics figure for the requests to path (PNG):
// the prompt, output and total tokens' distributions, and each request's tokens stacked.
func writeDatasetStats(path string, reqs []timelineReq, opts outfile.Options) error {
	if len(reqs) == 0 {
		return errors.New("nothing to plot: no request finished")
	}
	prompt, output, total := make([]float64, len(reqs)), make([]float64, len(reqs)), make([]float64, len(reqs))
	for i, r := range reqs {
		prompt[i], output[i] = float64(r.prompt), float64(r.output)
		total[i] = prompt[i] + output[i]
	}
	var panels [4]*plot.Plot
	var err error
	for i, h := range []struct {
		title, xlabel string
		v             []float64
		c             color.Color
	}{
		{"Prompt Tokens Distribution", "Prompt Tokens", prompt, statsPrompt},
		{"Output Tokens Distribution", "Output Tokens", output, statsOutput},
		{"Total Tokens Distribution", "Total Tokens (Prompt + Output)", total, statsTotal},
	} {
		if panels[i], err = statsHist(h.title, h.xlabel, h.v, h.c); err != nil {
			return err
		}
	}
	if panels[3], err = statsBars(prompt, output); err != nil {
		return err
	}
	c := vgimg.PngCanvas{Canvas: vgimg.New(14*vg.Inch, 10*vg.Inch)}
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	grid := [][]*plot.Plot{{panels[0], panels[1]}, {panels[2], panels[3]}}
	canvases := plot.Align(grid, tiles, draw.New(c))
	for i := range grid {
		for j := range grid[i] {
			grid[i][j].Draw(canvases[i][j])
		}
	}
	f, err := outfile.Create(path, opts)
	if err != nil {
		return err
	}
	_, err = c.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
