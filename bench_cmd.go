package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/internal/app/predict"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

const benchAbout = `Benchmark a vLLM server as vllm bench serve does, with its flags: vLLM's result table per run
(and a summary table for a sweep) on stdout, progress on stderr, vLLM's result JSON with
--save-result. --sim benchmarks the built-in simulator, started as the dashboard starts it; its
flags go on the command line, in --sim-args or after --. --sim-clock virtual runs it in-process
on simulated time instead: the same runs in a fraction of a second, what the simulated GPU
would give. --sla (or vllm bench sweep's --sla-params) searches for the largest
--sla-variable (request_rate or max_concurrency) that meets the constraints, one line per
probe, then the curve and the knee; --result-dir keeps each probe's JSON and summary.csv.
`

const benchFooter = `Examples:
  vllmtop bench --base-url http://127.0.0.1:8000 --num-prompts 200
  vllmtop bench --sim --sim-gpu L4 --gpu-memory-utilization 0.8 --max-concurrency 1,8,32
  vllmtop bench --sim --save-result -- meta-llama/Llama-3.1-8B-Instruct --sim-gpu A100-SXM-80GB
  vllmtop bench --sim --sim-clock virtual --sim-gpu L4 --sla-variable max_concurrency \
      --sla "p99_ttft_ms<=500" --result-dir slo --plot slo.svg

Exit status: 0 when the runs were made (failed requests are counted in the table), 1 when
they could not be (server unreachable, refused, or no request succeeded), 2 for bad flags.
`

// The simulated server `bench --sim` starts unless its flags say otherwise: a small model on a
// fast GPU, ready at once. benchSimReady bounds the wait for it on top of its start-up time.
const (
	benchSimModel = "Qwen/Qwen2.5-0.5B-Instruct"
	benchSimGPU   = "H100"
	benchSimReady = 30 * time.Second
)

// defineBench is `vllmtop bench`.
func defineBench(fs *pflag.FlagSet, e *env) runFunc {
	o := benchFlags(fs)
	return func(ctx context.Context, args []string) error {
		if err := o.Finish(fs, args, e.getenv); err != nil {
			return err
		}
		return runBench(ctx, o, e)
	}
}

// benchFlags defines vllm bench serve's flags, with its defaults, and the simulator's.
func benchFlags(fs *pflag.FlagSet) *benchcli.Options {
	return benchcli.Define(fs, map[string]string{"sim-gpu": benchSimGPU, "sim-startup-seconds": "0"}, benchSimModel, benchSimGPU)
}

// runBench starts the simulator for --sim (or, on its virtual clock, builds it in-process),
// then prepares and makes the runs.
func runBench(ctx context.Context, o *benchcli.Options, e *env) error {
	if _, err := loadgen.OpenDataset(o.Dataset); err != nil {
		return usagef("%s", err) // read before any server is started
	}
	if err := o.CheckOutputs(); err != nil {
		return err // a bad output path costs no run
	}
	var virtual *predict.Target
	switch {
	case o.Sim && o.SimClock == benchcli.ClockVirtual:
		srv, err := launch.Launch(benchSimSpec(o, e, launch.Virtual))
		if err != nil {
			return launchError(err, "--sim", e)
		}
		virtual = srv.Target
		if err := simTakesTheImages(o, srv.Plan); err != nil {
			return err
		}
		e.note("Simulated server: %s on %s, in-process on the virtual clock (simulated time, no waiting)", srv.Plan.Model(), srv.Plan.Cards())
		if _, set := server.ArgValue(srv.Args, "--sim-speed"); set {
			e.say("--sim-speed paces the wall clock; the virtual clock takes no time, so it is ignored")
		}
	case o.Sim:
		stop, err := benchSim(ctx, o, e)
		if err != nil {
			return err
		}
		defer stop()
	}
	benv := benchcli.Env{Stdout: e.stdout, Stderr: e.stderr, Say: e.say, Note: e.note, Terminal: isTerminal(e.stderr)}
	b, err := benchcli.Prepare(ctx, o, virtual, benv)
	if err != nil {
		return err
	}
	defer b.Close()
	return b.Run(ctx) // benchcli.ErrFailed is exit status 1, said already (see run)
}

// benchSimDefaults are what bench --sim runs unless the simulator's flags say otherwise.
var benchSimDefaults = []string{"--model", benchSimModel, "--sim-gpu", benchSimGPU, "--sim-startup-seconds", "0"}

// benchSimSpec is the simulator bench --sim launches: its flags over benchSimDefaults, the
// client's model, port and key.
func benchSimSpec(o *benchcli.Options, e *env, mode launch.Mode) launch.Spec {
	return launch.Spec{Command: launch.Sim(o.SimArgs...), Mode: mode, Defaults: benchSimDefaults, Model: o.Client.Model,
		Port: o.SimPort, APIKey: o.Client.APIKey, Endpoint: o.Client.Endpoint, Getenv: e.getenv}
}

// simTakesTheImages refuses, before any request, a random-mm run (images in every prompt) on
// a simulated model that would answer each one 400 as text-only: the simulator is ours to
// choose, so the run says which to choose.
func simTakesTheImages(o *benchcli.Options, plan *serve.Plan) error {
	if o.Dataset.Name != loadgen.DatasetRandomMM || plan.Multimodal() {
		return nil
	}
	return usagef("--dataset-name random-mm sends images, and the simulated %s is text-only (vLLM answers \"is not a multimodal model\"): give a vision model after --, e.g. -- google/gemma-3-4b-it --max-model-len 8192", plan.Model())
}

// benchSim starts the simulator for --sim, as the dashboard starts it, points the client at it
// and waits until it is ready. stop stops it.
func benchSim(ctx context.Context, o *benchcli.Options, e *env) (stop func(), err error) {
	srv, err := launch.Launch(benchSimSpec(o, e, launch.Child))
	if err != nil {
		return nil, launchError(err, "--sim", e)
	}
	if err := simTakesTheImages(o, srv.Plan); err != nil {
		srv.Stop()
		return nil, err
	}
	o.Client.BaseURL = server.BaseURL(srv.Args)
	note := ""
	if srv.Plan.Speed() != 1 {
		note = fmt.Sprintf(", --sim-speed %s (the simulated GPU runs that much faster; times are as measured)", cliflag.FormatRate(srv.Plan.Speed()))
	}
	e.note("Simulated server: %s on %s at %s%s", srv.Plan.Model(), srv.Plan.Cards(), sanitize.URL(o.Client.BaseURL), note)
	if err := srv.StartReady(ctx, benchSimReady, "the simulated server"); err != nil {
		return nil, err
	}
	return srv.Stop, nil
}
