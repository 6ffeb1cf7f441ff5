// Package sweepcli is `vllmtop sweep` as a library: vllm bench sweep serve's (and serve_sla's)
// parameter files and output layout, a server started under server.Supervisor per setting
// (vLLM itself or `vllmtop sim`, or the simulator in-process on its virtual clock), and the
// benchmarks or SLO searches of internal/benchcli against it, with the server's capacity
// beside the client's results.
package sweepcli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/internal/app/predict"
	"github.com/vllmtop/vllmtop/internal/base/outfile"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/loadgen/curve"
	"github.com/vllmtop/vllmtop/server"
)

// Config is a parsed `vllmtop sweep` command line.
type Config struct {
	ServeCmd  []string // --serve-cmd, split as a shell splits it
	BenchArgs []string // the benchmark's flags: --bench-cmd's after its program words, or sweep's own
	// ServeParams and BenchParams are the combinations; their product is swept.
	ServeParams, BenchParams []Combo
	OutputDir                string // -o: results go to OutputDir/ExperimentName
	ExperimentName           string // -e: default a time stamp
	NumRuns                  int
	Resume, DryRun           bool
	ContinueOnError          bool
	ReadyTimeout             time.Duration
	Clock                    string          // benchcli.ClockWall or ClockVirtual (vllmtop sim only)
	Search                   benchcli.Search // SLA mode when Search.On()
	Plot                     string          // FILE.png or FILE.svg: the curves
	Overwrite                bool            // --overwrite: replace a --plot file that exists
	VarX, VarY               string          // the curves' axes: result keys
	Getenv                   func(string) string
	Serve                    // vllm bench sweep serve's newer flags
}

// Record fields the sweep adds from the server's own report of its capacity.
const (
	FieldKVTokens       = "server_kv_cache_tokens"
	FieldMaxConcurrency = "server_max_concurrency"
	FieldMaxModelLen    = "server_max_model_len"
	FieldKVGiB          = "server_kv_cache_gib"
	FieldWeightsGiB     = "server_weights_gib"
)

// Setting is one server setting's outcome: its capacity and its records.
type Setting struct {
	Combo    Combo
	Command  []string
	Capacity []loadgen.Field // the server_* fields; empty when the server did not start
	Records  []loadgen.ResultDoc
	Searches []benchcli.Curve // SLA mode: each bench and SLA combination's search
	Err      error
	// Skipped is true when Err is the server's refusal to start with this setting: the sweep
	// records it and goes on to the next setting, --continue-on-error or not.
	Skipped bool
}

// Run runs the sweep and writes its files; see the package doc.
func Run(ctx context.Context, cfg Config, env benchcli.Env) error {
	dir, err := cfg.experimentDir()
	if err != nil {
		return cliflag.Usagef("%v", err)
	}
	if cfg.Resume {
		if err := cfg.sameSweep(dir); err != nil {
			return cliflag.Usagef("%v", err)
		}
		fmt.Fprintf(env.Stdout, "Resuming the experiment in %s\n", dir)
	}
	if cfg.Search.On() {
		for _, bc := range cfg.BenchParams {
			if bc.Has(cfg.Search.Variable) {
				return cliflag.Usagef("--bench-params sets %s, which the SLA search sets itself: leave it out", cfg.Search.Variable)
			}
		}
	}
	if cfg.Clock == benchcli.ClockVirtual && server.Classify(cfg.ServeCmd).Kind != server.KindSim {
		// The same for every setting: a bad command line, not a setting the server refused.
		return cliflag.Usagef("--sim-clock virtual simulates vllmtop sim in-process: --serve-cmd must be a vllmtop sim command")
	}
	for _, bc := range cfg.BenchParams {
		// Every benchmark command is read before any server starts: a flag it lacks or a value
		// out of range would otherwise stop the sweep after the first server's start-up.
		if _, err := ParseBench(bc.ApplyTo(cfg.BenchArgs), cfg.Getenv); err != nil {
			if bc.Label() == "" {
				return err // the benchmark command alone: its error says so
			}
			return cliflag.Usagef("--bench-params %s: %s", bc.Label(), strings.TrimPrefix(cliflag.Message(err), "the benchmark command: "))
		}
	}
	if !cfg.DryRun {
		if cfg.Plot != "" {
			if err := outfile.Check(cfg.Plot, benchcli.PlotFile(cfg.Overwrite)); err != nil {
				return benchcli.OutputError(err) // before any server starts
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil { // at once, so that --resume finds it after any stop
			return benchcli.OutputError(err)
		}
	}
	var settings []Setting
	for _, sc := range cfg.ServeParams {
		s := cfg.runSetting(ctx, sc, dir, env)
		settings = append(settings, s)
		if ctx.Err() != nil || s.Err != nil && !s.Skipped && !cfg.ContinueOnError {
			break
		}
	}
	if cfg.DryRun {
		fmt.Fprintf(env.Stdout, "Experiment will be saved at: %s\n", dir)
		return nil
	}
	return cfg.finish(settings, dir, env, ctx.Err())
}

// experimentDir is OutputDir/ExperimentName, checked as vLLM checks it: a new run must not
// overwrite one, a resumed one must exist (without a name, the newest is resumed).
func (cfg *Config) experimentDir() (string, error) {
	if cfg.Resume && cfg.ExperimentName == "" {
		name, err := newestDir(cfg.OutputDir)
		if err != nil {
			return "", err
		}
		cfg.ExperimentName = name
	}
	if cfg.ExperimentName == "" {
		cfg.ExperimentName = time.Now().Format("20060102_150405")
	}
	dir := filepath.Join(cfg.OutputDir, loadgen.SanitizeFilename(cfg.ExperimentName))
	_, err := os.Stat(dir)
	switch {
	case cfg.Resume && err != nil:
		return "", fmt.Errorf("--resume: cannot resume from %s: %v", dir, err)
	case !cfg.Resume && err == nil && !cfg.DryRun:
		return "", fmt.Errorf("%s exists: give another --experiment-name, or --resume to finish it", dir)
	}
	return dir, nil
}

// sameSweep refuses to resume into dir the results of another sweep: every combination
// directory there must be one this command makes, or finishing it would mix two sweeps and
// rewrite the other's summary.csv with this one's rows.
func (cfg *Config) sameSweep(dir string) error {
	ours := map[string]bool{}
	var levels []*regexp.Regexp // a scan's: its levels' values are found as it runs
	for _, sc := range cfg.ServeParams {
		for _, bc := range cfg.BenchParams {
			ours[filepath.Base(cfg.combDir(dir, sc, bc))] = true
			if cfg.Scan != nil {
				const anyLevel = 987654321
				name := regexp.QuoteMeta(filepath.Base(cfg.scanDir(dir, sc, bc, anyLevel)))
				levels = append(levels, regexp.MustCompile("^"+strings.Replace(name, strconv.Itoa(anyLevel), "[0-9]+", 1)+"$"))
			}
		}
	}
	isOurs := func(n string) bool {
		if ours[n] {
			return true
		}
		for _, re := range levels {
			if re.MatchString(n) {
				return true
			}
		}
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("--resume: %v", err)
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() && (strings.HasPrefix(n, "SERVE-") || strings.HasPrefix(n, "BENCH-")) && !isOurs(n) {
			return fmt.Errorf("--resume: %s holds another sweep's results (%s is not one of this command's settings): name the experiment to finish with -e, or start a new one", dir, n)
		}
	}
	return nil
}

// newestDir is the most recently changed directory in dir.
func newestDir(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("--resume: %v", err)
	}
	var best string
	var at time.Time
	for _, e := range entries {
		info, err := e.Info()
		if e.IsDir() && err == nil && info.ModTime().After(at) {
			best, at = e.Name(), info.ModTime()
		}
	}
	if best == "" {
		return "", fmt.Errorf("--resume: no experiment in %s", dir)
	}
	return best, nil
}

// runSetting starts the server of one setting, runs every benchmark combination (or SLA
// search) against it, and stops it.
func (cfg *Config) runSetting(ctx context.Context, sc Combo, dir string, env benchcli.Env) Setting {
	s := Setting{Combo: sc, Command: sc.ApplyTo(cfg.ServeCmd)}
	fmt.Fprintln(env.Stdout, "[BEGIN SERVER]")
	fmt.Fprintf(env.Stdout, "Server overrides: %s\n", orNone(sc.Text(", ")))
	fmt.Fprintf(env.Stdout, "Server command: %s\n", strings.Join(server.RedactKeys(s.Command), " "))
	defer fmt.Fprintln(env.Stdout, "[END SERVER]")
	if cfg.DryRun {
		for _, bc := range cfg.BenchParams {
			if _, _, err := cfg.runBench(ctx, sc, bc, started{}, dir, nil, env); err != nil {
				s.Err = err
			}
		}
		return s
	}
	if done, ok := cfg.resumed(dir, sc); ok {
		fmt.Fprintln(env.Stdout, "Found existing results for every benchmark of this setting.")
		s.Records = done
		return s
	}
	target, stop, err := cfg.startServer(ctx, s.Command, env)
	if err != nil {
		s.Err, s.Skipped = err, ctx.Err() == nil
		if s.Skipped {
			env.Say("%s: skipped, the server did not start: %s", orNone(sc.Label()), textfmt.OneLine(err.Error(), 0))
			fmt.Fprintf(env.Stdout, "Skipped: the server did not start with %s; the sweep goes on\n", orNone(sc.Label()))
			recordServerFailure(dir, sc, err, env)
		} else {
			env.Say("%s: %s", orNone(sc.Label()), textfmt.OneLine(err.Error(), 0))
		}
		return s
	}
	defer stop()
	s.Capacity = target.capacity
	fmt.Fprintf(env.Stdout, "Server capacity: %s\n", capacityText(s.Capacity))
	for _, bc := range cfg.BenchParams {
		recs, curves, err := cfg.runBench(ctx, sc, bc, target, dir, s.Capacity, env)
		s.Records, s.Searches = append(s.Records, recs...), append(s.Searches, curves...)
		if err != nil {
			s.Err = err
			if !errors.Is(err, context.Canceled) {
				env.Say("%s %s: %s", orNone(sc.Label()), orNone(bc.Label()), textfmt.OneLine(err.Error(), 0))
			}
			if ctx.Err() != nil || !cfg.ContinueOnError {
				break
			}
		}
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// combDir is where a combination's runs go: SERVE--...-BENCH--... as vLLM names it.
func (cfg *Config) combDir(dir string, sc, bc Combo, extra ...string) string {
	name := func(c Combo) string {
		if cfg.Search.On() {
			return c.Text("-") // serve_sla names its directories by the parameters
		}
		return c.Label()
	}
	var parts []string
	if len(sc.Params) > 0 || sc.Name != "" {
		parts = append(parts, "SERVE-", name(sc))
	}
	if len(bc.Params) > 0 || bc.Name != "" {
		parts = append(parts, "BENCH-", name(bc))
	}
	parts = append(parts, extra...)
	if len(parts) == 0 {
		return dir
	}
	return filepath.Join(dir, loadgen.SanitizeFilename(strings.Join(parts, "-")))
}

// resumed returns the saved records of a setting whose every combination is done.
func (cfg *Config) resumed(dir string, sc Combo) ([]loadgen.ResultDoc, bool) {
	if !cfg.Resume {
		return nil, false
	}
	var all []loadgen.ResultDoc
	for _, bc := range cfg.BenchParams {
		paths := []string{filepath.Join(cfg.combDir(dir, sc, bc), "summary.json")}
		if cfg.Search.On() {
			paths = paths[:0]
			for _, slo := range cfg.Search.SLOs {
				paths = append(paths, filepath.Join(cfg.combDir(dir, sc, bc), loadgen.SanitizeFilename("SLA--"+slo.Text("-")+".json")))
			}
		}
		for _, p := range paths {
			docs, err := readDocs(p)
			if err != nil {
				return nil, false
			}
			all = append(all, docs...)
		}
	}
	return all, true
}

// readDocs reads a saved list of result documents, keys in order.
func readDocs(path string) ([]loadgen.ResultDoc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]loadgen.ResultDoc, 0, len(raws))
	for _, r := range raws {
		d, err := parseDoc(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// readDoc reads one saved result document.
func readDoc(path string) (loadgen.ResultDoc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseDoc(b)
}

func parseDoc(b []byte) (loadgen.ResultDoc, error) {
	ps, err := orderedObject(b)
	if err != nil {
		return nil, err
	}
	d := make(loadgen.ResultDoc, 0, len(ps))
	for _, p := range ps {
		d = append(d, loadgen.Field{Key: p.Key, Value: fieldValue(p.Value)})
	}
	return d, nil
}

// started is a server ready for benchmarks: its URL, or the simulator on its virtual clock.
type started struct {
	url      string
	virtual  *launch.Server
	spec     launch.Spec // what was launched, launched again for another endpoint
	capacity []loadgen.Field
	// prompts counts the prompts the server has been sent: each run gets fresh ones.
	prompts *promptCount
	reset   *cacheReset // a vLLM server's caches, emptied after each run; nil for others
}

type promptCount struct{ n int }

// startServer starts one setting's server and waits until it is ready.
func (cfg *Config) startServer(ctx context.Context, cmd []string, env benchcli.Env) (started, func(), error) {
	spec := launch.Spec{Command: cmd, APIKey: cfg.clientKey(), Endpoint: loadgen.EndpointCompletions, Getenv: cfg.Getenv}
	if cfg.Clock == benchcli.ClockVirtual {
		spec.Mode = launch.Virtual
	}
	if spec.Mode != launch.Virtual && server.Classify(cmd).VLLM() {
		spec.Env = []string{devModeEnv} // vLLM's cache-reset endpoints need it, as vLLM's sweep sets it
	}
	srv, err := launch.Launch(spec)
	var bad *launch.ArgsError
	switch {
	case errors.Is(err, launch.ErrNotSim):
		return started{}, nil, errors.New("--sim-clock virtual simulates vllmtop sim in-process: --serve-cmd must be a vllmtop sim command")
	case errors.As(err, &bad):
		return started{}, nil, fmt.Errorf("the simulated server would not start: %s", textfmt.OneLine(bad.Error(), 0))
	case err != nil:
		return started{}, nil, err
	}
	if spec.Mode == launch.Virtual {
		plan, c := srv.Plan, srv.Plan.Capacity()
		// Rounded as vLLM logs them, so a virtual sweep's summary reads as a real one's.
		st := started{virtual: srv, spec: spec, prompts: &promptCount{}, capacity: capacityFields(c.KVCacheTokens, round2(c.MaxConcurrency),
			plan.MaxModelLen(), round2(float64(c.AvailableKVBytes)/(1<<30)), round2(float64(c.WeightsBytes)/(1<<30)))}
		fmt.Fprintf(env.Stdout, "Simulated server: %s on %s, in-process on the virtual clock\n", plan.Model(), plan.Cards())
		return st, func() {}, nil
	}
	if err := srv.StartReady(ctx, cfg.ReadyTimeout, "the server"); err != nil {
		return started{}, nil, err
	}
	st := awaitCapacity(ctx, srv.Sup, srv.Sup.Status())
	return started{url: st.URL, capacity: capacityFields(st.KVCacheTokens, st.MaxConcurrency, st.MaxModelLen, st.KVCacheGiB, st.ModelGiB),
		prompts: &promptCount{}, reset: vllmReset(srv, st.URL, spec.APIKey)}, srv.Stop, nil
}

// clientKey is the key the benchmark sends (its --api-key, else the environment's), which
// the servers the sweep starts ask for.
func (cfg *Config) clientKey() string {
	if o, err := ParseBench(cfg.BenchArgs, cfg.Getenv); err == nil {
		return o.Client.APIKey
	}
	return loadgen.APIKeyFromEnv(cfg.Getenv)
}

// awaitCapacity gives the log reader a moment to fold in the capacity lines a server logged
// just before it answered /health (at most 2 s; a server that never logs them has none).
func awaitCapacity(ctx context.Context, sup *server.Supervisor, st server.Status) server.Status {
	deadline := time.NewTimer(2 * time.Second)
	defer deadline.Stop()
	for st.KVCacheTokens == 0 {
		select {
		case <-sup.Events():
			st = sup.Status()
		case <-deadline.C:
			return st
		case <-ctx.Done():
			return st
		}
	}
	return st
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func capacityFields(tokens int, maxConc float64, maxLen int, kvGiB, weightsGiB float64) []loadgen.Field {
	return []loadgen.Field{{Key: FieldKVTokens, Value: tokens}, {Key: FieldMaxConcurrency, Value: loadgen.PyFloat(maxConc)},
		{Key: FieldMaxModelLen, Value: maxLen}, {Key: FieldKVGiB, Value: loadgen.PyFloat(kvGiB)}, {Key: FieldWeightsGiB, Value: loadgen.PyFloat(weightsGiB)}}
}

// capacityText is the capacity on one line.
func capacityText(fs []loadgen.Field) string {
	v := map[string]any{}
	for _, f := range fs {
		v[f.Key] = f.Value
	}
	return fmt.Sprintf("KV cache %v tokens (%v GiB), max concurrency %v for %v-token requests, weights %v GiB",
		textfmt.Thousands(int64(asInt(v[FieldKVTokens]))), fixed(v[FieldKVGiB]), fixed(v[FieldMaxConcurrency]), v[FieldMaxModelLen], fixed(v[FieldWeightsGiB]))
}

func asInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case loadgen.PyFloat:
		return int(x)
	}
	return 0
}

func fixed(v any) string {
	if f, ok := v.(loadgen.PyFloat); ok {
		return fmt.Sprintf("%.2f", float64(f))
	}
	return fmt.Sprint(v)
}

// runBench runs one benchmark combination on the server: its runs, its workload scan
// (serve_workload) or its SLA searches.
func (cfg *Config) runBench(ctx context.Context, sc, bc Combo, t started, dir string, capacity []loadgen.Field, env benchcli.Env) ([]loadgen.ResultDoc, []benchcli.Curve, error) {
	switch {
	case cfg.Scan != nil:
		docs, err := cfg.scanBench(ctx, sc, bc, t, dir, capacity, env)
		return docs, nil, err
	case cfg.Search.On() && cfg.DryRun:
		fmt.Fprintf(env.Stdout, "Benchmark overrides: %s\nBenchmark command: vllmtop bench %s (an SLO search)\nOutput: %s\n",
			orNone(bc.Text(", ")), strings.Join(bc.ApplyTo(cfg.BenchArgs), " "), cfg.combDir(dir, sc, bc))
		return nil, nil, nil
	case cfg.Search.On():
		b, done, err := cfg.prepareBench(ctx, bc, t, env)
		if err != nil {
			return nil, nil, err
		}
		defer done()
		extra := runFields(sc, bc, capacity)
		fmt.Fprintf(env.Stdout, "[BEGIN BENCHMARK] %s\n", orNone(bc.Text(", ")))
		defer fmt.Fprintln(env.Stdout, "[END BENCHMARK]")
		return cfg.searchAll(ctx, b, sc, bc, cfg.combDir(dir, sc, bc), extra, env)
	}
	docs, _, err := cfg.runComb(ctx, sc, bc, t, cfg.combDir(dir, sc, bc), capacity, cfg.WarmupNumPrompts, env)
	return docs, nil, err
}

// prepareBench readies the benchmark of one combination against the server; done closes it
// and keeps the server's count of prompts sent.
func (cfg *Config) prepareBench(ctx context.Context, bc Combo, t started, env benchcli.Env) (*benchcli.Bench, func(), error) {
	o, err := ParseBench(bc.ApplyTo(cfg.BenchArgs), cfg.Getenv)
	if err != nil {
		return nil, nil, err
	}
	if !o.TargetGiven && t.url != "" {
		o.Client.BaseURL = t.url
	}
	var virtual *predict.Target
	if t.virtual != nil {
		if virtual = t.virtual.Target; o.Client.Endpoint != t.spec.Endpoint {
			spec := t.spec
			spec.Endpoint = o.Client.Endpoint
			again, err := launch.Launch(spec)
			if err != nil {
				return nil, nil, err
			}
			virtual = again.Target
		}
	}
	if cfg.Search.On() {
		o.SetSearch(cfg.Search)
	} else {
		o.Runs.Info.Metrics = append([]string(nil), loadgen.PercentileMetrics...) // as vllm bench sweep asks
		o.Quiet = !cfg.ShowStdout
	}
	b, err := benchcli.Prepare(ctx, o, virtual, env)
	if err != nil {
		return nil, nil, err
	}
	b.SetPromptOffset(t.prompts.n)
	return b, func() { t.prompts.n = b.PromptOffset(); b.Close() }, nil
}

// runComb runs one combination as vLLM's run_comb does: nothing when --link-vars rule it
// out, the warm-up run (warmup.json, not summarised) when asked, then each run, and
// summary.json. ran is false for a combination ruled out or a dry run.
func (cfg *Config) runComb(ctx context.Context, sc, bc Combo, t started, base string, capacity []loadgen.Field, warmup int, env benchcli.Env) (docs []loadgen.ResultDoc, ran bool, err error) {
	if !cfg.linked(sc, bc) {
		return nil, false, nil
	}
	if cfg.DryRun {
		fmt.Fprintf(env.Stdout, "Benchmark overrides: %s\nBenchmark command: vllmtop bench %s\nOutput: %s\n",
			orNone(bc.Text(", ")), strings.Join(bc.ApplyTo(cfg.BenchArgs), " "), base)
		return nil, false, nil
	}
	fmt.Fprintf(env.Stdout, "[BEGIN BENCHMARK] %s\n", orNone(bc.Text(", ")))
	defer fmt.Fprintln(env.Stdout, "[END BENCHMARK]")
	extra := runFields(sc, bc, capacity)
	if warmup > 0 {
		wc := bc.With("num_prompts", warmup)
		if _, err := cfg.runMeasured(ctx, wc, t, -1, filepath.Join(base, "warmup.json"), runFields(sc, wc, capacity), env); err != nil {
			return nil, true, fmt.Errorf("warmup: %w", err)
		}
	}
	var failed error
	for k := 0; k < cfg.NumRuns; k++ {
		doc, err := cfg.runMeasured(ctx, bc, t, k, loadgen.RunPath(base, k), extra, env)
		if err != nil && (!cfg.ContinueOnError || ctx.Err() != nil) {
			return docs, true, err
		}
		if err != nil {
			failed = cmp.Or(failed, err)
			cfg.recordFailure(loadgen.RunPath(base, k), k, sc, bc, err, env)
			continue
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		fmt.Fprintln(env.Stdout, "[NO SUCCESSFUL MEASURED RUNS] leaving combination retryable")
		return nil, true, failed
	}
	return docs, true, cmp.Or(loadgen.SaveJSON(filepath.Join(base, "summary.json"), docs), failed)
}

// runMeasured makes run k of a combination (k -1 is the warm-up) and saves it at path, or
// reads it back from there when an earlier sweep saved it; then --after-bench-cmd runs.
func (cfg *Config) runMeasured(ctx context.Context, bc Combo, t started, k int, path string, extra []loadgen.Field, env benchcli.Env) (loadgen.ResultDoc, error) {
	if saved, err := readDoc(path); err == nil {
		fmt.Fprintf(env.Stdout, "run=%d: found existing results in %s\n", k, path)
		return saved, nil
	}
	b, done, err := cfg.prepareBench(ctx, bc, t, env)
	if err != nil {
		return nil, err
	}
	defer done()
	var runs []loadgen.SweepRun
	if err := b.Runs(ctx, false, func(r loadgen.SweepRun) { runs = append(runs, r) }); err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range runs {
			r.Release() // after the document is written: it may read from the run's files
		}
	}()
	switch {
	case len(runs) != 1 || runs[0].Interrupted:
		return nil, ctx.Err()
	case runs[0].Stopped != "": // not saved: --resume makes the run again once the server answers
		return nil, fmt.Errorf("run=%d: %s", k, runs[0].Stopped)
	}
	doc := runs[0].Doc.Set("run_number", k)
	for _, f := range extra {
		doc = doc.Set(f.Key, f.Value)
	}
	if err := loadgen.SaveJSON(path, doc); err != nil {
		return nil, err
	}
	fmt.Fprintf(env.Stdout, "run=%d: %s -> %s\n", k, RunLine(runs[0].Summary), path)
	return doc, cfg.afterBench(ctx, t, env)
}

// searchAll runs each SLA search of one combination.
func (cfg *Config) searchAll(ctx context.Context, b *benchcli.Bench, sc, bc Combo, base string, extra []loadgen.Field, env benchcli.Env) ([]loadgen.ResultDoc, []benchcli.Curve, error) {
	var docs []loadgen.ResultDoc
	var curves []benchcli.Curve
	for _, slo := range cfg.Search.SLOs {
		fmt.Fprintln(env.Stdout, "[SLA START]")
		s := loadgen.SLOSearch{Variable: cfg.Search.Variable, SLO: slo}
		res, err := b.Search(ctx, slo, base, extra, nil)
		all, serr := loadgen.SaveSLOResult(base, s, res)
		docs = append(docs, all...)
		name := strings.TrimSpace(sc.Label() + " " + bc.Label())
		curves = append(curves, benchcli.Curve{Name: orNone(name), Result: res})
		fmt.Fprintln(env.Stdout, loadgen.KneeLine(s.Variable, res.Knee))
		if res.Knee == 0 && err == nil && len(res.Probes) > 0 {
			env.Say("%s: no %s met the SLO: every probe failed it", orNone(name), s.Variable)
		}
		fmt.Fprintln(env.Stdout, "[SLA END]")
		if err == nil {
			err = serr
		}
		if err != nil {
			return docs, curves, err
		}
	}
	return docs, curves, nil
}

// RunLine is one run's result on one line.
func RunLine(s loadgen.Summary) string {
	return fmt.Sprintf("TTFT p99 %.2f ms  TPOT p99 %.2f ms  %.2f tok/s  %.2f req/s  %d failed",
		s.TTFT.Percentiles[99], s.TPOT.Percentiles[99], s.OutputThroughput, s.RequestThroughput, s.Failed)
}

// ParseBench reads a benchmark command's flags as `vllmtop bench` reads them (without the
// simulator's, which a sweep's server command carries).
func ParseBench(args []string, getenv func(string) string) (*benchcli.Options, error) {
	fs := pflag.NewFlagSet("vllmtop bench", pflag.ContinueOnError)
	fs.SetOutput(ioDiscard{})
	o := benchcli.Define(fs, nil, "", "")
	if err := fs.Parse(cliflag.Gather(args, []string{"--goodput", "--metadata", "--header", "--lora-modules"})); err != nil {
		return nil, cliflag.Usagef("the benchmark command: %s", cliflag.Message(err))
	}
	if err := cliflag.NoNaN(fs); err != nil {
		return nil, cliflag.Usagef("the benchmark command: %s", cliflag.Message(err))
	}
	if err := o.Finish(fs, fs.Args(), getenv); err != nil {
		return nil, cliflag.Usagef("the benchmark command: %v", err)
	}
	switch {
	case o.Search.On() || o.Plot != "":
		return nil, cliflag.Usagef("the benchmark command: the SLA search and the plot are the sweep's: give --sla-params and --plot to vllmtop sweep")
	case len(o.Runs.Concurrency) > 1 || len(o.Runs.Rates) > 1:
		return nil, cliflag.Usagef("the benchmark command: one --max-concurrency and one --request-rate per run; list the values in --bench-params")
	}
	o.Quiet = true // many runs: one line each, no progress bars
	return o, nil
}

type ioDiscard struct{}

func (ioDiscard) Write(p []byte) (int, error) { return len(p), nil }

// finish writes summary.csv, prints the capacity table, the curves and the plot.
func (cfg *Config) finish(settings []Setting, dir string, env benchcli.Env, ctxErr error) error {
	var records []loadgen.ResultDoc
	failed, ran := ctxErr != nil, false
	for _, s := range settings {
		records = append(records, s.Records...)
		failed = failed || s.Err != nil && !s.Skipped
		ran = ran || !s.Skipped
	}
	failed = failed || !ran                                                  // every setting skipped: nothing was measured
	if rows := append(records, skippedRecords(settings)...); len(rows) > 0 { // a skipped setting's row says why
		path, err := loadgen.SaveSummaryCSV(dir, rows)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "\nSummary: %s (%d runs)\n", path, len(records))
	}
	fmt.Fprintln(env.Stdout, "\nServer settings:")
	for _, s := range settings {
		state := capacityText(s.Capacity)
		if len(s.Capacity) == 0 {
			state = "did not run"
			if s.Skipped {
				state = "skipped: the server did not start: " + textfmt.OneLine(s.Err.Error(), 400)
			} else if s.Err != nil {
				state = "failed: " + textfmt.OneLine(s.Err.Error(), 400)
			} else if len(s.Records) > 0 {
				state = "resumed from saved results"
			}
		}
		fmt.Fprintf(env.Stdout, "  %-32s %s\n", orNone(s.Combo.Label()), state)
	}
	chart := cfg.chart(settings)
	if chart.SLOLabel != "" || len(records) > 0 {
		fmt.Fprintln(env.Stdout)
		fmt.Fprint(env.Stdout, curve.Text(chart, 78, 14))
	}
	if note := cfg.kvNote(settings); cfg.Search.On() && note != "" {
		fmt.Fprintln(env.Stdout, note)
	}
	if cfg.Plot != "" && len(records) > 0 {
		if err := curve.Write(cfg.Plot, chart, benchcli.PlotFile(cfg.Overwrite)); err != nil {
			env.Say("cannot draw the plot: %s", textfmt.OneLine(err.Error(), 0))
			failed = true
		} else {
			fmt.Fprintf(env.Stdout, "Plot: %s\n", cfg.Plot)
		}
	}
	if ctxErr != nil {
		env.Say("interrupted; the runs that finished are saved")
	}
	switch {
	case !ran && ctxErr == nil:
		env.Say("the server started with none of the settings: nothing was measured")
		return benchcli.ErrFailed
	case failed:
		fmt.Fprintf(env.Stdout, "The sweep ended early; --resume -e %s finishes it.\n", cfg.ExperimentName)
		return benchcli.ErrFailed
	}
	fmt.Fprintf(env.Stdout, "Experiment has been saved at: %s\n", dir)
	return nil
}

// FieldSkipped is the summary.csv column that says why a setting has no runs.
const FieldSkipped = "skipped"

// skippedRecords are summary.csv's rows of the settings the server did not start with: the
// setting's fields and why.
func skippedRecords(settings []Setting) []loadgen.ResultDoc {
	var out []loadgen.ResultDoc
	for _, s := range settings {
		if s.Skipped {
			doc := loadgen.ResultDoc(s.Combo.Fields())
			out = append(out, doc.Set(FieldSkipped, "the server did not start: "+textfmt.OneLine(s.Err.Error(), 0)))
		}
	}
	return out
}

// chart is the sweep's curves: in SLA mode each search's probes, else each server setting's
// runs in the order of their load (the bench combinations), Y against X.
func (cfg *Config) chart(settings []Setting) curve.Chart {
	if cfg.Search.On() {
		var curves []benchcli.Curve
		for _, s := range settings {
			curves = append(curves, s.Searches...)
		}
		return benchcli.Chart(cfg.Search.Variable, cfg.Search.SLOs[0], cfg.title(), curves)
	}
	c := curve.Chart{Title: cfg.title(), XLabel: cfg.VarX, YLabel: cfg.VarY}
	for _, s := range settings {
		series := curve.Series{Name: orNone(s.Combo.Label()), Knee: -1}
		for _, r := range s.Records {
			x, xok := number(r, cfg.VarX)
			y, yok := number(r, cfg.VarY)
			if xok && yok {
				series.Points = append(series.Points, curve.Point{X: x, Y: y})
			}
		}
		sort.SliceStable(series.Points, func(i, j int) bool { return series.Points[i].X < series.Points[j].X })
		c.Series = append(c.Series, series)
	}
	return c
}

// title names what was swept: the model and, for the simulator, its GPU.
func (cfg *Config) title() string {
	t := server.ModelArg(cfg.ServeCmd)
	if gpu, ok := server.ArgValue(cfg.ServeCmd, "--sim-gpu"); ok {
		t += " on " + gpu
	}
	if cfg.Clock == benchcli.ClockVirtual {
		t += " (vllmtop sim, virtual clock)"
	}
	return textfmt.OneLine(t, 100)
}

func number(d loadgen.ResultDoc, key string) (float64, bool) {
	v, ok := d.Get(key)
	switch x := v.(type) {
	case loadgen.PyFloat:
		return float64(x), ok
	case int:
		return float64(x), ok
	}
	return 0, false
}
