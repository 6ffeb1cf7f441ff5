package serve_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// The validation corpus: real vLLM start-ups with the settings as run and the KV figures as
// logged (docs/validation.md). This test predicts each one with the built-in catalogue only,
// prints a table per set, and fails when a held-out case gets worse than its recorded baseline.

const corpusPath = "../../../testdata/vllm-logs/cases.json"

type corpus struct {
	Cases []corpusCase `json:"cases"`
}

type corpusCase struct {
	ID           string   `json:"id"`
	Set          string   `json:"set"`
	Calibration  bool     `json:"calibration"`
	URL          string   `json:"url"`
	VLLMVersion  string   `json:"vllm_version"`
	SimVersion   string   `json:"sim_version"`
	EntryPoint   string   `json:"entry_point"`
	Model        string   `json:"model"`
	GPU          string   `json:"gpu"`
	GPUProfile   string   `json:"gpu_profile"`
	TP           int      `json:"tp"`
	DP           int      `json:"dp"`
	PP           int      `json:"pp"`
	DType        string   `json:"dtype"`
	KVCacheDType string   `json:"kv_cache_dtype"`
	GMU          *float64 `json:"gpu_memory_utilization"`
	GMUStated    bool     `json:"gmu_stated"`
	MaxModelLen  int      `json:"max_model_len"`
	MaxNumSeqs   int      `json:"max_num_seqs"`
	MaxBatched   int      `json:"max_num_batched_tokens"`
	EnforceEager bool     `json:"enforce_eager"`
	BlockSize    int      `json:"block_size"`
	ExtraArgs    []string `json:"extra_args"`
	Logged       logged   `json:"logged"`
	Exclude      string   `json:"exclude"`
	Baseline     *result  `json:"baseline"`

	// SimModel is the catalogue entry a local or re-quantized checkpoint is sized as, and
	// SimQuantization the checkpoint's quantization method (--sim-checkpoint-quantization).
	SimModel        string `json:"sim_model"`
	SimQuantization string `json:"sim_quantization"`
	// CompileCache is "cold" where the start-up was the first of its shape, so torch.compile
	// ran inside the memory profile (--sim-compile-cache); empty is a warm cache or not known.
	CompileCache string `json:"compile_cache"`
	// FlashInfer is "absent" where the log shows an install without FlashInfer ("FlashInfer is
	// not available. Falling back to the PyTorch-native implementation", --sim-flashinfer).
	FlashInfer string `json:"flashinfer"`
	// Env is the vLLM environment variables the source shows the server was started with
	// (VLLM_USE_V2_MODEL_RUNNER, say), passed to the simulator as its environment.
	Env map[string]string `json:"env"`
}

type logged struct {
	KVTokens       int      `json:"kv_tokens"`
	GPUBlocks      *int     `json:"gpu_blocks"`
	BlockSize      int      `json:"block_size"`
	AvailableKVGiB *float64 `json:"available_kv_gib"`
	Refusal        *refusal `json:"refusal"`
}

type refusal struct {
	Kind         string   `json:"kind"`
	Message      string   `json:"message"`
	KVTokens     int      `json:"kv_tokens"`
	AvailableGiB *float64 `json:"available_gib"`
}

// result is one case's prediction; the corpus keeps the one of the commit that recorded it
// as "baseline".
type result struct {
	Outcome   string   `json:"outcome"` // started, refused, or not expressible
	Metric    string   `json:"metric,omitempty"`
	Logged    float64  `json:"logged,omitempty"`
	Predicted float64  `json:"predicted,omitempty"`
	ErrorPct  *float64 `json:"error_pct,omitempty"`
	Reason    string   `json:"reason,omitempty"`
}

const (
	outcomeStarted = "started"
	outcomeRefused = "refused"
	outcomeNone    = "not expressible"
	// outcomeConfig is predicted's word for a refusal of vLLM's config check (evaluate
	// decides what it is for the case).
	outcomeConfig = "refused by the config check"
	// refusedByConfig is the refusal kind of a log whose vLLM stopped at its config check
	// (--max-model-len above the model's context), before loading anything.
	refusedByConfig = "config"
)

// inSplit is the split rule of docs/validation.md: calibration cases are fit, the rest by hash.
func inSplit(c corpusCase) string {
	h := fnv.New32a()
	h.Write([]byte(c.ID))
	if c.Calibration || h.Sum32()%3 == 0 {
		return "fit"
	}
	return "heldout"
}

// simArgs is the `vllmtop sim` command line for the case's settings, or why there is none.
func simArgs(c corpusCase, p *sim.Profiles) ([]string, string) {
	switch {
	case strings.HasPrefix(c.Model, "unknown"):
		return nil, "model not identified"
	case c.GPUProfile == "":
		return nil, "GPU not identified"
	case c.TP <= 0 || c.PP <= 0:
		return nil, "parallel layout not identified"
	}
	if why := catalogueGap(c, p); why != "" {
		return nil, why
	}
	args := []string{simModel(c), "--sim-gpu", c.GPUProfile, "--sim-vllm-version", c.SimVersion}
	if strings.Contains(c.EntryPoint, "LLM") {
		args = append(args, "--sim-entry-point", "llm")
	}
	if c.SimQuantization != "" {
		args = append(args, "--sim-checkpoint-quantization", c.SimQuantization)
	}
	if c.CompileCache != "" {
		args = append(args, "--sim-compile-cache", c.CompileCache)
	}
	if c.FlashInfer != "" {
		args = append(args, "--sim-flashinfer", c.FlashInfer)
	}
	add := func(flag string, v int) {
		if v > 0 {
			args = append(args, flag, strconv.Itoa(v))
		}
	}
	add("--tensor-parallel-size", c.TP)
	if c.PP > 1 {
		add("--pipeline-parallel-size", c.PP)
	}
	if c.DP > 1 {
		// Each data-parallel engine logs its own cache, which is one engine's plan.
		add("--data-parallel-size", c.DP)
	}
	add("--max-model-len", c.MaxModelLen)
	add("--max-num-seqs", c.MaxNumSeqs)
	add("--max-num-batched-tokens", c.MaxBatched)
	add("--block-size", c.BlockSize)
	if c.GMUStated && c.GMU != nil {
		args = append(args, "--gpu-memory-utilization", strconv.FormatFloat(*c.GMU, 'f', -1, 64))
	}
	if c.DType != "" && c.DType != "auto" {
		args = append(args, "--dtype", c.DType)
	}
	if c.KVCacheDType != "" && c.KVCacheDType != "auto" {
		args = append(args, "--kv-cache-dtype", c.KVCacheDType)
	}
	if c.EnforceEager {
		args = append(args, "--enforce-eager")
	}
	return append(args, c.ExtraArgs...), ""
}

// catalogueModel is the case's model as the catalogue names it: without a note in
// parentheses ("org/name (local copy)").
func catalogueModel(model string) string {
	if i := strings.Index(model, " ("); i > 0 && strings.HasSuffix(model, ")") {
		return model[:i]
	}
	return model
}

// simModel is the catalogue name the case runs as: its sim_model, else its model.
func simModel(c corpusCase) string {
	if c.SimModel != "" {
		return c.SimModel
	}
	return catalogueModel(c.Model)
}

// catalogueGap says what of the case's model and GPU the built-in catalogue lacks, or "".
func catalogueGap(c corpusCase, p *sim.Profiles) string {
	if _, err := p.Model(simModel(c)); err != nil {
		return "not in catalogue: model " + c.Model
	}
	if _, err := p.GPU(c.GPUProfile); err != nil {
		return "not in catalogue: GPU " + c.GPUProfile
	}
	return ""
}

// predicted is what the simulator plans for args in the environment env: its KV tokens and available KV memory, and
// whether it refuses to start. All use of the capacity API is here.
func predicted(args []string, env map[string]string) (outcome string, tokens int, availGiB float64, reason string) {
	p, err := serve.Prepare(args, func(k string) string { return env[k] })
	var startup *serve.StartupError
	var usage *serve.UsageError
	var invalid *serve.ValidationError
	switch {
	case err == nil:
		c := p.Capacity()
		return outcomeStarted, c.KVCacheTokens, float64(c.AvailableKVBytes) / (1 << 30), ""
	case errors.As(err, &startup):
		c := startup.Capacity
		return outcomeRefused, c.KVCacheTokens, float64(c.AvailableKVBytes) / (1 << 30), startup.Message
	case errors.As(err, &usage):
		return outcomeNone, 0, 0, "not expressible: " + usage.Msg
	case errors.As(err, &invalid):
		return outcomeConfig, 0, 0, invalid.Short()
	}
	return outcomeNone, 0, 0, "not expressible: " + err.Error()
}

// loggedMetric is the figure a case is judged on: KV tokens (or blocks x block size) when
// logged, else the available KV memory.
func loggedMetric(l logged) (metric string, v float64) {
	bs := l.BlockSize
	if bs == 0 {
		bs = 16
	}
	switch {
	case l.KVTokens > 0:
		return "kv_tokens", float64(l.KVTokens)
	case l.GPUBlocks != nil && *l.GPUBlocks > 0:
		return "kv_tokens", float64(*l.GPUBlocks * bs)
	case l.Refusal != nil && l.Refusal.KVTokens > 0:
		return "kv_tokens", float64(l.Refusal.KVTokens)
	case l.AvailableKVGiB != nil && *l.AvailableKVGiB > 0:
		return "available_kv_gib", *l.AvailableKVGiB
	case l.Refusal != nil && l.Refusal.AvailableGiB != nil && *l.Refusal.AvailableGiB > 0:
		return "available_kv_gib", *l.Refusal.AvailableGiB
	}
	return "outcome", 0
}

func evaluate(c corpusCase, p *sim.Profiles) result {
	args, why := simArgs(c, p)
	if args == nil {
		return result{Outcome: outcomeNone, Reason: why}
	}
	outcome, tokens, avail, reason := predicted(args, c.Env)
	if outcome == outcomeConfig {
		// vLLM's config check refuses the settings before anything is loaded: the prediction
		// of a case that logged that refusal, and a check the case's server got past otherwise.
		if c.Logged.Refusal == nil || c.Logged.Refusal.Kind != refusedByConfig {
			return result{Outcome: outcomeNone, Reason: "not expressible: " + reason}
		}
		return result{Outcome: outcomeRefused, Reason: reason, Metric: "outcome"}
	}
	r := result{Outcome: outcome, Reason: reason}
	if outcome == outcomeNone {
		return r
	}
	r.Metric, r.Logged = loggedMetric(c.Logged)
	switch r.Metric {
	case "kv_tokens":
		r.Predicted = float64(tokens)
	case "available_kv_gib":
		r.Predicted = math.Round(avail*100) / 100
	}
	if r.Logged > 0 {
		e := math.Round((r.Predicted-r.Logged)/r.Logged*1000) / 10
		r.ErrorPct = &e
	}
	return r
}

func loggedOutcome(c corpusCase) string {
	if c.Logged.Refusal != nil {
		return outcomeRefused
	}
	return outcomeStarted
}

// loadCorpus reads the memory corpus and the built-in profiles it is predicted with.
func loadCorpus(t *testing.T) (corpus, *sim.Profiles) {
	t.Helper()
	raw, err := os.ReadFile(corpusPath)
	require.NoError(t, err)
	var cor corpus
	require.NoError(t, json.Unmarshal(raw, &cor))
	profiles, err := sim.LoadProfiles("")
	require.NoError(t, err)
	return cor, profiles
}

func TestValidationCorpus(t *testing.T) {
	cor, profiles := loadCorpus(t)

	results := map[string]result{}
	for _, c := range cor.Cases {
		require.Equal(t, inSplit(c), c.Set, "%s: the set follows the split rule, not the results", c.ID)
		r := evaluate(c, profiles)
		results[c.ID] = r
		if c.Set == "heldout" {
			checkBaseline(t, c, r)
		}
	}
	for _, set := range []string{"fit", "heldout"} {
		t.Log(validationTable(cor.Cases, results, set))
	}
	t.Log(catalogueCoverage(cor.Cases, profiles))
	md := markdownTables(cor.Cases, results)
	if path := os.Getenv("VLLMTOP_VALIDATION_MARKDOWN_OUT"); path != "" {
		require.NoError(t, os.WriteFile(filepath.Clean(path), []byte(md), 0o644))
	}
	assertInValidationDoc(t, md, "VLLMTOP_VALIDATION_MARKDOWN_OUT")
	if path := os.Getenv("VLLMTOP_VALIDATION_BASELINE_OUT"); path != "" {
		b, err := json.MarshalIndent(results, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Clean(path), b, 0o644))
	}
}

// checkBaseline fails when a held-out case's error grew by more than a point against the
// prediction recorded in the corpus, or when it no longer starts (or refuses) as vLLM did.
func checkBaseline(t *testing.T, c corpusCase, r result) {
	t.Helper()
	b := c.Baseline
	if b == nil {
		t.Errorf("%s: a held-out case has no baseline; record it (VLLMTOP_VALIDATION_BASELINE_OUT)", c.ID)
		return
	}
	if b.Outcome == outcomeNone {
		return
	}
	if r.Outcome != b.Outcome {
		if b.Outcome == loggedOutcome(c) {
			t.Errorf("%s: the simulator now says %q where vLLM and the baseline said %q (%s)", c.ID, r.Outcome, b.Outcome, r.Reason)
		} else {
			t.Logf("%s: now %q as vLLM was; record a new baseline", c.ID, r.Outcome)
		}
		return
	}
	if b.ErrorPct != nil && r.ErrorPct != nil && math.Abs(*r.ErrorPct) > math.Abs(*b.ErrorPct)+1 {
		t.Errorf("%s: %s error %+.1f%%, the baseline was %+.1f%%", c.ID, r.Metric, *r.ErrorPct, *b.ErrorPct)
	}
}

func validationTable(cases []corpusCase, results map[string]result, set string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%s set\n%-56s %-40s %-14s %-9s %-11s %-11s %-7s %s\n", set,
		"case", "model", "GPU", "version", "logged", "predicted", "error", "note")
	var errs []float64
	n := 0
	for _, c := range cases {
		if c.Set != set {
			continue
		}
		n++
		r := results[c.ID]
		note := outcomeNote(c, r)
		logged, pred, e := caseFigures(c, r, fmtMetric, &errs)
		if e == "" {
			e = "-"
		}
		fmt.Fprintf(&sb, "%-56s %-40s %-14s %-9s %-11s %-11s %-7s %s\n", c.ID, trunc(c.Model, 40),
			c.GPUProfile, c.SimVersion, logged, pred, e, note)
	}
	fmt.Fprintf(&sb, "%s: %d cases, %d predicted; %s\n", set, n, len(errs), summary(errs))
	return sb.String()
}

// caseFigures are a case's logged and predicted figures, written by format, and its error ("":
// none); a predicted case that is not excluded adds its absolute error to errs.
func caseFigures(c corpusCase, r result, format func(string, float64) string, errs *[]float64) (logged, pred, e string) {
	logged, pred = "-", "-"
	if r.Outcome == outcomeNone || r.Metric == "outcome" {
		return logged, pred, ""
	}
	logged, pred = format(r.Metric, r.Logged), format(r.Metric, r.Predicted)
	if r.ErrorPct != nil {
		e = fmt.Sprintf("%+.1f%%", *r.ErrorPct)
		if c.Exclude == "" {
			*errs = append(*errs, math.Abs(*r.ErrorPct))
		}
	}
	return logged, pred, e
}

func outcomeNote(c corpusCase, r result) string {
	var parts []string
	if r.Outcome == outcomeNone {
		parts = append(parts, r.Reason)
	} else if lo := loggedOutcome(c); lo != r.Outcome {
		parts = append(parts, fmt.Sprintf("vLLM %s, sim %s", lo, r.Outcome))
	} else if r.Outcome == outcomeRefused {
		parts = append(parts, "both refuse")
	}
	if c.Exclude != "" {
		parts = append(parts, "excluded: "+c.Exclude)
	}
	return strings.Join(parts, "; ")
}

func fmtMetric(metric string, v float64) string {
	if metric == "available_kv_gib" {
		return fmt.Sprintf("%.2f GiB", v)
	}
	return strconv.Itoa(int(v))
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "~"
}

// summary counts the absolute errors within 5% and 10% and gives their median.
func summary(errs []float64) string {
	if len(errs) == 0 {
		return "no errors to summarise"
	}
	sort.Float64s(errs)
	w5, w10 := 0, 0
	for _, e := range errs {
		if e <= 5 {
			w5++
		}
		if e <= 10 {
			w10++
		}
	}
	med := errs[len(errs)/2]
	if len(errs)%2 == 0 {
		med = (errs[len(errs)/2-1] + errs[len(errs)/2]) / 2
	}
	return fmt.Sprintf("%d within 5%%, %d within 10%%, median |error| %.1f%%", w5, w10, med)
}

// catalogueCoverage counts the cases whose model and GPU are both in the built-in catalogue,
// and the cases that lack one of them, as a line for the log.
func catalogueCoverage(cases []corpusCase, p *sim.Profiles) string {
	covered := 0
	var missing []string
	for _, c := range cases {
		if strings.HasPrefix(c.Model, "unknown") || c.GPUProfile == "" {
			continue
		}
		if why := catalogueGap(c, p); why != "" {
			missing = append(missing, c.ID+" ("+why+")")
			continue
		}
		covered++
	}
	return fmt.Sprintf("catalogue: %d of %d cases have their model and GPU in the catalogue; lacking: %s",
		covered, len(cases), strings.Join(missing, "; "))
}

// refusalKinds are the corpus's words for the start-up failures the simulator predicts.
var refusalKinds = map[string]sim.StartupKind{
	"weights":       sim.LoadOOM,
	"no_kv_memory":  sim.NoKVMemory,
	"max_model_len": sim.MaxModelLenTooLarge,
}

// TestRefusalsMatchTheLoggedFailure checks every refusal in the corpus fails in the simulator
// at the same point as in vLLM, and, for weights that do not fit, on a tensor of the size torch
// reported.
func TestRefusalsMatchTheLoggedFailure(t *testing.T) {
	cor, profiles := loadCorpus(t)
	tried := regexp.MustCompile(`Tried to allocate [0-9.]+ [KMG]iB\.`)
	checked := 0
	for _, c := range cor.Cases {
		kind, ok := refusalKinds[refusalKind(c)]
		if !ok || c.Exclude != "" || evaluate(c, profiles).Outcome == outcomeNone {
			continue // not a refusal the simulator can express (the validation table says why)
		}
		args, _ := simArgs(c, profiles)
		_, err := serve.Prepare(args, func(k string) string { return c.Env[k] })
		var se *serve.StartupError
		if !assert.ErrorAs(t, err, &se, "%s: vLLM refused (%s)", c.ID, c.Logged.Refusal.Kind) {
			continue
		}
		checked++
		assert.Equal(t, kind, se.Kind, "%s: %s", c.ID, se.Error())
		if want := tried.FindString(c.Logged.Refusal.Message); want != "" {
			assert.Contains(t, se.Message, want, c.ID)
		}
	}
	t.Logf("%d refusals fail as in vLLM", checked)
	assert.Positive(t, checked, "the corpus has refusals the simulator can express")
}

func refusalKind(c corpusCase) string {
	if c.Logged.Refusal == nil {
		return ""
	}
	return c.Logged.Refusal.Kind
}
