package predict_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/predict"
	"github.com/vllmtop/vllmtop/loadgen"
)

// The speed corpus: published vLLM serving benchmarks with their settings
// (docs/validation.md#speed). Each is predicted on the virtual clock with the built-in
// catalogue; the test prints the table and fails when a case's error grows past its recorded
// baseline. None of these results is used to fit the step-time model.

const speedCorpusPath = "../../../testdata/vllm-bench/cases.json"

type speedCase struct {
	ID             string        `json:"id"`
	Set            string        `json:"set"`
	URL            string        `json:"url"`
	Model          string        `json:"model"`
	GPUProfile     string        `json:"gpu_profile"`
	TP             int           `json:"tp"`
	SimVersion     string        `json:"sim_version"`
	MaxModelLen    int           `json:"max_model_len"`
	InputLen       int           `json:"input_len"`
	OutputLen      int           `json:"output_len"`
	MaxConcurrency int           `json:"max_concurrency"`
	NumPrompts     int           `json:"num_prompts"`
	Measured       speedFigures  `json:"measured"`
	Baseline       *speedFigures `json:"baseline"` // the errors in percent recorded last
}

// speedFigures are a run's mean TTFT and TPOT (ms) and output throughput (tokens/s); in a
// baseline, the errors of those figures in percent. Nil is not given.
type speedFigures struct {
	TTFT       *float64 `json:"mean_ttft_ms"`
	TPOT       *float64 `json:"mean_tpot_ms"`
	Throughput *float64 `json:"output_throughput_tok_s"`
}

func (f speedFigures) list() []*float64 { return []*float64{f.TTFT, f.TPOT, f.Throughput} }

// predictSpeed runs the case's benchmark on the simulator's virtual clock.
func predictSpeed(t *testing.T, c speedCase) speedFigures {
	t.Helper()
	target := predict.New(plan(t, c.Model, "--sim-gpu", c.GPUProfile, "--tensor-parallel-size", strconv.Itoa(c.TP),
		"--sim-vllm-version", c.SimVersion, "--max-model-len", strconv.Itoa(c.MaxModelLen)), loadgen.EndpointCompletions)
	w := randomWorkload(t, target, c.InputLen, c.OutputLen)
	_, _, s, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: c.NumPrompts,
		MaxConcurrency: c.MaxConcurrency, RequestRate: math.Inf(1), Burstiness: 1})
	require.NoError(t, err, c.ID)
	require.Equal(t, c.NumPrompts, s.Completed, c.ID)
	return speedFigures{TTFT: &s.TTFT.Mean, TPOT: &s.TPOT.Mean, Throughput: &s.OutputThroughput}
}

// speedErrors are the predicted figures' errors against the measured ones, in percent to
// one decimal.
func speedErrors(measured, got speedFigures) speedFigures {
	var e speedFigures
	for i := range 3 {
		m, g := measured.list()[i], got.list()[i]
		if m == nil || *m == 0 {
			continue
		}
		v := math.Round((*g-*m)/(*m)*1000) / 10
		switch i {
		case 0:
			e.TTFT = &v
		case 1:
			e.TPOT = &v
		case 2:
			e.Throughput = &v
		}
	}
	return e
}

func TestSpeedCorpus(t *testing.T) {
	raw, err := os.ReadFile(speedCorpusPath)
	require.NoError(t, err)
	var cor struct {
		Cases []speedCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &cor))
	require.GreaterOrEqual(t, len(cor.Cases), 10)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-44s %-17s %-20s %-24s %-20s %s\n", "case", "GPU", "TTFT ms (err)", "TPOT ms (err)", "out tok/s (err)", "")
	errs := map[string]speedFigures{}
	var abs [3][]float64
	for _, c := range cor.Cases {
		require.Equal(t, "heldout", c.Set, "%s: every published result is held out", c.ID)
		got := predictSpeed(t, c)
		e := speedErrors(c.Measured, got)
		errs[c.ID] = e
		cells := make([]string, 3)
		for i := range cells {
			m, g, pe := c.Measured.list()[i], got.list()[i], e.list()[i]
			cells[i] = fmt.Sprintf("%.1f pred", *g)
			if m != nil && pe != nil {
				cells[i] = fmt.Sprintf("%.1f / %.1f (%+.1f%%)", *m, *g, *pe)
				abs[i] = append(abs[i], math.Abs(*pe))
			}
		}
		fmt.Fprintf(&b, "%-44s %-17s %-20s %-24s %-20s\n", c.ID, fmt.Sprintf("%s TP%d", c.GPUProfile, c.TP), cells[0], cells[1], cells[2])
		checkSpeedBaseline(t, c, e)
	}
	for i, name := range []string{"TTFT", "TPOT", "output throughput"} {
		fmt.Fprintf(&b, "%s: %s\n", name, within15(abs[i]))
	}
	t.Log(b.String())
	if path := os.Getenv("VLLMTOP_SPEED_BASELINE_OUT"); path != "" {
		out, err := json.MarshalIndent(errs, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Clean(path), out, 0o644))
	}
}

// checkSpeedBaseline fails when one of the case's errors grew by more than a point against its
// recorded baseline.
func checkSpeedBaseline(t *testing.T, c speedCase, e speedFigures) {
	t.Helper()
	if c.Baseline == nil {
		return
	}
	for i, name := range []string{"TTFT", "TPOT", "output throughput"} {
		b, now := c.Baseline.list()[i], e.list()[i]
		if b != nil && now != nil && math.Abs(*now) > math.Abs(*b)+1 {
			t.Errorf("%s: %s error %+.1f%%, the baseline was %+.1f%%", c.ID, name, *now, *b)
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
