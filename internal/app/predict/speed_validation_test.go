package predict_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/predict"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim"
)

// The speed corpus: published vLLM serving benchmarks with their settings
// (docs/validation.md#speed). Each is predicted on the virtual clock with the built-in
// catalogue; the test prints the table and fails when a case's error grows past its recorded
// baseline. The runs are split by the hash of their id into a fit set, on which step-time
// constants may be fitted, and a held-out set, whose figures must not get worse.

const speedCorpusPath = "../../../testdata/vllm-bench/cases.json"

type speedCase struct {
	ID          string   `json:"id"`
	Set         string   `json:"set"`
	URL         string   `json:"url"`
	Model       string   `json:"model"`
	GPUProfile  string   `json:"gpu_profile"`
	TP          int      `json:"tp"`
	SimVersion  string   `json:"sim_version"`
	MaxModelLen int      `json:"max_model_len"`
	SimArgs     []string `json:"sim_args"` // further server flags the run was launched with
	InputLen    int      `json:"input_len"`
	OutputLen   int      `json:"output_len"`
	// MaxConcurrency caps the requests in flight; 0 sends every prompt at once.
	MaxConcurrency int `json:"max_concurrency"`
	NumPrompts     int `json:"num_prompts"`
	// Runs is how many times the published protocol sent the same prompts to the same server
	// in a row, its figures the mean of the runs' (0 or 1: one run).
	Runs     int           `json:"runs"`
	Exclude  string        `json:"exclude"` // why the run is listed but not predicted
	Measured speedFigures  `json:"measured"`
	Baseline *speedFigures `json:"baseline"` // the errors in percent recorded last
}

// speedFigures are a run's published figures: mean and median TTFT and TPOT (ms) and output
// throughput (tokens/s); in a baseline, the errors of those figures in percent. Nil is not
// given.
type speedFigures struct {
	TTFT       *float64 `json:"mean_ttft_ms,omitempty"`
	MedianTTFT *float64 `json:"median_ttft_ms,omitempty"`
	TPOT       *float64 `json:"mean_tpot_ms,omitempty"`
	MedianTPOT *float64 `json:"median_tpot_ms,omitempty"`
	Throughput *float64 `json:"output_throughput_tok_s,omitempty"`
}

// speedFigureNames name the figures in list order.
var speedFigureNames = []string{"mean TTFT", "median TTFT", "mean TPOT", "median TPOT", "output throughput"}

func (f *speedFigures) list() []**float64 {
	return []**float64{&f.TTFT, &f.MedianTTFT, &f.TPOT, &f.MedianTPOT, &f.Throughput}
}

// speedColumns are the table's three columns, each the mean figure or, where the source
// publishes only the median, the median: the summary lines count one figure per case and
// column, compared like with like.
var speedColumns = [][2]int{{0, 1}, {2, 3}, {4, 4}}

// predictSpeed runs the case's benchmark on the simulator's virtual clock; it also returns the
// case's cold bound (coldTTFTBound).
func predictSpeed(t *testing.T, c speedCase) (speedFigures, coldBound) {
	t.Helper()
	args := append([]string{c.Model, "--sim-gpu", c.GPUProfile, "--tensor-parallel-size", strconv.Itoa(c.TP),
		"--sim-vllm-version", c.SimVersion, "--max-model-len", strconv.Itoa(c.MaxModelLen)}, c.SimArgs...)
	target := predict.New(plan(t, args...), loadgen.EndpointCompletions)
	w := randomWorkload(t, target, c.InputLen, c.OutputLen)
	runs := max(c.Runs, 1)
	var sum [5]float64
	for range runs { // the same prompts each time: the server's prefix cache keeps them
		_, _, s, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: c.NumPrompts,
			MaxConcurrency: c.MaxConcurrency, RequestRate: math.Inf(1), Burstiness: 1, ReadyCheck: clientReadyCheck(c)})
		require.NoError(t, err, c.ID)
		require.Equal(t, c.NumPrompts, s.Completed, c.ID)
		for i, v := range []float64{s.TTFT.Mean, s.TTFT.Median, s.TPOT.Mean, s.TPOT.Median, s.OutputThroughput} {
			sum[i] += v / float64(runs)
		}
	}
	return speedFigures{TTFT: &sum[0], MedianTTFT: &sum[1], TPOT: &sum[2], MedianTPOT: &sum[3], Throughput: &sum[4]},
		coldTTFTBound(target, c)
}

// coldBound is the least mean and median TTFT (ms) the run's prompts allow when the server
// computes every prompt it has not seen: a prompt's layer FLOPs at the GPU's dense peak, for
// every measured request but the one the client's initial test run put in the prefix cache.
type coldBound struct{ mean, median float64 }

// coldTTFTBound is the case's coldBound. A published TTFT below it cannot come from cold
// prompts: the source's server had them cached from runs the source does not show, which no
// prediction of the run as published can know.
func coldTTFTBound(target *predict.Target, c speedCase) coldBound {
	setup := target.Plan().Setup()
	ms := 1000 * sim.NewStepModel(setup).PeakPrefillSeconds(c.InputLen)
	cached := 0
	if clientReadyCheck(c) > 0 && setup.PrefixCachingEnabled() {
		cached = 1
	}
	cold := c.NumPrompts - cached
	b := coldBound{mean: ms * float64(cold) / float64(c.NumPrompts)}
	if 2*cold > c.NumPrompts {
		b.median = ms
	}
	return b
}

// belowColdBound reports whether the case's published TTFT figure i (mean or median) is below
// what cold prompts allow.
func belowColdBound(c speedCase, b coldBound, i int) bool {
	m := *c.Measured.list()[i]
	return m != nil && *m < boundOf(b, i)
}

func boundOf(b coldBound, i int) float64 {
	if i == 1 {
		return b.median
	}
	return b.mean
}

// clientReadyCheck is the initial test run of the case's benchmark client: vLLM's client sent
// the run's first prompt before the measured ones on every run until vllm#30975 (0.14) made it
// optional, so with prefix caching on the first measured request found its prompt cached. The
// client is taken to be of the server's release.
func clientReadyCheck(c speedCase) time.Duration {
	if sim.MustVersion(c.SimVersion).AtLeast("0.14.0") { // the plan has parsed it
		return 0
	}
	return 600 * time.Second // the old client's default
}

// speedErrors are the predicted figures' errors against the measured ones, in percent to
// one decimal.
func speedErrors(measured, got speedFigures) speedFigures {
	var e speedFigures
	ms, gs, es := measured.list(), got.list(), e.list()
	for i := range ms {
		m, g := *ms[i], *gs[i]
		if m == nil || *m == 0 {
			continue
		}
		v := math.Round((*g-*m)/(*m)*1000) / 10
		*es[i] = &v
	}
	return e
}

// speedCell is one column of a case's row, and the figure it compares (-1: none published).
func speedCell(c speedCase, got, e speedFigures, col [2]int) (string, int) {
	ms, gs, es := c.Measured.list(), got.list(), e.list()
	for _, i := range []int{col[0], col[1]} {
		if *ms[i] != nil && *es[i] != nil {
			tag := ""
			if i != col[0] {
				tag = "p50 "
			}
			return fmt.Sprintf("%s%.1f / %.1f (%+.1f%%)", tag, **ms[i], **gs[i], **es[i]), i
		}
	}
	return fmt.Sprintf("%.1f pred", **gs[col[0]]), -1
}

// speedSplit is the split rule of docs/validation.md#speed, the one of the start-up corpus:
// a run is fit when the FNV-1a 32-bit hash of its id is divisible by 3, else held out.
func speedSplit(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	if h.Sum32()%3 == 0 {
		return "fit"
	}
	return "heldout"
}

func TestSpeedCorpus(t *testing.T) {
	raw, err := os.ReadFile(speedCorpusPath)
	require.NoError(t, err)
	var cor struct {
		Cases []speedCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &cor))
	require.GreaterOrEqual(t, len(cor.Cases), 10)
	errs := map[string]speedFigures{}
	var out strings.Builder
	for _, set := range []string{"fit", "heldout"} {
		var cases []speedCase
		for _, c := range cor.Cases {
			require.Equal(t, speedSplit(c.ID), c.Set, "%s: the set follows the split rule, not the results", c.ID)
			if c.Set == set {
				cases = append(cases, c)
			}
		}
		out.WriteString(speedTable(t, set, cases, errs))
	}
	t.Log(out.String())
	if path := os.Getenv("VLLMTOP_SPEED_BASELINE_OUT"); path != "" {
		out, err := json.MarshalIndent(errs, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Clean(path), out, 0o644))
	}
}

// speedTable predicts one set's cases and returns its table and summary lines; it records
// each case's errors in errs and checks the held-out ones against their baselines.
func speedTable(t *testing.T, set string, cases []speedCase, errs map[string]speedFigures) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s set (%d runs)\n", set, len(cases))
	fmt.Fprintf(&b, "%-52s %-17s %-26s %-24s %-24s\n", "case", "GPU", "TTFT ms (err)", "TPOT ms (err)", "out tok/s (err)")
	var abs [3][]float64
	var excluded, cached []string
	for _, c := range cases {
		if c.Exclude != "" {
			excluded = append(excluded, c.ID+": "+c.Exclude)
			continue
		}
		got, bound := predictSpeed(t, c)
		e := speedErrors(c.Measured, got)
		errs[c.ID] = e
		cells := make([]string, 3)
		for k, col := range speedColumns {
			var i int
			cells[k], i = speedCell(c, got, e, col)
			if k == 0 && i >= 0 && belowColdBound(c, bound, i) {
				cells[k] = strings.TrimSuffix(cells[k], ")") + ", cached)"
				cached = append(cached, fmt.Sprintf("%s: %s %.1f ms, cold bound %.1f ms", c.ID, speedFigureNames[i], **c.Measured.list()[i], boundOf(bound, i)))
				continue
			}
			if i >= 0 {
				abs[k] = append(abs[k], math.Abs(**e.list()[i]))
			}
		}
		fmt.Fprintf(&b, "%-52s %-17s %-26s %-24s %-24s\n", c.ID, fmt.Sprintf("%s TP%d", c.GPUProfile, c.TP), cells[0], cells[1], cells[2])
		if set == "heldout" {
			checkSpeedBaseline(t, c, e)
		}
	}
	for i, name := range []string{"TTFT", "TPOT", "output throughput"} {
		fmt.Fprintf(&b, "%s %s: %s\n", set, name, within15(abs[i]))
	}
	for _, x := range excluded {
		fmt.Fprintf(&b, "excluded %s\n", x)
	}
	if len(cached) > 0 {
		fmt.Fprintf(&b, "TTFT not counted, below the cold bound (the published server had the prompts cached):\n")
		for _, x := range cached {
			fmt.Fprintf(&b, "  %s\n", x)
		}
	}
	return b.String()
}

// checkSpeedBaseline fails when one of the case's errors grew by more than a point against its
// recorded baseline.
func checkSpeedBaseline(t *testing.T, c speedCase, e speedFigures) {
	t.Helper()
	if c.Baseline == nil {
		return
	}
	bs, now := c.Baseline.list(), e.list()
	for i, name := range speedFigureNames {
		b, n := *bs[i], *now[i]
		if b != nil && n != nil && math.Abs(*n) > math.Abs(*b)+1 {
			t.Errorf("%s: %s error %+.1f%%, the baseline was %+.1f%%", c.ID, name, *n, *b)
		}
	}
}

// within15 counts the absolute errors within 15% and gives their median.
func within15(errs []float64) string {
	if len(errs) == 0 {
		return "no figures"
	}
	sort.Float64s(errs)
	n := 0
	for _, e := range errs {
		if e <= 15 {
			n++
		}
	}
	return fmt.Sprintf("%d of %d within 15%%, median |error| %.1f%%", n, len(errs), errs[len(errs)/2])
}
