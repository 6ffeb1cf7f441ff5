package loadgen

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/refused"
)

func sweepConfig() SweepConfig {
	return SweepConfig{
		Info:     RunInfo{Backend: BackendCompletions, ModelID: "org/m", NumPrompts: 6, Burstiness: 1, Metrics: []string{"ttft"}, Percentiles: []float64{50}},
		Workload: numbered{}, NumPrompts: 6, Burstiness: 1, Rates: []float64{math.Inf(1)},
	}
}

func TestSweepRunsEachValueInOrder(t *testing.T) {
	f := newBenchFakeServer(t)
	cfg := sweepConfig()
	cfg.Concurrency = []int{1, 3}
	cfg.FreshPrompts = true
	var mu sync.Mutex
	started, sunk := []int{}, 0
	cfg.OnStart = func(info RunInfo) ([]func(Result), func()) {
		started = append(started, info.MaxConcurrency)
		return []func(Result){func(Result) { mu.Lock(); sunk++; mu.Unlock() }}, func() {}
	}
	var runs []SweepRun
	err := Sweep(context.Background(), newBenchClient(t, f.URL), cfg, func(r SweepRun) { runs = append(runs, r) })
	require.NoError(t, err)
	assert.Equal(t, SweepConcurrency, cfg.Param())
	assert.Equal(t, []int{1, 3}, started)
	assert.Equal(t, 12, sunk, "every measured result reaches the run's sinks")
	require.Len(t, runs, 2)
	for i, c := range []int{1, 3} {
		assert.Equal(t, i, runs[i].Index)
		assert.Equal(t, 2, runs[i].Of)
		assert.Equal(t, SweepConcurrency, runs[i].Param)
		assert.False(t, runs[i].Interrupted)
		assert.Equal(t, float64(c), runs[i].Value)
		assert.Equal(t, c, runs[i].Info.MaxConcurrency)
		assert.Equal(t, 6, runs[i].Summary.Completed)
		_, ok := runs[i].Summary.TTFT.Percentiles[99]
		assert.True(t, ok, "the summary has p99 for the sweep table")
		v, _ := runs[i].Doc.Get("max_concurrency")
		assert.Equal(t, c, v)
	}
	// Fresh prompts: the second run's prompts follow the first's.
	close(f.prompts)
	var seen []int
	for p := range f.prompts {
		n, _ := strconv.Atoi(p)
		seen = append(seen, n)
	}
	sort.Ints(seen)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, seen)
}

func TestSweepOverRatesAndItsStops(t *testing.T) {
	f := newBenchFakeServer(t)
	cfg := sweepConfig()
	cfg.Rates = []float64{500, 1000}
	cfg.Concurrency = []int{2}
	var runs []SweepRun
	err := Sweep(context.Background(), newBenchClient(t, f.URL), cfg, func(r SweepRun) { runs = append(runs, r) })
	require.NoError(t, err)
	assert.Equal(t, SweepRequestRate, cfg.Param())
	require.Len(t, runs, 2)
	assert.Equal(t, 1000.0, runs[1].Info.RequestRate)
	assert.Equal(t, 2, runs[1].Info.MaxConcurrency, "the cap holds for every run of a rate sweep")

	// No server: the first run has no success and the sweep stops there.
	cfg.NumPrompts = 2
	goneURL := "http://" + refused.Addr(t)
	runs = nil
	err = Sweep(context.Background(), newBenchClient(t, goneURL), cfg, func(r SweepRun) { runs = append(runs, r) })
	require.NoError(t, err)
	assert.Len(t, runs, 1)
	assert.Zero(t, runs[0].Summary.Completed)

	// A config Bench cannot run fails before any run.
	cfg.NumPrompts = 0
	err = Sweep(context.Background(), newBenchClient(t, f.URL), cfg, func(SweepRun) { t.Error("no run expected") })
	assert.EqualError(t, err, "--num-prompts must be at least 1, got 0")

	// An ended context reports the run under way, then stops.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg.NumPrompts = 6
	runs = nil
	err = Sweep(ctx, newBenchClient(t, f.URL), cfg, func(r SweepRun) { runs = append(runs, r) })
	assert.ErrorIs(t, err, context.Canceled)
	require.Len(t, runs, 1)
	assert.True(t, runs[0].Interrupted)
}

func TestSaveResultNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	info := RunInfo{Date: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Backend: BackendCompletions, ModelID: "org/m", RequestRate: math.Inf(1), MaxConcurrency: 8}
	doc := ResultDoc{{"completed", 3}}
	for _, c := range []struct {
		opts SaveOptions
		want string
	}{
		{SaveOptions{Dir: dir}, "openai-infqps-concurrency8-m-20260101-120000.json"},
		{SaveOptions{Dir: dir, Filename: "mine.json"}, "mine.json"},
		{SaveOptions{Dir: dir, Filename: "mine.json", Sweep: SweepConcurrency}, "mine-concurrency8.json"},
	} {
		path, err := SaveResult(doc, info, c.opts)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(dir, c.want), path)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		assert.Equal(t, 3.0, m["completed"])
	}
	info.RequestRate = 2.5
	path, err := SaveResult(doc, info, SaveOptions{Dir: dir, Filename: "r.json", Sweep: SweepRequestRate})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "r-2.5qps.json"), path)
	_, err = SaveResult(doc, info, SaveOptions{Dir: filepath.Join(path, "sub")})
	assert.Error(t, err, "a file where the directory should be")
}

func TestChooseModelAndDescribe(t *testing.T) {
	models := []ModelCard{{ID: "a"}, {ID: "b"}}
	m, err := ChooseModel("", models, "http://h")
	require.NoError(t, err)
	assert.Equal(t, "a", m.ID)
	m, err = ChooseModel("b", models, "http://h")
	require.NoError(t, err)
	assert.Equal(t, "b", m.ID)
	_, err = ChooseModel("c", models, "http://h")
	assert.EqualError(t, err, `model "c" is not served by http://h (it serves a, b)`)

	refused := &ServerError{URL: "http://h/v1/models", Status: 401, Msg: "Unauthorized"}
	assert.Equal(t, "http://h/v1/models: 401 Unauthorized: the server refused the API key", Describe(refused, true))
	assert.Contains(t, Describe(refused, false), "wants an API key (--api-key, or OPENAI_API_KEY or VLLM_API_KEY)")
	assert.Equal(t, "cannot reach http://h: connection refused", Describe(&ServerError{URL: "http://h", Msg: "connection\nrefused"}, false))
}

func TestDatasets(t *testing.T) {
	f := newBenchFakeServer(t) // no /tokenize
	c := newBenchClient(t, f.URL)
	d, err := OpenDataset(DatasetConfig{Name: DatasetRandom, Random: RandomConfig{InputLen: 100, OutputLen: 10, RangeRatio: 0.5}})
	require.NoError(t, err)
	w, desc, err := d.Workload(context.Background(), c)
	require.NoError(t, err)
	assert.True(t, w.Prompt(0).IgnoreEOS, "the random dataset sets ignore_eos")
	assert.Contains(t, desc, "random 100 in / 10 out (estimated lengths: ")
	assert.Equal(t, 150+15, d.MaxTokens())

	d, err = OpenDataset(DatasetConfig{Name: DatasetFixed, Prompt: "hi", Random: RandomConfig{OutputLen: 5}})
	require.NoError(t, err)
	w, desc, err = d.Workload(context.Background(), c)
	require.NoError(t, err)
	assert.Equal(t, "hi", w.Prompt(3).Text)
	assert.Equal(t, "one fixed prompt, 5 output tokens", desc)
	assert.Zero(t, d.MaxTokens())

	for _, c := range []struct {
		cfg  DatasetConfig
		want string
	}{
		{DatasetConfig{Name: "nosuch"}, `--dataset-name "nosuch"`},
		{DatasetConfig{Name: "speed_bench"}, "--dataset-name speed_bench: downloads"},
		{DatasetConfig{Name: DatasetShareGPT}, "needs --dataset-path"},
		{DatasetConfig{Name: DatasetShareGPT, Path: "/no/such.json"}, "ShareGPT dataset"},
		{DatasetConfig{Name: DatasetFixed}, "needs --prompt"},
		{DatasetConfig{Name: DatasetRandom, Prompt: "x", Random: RandomConfig{InputLen: 1, OutputLen: 1}}, "--prompt goes with --dataset-name fixed"},
		{DatasetConfig{Name: DatasetRandom, Random: RandomConfig{InputLen: 1, OutputLen: 1, RangeRatio: 1.5}}, "--random-range-ratio"},
	} {
		_, err := OpenDataset(c.cfg)
		assert.ErrorContains(t, err, c.want, "%+v", c.cfg)
	}
}

func TestSweepConfigCheck(t *testing.T) {
	ok := sweepConfig()
	require.NoError(t, ok.Check())
	for _, c := range []struct {
		edit func(*SweepConfig)
		want string
	}{
		{func(c *SweepConfig) { c.Duration = -time.Second }, "--duration must not be negative"},
		{func(c *SweepConfig) { c.NumPrompts = 0 }, "--num-prompts must be at least 1"},
		{func(c *SweepConfig) { c.Warmups = -1 }, "--num-warmups"},
		{func(c *SweepConfig) { c.Rates = nil }, "--request-rate"},
		{func(c *SweepConfig) { c.Concurrency, c.Rates = []int{1, 2}, []float64{1, 2} }, "both lists"},
		{func(c *SweepConfig) { c.Burstiness = 0 }, "--burstiness"},
		{func(c *SweepConfig) { c.NumPrompts, c.Duration = 0, time.Minute }, "needs --max-concurrency"},
		{func(c *SweepConfig) { c.NumPrompts, c.Concurrency = 1e12, nil }, "sends every prompt at once"},
		{func(c *SweepConfig) { c.NumPrompts, c.Concurrency = MaxAtOnce+1, []int{8, 0} }, "more than the 1048576"},
		{func(c *SweepConfig) { c.NumPrompts = EveryPrompt }, "sends every prompt at once"}, // typed, not -1
	} {
		cfg := sweepConfig()
		c.edit(&cfg)
		assert.ErrorContains(t, cfg.Check(), c.want)
	}
	// Many prompts are fine where something paces them.
	for _, edit := range []func(*SweepConfig){
		func(c *SweepConfig) { c.Concurrency = []int{64} },
		func(c *SweepConfig) { c.Concurrency, c.Rates = nil, []float64{10} },
		func(c *SweepConfig) { c.NumPrompts, c.WholeFile = EveryPrompt, true },                // a file's every prompt: its size bounds them
		func(c *SweepConfig) { c.Ramp = Ramp{Strategy: RampLinear, StartRPS: 1, EndRPS: 10} }, // a ramp paces them
	} {
		cfg := sweepConfig()
		cfg.NumPrompts = 1e12
		edit(&cfg)
		assert.NoError(t, cfg.Check())
	}
}

func TestReportPrintsSavesAndSummarises(t *testing.T) {
	f := newBenchFakeServer(t)
	cfg := sweepConfig()
	cfg.Concurrency = []int{1, 2}
	var out strings.Builder
	var warnings []string
	dir := t.TempDir()
	rep := &Report{Out: &out, Warn: func(m string) { warnings = append(warnings, m) }, Save: &SaveOptions{Dir: dir, Filename: "r.json"}}
	require.NoError(t, Sweep(context.Background(), newBenchClient(t, f.URL), cfg, rep.Add))
	require.NoError(t, rep.Close())
	assert.False(t, rep.Failed())
	assert.Empty(t, warnings)
	assert.Equal(t, 2, strings.Count(out.String(), "Serving Benchmark Result"))
	assert.Contains(t, out.String(), "Sweep Summary")
	for _, name := range []string{"r-concurrency1.json", "r-concurrency2.json"} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.NoError(t, err, "a sweep's runs are saved apart")
	}

	// JSON, and a run with no success: the list is one document, and the report failed.
	goneURL := "http://" + refused.Addr(t)
	out.Reset()
	cfg.NumPrompts = 2
	rep = &Report{Out: &out, Warn: func(m string) { warnings = append(warnings, m) }, JSON: true}
	require.NoError(t, Sweep(context.Background(), newBenchClient(t, goneURL), cfg, rep.Add))
	require.NoError(t, rep.Close())
	assert.True(t, rep.Failed())
	var docs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.String()), &docs), out.String())
	assert.Len(t, docs, 1)
	require.Len(t, warnings, 2)
	assert.Regexp(t, `^2 of 2 requests failed: connect 2$`, warnings[0])
	assert.Regexp(t, `^no request succeeded \(last: connect: .*connection refused\); the sweep stops here$`, warnings[1])
}

// A served name with control characters is cleaned for the terminal (ID) and sent back to
// the server byte for byte (Request), which matches names exactly.
func TestModelNameIsCleanedForDisplayAndSentAsListed(t *testing.T) {
	name := "q\x1b[31mred\x1b[0m"
	cards := saneCards([]ModelCard{{ID: name}, {ID: strings.Repeat("x", maxModelIDBytes+1)}, {ID: "\x1b[0m"}})
	require.Len(t, cards, 2, "a name with nothing printable is dropped")
	assert.Equal(t, "qred", cards[0].ID)
	assert.Equal(t, name, cards[0].Request)
	assert.Len(t, cards[1].Request, maxModelIDBytes+1, "a long name is kept whole for display")
	for _, want := range []string{name, "qred"} {
		m, err := ChooseModel(want, cards, "http://h")
		require.NoError(t, err)
		assert.Equal(t, name, m.Request)
	}
}
