package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var benchTimelineRun = []string{"--sim", "--sim-clock", "virtual", "--num-prompts", "20"}

// decodeTimeline reads a timeline PNG and counts its pixels of the time-to-first-token blue
// and of each of the gaps' colours.
func decodeTimeline(t *testing.T, path string) (image.Rectangle, map[color.RGBA]int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	want := map[color.RGBA]int{{0x63, 0x6E, 0xFA, 0xFF}: 0, {0x10, 0x96, 0x18, 0xFF}: 0, {0xFF, 0x7F, 0x0E, 0xFF}: 0, {0xD6, 0x27, 0x28, 0xFF}: 0}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			c := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}
			if _, ok := want[c]; ok {
				want[c]++
			}
		}
	}
	return b, want
}

func TestBenchPlotTimelineDrawsEachRequest(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	code, _, errOut := benchRun(t, append(benchTimelineRun, "--plot-timeline", "--result-dir", dir)...)
	require.Equal(t, 0, code, errOut)
	got, err := filepath.Glob(filepath.Join(dir, "*.timeline.png"))
	require.NoError(t, err)
	require.Len(t, got, 1, "one run, one timeline")
	assert.Regexp(t, `^openai-infqps-.+-\d{8}-\d{6}\.timeline\.png$`, filepath.Base(got[0]), "vLLM's result name, .json replaced")
	assert.Contains(t, errOut, "Timeline plot saved to: "+got[0])
	others, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	assert.Empty(t, others, "no result saved without --save-result")
	bounds, counts := decodeTimeline(t, got[0])
	assert.Equal(t, 1152, bounds.Dx(), "12 inches at 96 dpi")
	assert.GreaterOrEqual(t, bounds.Dy(), 480)
	assert.Greater(t, counts[color.RGBA{0x63, 0x6E, 0xFA, 0xFF}], 1000, "the TTFT bars are drawn")
	assert.Greater(t, counts[color.RGBA{0x10, 0x96, 0x18, 0xFF}], 1000, "the simulator's gaps are under 25 ms: green")
}

func TestBenchTimelineThresholdsColourTheGaps(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	// Every gap is at least 0 ms: with both bounds at 0 each is "slow", red, and none green.
	code, _, errOut := benchRun(t, append(benchTimelineRun, "--plot-timeline", "--timeline-itl-thresholds", " 0 , 0 ", "--result-dir", dir, "--result-filename", "run.json")...)
	require.Equal(t, 0, code, errOut)
	_, counts := decodeTimeline(t, filepath.Join(dir, "run.timeline.png"))
	assert.Greater(t, counts[color.RGBA{0xD6, 0x27, 0x28, 0xFF}], 1000)
	assert.Less(t, counts[color.RGBA{0x10, 0x96, 0x18, 0xFF}], 500, "green only in the legend's square")
}

func TestBenchTimelineThresholdsRefused(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"25", "want 2 comma-separated values"},
		{"25,50,75", "got 3"},
		{"", "got 1"},
		{"25,fast", `"fast" is not a number`},
		{"25,", `"" is not a number`},
		{"-1,50", "0 or more"},
		{"25,inf", "finite"},
		{"nan,50", "finite"},
		{"50,25", "must not exceed"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			code, out, errOut := benchRun(t, append(benchTimelineRun, "--plot-timeline", "--timeline-itl-thresholds", tc.value, "--result-dir", t.TempDir())...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			assert.Contains(t, errOut, "--timeline-itl-thresholds")
			assert.Contains(t, errOut, tc.want)
		})
	}
	// Without --plot-timeline vLLM never reads them, whatever they say.
	code, _, errOut := benchRun(t, append(benchTimelineRun, "--timeline-itl-thresholds", "50,25")...)
	assert.Equal(t, 0, code, errOut)
}

func TestBenchTimelineKeepsAnExistingFile(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "run.timeline.png")
	require.NoError(t, os.WriteFile(path, []byte("mine"), 0o644))
	args := append(benchTimelineRun, "--plot-timeline", "--result-dir", dir, "--result-filename", "run.json")
	code, out, errOut := benchRun(t, args...)
	assert.Equal(t, 2, code, "refused before the run")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "exists: give --overwrite")
	data, _ := os.ReadFile(path)
	assert.Equal(t, "mine", string(data))

	link := filepath.Join(dir, "other.timeline.png")
	require.NoError(t, os.Symlink(path, link))
	code, _, errOut = benchRun(t, append(benchTimelineRun, "--plot-timeline", "--result-dir", dir, "--result-filename", "other.json", "--overwrite")...)
	assert.Equal(t, 2, code, "a link is never written through: %s", errOut)
	data, _ = os.ReadFile(path)
	assert.Equal(t, "mine", string(data))

	code, _, errOut = benchRun(t, append(args, "--overwrite")...)
	require.Equal(t, 0, code, errOut)
	_, counts := decodeTimeline(t, path)
	assert.Greater(t, counts[color.RGBA{0x63, 0x6E, 0xFA, 0xFF}], 1000, "replaced by the timeline")
}

func TestBenchTimelineOfEachSweepRun(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	code, _, errOut := benchRun(t, append(benchTimelineRun, "--plot-timeline", "--save-result", "--max-concurrency", "1,4", "--result-dir", dir, "--result-filename", "s.json")...)
	require.Equal(t, 0, code, errOut)
	for _, name := range []string{"s-concurrency1.json", "s-concurrency1.timeline.png", "s-concurrency4.json", "s-concurrency4.timeline.png"} {
		assert.FileExists(t, filepath.Join(dir, name))
	}
}

func TestBenchTimelineNotWithSearch(t *testing.T) {
	code, _, errOut := benchRun(t, append(benchTimelineRun, "--plot-timeline", "--sla", "p99_ttft_ms<=500")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "an SLO search draws its curve with --plot")
}

func TestBenchPlotDatasetStats(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	args := append(benchTimelineRun, "--random-range-ratio", "0.5", "--plot-dataset-stats", "--result-dir", dir, "--result-filename", "d.json")
	code, _, errOut := benchRun(t, args...)
	require.Equal(t, 0, code, errOut)
	path := filepath.Join(dir, "d.dataset_stats.png")
	assert.Contains(t, errOut, "Dataset statistics plot saved to: "+path)
	assert.NoFileExists(t, filepath.Join(dir, "d.timeline.png"), "only the figure asked for")
	f, err := os.Open(path)
	require.NoError(t, err)
	img, err := png.Decode(f)
	f.Close()
	require.NoError(t, err)
	assert.Equal(t, image.Pt(1344, 960), img.Bounds().Size(), "14 by 10 inches, as vLLM's figure")
	counts := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			counts[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}]++
		}
	}
	for name, c := range map[string]color.RGBA{"prompt": {0x46, 0x82, 0xB4, 0xFF}, "output": {0xFF, 0x7F, 0x50, 0xFF}, "total": {0x3C, 0xB3, 0x71, 0xFF}} {
		assert.Greater(t, counts[c], 5000, "the %s tokens' panel is drawn", name)
	}

	code, out, errOut := benchRun(t, args...)
	assert.Equal(t, 2, code, "the figure exists: refused before the run")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "d.dataset_stats.png exists: give --overwrite")
}
