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
	// InputLens are the run's prompt lengths in the order it sent them, where the source gives
	// them and they spread widely: request i gets InputLens[i mod len]. InputLen is then their
	// mean, rounded, and only labels the run.
	InputLens []int `json:"input_lens"`
	OutputLen int   `json:"output_len"`
	// MaxConcurrency caps the requests in flight; 0 sends every prompt at once.
	MaxConcurrency int `json:"max_concurrency"`
	// RequestRate is the client's --request-rate: "inf" (every prompt at once, the default) or
	// requests per second, sent with Poisson arrivals as vLLM's client does.
	RequestRate requestRate `json:"request_rate"`
	// Arrivals is "constant" where the client spaced the requests evenly (GuideLLM's constant
	// profile), else empty: Poisson, as vLLM's client sends them at burstiness 1.
	Arrivals   string `json:"arrivals"`
	NumPrompts int    `json:"num_prompts"`
	// Runs is how many times the published protocol sent the same prompts to the same server
	// in a row, its figures the mean of the runs' (0 or 1: one run).
	Runs int `json:"runs"`
	// Session names the speedSession the case ran in, if the protocol ran it with others on
	// one server.
	Session  string        `json:"session"`
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
	target := predict.New(plan(t, serverArgs(c)...), loadgen.EndpointCompletions)
	runs := max(c.Runs, 1)
	var sum runSum
	for range runs { // the same prompts each time: the server's prefix cache keeps them
		sum.add(benchCase(t, target, c), runs)
	}
	return sum.figures(), coldTTFTBound(target, c)
}

// serverArgs are the simulator's flags for the case's server.
func serverArgs(c speedCase) []string {
	return append([]string{c.Model, "--sim-gpu", c.GPUProfile, "--tensor-parallel-size", strconv.Itoa(c.TP),
		"--sim-vllm-version", c.SimVersion, "--max-model-len", strconv.Itoa(c.MaxModelLen)}, c.SimArgs...)
}

// benchCase runs the case's benchmark once against target. Its random prompts are a pure
// function of the index and the one seed of randomWorkload, whatever the length, so a longer
// prompt starts with the words of a shorter one of the same index, as the prompts of vLLM's
// random dataset do with one --seed.
func benchCase(t *testing.T, target *predict.Target, c speedCase) loadgen.Summary {
	t.Helper()
	w := caseWorkload(t, target, c)
	_, _, s, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: c.NumPrompts,
		MaxConcurrency: c.MaxConcurrency, RequestRate: float64(c.RequestRate), Burstiness: burstiness(t, c), ReadyCheck: clientReadyCheck(c)})
	require.NoError(t, err, c.ID)
	require.Equal(t, c.NumPrompts, s.Completed, c.ID)
	return s
}

// caseWorkload is the case's prompts: random ones of its one length, or of each request's
// published length.
func caseWorkload(t *testing.T, target *predict.Target, c speedCase) loadgen.Workload {
	if len(c.InputLens) == 0 {
		return randomWorkload(t, target, c.InputLen, c.OutputLen)
	}
	sum := 0
	byLen := map[int]loadgen.Workload{}
	for _, n := range c.InputLens {
		sum += n
		if byLen[n] == nil {
			byLen[n] = randomWorkload(t, target, n, c.OutputLen)
		}
	}
	require.Equal(t, c.InputLen, int(math.Round(float64(sum)/float64(len(c.InputLens)))), "%s: input_len is the mean of input_lens", c.ID)
	return publishedLengths{lens: c.InputLens, byLen: byLen}
}

// publishedLengths gives request i a random prompt of the i-th published length (cycling).
type publishedLengths struct {
	lens  []int
	byLen map[int]loadgen.Workload
}

func (w publishedLengths) Prompt(i int) loadgen.Prompt {
	return w.byLen[w.lens[i%len(w.lens)]].Prompt(i)
}

func (w publishedLengths) Name() string { return "published-lengths" }

// constantArrivals is the gamma shape that spaces arrivals evenly: the gaps' relative spread is
// 1/sqrt(shape), a thousandth here.
const constantArrivals = 1e6

// burstiness is the client's gamma shape for the case's arrivals.
func burstiness(t *testing.T, c speedCase) float64 {
	switch c.Arrivals {
	case "":
		return 1
	case "constant":
		return constantArrivals
	}
	t.Fatalf("%s: arrivals %q: want \"constant\" or none", c.ID, c.Arrivals)
	return 0
}

// requestRate is a published --request-rate: the string "inf" or absent for +Inf, else a
// positive number of requests per second.
type requestRate float64

func (r *requestRate) UnmarshalJSON(b []byte) error {
	if string(b) == `"inf"` || string(b) == "null" {
		*r = requestRate(math.Inf(1))
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || !(v > 0) {
		return fmt.Errorf("request_rate %s: want \"inf\" or a positive number", b)
	}
	*r = requestRate(v)
	return nil
}

// runSum averages the figures of several runs.
type runSum [5]float64

func (r *runSum) add(s loadgen.Summary, runs int) {
	for i, v := range []float64{s.TTFT.Mean, s.TTFT.Median, s.TPOT.Mean, s.TPOT.Median, s.OutputThroughput} {
		r[i] += v / float64(runs)
	}
}

func (r *runSum) figures() speedFigures {
	return speedFigures{TTFT: &r[0], MedianTTFT: &r[1], TPOT: &r[2], MedianTPOT: &r[3], Throughput: &r[4]}
}

// speedSession is a published protocol that ran several cases back to back against one server:
// after warmup_requests requests of one fixed short prompt, rounds rounds, each running the
// cases in order. The server's prefix cache carries over from case to case, so a case can find
// its prompts, or their first tokens, computed by an earlier one.
type speedSession struct {
	Order          []string `json:"order"`
	Rounds         int      `json:"rounds"`
	WarmupRequests int      `json:"warmup_requests"`
	Notes          string   `json:"notes"`
}

// predictSessions runs every session of the corpus and returns its cases' figures, each the
// mean over the session's rounds.
func predictSessions(t *testing.T, sessions map[string]speedSession, cases []speedCase) map[string]speedFigures {
	t.Helper()
	byID := map[string]speedCase{}
	for _, c := range cases {
		byID[c.ID] = c
	}
	out := map[string]speedFigures{}
	for name, s := range sessions {
		require.NotEmpty(t, s.Order, name)
		require.Positive(t, s.Rounds, name)
		first, ok := byID[s.Order[0]]
		require.True(t, ok, "%s: no case %s", name, s.Order[0])
		sums := make([]runSum, len(s.Order))
		for _, id := range s.Order {
			c, ok := byID[id]
			require.True(t, ok, "%s: no case %s", name, id)
			require.Equal(t, name, c.Session, "%s: the case names its session", id)
			require.Equal(t, serverArgs(first), serverArgs(c), "%s: one server for the whole session", id)
			require.Equal(t, s.Rounds, max(c.Runs, 1), "%s: its runs are the session's rounds", id)
			require.Empty(t, c.Exclude, id)
		}
		target := predict.New(plan(t, serverArgs(first)...), loadgen.EndpointCompletions)
		if s.WarmupRequests > 0 {
			warm := loadgen.Offset(randomWorkload(t, target, 16, 16), 1<<20) // shares no words with the runs
			_, _, _, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: &loadgen.Fixed{P: warm.Prompt(0)},
				NumPrompts: s.WarmupRequests, MaxConcurrency: 1, RequestRate: math.Inf(1), Burstiness: 1})
			require.NoError(t, err, name)
		}
		for range s.Rounds {
			for k, id := range s.Order {
				sums[k].add(benchCase(t, target, byID[id]), s.Rounds)
			}
		}
		for k, id := range s.Order {
			out[id] = sums[k].figures()
		}
	}
	for _, c := range cases {
		_, ran := out[c.ID]
		require.Equal(t, c.Session != "", ran, "%s: a case with a session is in that session's order", c.ID)
	}
	return out
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
	steps := sim.NewStepModel(setup)
	cached := 0
	if clientReadyCheck(c) > 0 && setup.PrefixCachingEnabled() {
		cached = 1
	}
	lens := c.InputLens
	if len(lens) == 0 {
		lens = []int{c.InputLen}
	}
	// Request i's bound, 0 for the one the initial test run cached.
	bounds := make([]float64, c.NumPrompts)
	var sum float64
	for i := cached; i < c.NumPrompts; i++ {
		bounds[i] = 1000 * steps.PeakPrefillSeconds(lens[i%len(lens)])
		sum += bounds[i]
	}
	sort.Float64s(bounds)
	b := coldBound{mean: sum / float64(c.NumPrompts)}
	if c.NumPrompts > 0 {
		b.median = bounds[(c.NumPrompts-1)/2] // the lower middle: a bound, not an estimate
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
		Cases    []speedCase             `json:"cases"`
		Sessions map[string]speedSession `json:"sessions"`
	}
	require.NoError(t, json.Unmarshal(raw, &cor))
	require.GreaterOrEqual(t, len(cor.Cases), 10)
	sessions := predictSessions(t, cor.Sessions, cor.Cases)
	errs := map[string]speedFigures{}
	var out, md strings.Builder
	for _, set := range []string{"fit", "heldout"} {
		var cases []speedCase
		for _, c := range cor.Cases {
			require.Equal(t, speedSplit(c.ID), c.Set, "%s: the set follows the split rule, not the results", c.ID)
			if c.Set == set {
				cases = append(cases, c)
			}
		}
		text, markdown := speedTable(t, set, cases, sessions, errs)
		out.WriteString(text)
		md.WriteString(markdown)
	}
	t.Log(out.String())
	if path := os.Getenv("VLLMTOP_SPEED_MARKDOWN_OUT"); path != "" {
		require.NoError(t, os.WriteFile(filepath.Clean(path), []byte(md.String()), 0o644))
	}
	if path := os.Getenv("VLLMTOP_SPEED_BASELINE_OUT"); path != "" {
		out, err := json.MarshalIndent(errs, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Clean(path), out, 0o644))
	}
}

// speedTable predicts one set's cases (or takes their session's figures from sessions) and
// returns its table and summary lines, as text and as the markdown of docs/validation.md; it
// records each case's errors in errs and checks the held-out ones against their baselines.
func speedTable(t *testing.T, set string, cases []speedCase, sessions map[string]speedFigures, errs map[string]speedFigures) (string, string) {
	t.Helper()
	var b, md strings.Builder
	fmt.Fprintf(&b, "\n%s set (%d runs)\n", set, len(cases))
	fmt.Fprintf(&md, "### Speed %s set (%d runs)\n\n", map[string]string{"fit": "fit", "heldout": "held-out"}[set], len(cases))
	md.WriteString("| case | GPU | in / out, load | TTFT ms: measured / predicted (error) | TPOT ms | output tok/s |\n|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "%-52s %-17s %-26s %-24s %-24s\n", "case", "GPU", "TTFT ms (err)", "TPOT ms (err)", "out tok/s (err)")
	var abs [3][]float64
	var excluded, cached []string
	for _, c := range cases {
		if c.Exclude != "" {
			excluded = append(excluded, c.ID+": "+c.Exclude)
			continue
		}
		// A session's runs model the cache their protocol left: no cold bound applies.
		got, ran := sessions[c.ID]
		var bound coldBound
		if !ran {
			got, bound = predictSpeed(t, c)
		}
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
		fmt.Fprintf(&b, "%-52s %-17s %-26s %-24s %-24s\n", c.ID, layoutLabel(c), cells[0], cells[1], cells[2])
		for k := range cells {
			cells[k] = strings.Replace(cells[k], " pred", " predicted (not published)", 1)
		}
		fmt.Fprintf(&md, "| `%s` | %s | %s | %s | %s | %s |\n", c.ID, layoutLabel(c), loadLabel(c), cells[0], cells[1], cells[2])
		if set == "heldout" {
			checkSpeedBaseline(t, c, e)
		}
	}
	md.WriteString("\n")
	for i, name := range []string{"TTFT", "TPOT", "output throughput"} {
		fmt.Fprintf(&b, "%s %s: %s\n", set, name, within15(abs[i]))
		fmt.Fprintf(&md, "- %s: %s\n", name, within15(abs[i]))
	}
	md.WriteString("\n")
	if len(excluded) > 0 {
		md.WriteString("Listed, not predicted:\n\n")
	}
	for _, x := range excluded {
		fmt.Fprintf(&b, "excluded %s\n", x)
		id, why, _ := strings.Cut(x, ": ")
		fmt.Fprintf(&md, "- `%s`: %s\n", id, why)
	}
	if len(excluded) > 0 {
		md.WriteString("\n")
	}
	if len(cached) > 0 {
		fmt.Fprintf(&b, "TTFT not counted, below the cold bound (the published server had the prompts cached):\n")
		fmt.Fprintf(&md, "TTFT not counted, below the cold bound (the published server had the prompts cached):\n\n")
		for _, x := range cached {
			fmt.Fprintf(&b, "  %s\n", x)
			fmt.Fprintf(&md, "- %s\n", x)
		}
		md.WriteString("\n")
	}
	return b.String(), md.String()
}

// loadLabel is the case's lengths and load as the docs' tables write them: "in / out, C" for a
// concurrency cap, "all N" for every prompt at once, else the rate and the prompt count.
// layoutLabel is the case's card and parallel layout: "A10G TP2", or "A10G TP1 PP2" where the
// server ran a pipeline.
func layoutLabel(c speedCase) string {
	label := fmt.Sprintf("%s TP%d", c.GPUProfile, c.TP)
	for i, arg := range c.SimArgs {
		if arg == "--pipeline-parallel-size" && i+1 < len(c.SimArgs) {
			label += " PP" + c.SimArgs[i+1]
		}
	}
	return label
}

func loadLabel(c speedCase) string {
	lengths := fmt.Sprintf("%d / %d, ", c.InputLen, c.OutputLen)
	if len(c.InputLens) > 0 {
		lengths = fmt.Sprintf("%d mean / %d, ", c.InputLen, c.OutputLen)
	}
	switch {
	case c.MaxConcurrency > 0:
		return lengths + strconv.Itoa(c.MaxConcurrency)
	case math.IsInf(float64(c.RequestRate), 1):
		return lengths + "all " + strconv.Itoa(c.NumPrompts)
	}
	even := ""
	if c.Arrivals == "constant" {
		even = " (even)"
	}
	return fmt.Sprintf("%s%s req/s%s, %d", lengths, strconv.FormatFloat(float64(c.RequestRate), 'f', -1, 64), even, c.NumPrompts)
}

// checkSpeedBaseline fails when one of the case's errors grew by more than a point against its
// recorded baseline.
func checkSpeedBaseline(t *testing.T, c speedCase, e speedFigures) {
	t.Helper()
	if c.Baseline == nil {
		t.Errorf("%s: a held-out run has no baseline; record its errors (VLLMTOP_SPEED_BASELINE_OUT)", c.ID)
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

func TestSpeedCaseRequestRate(t *testing.T) {
	for _, tc := range []struct {
		json string
		want float64
		bad  bool
	}{
		{`{}`, 0, false}, // absent: the zero rate, which the client takes as every prompt at once
		{`{"request_rate": "inf"}`, math.Inf(1), false},
		{`{"request_rate": 4}`, 4, false},
		{`{"request_rate": 14.99}`, 14.99, false},
		{`{"request_rate": 0}`, 0, true},
		{`{"request_rate": -1}`, 0, true},
		{`{"request_rate": "fast"}`, 0, true},
	} {
		var c speedCase
		err := json.Unmarshal([]byte(tc.json), &c)
		if tc.bad {
			require.Error(t, err, tc.json)
			continue
		}
		require.NoError(t, err, tc.json)
		require.Equal(t, tc.want, float64(c.RequestRate), tc.json)
	}
	require.Equal(t, 1.0, burstiness(t, speedCase{}), "Poisson unless the source says otherwise")
	require.Equal(t, constantArrivals, burstiness(t, speedCase{Arrivals: "constant"}))
	gaps := loadgen.ArrivalGaps(100, 1, constantArrivals, 0)
	for _, g := range gaps {
		require.InDelta(t, time.Second, g, float64(10*time.Millisecond), "constant arrivals are evenly spaced")
	}
}
