package sweepcli

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/loadgen"
)

// Scan is vllm bench sweep serve_workload's exploration of latency against throughput: a
// serial run (max_concurrency 1), a batch run (every prompt at once), then Iters-2 levels of
// Var spread uniformly between the two runs' estimates of it.
type Scan struct {
	Var   string // request_rate or max_concurrency (--workload-var, serve_sla's --sla-variable)
	Iters int    // --workload-iters (serve_sla's --sla-iters), at least 2
	// SLALayout names the directories as serve_sla did after vLLM PR #35306
	// (BENCH--...-VAR=N), not as serve_workload does (BENCH--...-WL--VAR=N).
	SLALayout bool
}

// DefaultNumPrompts is vllm bench serve's --num-prompts default, the batch run's size when
// neither the combination nor the benchmark command sets one.
const DefaultNumPrompts = 1000

// scanDir is where one level's runs go.
func (cfg *Config) scanDir(dir string, sc, bc Combo, value int) string {
	if cfg.Scan.SLALayout {
		return cfg.combDir(dir, sc, bc.With(cfg.Scan.Var, value))
	}
	return cfg.combDir(dir, sc, bc, "WL-", fmt.Sprintf("%s=%d", cfg.Scan.Var, value))
}

// scanBench explores one benchmark combination's workload levels.
func (cfg *Config) scanBench(ctx context.Context, sc, bc Combo, t started, dir string, capacity []loadgen.Field, env benchcli.Env) ([]loadgen.ResultDoc, error) {
	v := cfg.Scan.Var
	fmt.Fprintln(env.Stdout, "[WL START]")
	fmt.Fprintf(env.Stdout, "Serve parameters: %s\nBench parameters: %s\nNumber of workload iterations: %d\n", orNone(sc.Text(", ")), orNone(bc.Text(", ")), cfg.Scan.Iters)
	n := cfg.datasetSize(bc)
	fmt.Fprintf(env.Stdout, "Dataset size: %d\n", n)
	level := func(base Combo, value int) ([]loadgen.ResultDoc, bool, error) {
		return cfg.runComb(ctx, sc, base.With(v, value), t, cfg.scanDir(dir, sc, bc, value), capacity, 0, env)
	}
	serial, ran1, err := level(bc.With("max_concurrency", 1), 1)
	if err != nil {
		return serial, err
	}
	batch, ran2, err := level(bc.With("max_concurrency", n), n)
	if err != nil || !ran1 || !ran2 {
		if cfg.DryRun {
			fmt.Fprintln(env.Stdout, "Omitting intermediate Workload iterations.")
			fmt.Fprintln(env.Stdout, "[WL END]")
		}
		return append(serial, batch...), err
	}
	lo, hi := int(math.Ceil(estimate(serial, v))), int(math.Floor(estimate(batch, v)))
	fmt.Fprintf(env.Stdout, "Serial inference: %s=%d\nBatch inference: %s=%d\n", v, lo, v, hi)
	all := serial
	for _, value := range ScanLevels(lo, hi, cfg.Scan.Iters) {
		fmt.Fprintf(env.Stdout, "Exploring: %s=%d\n", v, value)
		docs, _, err := level(bc, value)
		all = append(all, docs...)
		if err != nil {
			return all, err
		}
	}
	fmt.Fprintln(env.Stdout, "[WL END]")
	return append(all, batch...), nil
}

// datasetSize is the number of prompts of a combination's benchmark.
func (cfg *Config) datasetSize(bc Combo) int {
	if o, err := ParseBench(bc.ApplyTo(cfg.BenchArgs), cfg.Getenv); err == nil && o.Runs.NumPrompts > 0 {
		return o.Runs.NumPrompts
	}
	return DefaultNumPrompts
}

// estimate is the mean over runs of the load they carried, in the scan variable's terms:
// the request throughput for a rate, throughput times mean latency (Little's law) for a
// concurrency.
func estimate(runs []loadgen.ResultDoc, variable string) float64 {
	if len(runs) == 0 {
		return 0
	}
	sum := 0.0
	for _, r := range runs {
		tput, _ := number(r, "request_throughput")
		if variable == loadgen.SLOConcurrency {
			e2el, _ := number(r, "mean_e2el_ms")
			tput *= e2el / 1000
		}
		sum += tput
	}
	return sum / float64(len(runs))
}

// ScanLevels are the intermediate levels: numpy's linspace(lo, hi, iters) without its ends,
// rounded half to even as Python's round, without repeats, in order.
func ScanLevels(lo, hi, iters int) []int {
	var out []int
	for i := 1; i < iters-1; i++ {
		x := float64(lo) + float64(hi-lo)*float64(i)/float64(iters-1)
		out = append(out, int(math.RoundToEven(x)))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
