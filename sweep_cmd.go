package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/app/sweepcli"
)

const sweepAbout = `Sweep server settings as vllm bench sweep serve (and serve_sla) does, with its flags and files:
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
      --sla-params '{"p99_ttft_ms": "<=500"}' --sla-variable max_concurrency

serve_params.json: [{"gpu_memory_utilization": 0.5}, {"gpu_memory_utilization": 0.9}], as for vLLM.
Exit status: 0 when every combination ran, 1 when one failed or the sweep was interrupted
(--resume finishes it), 2 for bad flags or files.
`

// sweepOwn are the flags of the sweep itself; the others on its command line are the
// benchmark's (vllmtop bench's), or belong to the sweep and the benchmark alike (sweepShared).
var sweepOwn = map[string]bool{"serve-cmd": true, "bench-cmd": true, "serve-params": true, "bench-params": true, "output-dir": true,
	"experiment-name": true, "num-runs": true, "resume": true, "dry-run": true, "continue-on-error": true, "server-ready-timeout": true,
	"var-x": true, "var-y": true}
var sweepShared = map[string]bool{"sla": true, "sla-params": true, "sla-variable": true, "sla-min-requests": true, "sim-clock": true, "plot": true, "overwrite": true}

// defineSweep is `vllmtop sweep`.
func defineSweep(fs *pflag.FlagSet, e *env) runFunc {
	var cfg sweepcli.Config
	var serveCmd, benchCmd, serveParams, benchParams string
	var readySec int
	fs.StringVar(&serveCmd, "serve-cmd", "", "The server's command: vllm serve ..., or vllmtop sim ... (required)")
	fs.StringVar(&benchCmd, "bench-cmd", "", "The benchmark's command: vllm bench serve ... or vllmtop bench ..., run by vllmtop bench (default: this command line's benchmark flags)")
	fs.StringVar(&serveParams, "serve-params", "", "JSON file of server parameter combinations: a list of objects, or an object of named ones")
	fs.StringVar(&benchParams, "bench-params", "", "JSON file of benchmark parameter combinations (swept with each server setting)")
	fs.StringVarP(&cfg.OutputDir, "output-dir", "o", "results", "The directory results are written to")
	fs.StringVarP(&cfg.ExperimentName, "experiment-name", "e", "", "The experiment's directory in --output-dir (default: the time)")
	fs.IntVar(&cfg.NumRuns, "num-runs", 3, "Runs of each combination (and of each SLA probe), averaged by the search")
	fs.BoolVar(&cfg.Resume, "resume", false, "Finish an experiment: skip the combinations it has results for (default: the newest in --output-dir)")
	fs.BoolVar(&cfg.DryRun, "dry-run", false, "Print the commands and where results would go; run nothing")
	fs.BoolVar(&cfg.ContinueOnError, "continue-on-error", false, "Go on with the next combination when a benchmark fails (a setting the server cannot start with is always skipped, its reason recorded)")
	fs.IntVar(&readySec, "server-ready-timeout", 300, "Seconds to wait for each server to become ready")
	fs.StringVar(&cfg.VarX, "var-x", "output_throughput", "The curves' x axis: a result key")
	fs.StringVar(&cfg.VarY, "var-y", "p99_ttft_ms", "The curves' y axis: a result key (an SLA search plots its first constraint)")
	bench := benchcli.Define(fs, nil, "", "")
	return func(ctx context.Context, args []string) error {
		var err error
		switch {
		case len(args) > 0:
			return usagef("unexpected argument %q (the server's command goes in --serve-cmd)", args[0])
		case serveCmd == "":
			return usagef("--serve-cmd is required, e.g. --serve-cmd \"vllmtop sim Qwen/Qwen2.5-0.5B-Instruct\"")
		case cfg.NumRuns < 1:
			return usagef("--num-runs should be at least 1")
		case readySec < 1:
			return usagef("--server-ready-timeout should be at least 1")
		}
		if cfg.ServeCmd, err = sweepcli.SplitCommand(serveCmd); err != nil {
			return usagef("--serve-cmd: %v", err)
		}
		if cfg.BenchArgs, err = sweepBenchArgs(fs, benchCmd); err != nil {
			return err
		}
		if err := bench.Finish(fs, nil, e.getenv); err != nil { // the SLA and plot flags, and their checks
			return err
		}
		if cfg.ServeParams, err = sweepcli.ReadParams(serveParams, "--serve-params"); err != nil {
			return usagef("%v", err)
		}
		if cfg.BenchParams, err = sweepcli.ReadParams(benchParams, "--bench-params"); err != nil {
			return usagef("%v", err)
		}
		cfg.Search, cfg.Search.NumRuns, cfg.Clock, cfg.Plot, cfg.Overwrite = bench.Search, cfg.NumRuns, bench.SimClock, bench.Plot, bench.Overwrite
		cfg.ReadyTimeout, cfg.Getenv = time.Duration(readySec)*time.Second, e.getenv
		benv := benchcli.Env{Stdout: e.stdout, Stderr: e.stderr, Say: e.say, Note: e.note, Terminal: isTerminal(e.stderr)}
		return sweepcli.Run(ctx, cfg, benv)
	}
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
