package benchcli

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/vllmtop/vllmtop/internal/base/outfile"
)

// The timeline's colours, vLLM's: the time to first token, then fast, middling and slow gaps.
var timelineColors = [4]color.RGBA{
	{R: 0x63, G: 0x6E, B: 0xFA, A: 0xFF},
	{R: 0x10, G: 0x96, B: 0x18, A: 0xFF},
	{R: 0xFF, G: 0x7F, B: 0x0E, A: 0xFF},
	{R: 0xD6, G: 0x27, B: 0x28, A: 0xFF},
}

// segment is one bar of a request's row: from x0 to x1 seconds since the run's first start.
type segment struct {
	x0, x1 float64
	row    int
	kind   int // index in timelineColors
}

// segments builds the bars: each request's time to first token, then its gaps, neighbouring
// gaps of one colour joined into one bar (they look the same and draw faster).
func segments(reqs []timelineReq, itl [2]float64) []segment {
	var t0 time.Time
	for _, r := range reqs {
		if !r.start.IsZero() && (t0.IsZero() || r.start.Before(t0)) {
			t0 = r.start
		}
	}
	var out []segment
	for _, r := range reqs {
		if !r.ok {
			continue // a failed request has no token to draw
		}
		x := r.start.Sub(t0).Seconds()
		end := x + r.ttft.Seconds()
		out = append(out, segment{x0: x, x1: end, row: r.index, kind: 0})
		for _, d := range r.itls {
			k := itlKind(d, itl)
			next := end + d.Seconds()
			if last := &out[len(out)-1]; last.kind == k && last.row == r.index {
				last.x1 = next
			} else {
				out = append(out, segment{x0: end, x1: next, row: r.index, kind: k})
			}
			end = next
		}
	}
	return out
}

// itlKind is a gap's colour: under the first bound, under the second, or at least it.
func itlKind(d time.Duration, itl [2]float64) int {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < itl[0]:
		return 1
	case ms < itl[1]:
		return 2
	}
	return 3
}

// itlLabels are the legend's names, as vLLM writes them but for a fraction of a millisecond,
// which vLLM rounds away.
func itlLabels(itl [2]float64) [4]string {
	a, b := strconv.FormatFloat(itl[0], 'f', -1, 64), strconv.FormatFloat(itl[1], 'f', -1, 64)
	return [4]string{"TTFT", "ITL < " + a + "ms", a + "ms ≤ ITL < " + b + "ms", "ITL ≥ " + b + "ms"}
}

// bars draws the segments, request 0 at the top (each row at y = -row).
type bars struct {
	segs []segment
	rows int
}

func (b bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	h := (trY(0) - trY(-1)) * 0.4
	for _, s := range b.segs {
		x0, x1, y := trX(s.x0), trX(s.x1), trY(float64(-s.row))
		if x1-x0 < vg.Points(0.5) {
			x1 = x0 + vg.Points(0.5) // a bar too short to see still shows
		}
		c.FillPolygon(timelineColors[s.kind], c.ClipPolygonXY([]vg.Point{{X: x0, Y: y - h}, {X: x1, Y: y - h}, {X: x1, Y: y + h}, {X: x0, Y: y + h}}))
	}
}

func (b bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmax = 0
	for _, s := range b.segs {
		xmax = math.Max(xmax, s.x1)
	}
	return 0, xmax, -float64(b.rows-1) - 0.5, 0.5
}

// swatch is a legend's filled square.
type swatch color.RGBA

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(color.RGBA(s), []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// rowTicks names about 25 rows "Req i" on the reversed Y axis.
type rowTicks struct{ rows int }

func (t rowTicks) Ticks(_, _ float64) []plot.Tick {
	step := max(1, int(math.Ceil(float64(t.rows)/25)))
	var out []plot.Tick
	for i := 0; i < t.rows; i += step {
		out = append(out, plot.Tick{Value: float64(-i), Label: fmt.Sprintf("Req %d", i)})
	}
	return out
}

// writeTimeline draws the requests' timeline to path as a PNG, opened as opts say.
func writeTimeline(path string, reqs []timelineReq, itl [2]float64, opts outfile.Options) error {
	segs := segments(reqs, itl)
	if len(segs) == 0 {
		return errors.New("nothing to plot: no request succeeded")
	}
	rows := 0
	for _, s := range segs {
		rows = max(rows, s.row+1)
	}
	p := plot.New()
	p.Title.Text = "Request timeline"
	p.X.Label.Text, p.Y.Label.Text = "Time since the first request started (s)", "Request ID"
	p.Add(plotter.NewGrid(), bars{segs: segs, rows: rows})
	p.Y.Tick.Marker = rowTicks{rows: rows}
	p.X.Max *= 1.25 // room on the right for the legend, clear of the bars
	p.Legend.Top = true
	for i, l := range itlLabels(itl) {
		p.Legend.Add(l, swatch(timelineColors[i]))
	}
	height := vg.Length(math.Min(math.Max(3+0.15*float64(rows), 5), 40)) * vg.Inch
	wt, err := p.WriterTo(12*vg.Inch, height, "png")
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
