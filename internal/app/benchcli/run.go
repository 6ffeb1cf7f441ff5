package benchcli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/internal/app/predict"
	"github.com/vllmtop/vllmtop/loadgen"
)

// Env is what a benchmark needs from the command that runs it.
type Env struct {
	Stdout, Stderr io.Writer
	// Say writes one message line with the command's prefix ("vllmtop bench: ..."), and Note
	// one line of information ("Model: ..."); both make the line safe for a terminal.
	Say, Note func(format string, a ...any)
	// Terminal is true when Stderr is a terminal: progress then draws a bar.
	Terminal bool
}

// ErrFailed is a benchmark whose runs were made but reported a problem: a run with no
// success, an interruption, a result that could not be saved (exit status 1).
var ErrFailed = errors.New("the benchmark reported a problem")

// Bench is a benchmark ready to run: its server reached, its model picked, its prompts built.
type Bench struct {
	o       *Options
	env     Env
	client  *loadgen.Client // nil on the virtual clock
	virtual *predict.Target
	clients []*loadgen.Client
	card    loadgen.ModelCard
	offset  int // prompts used by earlier probes, so each probe gets fresh ones
	// onDiscard, when set, hears each discarded probe after its line (a test restarts its
	// server there).
	onDiscard func(loadgen.SLODiscard)
	// plotFailed is a run whose --plot-timeline could not be drawn.
	plotFailed bool
	// beforeMeasured, when set, goes to the next Runs' first run: it starts --profile's
	// profiler after the warm-ups.
	beforeMeasured func()
	// saved is where the last run's result was saved ("" or nil: the name ResultPath gives),
	// for its figures.
	saved func() string
}

// Prepare reads the dataset, reaches the server at o.Client.BaseURL (or, when v is not nil,
// the simulator v on its virtual clock), picks the model and builds the prompts for it.
// Close the Bench when done. Bad input is a *cliflag.UsageError.
func Prepare(ctx context.Context, o *Options, v *predict.Target, env Env) (*Bench, error) {
	dataset, err := loadgen.OpenDataset(o.Dataset) // read before any server is asked
	if err != nil {
		return nil, cliflag.Usagef("%s", err)
	}
	if n := dataset.Available(); n > 0 && n < o.Runs.NumPrompts { // --no-oversample
		o.Runs.NumPrompts, o.Runs.Info.NumPrompts = n, n
	}
	b := &Bench{o: o, env: env, virtual: v}
	named := o.Client.Model // vLLM: --model names the results, --served-model-name the requests
	if o.vf.servedModel != "" && named != "" {
		o.Client.Model = o.vf.servedModel
	}
	var tok loadgen.Tokenizer = v
	if v != nil {
		if err := askVirtual(v, o.Client); err != nil {
			return nil, err
		}
		// --model picks among the names the server lists, as over HTTP.
		if b.card, err = loadgen.ChooseModel(o.Client.Model, v.Models(), "the simulated server"); err != nil {
			return nil, err
		}
		o.Runs.Transport, o.Runs.Clock = v, v.Clock()
	} else {
		probe, err := loadgen.NewClient(o.Client)
		if err != nil {
			return nil, cliflag.Usagef("--base-url: %v", err)
		}
		b.clients = append(b.clients, probe)
		if b.card, err = probe.PickModel(ctx, o.ReadyTimeout); err != nil {
			b.Close()
			return nil, err
		}
		if o.Client.Model == "" {
			env.Note("Model: %s (the first model of %s/v1/models; --model chooses)", b.card.ID, probe.RedactedURL())
		}
	}
	// The requests name the model exactly as the server lists it; the results, cleaned.
	o.Client.Model, o.Runs.Info.ModelID = cmp.Or(b.card.Request, b.card.ID), b.card.ID
	if v != nil {
		sendVirtual(v, o.Client)
	}
	switch {
	case o.vf.servedModel != "" && named != "":
		o.Runs.Info.ModelID = named
	case named == "" && b.card.Root != "":
		// vLLM: the first model's id goes in the requests, its root names the results.
		o.Runs.Info.ModelID = b.card.Root
	}
	if v == nil {
		if b.client, err = loadgen.NewClient(o.Client); err != nil {
			b.Close()
			return nil, err
		}
		b.clients = append(b.clients, b.client)
		tok = b.client
	}
	w, how, err := dataset.Workload(ctx, tok)
	if err == nil && w == nil {
		o.Runs.Trace, o.Runs.Conversations, how, err = dataset.Replay(ctx, tok)
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	env.Note("Prompts: %s", how)
	if n := dataset.Skipped(); n > 0 {
		env.Say("skipped %d malformed lines of %s (--trace-skip-malformed)", n, o.Dataset.Path)
	}
	if n := dataset.MaxTokens(); b.card.MaxModelLen > 0 && n > b.card.MaxModelLen {
		env.Say("warning: prompt plus output reach %d tokens, over the model's max_model_len %d: such requests fail with HTTP 400", n, b.card.MaxModelLen)
	}
	o.Runs.Workload = w
	return b, nil
}

// askVirtual asks the simulator on the virtual clock for its models as the client would: the
// model list is the first request, and a server with --api-key refuses it without the key.
func askVirtual(v *predict.Target, c loadgen.ClientConfig) error {
	if v.Plan().Authorized(loadgen.RequestHeader(c, loadgen.Prompt{})) {
		return nil
	}
	return errors.New(loadgen.Describe(&loadgen.ServerError{URL: "the simulated server's /v1/models", Status: http.StatusUnauthorized, Msg: "Unauthorized"}, c.APIKey != ""))
}

// sendVirtual makes every request to the simulator on the virtual clock pass its front end as
// the client's request would over HTTP: the key, the endpoint, the sampling flags and
// --extra-body are checked and obeyed; with --save-detailed it keeps the responses' text; and a
// request past --request-timeout ends as the HTTP client's does.
func sendVirtual(v *predict.Target, c loadgen.ClientConfig) {
	if c.KeepText {
		v.KeepText()
	}
	v.Timeout(c.RequestTimeout)
	if c.Pooling {
		return
	}
	v.Admit(cmp.Or(c.Endpoint, loadgen.EndpointCompletions),
		func(p loadgen.Prompt) http.Header { return loadgen.RequestHeader(c, p) },
		func(p loadgen.Prompt) ([]byte, error) { return loadgen.RequestBody(c, p) })
}

// Close closes the clients' idle connections (a simulator waits for them to stop).
func (b *Bench) Close() {
	for _, c := range b.clients {
		c.CloseIdleConnections()
	}
}

// Model is the model the benchmark asks for.
func (b *Bench) Model() loadgen.ModelCard { return b.card }

// Run makes the runs, or the SLO searches, and reports them as `vllmtop bench` does.
func (b *Bench) Run(ctx context.Context) error {
	if b.o.Search.On() {
		return b.searchAll(ctx)
	}
	rep := &loadgen.Report{Out: b.env.Stdout, JSON: b.o.JSON, Warn: func(msg string) { b.env.Say("%s", msg) }}
	if b.o.Save {
		rep.Save = &b.o.SaveTo
	}
	// The profiler starts after the initial test run and the warm-ups, as vLLM starts it.
	stop := func() {}
	b.beforeMeasured = func() { stop = b.startProfile(ctx) }
	b.saved = func() string { return rep.Saved }
	err := b.Runs(ctx, true, rep.Add)
	stop()
	if err != nil {
		return err
	}
	if err := rep.Close(); err != nil {
		return err
	}
	if rep.Failed() || b.plotFailed {
		return ErrFailed
	}
	return nil
}

// Runs makes the configured runs (one, or a sweep) and hands each to done; traffic says
// whether each run's traffic line is printed. A config it cannot run is a usage error.
func (b *Bench) Runs(ctx context.Context, traffic bool, done func(loadgen.SweepRun)) error {
	cfg := b.o.Runs
	cfg.BeforeMeasured, b.beforeMeasured = b.beforeMeasured, nil
	cfg.OnStart = b.progress(cfg, traffic)
	cfg.Note = func(line string) { b.env.Note("%s", line) } // the initial test run and the warm-ups
	if b.o.Timeline.drawn() {
		cfg.OnStart, done = b.withTimeline(cfg.OnStart, done)
	}
	if b.offset > 0 {
		cfg.Workload = loadgen.Offset(cfg.Workload, b.offset)
	}
	b.offset += len(cfg.Values()) * (cfg.NumPrompts + cfg.Warmups)
	err := loadgen.Sweep(ctx, b.client, cfg, done)
	switch {
	case err == nil || ctx.Err() != nil:
		return nil
	case errors.As(err, new(*loadgen.InitialTestRunError)):
		return err // the server, not the flags
	}
	return cliflag.Usagef("%v", err)
}

// PromptOffset is how many prompts the benchmark's runs have used; SetPromptOffset makes the
// next run start after n, so that runs on one server never send a prompt twice (its prefix
// cache would answer them from an earlier run, as vllm bench sweep avoids by resetting it).
func (b *Bench) PromptOffset() int { return b.offset }

// SetPromptOffset: see PromptOffset.
func (b *Bench) SetPromptOffset(n int) { b.offset = n }

// progress is a run's start: its traffic line, and a progress line on stderr.
func (b *Bench) progress(cfg loadgen.SweepConfig, traffic bool) func(loadgen.RunInfo) ([]func(loadgen.Result), func()) {
	return func(info loadgen.RunInfo) ([]func(loadgen.Result), func()) {
		conc := "None"
		if info.MaxConcurrency > 0 {
			conc = strconv.Itoa(info.MaxConcurrency)
		}
		switch {
		case !traffic:
		case cfg.Trace != nil:
			fmt.Fprintf(b.env.Stderr, "Traffic: the trace's timestamps, sped up %gx, maximum request concurrency: %s\n", cmp.Or(b.o.Dataset.Trace.Speedup, 1), conc)
		case cfg.Conversations != nil:
			if info.MaxConcurrency == 0 {
				conc = "all"
			}
			fmt.Fprintf(b.env.Stderr, "Traffic: conversations turn by turn, think time %v, conversations at once: %s\n", cfg.Conversations.Think.Mean, conc)
		default:
			loadgen.PrintTraffic(b.env.Stderr, info)
		}
		if b.o.Quiet || b.virtual != nil {
			return nil, nil // on the virtual clock a run takes milliseconds
		}
		p := loadgen.NewProgress(cfg.NumPrompts, cfg.Duration)
		return []func(loadgen.Result){p.Add}, p.Start(b.env.Stderr, b.env.Terminal)
	}
}
