// Package benchcli is `vllmtop bench` as a library: its command line (vllm bench serve's flags,
// the simulator's, the SLO search's), and the runs it makes against a server or the simulator
// on its virtual clock. `vllmtop sweep` reads each benchmark command of a sweep with the same
// flags and runs it the same way.
package benchcli

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
)

// Simulator clocks, by --sim-clock.
const (
	ClockWall    = "wall"
	ClockVirtual = "virtual"
)

// DefaultSLOMinRequests is --sla-min-requests: the fewest measured requests of one probe.
const DefaultSLOMinRequests = 50

// Options is a parsed `vllmtop bench` command line.
type Options struct {
	Runs    loadgen.SweepConfig
	Dataset loadgen.DatasetConfig
	Client  loadgen.ClientConfig
	SaveTo  loadgen.SaveOptions
	// Sim starts the built-in simulator (SimArgs are its arguments), on SimClock.
	Sim, Save, JSON, Quiet bool
	SimArgs                []string
	SimPort                int
	SimClock               string
	ReadyTimeout           time.Duration
	// Search is the SLO search (--sla, --sla-params); Search.On() is false without one.
	Search Search
	// Plot is --plot: a PNG or SVG of the SLO search's curve.
	Plot string
	// Timeline is --plot-timeline and its thresholds.
	Timeline Timeline
	// TargetGiven is true when --base-url, --host or --port named the server.
	TargetGiven bool
	// Overwrite is --overwrite: output files that exist are replaced instead of refused.
	Overwrite bool

	simFlags             []string
	simArgsFlag          string
	host                 string
	port, inLen, outLen  int
	backend              string
	slaInline, slaParams string
	simless              bool // defined without the simulator's flags
	vf                   vllmFlags
}

// Search is an SLO search's settings.
type Search struct {
	Variable string        // loadgen.SLOConcurrency or loadgen.SLORate
	SLOs     []loadgen.SLO // each searched for separately (--sla-params may list several)
	// MinRequests is the fewest measured requests a probe makes; a concurrency probe also
	// makes at least 4 per slot, so that the first wave's ramp is a small part of it.
	MinRequests int
	// NumRuns is the runs per probe, averaged (vllm bench sweep's --num-runs; bench makes 1).
	NumRuns int
}

// On reports whether a search was asked for.
func (s Search) On() bool { return len(s.SLOs) > 0 }

// Define gives fs vllm bench serve's flags with its defaults, the SLO search's, and the
// simulator's (simDefaults replaces the defaults their help shows); with simModel "", no
// simulator flags and none for saving or printing results (a benchmark run by vllmtop sweep,
// which starts the server and saves every run itself).
func Define(fs *pflag.FlagSet, simDefaults map[string]string, simModel, simGPU string) *Options {
	o := &Options{simless: simModel == ""}
	r, d, c := &o.Runs, &o.Dataset, &o.Client
	r.Rates, r.Info.Metrics, r.Info.Percentiles = []float64{math.Inf(1)}, []string{"ttft", "tpot", "itl"}, []float64{99}
	if simModel != "" {
		fs.BoolVar(&o.Sim, "sim", false, "Benchmark the built-in simulated vLLM server on a loopback port (default model "+simModel+" on "+simGPU+")")
	}
	fs.StringVar(&o.SimClock, "sim-clock", ClockWall, "The simulator's clock: wall (a server on loopback, real time) or virtual (in-process simulated time, no waiting: a prediction in seconds)")
	if simModel != "" {
		fs.StringVar(&o.simArgsFlag, "sim-args", "", "The simulator's flags in one quoted string (also accepted directly, and after --)")
		fs.IntVar(&o.SimPort, "sim-port", 0, "The simulator's port (default: a free one)")
	}
	fs.StringVar(&c.BaseURL, "base-url", "", "Server base URL, e.g. http://127.0.0.1:8000 (default http://HOST:PORT)")
	fs.StringVar(&o.host, "host", "127.0.0.1", "Server host, when no --base-url is given")
	fs.IntVar(&o.port, "port", server.DefaultPort, "Server port, when no --base-url is given")
	fs.StringVar(&c.Endpoint, "endpoint", loadgen.EndpointCompletions, "API path: /v1/completions or /v1/chat/completions")
	fs.StringVar(&o.backend, "backend", "", "openai (completions) or openai-chat (chat); follows --endpoint when not given")
	fs.StringVar(&c.Model, "model", "", "Model name to request (default: the first model of GET /v1/models); with --sim, the simulated model")
	fs.StringVar(&r.Info.TokenizerID, "tokenizer", "", "Recorded as tokenizer_id in saved results (prompts are sized by the server's /tokenize)")
	fs.StringVar(&c.APIKey, "api-key", "", "API key sent as a Bearer token (default: OPENAI_API_KEY, else VLLM_API_KEY); --sim's server asks for it")
	fs.StringVar(&d.Name, "dataset-name", loadgen.DatasetRandom, "random, random-mm, prefix_repetition; sharegpt, custom, spec_bench, sonnet, hf, burstgpt, timed_trace or mooncake (with --dataset-path); fixed (with --prompt)")
	fs.StringVar(&d.Path, "dataset-path", "", "The dataset's file: ShareGPT JSON, custom/Spec-Bench/timed_trace/Mooncake JSONL, sonnet text, an hf dataset's JSON or JSONL export, BurstGPT CSV")
	fs.StringVar(&d.Prompt, "prompt", "", "The prompt of --dataset-name fixed")
	fs.IntVar(&r.NumPrompts, "num-prompts", 1000, "Number of prompts to send")
	fs.IntVar(&d.Random.InputLen, "random-input-len", 1024, "Prompt tokens of the random dataset")
	fs.IntVar(&d.Random.OutputLen, "random-output-len", 128, "Output tokens of the random dataset (and of a fixed prompt)")
	fs.Var(&rangeRatio{&d.Random}, "random-range-ratio", `Lengths drawn uniformly from [L(1-r), L(1+r)], 0 <= r < 1; '{"input": 0.3, "output": 0.5}' sets each (default 0)`)
	fs.IntVar(&d.Random.PrefixLen, "random-prefix-len", 0, "Tokens of a random prefix shared by every prompt")
	fs.IntVar(&o.inLen, "input-len", 0, "Sets --random-input-len")
	fs.IntVar(&o.outLen, "output-len", 0, "Sets the output length of random, sharegpt, custom, hf, spec_bench and prefix_repetition (not sonnet's)")
	fs.IntVar(&d.ShareGPTOutputLen, "sharegpt-output-len", 0, "Output tokens of each ShareGPT request (default: the answer's length)")
	cliflag.AddReplay(fs, &d.Trace, &d.MultiTurn)
	defineDatasets(fs, d)
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
	fs.StringVar(&o.slaInline, "sla", "", `SLO search: constraints on result keys, e.g. "p99_ttft_ms<=500,p99_tpot_ms<=50"`)
	fs.StringVar(&o.slaParams, "sla-params", "", `SLO search with vllm bench sweep's constraints: a JSON file or string, e.g. '{"p99_ttft_ms": "<=500"}' (a list searches each)`)
	fs.StringVar(&o.Search.Variable, "sla-variable", loadgen.SLORate, "What the SLO search tunes: request_rate or max_concurrency")
	fs.IntVar(&o.Search.MinRequests, "sla-min-requests", DefaultSLOMinRequests, "Fewest measured requests of one SLO probe (a concurrency probe also sends 4 per slot)")
	fs.StringVar(&o.Plot, "plot", "", "Draw the SLO search's curve (latency against throughput, the SLO line, the knee) to FILE.png or FILE.svg")
	if simModel != "" { // a sweep saves every run itself
		fs.BoolVar(&o.Save, "save-result", false, "Save each run's result as JSON with vllm bench serve's keys")
		fs.BoolVar(&r.Detailed, "save-detailed", false, "With --save-result or --append-result, also save per-request arrays")
		fs.StringVar(&o.SaveTo.Dir, "result-dir", "", "Directory for saved results (default: the current one); an SLO search saves its probes and summary.csv there")
		fs.StringVar(&o.SaveTo.Filename, "result-filename", "", "File name for saved results (default: vLLM's pattern), inside --result-dir when given")
		fs.BoolVar(&o.SaveTo.Append, "append-result", false, "Append each result to an existing result file as one JSON line (as vLLM does)")
	}
	fs.BoolVar(&o.Overwrite, "overwrite", false, "Replace output files that exist (saved results, summary.csv, the plots) instead of refusing to start")
	fs.StringVar(&r.Info.Label, "label", "", "Label of the run, in saved results and their file names")
	fs.Var(cliflag.Fields(&r.Info.Metadata), "metadata", `key=value pairs added to saved results, e.g. "version=0.9 tp=1"`)
	if simModel != "" {
		fs.BoolVar(&o.JSON, "json", false, "Print the result JSON on stdout instead of the table (a list for a sweep)")
	}
	fs.BoolVar(&o.Quiet, "disable-tqdm", false, "No progress line on stderr")
	fs.Var(cliflag.Seconds(&o.ReadyTimeout), "ready-check-timeout-sec", "Before the run, send the first prompt until the server answers it, for up to this many seconds; also keep asking for /v1/models that long (0: no check, vLLM's default)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", VLLMRequestTimeout, "Deadline of each request, however long it waits for its first token (vLLM's client: 6 h)")
	cliflag.AddClient(fs, c)
	fs.Bool("trust-remote-code", false, "Accepted for compatibility; no effect")
	o.defineVLLM(fs)
	names := &flagNames{}
	fs.SetNormalizeFunc(names.normalize)
	if simModel != "" {
		cliflag.AddSim(fs, &o.simFlags, simDefaults)
	}
	names.defined = true
	return o
}

// generalLengths maps --input-len and --output-len onto the datasets' own lengths, over them,
// as vllm bench serve's main_async does: the input length is the random dataset's alone, the
// output length every dataset's but sonnet's.
func (o *Options) generalLengths(fs *pflag.FlagSet, d *loadgen.DatasetConfig) {
	if fs.Changed("input-len") {
		d.Random.InputLen = o.inLen
	}
	if fs.Changed("output-len") {
		n, x := o.outLen, &d.Extra
		d.Random.OutputLen, d.ShareGPTOutputLen = n, n
		x.CustomOutputLen, x.HF.OutputLen, x.SpecBenchOutputLen, x.PrefixRepetition.OutputLen = n, n, n, n
	}
}

// Finish completes the options from the arguments the flags left, and refuses what vllm bench
// serve refuses. Its errors are *cliflag.UsageError.
func (o *Options) Finish(fs *pflag.FlagSet, args []string, getenv func(string) string) error {
	if err := checkRefused(fs); err != nil {
		return err
	}
	before, after := args, []string(nil)
	if n := fs.ArgsLenAtDash(); n >= 0 {
		before, after = args[:n], args[n:]
	}
	if len(before) > 0 && before[0] == "serve" {
		before = before[1:] // vllm bench serve's subcommand, written as vLLM's docs write it
	}
	o.SimArgs = append(append(strings.Fields(o.simArgsFlag), o.simFlags...), after...)
	o.TargetGiven = o.Client.BaseURL != "" || fs.Changed("host") || fs.Changed("port")
	r, d, c := &o.Runs, &o.Dataset, &o.Client
	switch {
	case len(before) > 0:
		return cliflag.Usagef("unexpected argument %q (flags only; simulator flags go after --sim --)", before[0])
	case !o.Sim && !o.simless && (len(o.SimArgs) > 0 || fs.Changed("sim-port") || fs.Changed("sim-clock")):
		return cliflag.Usagef("--sim-args, --sim-port, --sim-clock, the simulator's flags and arguments after -- are the simulator's: they need --sim")
	case o.Sim && (c.BaseURL != "" || fs.Changed("host") || fs.Changed("port")):
		return cliflag.Usagef("--sim and --base-url/--host/--port exclude each other: benchmark the simulator or a server")
	case o.SimClock != ClockWall && o.SimClock != ClockVirtual:
		return cliflag.Usagef("--sim-clock %q: want wall or virtual", o.SimClock)
	case o.SimClock == ClockVirtual && fs.Changed("sim-port"):
		return cliflag.Usagef("--sim-clock virtual runs the simulator in-process: it has no port")
	case c.RequestTimeout <= 0:
		return cliflag.Usagef("--request-timeout must be positive")
	case c.BaseURL == "":
		c.BaseURL = "http://" + net.JoinHostPort(o.host, strconv.Itoa(o.port))
	}
	var err error
	if r.Info.Backend, c.Endpoint, err = loadgen.Backend(o.backend, c.Endpoint, fs.Changed("endpoint")); err != nil {
		return cliflag.Usagef("%v", err)
	}
	if err := o.finishPooling(fs); err != nil {
		return err
	}
	if err := o.finishVLLM(fs); err != nil {
		return err
	}
	o.generalLengths(fs, d)
	if fs.Changed("prompt") && !fs.Changed("dataset-name") {
		d.Name = loadgen.DatasetFixed
	}
	if r.Duration > 0 && !fs.Changed("num-prompts") {
		r.NumPrompts = 0 // bound by time only
	}
	if err := o.finishSearch(fs); err != nil {
		return err
	}
	if err := o.finishReplay(fs); err != nil {
		return err
	}
	if err := o.finishTimeline(fs); err != nil {
		return err
	}
	if err := checkRuns(*r, *d); err != nil {
		return err
	}
	c.BaseURL, d.Seed, r.Info.NumPrompts, r.Info.Burstiness = strings.TrimRight(c.BaseURL, "/"), r.Seed, r.NumPrompts, r.Burstiness
	r.ReadyCheck = o.ReadyTimeout // vllm bench serve's initial test run
	// vLLM saves with --append-result alone too.
	r.FreshPrompts, o.Save = d.Name == loadgen.DatasetRandom && !d.MultiTurn.On, o.Save || o.SaveTo.Append
	r.DetailDir = cmp.Or(o.SaveTo.Dir, ".") // --save-detailed's arrays wait beside the result
	c.KeepText = r.Detailed                 // and its generated_texts are the responses' text
	o.SaveTo.Overwrite = o.Overwrite
	switch {
	case o.SaveTo.Append && o.Overwrite:
		return cliflag.Usagef("--append-result and --overwrite exclude each other: add to the result file or replace it")
	case o.SaveTo.Append && o.Search.On():
		return cliflag.Usagef("--append-result adds to a saved result; an SLO search saves its own layout")
	}
	if c.APIKey == "" {
		c.APIKey = loadgen.APIKeyFromEnv(getenv)
	}
	return nil
}

// finishSearch reads the SLO search's flags.
func (o *Options) finishSearch(fs *pflag.FlagSet) error {
	s := &o.Search
	s.NumRuns = max(s.NumRuns, 1)
	switch {
	case o.slaInline != "" && o.slaParams != "":
		return cliflag.Usagef("--sla and --sla-params exclude each other: give the constraints once")
	case o.slaInline != "":
		slo, err := loadgen.ParseSLO(o.slaInline)
		if err != nil {
			return cliflag.Usagef("%v", err)
		}
		s.SLOs = []loadgen.SLO{slo}
	case o.slaParams != "":
		slos, err := loadgen.ParseSLOParams(o.slaParams)
		if err != nil {
			return cliflag.Usagef("%v", err)
		}
		s.SLOs = slos
	case fs.Changed("sla-variable") || fs.Changed("sla-min-requests"):
		return cliflag.Usagef("--sla-variable and --sla-min-requests go with an SLO search: give --sla or --sla-params")
	case o.Plot != "" && !o.simless:
		return cliflag.Usagef("--plot draws an SLO search: give --sla or --sla-params (vllmtop sweep plots sweeps)")
	default:
		return checkPlotName(o.Plot)
	}
	r := &o.Runs
	switch {
	case s.Variable != loadgen.SLOConcurrency && s.Variable != loadgen.SLORate:
		return cliflag.Usagef("--sla-variable %q: want max_concurrency or request_rate", s.Variable)
	case s.Variable == loadgen.SLOConcurrency && len(r.Concurrency) > 0, s.Variable == loadgen.SLORate && fs.Changed("request-rate"):
		return cliflag.Usagef("the SLO search sets --%s itself; do not give it", strings.ReplaceAll(s.Variable, "_", "-"))
	case len(r.Concurrency) > 1 || len(r.Rates) > 1:
		return cliflag.Usagef("an SLO search makes its own runs: give one --max-concurrency and one --request-rate at most")
	case r.Duration > 0:
		return cliflag.Usagef("an SLO search sizes its probes by requests (--num-prompts, --sla-min-requests), not --duration")
	case s.MinRequests < 1:
		return cliflag.Usagef("--sla-min-requests must be at least 1")
	case o.JSON:
		return cliflag.Usagef("--json prints runs; an SLO search saves its probes as JSON in --result-dir")
	case r.Detailed:
		return cliflag.Usagef("--save-detailed saves a run's per-request arrays; an SLO search saves its probes' results without them")
	}
	if err := checkPlotName(o.Plot); err != nil {
		return err
	}
	o.SetSearch(*s)
	keys := loadgen.ResultKeys(r.Info, s.Variable)
	for _, slo := range s.SLOs {
		if err := slo.CheckKeys(keys); err != nil {
			return cliflag.Usagef("--sla: %v", err)
		}
	}
	return nil
}

// SetSearch makes the runs an SLO search's probes: vllm bench sweep asks each for every
// metric (the Little's-law guess needs the mean E2E latency), and the criteria's percentiles
// are added to those reported.
func (o *Options) SetSearch(s Search) {
	r := &o.Runs
	o.Search = s
	r.Info.Metrics = append([]string(nil), loadgen.PercentileMetrics...)
	for _, slo := range s.SLOs {
		for _, p := range slo.Percentiles() {
			if !containsFloat(r.Info.Percentiles, p) {
				r.Info.Percentiles = append(r.Info.Percentiles, p)
			}
		}
	}
}

// checkPlotName refuses a plot file whose format the name does not say.
func checkPlotName(name string) error {
	if name == "" || strings.HasSuffix(name, ".png") || strings.HasSuffix(name, ".svg") {
		return nil
	}
	return cliflag.Usagef("--plot %q: want a file name ending in .png or .svg", name)
}

func containsFloat(xs []float64, x float64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// String names the search for a message: "max_concurrency for p99_ttft_ms<=500.00".
func (s Search) String() string {
	var parts []string
	for _, slo := range s.SLOs {
		parts = append(parts, slo.Text(", "))
	}
	return fmt.Sprintf("%s for %s", s.Variable, strings.Join(parts, "; "))
}
