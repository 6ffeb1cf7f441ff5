package curve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample() Chart {
	return Chart{Title: "Qwen2.5-0.5B on L4", XLabel: "output throughput (tok/s)", YLabel: "p99_ttft_ms", SLO: 500, SLOLabel: "p99_ttft_ms<=500.00",
		Series: []Series{
			{Name: "util 0.5", Knee: 1, Points: []Point{{X: 1000, Y: 100, Label: "C=8"}, {X: 2500, Y: 450, Label: "C=24"}, {X: 3000, Y: 900, Label: "C=48"}}},
			{Name: "util 0.9", Knee: -1, Points: []Point{{X: 1200, Y: 700, Label: "C=8"}}},
		}}
}

func TestTextPlot(t *testing.T) {
	out := Text(sample(), 60, 10)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for _, l := range lines {
		assert.LessOrEqual(t, len([]rune(l)), 60, "%q", l)
	}
	knees := 0
	for _, l := range lines {
		if strings.Contains(l, "|") {
			knees += strings.Count(l, "K")
		}
	}
	assert.Equal(t, 1, knees, "one knee: the second series has none")
	assert.Contains(t, out, "   5000\n", "the x axis's end, written out")
	assert.Contains(t, out, "* util 0.5")
	assert.Contains(t, out, "+ util 0.9")
	assert.Contains(t, out, "--- SLO p99_ttft_ms<=500.00")
	assert.True(t, strings.HasPrefix(lines[1], "1000|"), "the y axis ends on a round number: %q", lines[1])
	sloRow := -1
	for i, l := range lines {
		if strings.Contains(l, "|---") {
			sloRow = i
		}
	}
	require.Positive(t, sloRow, "the SLO line is drawn")
	kRow := -1
	for i, l := range lines {
		if strings.Contains(l, "K") && strings.Contains(l, "|") {
			kRow = i
		}
	}
	assert.Greater(t, kRow, sloRow, "the knee (450 ms) is drawn below the SLO line (500 ms)")
	assert.Equal(t, "(no points)\n", Text(Chart{}, 60, 10))
}

func TestSavePNGAndSVG(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"c.png", "c.svg"} {
		path := filepath.Join(dir, name)
		require.NoError(t, Save(path, sample()))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		if strings.HasSuffix(name, ".png") {
			assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")), "a PNG")
		} else {
			assert.Contains(t, string(b), "<svg")
			assert.Contains(t, string(b), "knee C=24")
			assert.Contains(t, string(b), "SLO p99_ttft_ms&lt;=500.00")
		}
	}
	assert.ErrorIs(t, Save(filepath.Join(dir, "c.pdf"), sample()), ErrFormat)
	assert.Error(t, Save(filepath.Join(dir, "e.svg"), Chart{}), "nothing to plot")
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.3: 0.5, 1: 1, 7: 10, 12: 20, 450: 500, 1604: 2000, 7112: 10000} {
		assert.InDelta(t, want, niceCeil(in), 1e-9, "%v", in)
	}
}

func TestTextPlotSanitisesNames(t *testing.T) {
	c := sample()
	c.Series[0].Name = "evil\x1b]0;pwned\x07\u202emodel"
	out := Text(c, 60, 8)
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\x07")
	assert.NotContains(t, out, "\u202e")
	assert.Contains(t, out, "evilmodel", "the sequences are removed whole")
}

func TestTextPlotMarksSharedCells(t *testing.T) {
	c := Chart{XLabel: "x", YLabel: "y", Series: []Series{
		{Name: "a", Knee: -1, Points: []Point{{X: 10, Y: 10}, {X: 50, Y: 50}}},
		{Name: "b", Knee: -1, Points: []Point{{X: 10, Y: 10}, {X: 90, Y: 90}}},
	}}
	out := Text(c, 40, 8)
	assert.Equal(t, 1, strings.Count(out, "#")-strings.Count(out, "# several"), "the shared point:\n%s", out)
	assert.Contains(t, out, "# several")
	assert.Contains(t, out, "*")
	assert.Contains(t, out, "+")
	assert.NotContains(t, out, "K knee", "no knee, none in the legend")
}
