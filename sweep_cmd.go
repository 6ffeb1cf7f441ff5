package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/app/sweepcli"
	"github.com/vllmtop/vllmtop/loadgen"
)

const sweepAbout = `Sweep server settings as vllm bench sweep serve does, with its flags and files (the subcommands
below are vllm bench sweep's; without one, vllmtop sweep is vllmtop sweep serve):
for each combination of --serve-params, start --serve-cmd under vllmtop's supervisor (vLLM
itself, or vllmtop sim), wait until it is ready, run each combination of --bench-params (the
benchmark is vllmtop bench, its flags from --bench-cmd or this command line), stop it. With
--sla-params (or --sla) each combination is an SLO search instead. Results: OUTPUT_DIR/NAME/
SERVE--...-BENCH--.../run=N.json and summary.json, and summary.csv with the server's capacity
(KV cache tokens, max concurrency, weights) beside the client's results; then the curves, one
per server setting, as text and with --plot as PNG or SVG. --sim-clock virtual runs vllmtop
sim in-process on simulated time: a whole sweep in seconds.
`

const sweepFooter = `Examples:
  vllmtop sweep --serve-cmd "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4" \
      --serve-params serve_params.json --bench-params bench_params.json --num-runs 1 --plot curves.svg
  vllmtop sweep --serve-cmd "vllm serve meta-llama/Llama-3.1-8B-Instruct" --bench-cmd "vllm bench serve \
      --random-input-len 512 --random-output-len 128" --serve-params serve_params.json \
      --sla "p99_ttft_ms<=500" --sla-variable max_concurrency        # vllmtop's SLO search
  vllmtop sweep serve_workload --serve-cmd "vllmtop sim Qwen/Qwen3-0.6B" --sim-clock virtual \
      --bench-cmd "vllm bench serve --num-prompts 100" --workload-var max_concurrency
  vllmtop sweep plot results/NAME --var-x max_concurrency --var-y median_ttft_ms --curve-by max_num_seqs

serve_params.json: [{"gpu_memory_utilization": 0.5}, {"gpu_memory_utilization": 0.9}], as for vLLM.
Exit status: 0 when every combination ran, 1 when one failed or the sweep was interrupted
(--resume finishes it), 2 for bad flags or files.
`

// sweepOwn are the flags of the sweep itself; the others on its command line are the
// benchmark's (vllmtop bench's), or belong to the sweep and the benchmark alike (sweepShared).
var sweepOwn = map[string]bool{"serve-cmd": true, "bench-cmd": true, "serve-params": true, "bench-params": true, "output-dir": true,
	"experiment-name": true, "num-runs": true, "resume": true, "dry-run": true, "continue-on-error": true, "server-ready-timeout": true,
	"var-x": true, "var-y": true, "link-vars": true, "warmup-num-prompts": true, "after-bench-cmd": true, "show-stdout": true,
	"workload-var": true, "workload-iters": true, "sla-iters": true}
var sweepShared = map[string]bool{"sla": true, "sla-params": true, "sla-variable": true, "sla-min-requests": true, "sim-clock": true, "plot": true, "overwrite": true}

// defineSweep is `vllmtop sweep` without a subcommand: `vllmtop sweep serve`.
func defineSweep(fs *pflag.FlagSet, e *env) runFunc { return defineSweepMode("serve")(fs, e) }

// sweepFlags are the flags of sweep serve and its variants beside the benchmark's.
type sweepFlags struct {
	cfg                               sweepcli.Config
	serveCmd, benchCmd, serveParams   string
	benchParams, linkVars, afterBench string
	readySec, slaIters, wlIters       int
	wlVar                             string
}

// defineSweepMode is `vllmtop sweep serve`, `serve_workload` or `serve_sla` (mode).
func defineSweepMode(mode string) func(fs *pflag.FlagSet, e *env) runFunc {
	return func(fs *pflag.FlagSet, e *env) runFunc {
		f := &sweepFlags{}
		f.define(fs, mode)
		bench := benchcli.Define(fs, nil, "", "")
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q (the server's command goes in --serve-cmd)", args[0])
			}
			if err := f.check(fs, mode, e); err != nil {
				return err
			}
			if err := bench.Finish(fs, nil, e.getenv); err != nil { // the SLA and plot flags, and their checks
				return err
			}
			if err := f.files(fs); err != nil {
				return err
			}
			cfg := f.cfg
			cfg.Search, cfg.Search.NumRuns, cfg.Clock, cfg.Plot, cfg.Overwrite = bench.Search, cfg.NumRuns, bench.SimClock, bench.Plot, bench.Overwrite
			cfg.ReadyTimeout, cfg.Getenv = time.Duration(f.readySec)*time.Second, e.getenv
			benv := benchcli.Env{Stdout: e.stdout, Stderr: e.stderr, Say: e.say, Note: e.note, Terminal: isTerminal(e.stderr)}
			return sweepcli.Run(ctx, cfg, benv)
		}
	}
}

func (f *sweepFlags) define(fs *pflag.FlagSet, mode string) {
	cfg := &f.cfg
	fs.StringVar(&f.serveCmd, "serve-cmd", "", "The server's command: vllm serve ..., or vllmtop sim ... (required)")
	fs.StringVar(&f.benchCmd, "bench-cmd", "", "The benchmark's command: vllm bench serve ... or vllmtop bench ..., run by vllmtop bench (default: this command line's benchmark flags)")
	fs.StringVar(&f.afterBench, "after-bench-cmd", "", "A command to run after each benchmark run (vLLM resets the server's caches there; vllmtop sends fresh prompts instead)")
	fs.BoolVar(&cfg.ShowStdout, "show-stdout", false, "Print each run's full result table, and the --after-bench-cmd's output")
	fs.IntVar(&f.readySec, "server-ready-timeout", 300, "Seconds to wait for each server to become ready")
	fs.StringVar(&f.serveParams, "serve-params", "", "JSON file of server parameter combinations: a list of objects, or an object of named ones")
	fs.StringVar(&f.linkVars, "link-vars", "", "Linked server and benchmark keys, e.g. max_num_seqs=max_concurrency: only combinations that set both alike run")
	fs.StringVar(&f.benchParams, "bench-params", "", "JSON file of benchmark parameter combinations (swept with each server setting)")
	fs.StringVarP(&cfg.OutputDir, "output-dir", "o", "results", "The directory results are written to")
	fs.StringVarP(&cfg.ExperimentName, "experiment-name", "e", "", "The experiment's directory in --output-dir (default: the time)")
	fs.IntVar(&cfg.NumRuns, "num-runs", 3, "Runs of each combination (and of each SLA probe), averaged by the search")
	fs.IntVar(&cfg.WarmupNumPrompts, "warmup-num-prompts", 0, "Prompts of an unmeasured warm-up run before each combination (saved as warmup.json)")
	fs.BoolVar(&cfg.ContinueOnError, "continue-on-error", false, "Go on with the next combination when a benchmark fails (a setting the server cannot start with is always skipped, its reason recorded)")
	fs.BoolVar(&cfg.DryRun, "dry-run", false, "Print the commands and where results would go; run nothing")
	fs.BoolVar(&cfg.Resume, "resume", false, "Finish an experiment: skip the combinations it has results for (default: the newest in --output-dir)")
	fs.StringVar(&cfg.VarX, "var-x", "output_throughput", "The curves' x axis: a result key")
	fs.StringVar(&cfg.VarY, "var-y", "p99_ttft_ms", "The curves' y axis: a result key (an SLA search plots its first constraint)")
	if mode == "serve_workload" {
		fs.StringVar(&f.wlVar, "workload-var", loadgen.SLORate, "The variable to adjust in each iteration: request_rate or max_concurrency")
		fs.IntVar(&f.wlIters, "workload-iters", 10, "Workload levels to explore, the serial and batch runs included")
	}
	fs.IntVar(&f.slaIters, "sla-iters", 10, "serve_sla's scan (vLLM PR #35306): levels of --sla-variable to explore, as serve_workload's --workload-iters")
}

// check reads the commands and picks the mode: runs, a workload scan, or an SLO search.
func (f *sweepFlags) check(fs *pflag.FlagSet, mode string, e *env) error {
	var err error
	switch {
	case f.serveCmd == "":
		return usagef("--serve-cmd is required, e.g. --serve-cmd \"vllmtop sim Qwen/Qwen2.5-0.5B-Instruct\"")
	case f.cfg.NumRuns < 1:
		return usagef("--num-runs should be at least 1")
	case f.readySec < 1:
		return usagef("--server-ready-timeout should be at least 1")
	case f.cfg.WarmupNumPrompts < 0:
		return usagef("--warmup-num-prompts should be at least 0")
	}
	if fs.Changed("sla-params") {
		e.note("%s: --sla-params: vLLM removed it from vllm bench sweep (PR #35306); vllmtop still runs its SLO search (also as --sla \"p99_ttft_ms<=500\"); vLLM's own is serve_workload --workload-var/--workload-iters", e.prog)
	}
	search := fs.Changed("sla") || fs.Changed("sla-params")
	switch {
	case mode == "serve_workload":
		f.cfg.Scan = &sweepcli.Scan{Var: f.wlVar, Iters: f.wlIters}
	case !search && (mode == "serve_sla" || fs.Changed("sla-iters")):
		v := fs.Lookup("sla-variable")
		f.cfg.Scan = &sweepcli.Scan{Var: v.Value.String(), Iters: f.slaIters, SLALayout: true}
		v.Changed = false // the scan's variable, not the search's
	}
	if s := f.cfg.Scan; s != nil {
		if s.Var != loadgen.SLORate && s.Var != loadgen.SLOConcurrency {
			return usagef("the workload variable %q: want request_rate or max_concurrency", s.Var)
		}
		if s.Iters < 2 {
			return usagef("the workload iterations should be at least 2")
		}
	}
	if f.cfg.ServeCmd, err = sweepcli.SplitCommand(f.serveCmd); err != nil {
		return usagef("--serve-cmd: %v", err)
	}
	if f.afterBench != "" {
		if f.cfg.AfterBenchCmd, err = sweepcli.SplitCommand(f.afterBench); err != nil {
			return usagef("--after-bench-cmd: %v", err)
		}
	}
	if f.cfg.LinkVars, err = sweepcli.ParseLinkVars(f.linkVars); err != nil {
		return usagef("%v", err)
	}
	f.cfg.BenchArgs, err = sweepBenchArgs(fs, f.benchCmd)
	return err
}

// files reads the parameter files.
func (f *sweepFlags) files(fs *pflag.FlagSet) error {
	var err error
	if f.cfg.ServeParams, err = sweepcli.ReadParams(f.serveParams, "--serve-params"); err != nil {
		return usagef("%v", err)
	}
	if f.cfg.BenchParams, err = sweepcli.ReadParams(f.benchParams, "--bench-params"); err != nil {
		return usagef("%v", err)
	}
	if s := f.cfg.Scan; s != nil {
		for _, bc := range f.cfg.BenchParams {
			if bc.Has(s.Var) {
				return usagef("--bench-params sets %s, which the workload scan sets itself: leave it out", s.Var)
			}
		}
	}
	return nil
}

// sweepBenchArgs is the benchmark's command line: --bench-cmd's flags, or the benchmark flags
// given to the sweep itself, written back as flags.
func sweepBenchArgs(fs *pflag.FlagSet, benchCmd string) ([]string, error) {
	var own []string
	fs.Visit(func(f *pflag.Flag) {
		if !sweepOwn[f.Name] && !sweepShared[f.Name] {
			own = append(own, "--"+f.Name+"="+f.Value.String())
		}
	})
	if benchCmd == "" {
		return own, nil
	}
	if len(own) > 0 {
		return nil, usagef("give the benchmark's flags in --bench-cmd or on the command line, not both (%s)", own[0])
	}
	args, err := sweepcli.BenchFlags(benchCmd)
	if err != nil {
		return nil, usagef("--bench-cmd: %v", err)
	}
	return args, nil
}
