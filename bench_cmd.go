package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// The simulated server `bench --sim` starts unless its arguments say otherwise: a small model
// on a fast GPU, ready at once.
const (
	benchSimModel = "Qwen/Qwen2.5-0.5B-Instruct"
	benchSimGPU   = "H100"
)

// Deadlines of the checks made before a run.
const (
	benchCheckTimeout = 10 * time.Second // GET /v1/models
	benchSimReady     = 30 * time.Second // the simulator's /health, on top of its start-up time
)

// runBench runs a headless benchmark with vllm bench serve's flags. The first SIGINT or
// SIGTERM stops the run and prints what finished; a second one ends the process.
func runBench(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	return benchMain(ctx, args, stdout, stderr, os.Getenv)
}

// benchOptions is a parsed `vllmtop bench` command line.
type benchOptions struct {
	sim               bool
	simArgs           []string
	baseURL           string
	endpoint, backend string
	model, tokenizer  string
	apiKey            string
	dataset           string
	datasetPath       string
	prompt            string
	numPrompts        int
	random            loadgen.RandomConfig
	sharegptOutputLen int
	ignoreEOS         bool
	concurrency       []int     // --max-concurrency values; empty: no cap
	rates             []float64 // --request-rate values; +Inf: all at once
	burstiness        float64
	duration          time.Duration
	warmups           int
	seed              int64
	metrics           []string
	percentiles       []float64
	goodput           loadgen.Goodput
	save, detailed    bool
	resultDir         string
	resultFilename    string
	label             string
	metadata          []loadgen.Field
	json              bool
	progress          bool
	readyTimeout      time.Duration
	requestTimeout    time.Duration
}

// benchUsageError is a bad command line: exit status 2.
type benchUsageError struct{ msg string }

func (e *benchUsageError) Error() string { return e.msg }

func benchUsagef(format string, a ...any) error { return &benchUsageError{fmt.Sprintf(format, a...)} }

// benchMain runs `vllmtop bench` until done or ctx ends and returns the exit status: 0 when
// the runs were made (failed requests are counted, not fatal), 1 when they could not be or no
// request of a run succeeded, 2 for a bad command line.
func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "vllmtop bench: "+format+"\n", a...)
		return code
	}
	o, help, err := parseBenchArgs(args, getenv)
	switch {
	case err != nil:
		return fail(2, "%v", err)
	case help != "":
		fmt.Fprint(stdout, help)
		return 0
	}
	// A dataset file is read before any server is started or asked.
	var sharegpt *loadgen.ShareGPT
	if o.dataset == "sharegpt" {
		if sharegpt, err = loadgen.LoadShareGPT(o.datasetPath, o.seed, o.sharegptOutputLen, o.ignoreEOS, nil); err != nil {
			return fail(2, "%s", benchOneLine(err.Error()))
		}
	}

	var clients []*loadgen.Client // their idle connections are closed before the simulator stops
	if o.sim {
		s, code, err := startBenchSim(o, stdout, getenv)
		if err != nil || code >= 0 {
			if err != nil {
				return fail(code, "%v", err)
			}
			return code
		}
		defer func() {
			for _, c := range clients {
				c.CloseIdleConnections()
			}
			s.stop()
		}()
		clients = append(clients, s.client)
		o.baseURL = s.url
		note := ""
		if s.speed != 1 {
			note = fmt.Sprintf(", --sim-speed %s (the simulated GPU runs that much faster; times are as measured)", strconv.FormatFloat(s.speed, 'f', -1, 64))
		}
		fmt.Fprintf(stderr, "Simulated server: %s on %s at %s%s\n", s.model, s.gpu, s.url, note)
		wait, cancel := context.WithTimeout(ctx, s.startup+benchSimReady)
		err = s.client.WaitHealthy(wait, 10*time.Millisecond)
		cancel()
		if err != nil {
			return fail(1, "the simulated server did not become ready: %v", err)
		}
	}

	probe, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: o.baseURL, Endpoint: o.endpoint, APIKey: o.apiKey})
	if err != nil {
		return fail(2, "--base-url: %v", err)
	}
	clients = append(clients, probe)
	models, err := listModels(ctx, probe, o.readyTimeout)
	if err != nil {
		return fail(1, "%s", describeServerError(err, o.apiKey != ""))
	}
	card, err := chooseModel(o.model, models, probe.BaseURL())
	if err != nil {
		return fail(1, "%v", err)
	}
	if o.model == "" {
		fmt.Fprintf(stderr, "Model: %s (the first model of %s/v1/models; --model chooses)\n", card.ID, probe.BaseURL())
	}
	client, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: o.baseURL, Endpoint: o.endpoint, Model: card.ID,
		APIKey: o.apiKey, RequestTimeout: o.requestTimeout})
	if err != nil {
		return fail(2, "%v", err)
	}
	clients = append(clients, client)
	workload, err := benchWorkload(ctx, o, client, sharegpt, card, stderr)
	if err != nil {
		return fail(1, "%v", err)
	}
	return benchRuns(ctx, o, client, workload, card.ID, stdout, stderr)
}

// benchRuns makes one run per swept value, prints and saves each, then the sweep's summary.
func benchRuns(ctx context.Context, o *benchOptions, client *loadgen.Client, workload loadgen.Workload, model string, stdout, stderr io.Writer) int {
	param, values := "concurrency", []float64{0}
	if len(o.concurrency) > 0 {
		values = values[:0]
		for _, c := range o.concurrency {
			values = append(values, float64(c))
		}
	}
	if len(o.rates) > 1 {
		param, values = "request rate", o.rates
	}
	sweep := len(values) > 1
	ps := benchWithPercentile(o.percentiles, 99) // the sweep table's p99 columns
	terminal := benchTerminal(stderr)
	var rows []loadgen.SweepRow
	var docs []loadgen.ResultDoc
	code := 0
	for k, v := range values {
		info := loadgen.RunInfo{Date: time.Now(), Backend: o.backend, Label: o.label, ModelID: model, TokenizerID: o.tokenizer,
			NumPrompts: o.numPrompts, RequestRate: o.rates[0], Burstiness: o.burstiness, Goodput: o.goodput,
			Metrics: o.metrics, Percentiles: o.percentiles, Metadata: o.metadata}
		if len(o.concurrency) > 0 {
			info.MaxConcurrency = o.concurrency[0]
		}
		if param == "concurrency" {
			info.MaxConcurrency = int(v)
		} else {
			info.RequestRate = v
		}
		cfg := loadgen.BenchConfig{Workload: workload, NumPrompts: o.numPrompts, Duration: o.duration,
			RequestRate: info.RequestRate, Burstiness: o.burstiness, MaxConcurrency: info.MaxConcurrency,
			Warmups: o.warmups, Seed: o.seed}
		if sweep && o.dataset == "random" {
			// Fresh prompts of the same shape each run, so the prefix cache does not carry over.
			stride := o.numPrompts + o.warmups
			if stride == 0 {
				stride = 1 << 20
			}
			cfg.Workload = loadgen.Offset(workload, k*stride)
		}
		printTraffic(stderr, info)
		var stopProgress func()
		if o.progress {
			p := loadgen.NewProgress(o.numPrompts, o.duration)
			cfg.Sinks = append(cfg.Sinks, p.Add)
			stopProgress = p.Start(stderr, terminal)
		}
		run, err := loadgen.Bench(ctx, client, cfg)
		if stopProgress != nil {
			stopProgress()
		}
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "vllmtop bench: %v\n", err)
			return 2
		}
		if info.NumPrompts == 0 {
			info.NumPrompts = len(run.Results) // a run bound by time: what it sent
		}
		s := loadgen.Summarize(run.Results, run.Duration, ps, o.goodput)
		rows = append(rows, loadgen.SweepRow{Value: v, Summary: s})
		var detailed []loadgen.Result
		if o.detailed {
			detailed = run.Results
		}
		doc := loadgen.ResultJSON(s, info, detailed)
		docs = append(docs, doc)
		if !o.json {
			if k > 0 {
				fmt.Fprintln(stdout)
			}
			_ = loadgen.PrintResult(stdout, s, info)
		}
		if o.save {
			if err := saveResult(o, info, doc, sweep); err != nil {
				fmt.Fprintf(stderr, "vllmtop bench: cannot save the result: %s\n", benchOneLine(err.Error()))
				code = 1
			}
		}
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "vllmtop bench: interrupted; the last result covers the requests that finished")
			code = 1
			break
		}
		if s.Failed > 0 {
			fmt.Fprintf(stderr, "vllmtop bench: %d of %d requests failed: %s\n", s.Failed, s.Failed+s.Completed, loadgen.FailureSummary(s.FailuresByClass))
		}
		if s.Completed == 0 {
			msg := "vllmtop bench: no request succeeded"
			if sweep && k < len(values)-1 {
				msg += "; the sweep stops here"
			}
			fmt.Fprintln(stderr, msg)
			code = 1
			break
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if sweep {
			_ = enc.Encode(docs)
		} else {
			_ = enc.Encode(docs[0])
		}
	} else if sweep {
		fmt.Fprintln(stdout)
		_ = loadgen.PrintSweep(stdout, param, rows)
	}
	return code
}

// printTraffic says how a run sends its requests, as vllm bench serve does before it starts.
func printTraffic(w io.Writer, info loadgen.RunInfo) {
	rate := "inf"
	if !math.IsInf(info.RequestRate, 1) {
		rate = strconv.FormatFloat(info.RequestRate, 'f', -1, 64)
	}
	burst := strconv.FormatFloat(info.Burstiness, 'f', -1, 64)
	if info.Burstiness == math.Trunc(info.Burstiness) && !math.IsInf(info.Burstiness, 0) {
		burst += ".0"
	}
	if info.Burstiness == 1 {
		burst += " (Poisson process)"
	}
	conc := "None"
	if info.MaxConcurrency > 0 {
		conc = strconv.Itoa(info.MaxConcurrency)
	}
	fmt.Fprintf(w, "Traffic request rate: %s, burstiness factor: %s, maximum request concurrency: %s\n", rate, burst, conc)
}

// saveResult writes one run's JSON where vllm bench serve would. In a sweep a given
// --result-filename gets the swept value before its extension, so runs do not overwrite each other.
func saveResult(o *benchOptions, info loadgen.RunInfo, doc loadgen.ResultDoc, sweep bool) error {
	name := loadgen.ResultFilename(info)
	if o.resultFilename != "" {
		name = o.resultFilename
		if sweep {
			ext := filepath.Ext(name)
			tag := "-concurrency" + strconv.Itoa(info.MaxConcurrency)
			if len(o.rates) > 1 {
				tag = "-" + strconv.FormatFloat(info.RequestRate, 'f', -1, 64) + "qps"
			}
			name = strings.TrimSuffix(name, ext) + tag + ext
		}
	}
	if o.resultDir != "" {
		if err := os.MkdirAll(o.resultDir, 0o755); err != nil {
			return err
		}
		name = filepath.Join(o.resultDir, name)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}

// listModels asks the server for its models once, or until readyTimeout if one is given.
func listModels(ctx context.Context, c *loadgen.Client, readyTimeout time.Duration) ([]loadgen.ModelCard, error) {
	deadline := time.Now().Add(readyTimeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, benchCheckTimeout)
		models, err := c.Models(cctx)
		cancel()
		if err == nil || readyTimeout <= 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return models, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// describeServerError words a failed check, with the fix for a missing or refused key.
func describeServerError(err error, keyGiven bool) string {
	var se *loadgen.ServerError
	if errors.As(err, &se) && se.Status == 401 {
		if keyGiven {
			return se.URL + ": 401 Unauthorized: the server refused the API key"
		}
		return se.URL + ": 401 Unauthorized: the server wants an API key (--api-key, or OPENAI_API_KEY or VLLM_API_KEY)"
	}
	return benchOneLine(err.Error())
}

// chooseModel picks --model from the server's list, or the first model when none was given.
func chooseModel(want string, models []loadgen.ModelCard, base string) (loadgen.ModelCard, error) {
	if want == "" {
		return models[0], nil
	}
	var ids []string
	for _, m := range models {
		if m.ID == want {
			return m, nil
		}
		ids = append(ids, m.ID)
	}
	return loadgen.ModelCard{}, fmt.Errorf("model %q is not served by %s (it serves %s)", want, base, strings.Join(ids, ", "))
}

// benchWorkload builds the prompts: random ones of exact lengths when the server's /tokenize
// allows, a fixed prompt, or the ShareGPT conversations already loaded.
func benchWorkload(ctx context.Context, o *benchOptions, c *loadgen.Client, sharegpt *loadgen.ShareGPT,
	card loadgen.ModelCard, stderr io.Writer) (loadgen.Workload, error) {
	switch o.dataset {
	case "sharegpt":
		fmt.Fprintf(stderr, "Prompts: %s from %s (lengths estimated at 4 characters a token)\n", sharegpt.Name(), o.datasetPath)
		return sharegpt, nil
	case "fixed":
		fmt.Fprintf(stderr, "Prompts: one fixed prompt, %d output tokens\n", o.random.OutputLen)
		return &loadgen.Fixed{P: loadgen.Prompt{Text: o.prompt, OutputTokens: o.random.OutputLen, IgnoreEOS: o.ignoreEOS}}, nil
	}
	vocab, err := loadgen.CalibrateVocab(ctx, c)
	how := "exact lengths from the server's /tokenize"
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		vocab, how = loadgen.EstimatedVocab(), "estimated lengths: "+benchOneLine(err.Error())
	case !vocab.Checked:
		how = "estimated lengths: the server has no /tokenize"
	}
	w, err := loadgen.NewRandom(o.random, vocab)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "Prompts: %s (%s)\n", w.Name(), how)
	r := o.random.RangeRatio
	if longest := int(math.Ceil(float64(o.random.InputLen)*(1+r))) + int(math.Ceil(float64(o.random.OutputLen)*(1+r))); card.MaxModelLen > 0 && longest > card.MaxModelLen {
		fmt.Fprintf(stderr, "vllmtop bench: warning: prompt plus output reach %d tokens, over the model's max_model_len %d: such requests fail with HTTP 400\n", longest, card.MaxModelLen)
	}
	return w, nil
}

// benchSim is the simulated server of `bench --sim`, on a free loopback port.
type benchSim struct {
	url        string
	model, gpu string
	speed      float64
	startup    time.Duration
	client     *loadgen.Client
	stop       func()
}

// startBenchSim starts the simulator in-process. code is -1 when it started; otherwise the exit
// status, with err the one-line reason (nil after printing the simulator's --help).
func startBenchSim(o *benchOptions, stdout io.Writer, getenv func(string) string) (*benchSim, int, error) {
	// The in-process server takes a key only from --api-key in its own arguments: a
	// VLLM_API_KEY meant for another server must not lock this one.
	simEnv := func(k string) string {
		if k == "VLLM_API_KEY" {
			return ""
		}
		return getenv(k)
	}
	opts, err := serve.ParseArgs(o.simArgs, simEnv)
	var help *serve.HelpRequested
	var usage *serve.UsageError
	switch {
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.Text)
		return nil, 0, nil
	case errors.As(err, &usage):
		return nil, 2, fmt.Errorf("--sim: %s", usage.Msg)
	case err != nil:
		return nil, 2, fmt.Errorf("--sim: %v", err)
	}
	// bench's defaults go first, where the simulator's own arguments override them; --model
	// names the simulated model unless those arguments name it or serve it under another name.
	set := map[string]bool{}
	for _, nv := range opts.NonDefault {
		set[nv.Key] = true
	}
	var args []string
	if !set["model"] && !set["model_tag"] {
		model := benchSimModel
		if o.model != "" && !set["served_model_name"] {
			model = o.model
		}
		args = append(args, "--model", model)
	}
	if !set["sim_gpu"] {
		args = append(args, "--sim-gpu", benchSimGPU)
	}
	if !set["sim_startup_seconds"] {
		args = append(args, "--sim-startup-seconds", "0")
	}
	if opts, err = serve.ParseArgs(append(args, o.simArgs...), simEnv); err != nil {
		return nil, 2, fmt.Errorf("--sim: %v", err)
	}
	profiles, err := sim.LoadProfiles(opts.ProfilesPath)
	if err != nil {
		return nil, 2, fmt.Errorf("--sim: %s", benchOneLine(err.Error()))
	}
	setup, err := sim.Resolve(opts.Engine, profiles)
	var cfgErr *sim.ConfigError
	switch {
	case errors.As(err, &cfgErr):
		return nil, 2, fmt.Errorf("--sim: %s", benchOneLine(cfgErr.Msg))
	case err != nil:
		return nil, 1, fmt.Errorf("the simulated server failed to start: %s", benchOneLine(err.Error()))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 1, fmt.Errorf("the simulated server cannot listen on loopback: %v", err)
	}
	srv := serve.New(opts, setup, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Run(ctx, ln, serve.ShutdownGrace)
	}()
	url := "http://" + ln.Addr().String()
	client, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: url})
	if err != nil {
		cancel()
		<-done
		return nil, 1, err
	}
	return &benchSim{url: url, model: setup.Model, gpu: setup.GPUProfile.Name, speed: opts.Speed,
		startup: time.Duration(opts.StartupSeconds / opts.Speed * float64(time.Second)), client: client,
		stop: func() { cancel(); <-done }}, -1, nil
}

// parseBenchArgs reads the command line with vllm bench serve's flag names and defaults. help
// is the usage text when -h or --help was given.
func parseBenchArgs(args []string, getenv func(string) string) (o *benchOptions, help string, err error) {
	o = &benchOptions{}
	fs := pflag.NewFlagSet("vllmtop bench", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false

	fs.BoolVar(&o.sim, "sim", false, "Benchmark the built-in simulated vLLM server, started on a free loopback port (default model "+benchSimModel+" on "+benchSimGPU+")")
	simArgs := fs.String("sim-args", "", "The simulator's vllm serve-style flags, in one quoted string (also: everything after --)")
	fs.StringVar(&o.baseURL, "base-url", "", "Server base URL, e.g. http://127.0.0.1:8000 (default http://HOST:PORT)")
	host := fs.String("host", "127.0.0.1", "Server host, when no --base-url is given")
	port := fs.Int("port", 8000, "Server port, when no --base-url is given")
	fs.StringVar(&o.endpoint, "endpoint", loadgen.EndpointCompletions, "API path: /v1/completions or /v1/chat/completions")
	fs.StringVar(&o.backend, "backend", "", "openai (completions) or openai-chat (chat); follows --endpoint when not given")
	fs.StringVar(&o.model, "model", "", "Model name to request (default: the first model of GET /v1/models)")
	fs.StringVar(&o.tokenizer, "tokenizer", "", "Recorded as tokenizer_id in saved results (prompts are sized by the server's /tokenize)")
	fs.StringVar(&o.apiKey, "api-key", "", "API key sent as a Bearer token (default: OPENAI_API_KEY, else VLLM_API_KEY)")
	fs.StringVar(&o.dataset, "dataset-name", "random", "random, sharegpt (with --dataset-path) or fixed (with --prompt)")
	fs.StringVar(&o.datasetPath, "dataset-path", "", "ShareGPT JSON file")
	fs.StringVar(&o.prompt, "prompt", "", "The prompt of --dataset-name fixed")
	fs.IntVar(&o.numPrompts, "num-prompts", 1000, "Number of prompts to send")
	fs.IntVar(&o.random.InputLen, "random-input-len", 1024, "Prompt tokens of the random dataset")
	fs.IntVar(&o.random.OutputLen, "random-output-len", 128, "Output tokens of the random dataset (and of a fixed prompt)")
	rangeRatio := fs.String("random-range-ratio", "0.0", "Lengths drawn uniformly from [L(1-r), L(1+r)], 0 <= r < 1")
	fs.IntVar(&o.random.PrefixLen, "random-prefix-len", 0, "Tokens of a random prefix shared by every prompt")
	inputLen := fs.Int("input-len", 0, "Sets --random-input-len")
	outputLen := fs.Int("output-len", 0, "Sets --random-output-len and --sharegpt-output-len")
	fs.IntVar(&o.sharegptOutputLen, "sharegpt-output-len", 0, "Output tokens of each ShareGPT request (default: the answer's length)")
	fs.BoolVar(&o.ignoreEOS, "ignore-eos", false, "Send ignore_eos (always on for the random dataset, as vLLM does)")
	conc := fs.String("max-concurrency", "", "Maximum requests in flight; a comma list (1,8,32) runs a sweep")
	rate := fs.String("request-rate", "inf", "Requests per second (inf: all at once); a comma list runs a sweep")
	fs.Float64Var(&o.burstiness, "burstiness", 1.0, "Gamma shape of inter-arrival times: 1 is Poisson, higher is more even")
	fs.DurationVar(&o.duration, "duration", 0, "Stop sending after this long (e.g. 60s); with it --num-prompts only caps if given")
	fs.IntVar(&o.warmups, "num-warmups", 0, "Requests sent first and not measured")
	fs.Int64Var(&o.seed, "seed", 0, "Seed for prompts and arrival times")
	metrics := fs.String("percentile-metrics", "ttft,tpot,itl", "Metrics to report percentiles of: ttft, tpot, itl, e2el")
	percentiles := fs.String("metric-percentiles", "99", "Percentiles to report, e.g. 50,90,99")
	goodput := fs.String("goodput", "", `Service-level objectives in ms for goodput, e.g. "ttft:200 tpot:50"`)
	fs.BoolVar(&o.save, "save-result", false, "Save each run's result as JSON with vllm bench serve's keys")
	fs.BoolVar(&o.detailed, "save-detailed", false, "Also save per-request arrays (implies --save-result)")
	fs.StringVar(&o.resultDir, "result-dir", "", "Directory for saved results (default: the current one)")
	fs.StringVar(&o.resultFilename, "result-filename", "", "File name for saved results (default: vLLM's pattern)")
	fs.StringVar(&o.label, "label", "", "Label of the run, in saved results and their file names")
	metadata := fs.String("metadata", "", `key=value pairs added to saved results, e.g. "version=0.9 tp=1"`)
	fs.BoolVar(&o.json, "json", false, "Print the result JSON on stdout instead of the table (a list for a sweep)")
	noProgress := fs.Bool("disable-tqdm", false, "No progress line on stderr")
	readySec := fs.Float64("ready-check-timeout-sec", 0, "Keep asking a server that is not up yet for this many seconds (default: ask once)")
	fs.DurationVar(&o.requestTimeout, "request-timeout", loadgen.DefaultRequestTimeout, "Deadline of each request")
	fs.Bool("trust-remote-code", false, "Accepted for compatibility; no effect")
	helpFlag := fs.BoolP("help", "h", false, "Show this help")

	if err := fs.Parse(benchGatherValues(args)); err != nil {
		return nil, "", benchUsagef("%s", benchFlagMessage(err))
	}
	if *helpFlag {
		return nil, benchHelp(fs), nil
	}
	rest := fs.Args()
	var afterDash []string
	if n := fs.ArgsLenAtDash(); n >= 0 {
		rest, afterDash = fs.Args()[:n], fs.Args()[n:]
	}
	if len(rest) > 0 {
		return nil, "", benchUsagef("unexpected argument %q (flags only; simulator flags go after --sim --)", rest[0])
	}
	o.simArgs = append(strings.Fields(*simArgs), afterDash...)
	switch {
	case !o.sim && len(o.simArgs) > 0:
		return nil, "", benchUsagef("--sim-args and arguments after -- are the simulator's: they need --sim")
	case o.sim && (o.baseURL != "" || fs.Changed("host") || fs.Changed("port")):
		return nil, "", benchUsagef("--sim and --base-url/--host/--port exclude each other: benchmark the simulator or a server")
	case o.baseURL == "":
		o.baseURL = "http://" + net.JoinHostPort(*host, strconv.Itoa(*port))
	}
	o.baseURL = strings.TrimRight(o.baseURL, "/")

	switch o.backend {
	case "":
		o.backend = loadgen.BackendCompletions
		if strings.Contains(o.endpoint, "chat") {
			o.backend = loadgen.BackendChat
		}
	case loadgen.BackendChat, "openai-chat-completions":
		o.backend = loadgen.BackendChat
		if !fs.Changed("endpoint") {
			o.endpoint = loadgen.EndpointChat
		}
	case loadgen.BackendCompletions, "vllm":
	default:
		return nil, "", benchUsagef("--backend %q: want openai (completions) or openai-chat", o.backend)
	}
	if !strings.HasPrefix(o.endpoint, "/") {
		return nil, "", benchUsagef("--endpoint %q: want a path such as /v1/completions", o.endpoint)
	}

	if *inputLen > 0 {
		o.random.InputLen = *inputLen
	}
	if *outputLen > 0 {
		o.random.OutputLen, o.sharegptOutputLen = *outputLen, *outputLen
	}
	if fs.Changed("prompt") && !fs.Changed("dataset-name") {
		o.dataset = "fixed"
	}
	switch o.dataset {
	case "random":
		o.ignoreEOS = true // vLLM does so for the random dataset with OpenAI backends
		r, err := strconv.ParseFloat(*rangeRatio, 64)
		if err != nil {
			return nil, "", benchUsagef("--random-range-ratio %q: want a number in [0, 1)", *rangeRatio)
		}
		o.random.RangeRatio = r
		o.random.IgnoreEOS, o.random.Seed = true, o.seed
		if _, err := loadgen.NewRandom(o.random, loadgen.EstimatedVocab()); err != nil {
			return nil, "", benchUsagef("%v", err)
		}
	case "sharegpt":
		if o.datasetPath == "" {
			return nil, "", benchUsagef("--dataset-name sharegpt needs --dataset-path FILE")
		}
	case "fixed":
		if o.prompt == "" {
			return nil, "", benchUsagef("--dataset-name fixed needs --prompt TEXT")
		}
		if o.random.OutputLen < 1 {
			return nil, "", benchUsagef("--random-output-len must be at least 1")
		}
	default:
		return nil, "", benchUsagef("--dataset-name %q: this build has random, sharegpt and fixed", o.dataset)
	}
	if o.prompt != "" && o.dataset != "fixed" {
		return nil, "", benchUsagef("--prompt goes with --dataset-name fixed, not %s", o.dataset)
	}
	if o.datasetPath != "" && o.dataset != "sharegpt" {
		return nil, "", benchUsagef("--dataset-path goes with --dataset-name sharegpt, not %s", o.dataset)
	}

	if o.duration < 0 {
		return nil, "", benchUsagef("--duration must not be negative")
	}
	if o.duration > 0 && !fs.Changed("num-prompts") {
		o.numPrompts = 0 // bound by time only
	} else if o.numPrompts < 1 {
		return nil, "", benchUsagef("--num-prompts must be at least 1, got %d", o.numPrompts)
	}
	if o.warmups < 0 {
		return nil, "", benchUsagef("--num-warmups must not be negative")
	}
	if o.concurrency, err = parseBenchConcurrency(*conc); err != nil {
		return nil, "", err
	}
	if o.rates, err = parseBenchRates(*rate); err != nil {
		return nil, "", err
	}
	if len(o.concurrency) > 1 && len(o.rates) > 1 {
		return nil, "", benchUsagef("--max-concurrency and --request-rate are both lists: sweep one of them at a time")
	}
	if !(o.burstiness > 0) {
		return nil, "", benchUsagef("--burstiness must be greater than 0, got %g", o.burstiness)
	}
	if o.duration > 0 && o.numPrompts == 0 && len(o.concurrency) == 0 && math.IsInf(o.rates[0], 1) && len(o.rates) == 1 {
		return nil, "", benchUsagef("--duration with --request-rate inf needs --max-concurrency (or --num-prompts)")
	}
	if o.metrics, err = loadgen.ParsePercentileMetrics(*metrics); err != nil {
		return nil, "", &benchUsageError{err.Error()}
	}
	if o.percentiles, err = loadgen.ParsePercentiles(*percentiles); err != nil {
		return nil, "", &benchUsageError{err.Error()}
	}
	if fs.Changed("goodput") {
		if o.goodput, err = loadgen.ParseGoodput([]string{*goodput}); err != nil {
			return nil, "", &benchUsageError{err.Error()}
		}
		if !o.goodput.Set() {
			return nil, "", benchUsagef("--goodput: want objectives such as ttft:200 tpot:50 (milliseconds)")
		}
	}
	for _, kv := range strings.Fields(*metadata) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, "", benchUsagef("--metadata %q: want key=value", kv)
		}
		o.metadata = append(o.metadata, loadgen.Field{Key: k, Value: v})
	}
	o.save = o.save || o.detailed
	o.progress = !*noProgress
	if *readySec < 0 || math.IsInf(*readySec, 0) || math.IsNaN(*readySec) {
		return nil, "", benchUsagef("--ready-check-timeout-sec must be a number of seconds >= 0")
	}
	o.readyTimeout = time.Duration(*readySec * float64(time.Second))
	if o.requestTimeout <= 0 {
		return nil, "", benchUsagef("--request-timeout must be positive")
	}
	if o.apiKey == "" {
		o.apiKey = loadgen.APIKeyFromEnv(getenv)
	}
	return o, "", nil
}

func parseBenchConcurrency(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, benchUsagef("--max-concurrency %q: want a positive integer or a comma list of them", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseBenchRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r > 0) {
			return nil, benchUsagef("--request-rate %q: want requests per second (> 0 or inf) or a comma list of them", s)
		}
		out = append(out, r)
	}
	return out, nil
}

// benchGatherValues joins the several values vllm bench serve takes after --goodput and --metadata
// (`--goodput ttft:200 tpot:50`) into one argument.
func benchGatherValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if a == "--goodput" || a == "--metadata" {
			var vals []string
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				vals = append(vals, args[i+1])
				i++
			}
			out = append(out, strings.Join(vals, " "))
		}
	}
	return out
}

// benchFlagMessage words pflag's errors for a user: `invalid value "x" for --num-prompts`.
func benchFlagMessage(err error) string {
	msg := err.Error()
	var value, flag string
	if _, e := fmt.Sscanf(msg, "invalid argument %q for %q flag:", &value, &flag); e == nil {
		if i := strings.Index(flag, "--"); i >= 0 {
			flag = flag[i:]
		}
		return fmt.Sprintf("invalid value %q for %s", value, flag)
	}
	return benchOneLine(msg)
}

func benchHelp(fs *pflag.FlagSet) string {
	return `usage: vllmtop bench [--base-url URL | --sim [--sim-args "..."]] [flags] [-- simulator flags]

Benchmark a vLLM server as vllm bench serve does, with its flag names: prints vLLM's result
table per run (and a summary table for a sweep) on stdout, progress on stderr, and saves
vLLM's result JSON with --save-result.

Examples:
  vllmtop bench --base-url http://127.0.0.1:8000 --num-prompts 200
  vllmtop bench --sim --max-concurrency 1,8,32 -- meta-llama/Llama-3.1-8B-Instruct --sim-gpu A100-SXM-80GB

Flags:
` + fs.FlagUsagesWrapped(100) + `
Exit status: 0 when the runs were made (failed requests are counted in the table), 1 when
they could not be (server unreachable, refused, or no request succeeded), 2 for bad flags.
`
}

// benchTerminal reports whether w is a character device (a terminal, as far as a progress bar
// needs to know).
func benchTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// benchWithPercentile adds p to ps if missing.
func benchWithPercentile(ps []float64, p float64) []float64 {
	for _, q := range ps {
		if q == p {
			return ps
		}
	}
	return append(append([]float64(nil), ps...), p)
}

// benchOneLine folds a message onto one line.
func benchOneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
