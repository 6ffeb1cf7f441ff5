package sweepcli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/loadgen"
)

// Serve holds the flags current vllm bench sweep serve has beside the older ones.
type Serve struct {
	// LinkVars (--link-vars) pairs a server key with a benchmark key: a combination runs only
	// when both set their key, to the same value.
	LinkVars [][2]string
	// WarmupNumPrompts (--warmup-num-prompts): an unmeasured run of that many prompts before
	// each combination's runs, saved as warmup.json and left out of the summaries.
	WarmupNumPrompts int
	// AfterBenchCmd (--after-bench-cmd) runs after each benchmark run.
	AfterBenchCmd []string
	// ShowStdout (--show-stdout): each run's full table, and the after-bench command's output.
	ShowStdout bool
	// Scan is serve_workload's exploration; nil for plain runs.
	Scan *Scan
}

// ParseLinkVars reads --link-vars: "max_num_seqs=max_concurrency,max_model_len=random_input_len".
func ParseLinkVars(s string) ([][2]string, error) {
	if s == "" {
		return nil, nil
	}
	var out [][2]string
	for _, item := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(item, "=")
		if !ok || strings.Contains(b, "=") || strings.TrimSpace(a) == "" || strings.TrimSpace(b) == "" {
			return nil, fmt.Errorf("--link-vars %q: want SERVE_KEY=BENCH_KEY pairs separated by commas", item)
		}
		out = append(out, [2]string{strings.TrimSpace(a), strings.TrimSpace(b)})
	}
	return out, nil
}

// linked reports whether a combination passes --link-vars: each pair's keys are set on both
// sides, to equal values.
func (cfg *Config) linked(sc, bc Combo) bool {
	for _, lv := range cfg.LinkVars {
		sv, ok1 := sc.Get(lv[0])
		bv, ok2 := bc.Get(lv[1])
		if !ok1 || !ok2 || !sameValue(sv, bv) {
			return false
		}
	}
	return true
}

// sameValue compares two parameter values as Python's == compares JSON values (1 == 1.0).
func sameValue(a, b any) bool {
	na, aok := a.(json.Number)
	nb, bok := b.(json.Number)
	if aok && bok {
		fa, _ := na.Float64()
		fb, _ := nb.Float64()
		return fa == fb
	}
	return pyStr(a) == pyStr(b)
}

// Get returns the value the combination sets for key (in its - or _ spelling).
func (c Combo) Get(key string) (any, bool) {
	norm := func(k string) string { return strings.ReplaceAll(k, "-", "_") }
	for _, p := range c.Params {
		if norm(p.Key) == norm(key) {
			return p.Value, true
		}
	}
	return nil, false
}

// With is the combination with key set to the integer v (as dict | {key: v}): an existing
// key keeps its place, a new one goes last.
func (c Combo) With(key string, v int) Combo {
	out := Combo{Name: c.Name, Params: append([]Param(nil), c.Params...)}
	val := json.Number(strconv.Itoa(v))
	for i, p := range out.Params {
		if p.Key == key {
			out.Params[i].Value = val
			return out
		}
	}
	out.Params = append(out.Params, Param{Key: key, Value: val})
	return out
}

// afterBench runs --after-bench-cmd, its output shown with --show-stdout; without it, a
// vLLM server's caches are reset, as vLLM's sweep does.
func (cfg *Config) afterBench(ctx context.Context, t started, env benchcli.Env) error {
	if len(cfg.AfterBenchCmd) == 0 {
		return t.reset.do(ctx, env)
	}
	cmd := exec.CommandContext(ctx, cfg.AfterBenchCmd[0], cfg.AfterBenchCmd[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, env.Stderr
	if cfg.ShowStdout {
		cmd.Stdout = env.Stdout
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("--after-bench-cmd: %v", err)
	}
	return nil
}

// runFields are the fields a run's document gets, as vLLM's run data is updated with the
// server's, then the benchmark's overrides: their _benchmark_name (the benchmark's wins),
// their parameters, and the server's capacity.
func runFields(sc, bc Combo, capacity []loadgen.Field) []loadgen.Field {
	var out []loadgen.Field
	if name := cmp.Or(bc.Name, sc.Name); name != "" {
		out = append(out, loadgen.Field{Key: nameKey, Value: name})
	}
	return append(append(append(out, sc.Fields()...), bc.Fields()...), capacity...)
}

// recordFailure writes run=N.failure.json beside a run that failed under --continue-on-error,
// as vLLM does, and says so.
func (cfg *Config) recordFailure(runPath string, k int, sc, bc Combo, err error, env benchcli.Env) {
	path := strings.TrimSuffix(runPath, ".json") + ".failure.json"
	doc := loadgen.ResultDoc{{Key: "run_number", Value: k}, {Key: "error_type", Value: "BenchmarkError"}, {Key: "error", Value: err.Error()},
		{Key: "serve_overrides", Value: loadgen.ResultDoc(sc.Fields())}, {Key: "bench_overrides", Value: loadgen.ResultDoc(bc.Fields())}}
	fmt.Fprintf(env.Stdout, "[FAILED BENCHMARK] run=%d: %s\n", k, err)
	if werr := loadgen.SaveJSON(path, doc); werr == nil {
		fmt.Fprintf(env.Stdout, "Failure details: %s\n", path)
	}
}

// recordServerFailure writes SERVE-<name>-failure.json in the experiment's directory for a
// setting whose server did not start, with the lines vLLM's --continue-on-error prints.
func recordServerFailure(dir string, sc Combo, err error, env benchcli.Env) {
	name := cmp.Or(sc.Label(), "default")
	path := filepath.Join(dir, loadgen.SanitizeFilename("SERVE-"+name+"-failure.json"))
	doc := loadgen.ResultDoc{{Key: "error_type", Value: "ServerError"}, {Key: "error", Value: err.Error()},
		{Key: "serve_overrides", Value: loadgen.ResultDoc(sc.Fields())}}
	fmt.Fprintf(env.Stdout, "[FAILED SERVER COMBINATION] %s: %s\n", cmp.Or(sc.Label(), "(default)"), textfmt.OneLine(err.Error(), 0))
	if werr := loadgen.SaveJSON(path, doc); werr == nil {
		fmt.Fprintf(env.Stdout, "Failure details: %s\n", path)
	}
}
