package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/sanitize"
	"github.com/vllmtop/vllmtop/server"
)

const benchAbout = `Benchmark a vLLM server as vllm bench serve does, with its flags: vLLM's result table per run
(and a summary table for a sweep) on stdout, progress on stderr, vLLM's result JSON with
--save-result. --sim benchmarks the built-in simulator, started as the dashboard starts it; its
flags go on the command line, in --sim-args or after --.
`

const benchFooter = `Examples:
  vllmtop bench --base-url http://127.0.0.1:8000 --num-prompts 200
  vllmtop bench --sim --sim-gpu L4 --gpu-memory-utilization 0.8 --max-concurrency 1,8,32
  vllmtop bench --sim --save-result -- meta-llama/Llama-3.1-8B-Instruct --sim-gpu A100-SXM-80GB

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

// benchOptions is a parsed `vllmtop bench` command line.
type benchOptions struct {
	runs                   loadgen.SweepConfig
	dataset                loadgen.DatasetConfig
	client                 loadgen.ClientConfig
	saveTo                 loadgen.SaveOptions
	sim, save, json, quiet bool
	simFlags, simArgs      []string // the simulator's flags given directly; all its arguments
	simArgsFlag            string
	simPort                int
	host                   string
	port, outLen           int
	backend                string
	readyTimeout           time.Duration
}

// defineBench is `vllmtop bench`.
func defineBench(fs *pflag.FlagSet, e *env) runFunc {
	o := benchFlags(fs)
	return func(ctx context.Context, args []string) error {
		if err := o.finish(fs, args, e.getenv); err != nil {
			return err
		}
		return runBench(ctx, o, e)
	}
}

// benchFlags defines vllm bench serve's flags, with its defaults, and the simulator's.
func benchFlags(fs *pflag.FlagSet) *benchOptions {
	o := &benchOptions{}
	r, d, c := &o.runs, &o.dataset, &o.client
	r.Rates, r.Info.Metrics, r.Info.Percentiles = []float64{math.Inf(1)}, []string{"ttft", "tpot", "itl"}, []float64{99}
	fs.BoolVar(&o.sim, "sim", false, "Benchmark the built-in simulated vLLM server on a loopback port (default model "+benchSimModel+" on "+benchSimGPU+")")
	fs.StringVar(&o.simArgsFlag, "sim-args", "", "The simulator's flags in one quoted string (also accepted directly, and after --)")
	fs.IntVar(&o.simPort, "sim-port", 0, "The simulator's port (default: a free one)")
	fs.StringVar(&c.BaseURL, "base-url", "", "Server base URL, e.g. http://127.0.0.1:8000 (default http://HOST:PORT)")
	fs.StringVar(&o.host, "host", "127.0.0.1", "Server host, when no --base-url is given")
	fs.IntVar(&o.port, "port", server.DefaultPort, "Server port, when no --base-url is given")
	fs.StringVar(&c.Endpoint, "endpoint", loadgen.EndpointCompletions, "API path: /v1/completions or /v1/chat/completions")
	fs.StringVar(&o.backend, "backend", "", "openai (completions) or openai-chat (chat); follows --endpoint when not given")
	fs.StringVar(&c.Model, "model", "", "Model name to request (default: the first model of GET /v1/models); with --sim, the simulated model")
	fs.StringVar(&r.Info.TokenizerID, "tokenizer", "", "Recorded as tokenizer_id in saved results (prompts are sized by the server's /tokenize)")
	fs.StringVar(&c.APIKey, "api-key", "", "API key sent as a Bearer token (default: OPENAI_API_KEY, else VLLM_API_KEY); --sim's server asks for it")
	fs.StringVar(&d.Name, "dataset-name", loadgen.DatasetRandom, "random, sharegpt (with --dataset-path) or fixed (with --prompt)")
	fs.StringVar(&d.Path, "dataset-path", "", "ShareGPT JSON file")
	fs.StringVar(&d.Prompt, "prompt", "", "The prompt of --dataset-name fixed")
	fs.IntVar(&r.NumPrompts, "num-prompts", 1000, "Number of prompts to send")
	fs.IntVar(&d.Random.InputLen, "random-input-len", 1024, "Prompt tokens of the random dataset")
	fs.IntVar(&d.Random.OutputLen, "random-output-len", 128, "Output tokens of the random dataset (and of a fixed prompt)")
	fs.Float64Var(&d.Random.RangeRatio, "random-range-ratio", 0, "Lengths drawn uniformly from [L(1-r), L(1+r)], 0 <= r < 1")
	fs.IntVar(&d.Random.PrefixLen, "random-prefix-len", 0, "Tokens of a random prefix shared by every prompt")
	fs.IntVar(&d.Random.InputLen, "input-len", 1024, "The same as --random-input-len")
	fs.IntVar(&o.outLen, "output-len", 0, "Sets --random-output-len and --sharegpt-output-len")
	fs.IntVar(&d.ShareGPTOutputLen, "sharegpt-output-len", 0, "Output tokens of each ShareGPT request (default: the answer's length)")
	fs.BoolVar(&d.IgnoreEOS, "ignore-eos", false, "Send ignore_eos (always on for the random dataset, as vLLM does)")
	fs.Var(cliflag.Counts(&r.Concurrency), "max-concurrency", "Maximum requests in flight; a comma list (1,8,32) runs a sweep")
	fs.Var(cliflag.Rates(&r.Rates), "request-rate", "Requests per second (inf: all at once); a comma list runs a sweep")
	fs.Float64Var(&r.Burstiness, "burstiness", 1.0, "Gamma shape of inter-arrival times: 1 is Poisson, higher is more even")
	fs.DurationVar(&r.Duration, "duration", 0, "Stop sending after this long (e.g. 60s); with it --num-prompts only caps if given")
	fs.IntVar(&r.Warmups, "num-warmups", 0, "Requests sent first and not measured")
	fs.Int64Var(&r.Seed, "seed", 0, "Seed for prompts and arrival times")
	fs.Var(cliflag.Metrics(&r.Info.Metrics), "percentile-metrics", "Metrics to report percentiles of: ttft, tpot, itl, e2el")
	fs.Var(cliflag.Percentiles(&r.Info.Percentiles), "metric-percentiles", "Percentiles to report, e.g. 50,90,99")
	fs.Var(cliflag.Goodput(&r.Info.Goodput), "goodput", `Service-level objectives in ms for goodput, e.g. "ttft:200 tpot:50"`)
	fs.BoolVar(&o.save, "save-result", false, "Save each run's result as JSON with vllm bench serve's keys")
	fs.BoolVar(&r.Detailed, "save-detailed", false, "Also save per-request arrays (implies --save-result)")
	fs.StringVar(&o.saveTo.Dir, "result-dir", "", "Directory for saved results (default: the current one)")
	fs.StringVar(&o.saveTo.Filename, "result-filename", "", "File name for saved results (default: vLLM's pattern)")
	fs.StringVar(&r.Info.Label, "label", "", "Label of the run, in saved results and their file names")
	fs.Var(cliflag.Fields(&r.Info.Metadata), "metadata", `key=value pairs added to saved results, e.g. "version=0.9 tp=1"`)
	fs.BoolVar(&o.json, "json", false, "Print the result JSON on stdout instead of the table (a list for a sweep)")
	fs.BoolVar(&o.quiet, "disable-tqdm", false, "No progress line on stderr")
	fs.Var(cliflag.Seconds(&o.readyTimeout), "ready-check-timeout-sec", "Keep asking a server that is not up yet for this many seconds (default: ask once)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", loadgen.DefaultRequestTimeout, "Deadline of each request")
	addClientFlags(fs, c)
	fs.Bool("trust-remote-code", false, "Accepted for compatibility; no effect")
	cliflag.AddSim(fs, &o.simFlags, map[string]string{"sim-gpu": benchSimGPU, "sim-startup-seconds": "0"})
	return o
}

// finish completes the options from the arguments the flags left, and refuses what vllm bench
// serve refuses.
func (o *benchOptions) finish(fs *pflag.FlagSet, args []string, getenv func(string) string) error {
	before, after := splitDash(fs, args)
	o.simArgs = append(append(strings.Fields(o.simArgsFlag), o.simFlags...), after...)
	r, d, c := &o.runs, &o.dataset, &o.client
	switch {
	case len(before) > 0:
		return usagef("unexpected argument %q (flags only; simulator flags go after --sim --)", before[0])
	case !o.sim && (len(o.simArgs) > 0 || fs.Changed("sim-port")):
		return usagef("--sim-args, --sim-port, the simulator's flags and arguments after -- are the simulator's: they need --sim")
	case o.sim && (c.BaseURL != "" || fs.Changed("host") || fs.Changed("port")):
		return usagef("--sim and --base-url/--host/--port exclude each other: benchmark the simulator or a server")
	case c.RequestTimeout <= 0:
		return usagef("--request-timeout must be positive")
	case c.BaseURL == "":
		c.BaseURL = "http://" + net.JoinHostPort(o.host, strconv.Itoa(o.port))
	}
	var err error
	if r.Info.Backend, c.Endpoint, err = loadgen.Backend(o.backend, c.Endpoint, fs.Changed("endpoint")); err != nil {
		return usagef("%v", err)
	}
	if o.outLen > 0 {
		d.Random.OutputLen, d.ShareGPTOutputLen = o.outLen, o.outLen
	}
	if fs.Changed("prompt") && !fs.Changed("dataset-name") {
		d.Name = loadgen.DatasetFixed
	}
	if r.Duration > 0 && !fs.Changed("num-prompts") {
		r.NumPrompts = 0 // bound by time only
	}
	if err := r.Check(); err != nil {
		return usagef("%v", err)
	}
	c.BaseURL, d.Seed, r.Info.NumPrompts, r.Info.Burstiness = strings.TrimRight(c.BaseURL, "/"), r.Seed, r.NumPrompts, r.Burstiness
	r.FreshPrompts, o.save = d.Name == loadgen.DatasetRandom, o.save || r.Detailed
	r.DetailDir = cmp.Or(o.saveTo.Dir, ".") // --save-detailed's arrays wait beside the result
	if c.APIKey == "" {
		c.APIKey = loadgen.APIKeyFromEnv(getenv)
	}
	return nil
}

// runBench checks the dataset, reaches the server (starting the simulator for --sim), picks
// the model, builds the prompts and makes the runs.
func runBench(ctx context.Context, o *benchOptions, e *env) error {
	dataset, err := loadgen.OpenDataset(o.dataset) // read before any server is started or asked
	if err != nil {
		return usagef("%s", err)
	}
	if o.sim {
		stop, err := benchSim(ctx, o, e)
		if err != nil {
			return err
		}
		defer stop()
	}
	var clients []*loadgen.Client // their idle connections close first: the simulator waits for them
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	probe, err := loadgen.NewClient(o.client)
	if err != nil {
		return usagef("--base-url: %v", err)
	}
	clients = append(clients, probe)
	card, err := probe.PickModel(ctx, o.readyTimeout)
	if err != nil {
		return err
	}
	if o.client.Model == "" {
		e.note("Model: %s (the first model of %s/v1/models; --model chooses)", card.ID, probe.RedactedURL())
	}
	o.client.Model, o.runs.Info.ModelID = card.ID, card.ID
	client, err := loadgen.NewClient(o.client)
	if err != nil {
		return err
	}
	clients = append(clients, client)
	w, how, err := dataset.Workload(ctx, client)
	if err != nil {
		return err
	}
	e.note("Prompts: %s", how)
	if n := dataset.MaxTokens(); card.MaxModelLen > 0 && n > card.MaxModelLen {
		e.say("warning: prompt plus output reach %d tokens, over the model's max_model_len %d: such requests fail with HTTP 400", n, card.MaxModelLen)
	}
	o.runs.Workload = w
	return benchRuns(ctx, o, client, e)
}

// benchRuns makes the runs and reports them as vllm bench serve does.
func benchRuns(ctx context.Context, o *benchOptions, client *loadgen.Client, e *env) error {
	cfg := o.runs
	cfg.OnStart = func(info loadgen.RunInfo) ([]func(loadgen.Result), func()) {
		loadgen.PrintTraffic(e.stderr, info)
		if o.quiet {
			return nil, nil
		}
		p := loadgen.NewProgress(cfg.NumPrompts, cfg.Duration)
		return []func(loadgen.Result){p.Add}, p.Start(e.stderr, isTerminal(e.stderr))
	}
	rep := &loadgen.Report{Out: e.stdout, JSON: o.json, Warn: func(msg string) { e.say("%s", msg) }}
	if o.save {
		rep.Save = &o.saveTo
	}
	if err := loadgen.Sweep(ctx, client, cfg, rep.Add); err != nil && ctx.Err() == nil {
		return usagef("%v", err)
	}
	if err := rep.Close(); err != nil {
		return err
	}
	if rep.Failed() {
		return exitCode(1)
	}
	return nil
}

// benchSim starts the simulator for --sim, as the dashboard starts it, points the client at it
// and waits until it is ready. stop stops it.
func benchSim(ctx context.Context, o *benchOptions, e *env) (stop func(), err error) {
	sup, plan, err := startSim(o.simArgs, o.client.Model, o.simPort, o.client.APIKey, "--sim", e,
		"--model", benchSimModel, "--sim-gpu", benchSimGPU, "--sim-startup-seconds", "0")
	if err != nil {
		return nil, err
	}
	stop = func() { _ = sup.Close() }
	if err := sup.Start(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("the simulated server failed to start: %v", err)
	}
	o.client.BaseURL = sup.Status().URL
	note := ""
	if plan.Speed() != 1 {
		note = fmt.Sprintf(", --sim-speed %s (the simulated GPU runs that much faster; times are as measured)", cliflag.FormatRate(plan.Speed()))
	}
	e.note("Simulated server: %s on %s at %s%s", plan.Model(), plan.GPU(), sanitize.URL(o.client.BaseURL), note)
	wait, cancel := context.WithTimeout(ctx, plan.StartupTime()+benchSimReady)
	defer cancel()
	if err := sup.WaitReady(wait); err != nil {
		stop()
		return nil, fmt.Errorf("the simulated server did not become ready: %v", err)
	}
	return stop, nil
}
