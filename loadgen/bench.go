package loadgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// BenchConfig is one headless run, driven as vllm bench serve drives it.
type BenchConfig struct {
	Workload Workload
	// NumPrompts is the number of measured requests; 0 means no count (Duration must be set).
	NumPrompts int
	// Duration stops starting requests after this long (0 = no limit); those in flight finish.
	Duration time.Duration
	// RequestRate is the arrival rate in requests per second, with gamma inter-arrival times of
	// shape Burstiness; +Inf (or 0) sends every request at once, MaxConcurrency at a time.
	RequestRate float64
	Burstiness  float64
	// MaxConcurrency caps the requests in flight (0 = no cap).
	MaxConcurrency int
	// Warmups are requests sent before the measured ones, at the same concurrency, and not
	// counted. Each sends the first measured prompt, as vllm bench serve's warm-ups send its
	// test request: with prefix caching on, the first measured request then finds its prompt
	// in the cache, as it does against vLLM's client.
	Warmups int
	// ReadyCheck, when positive, sends the first measured prompt once before the warm-ups and
	// repeats it every ReadyRetry until one succeeds, for up to this long: vllm bench serve's
	// initial test run (--ready-check-timeout-sec). A check that never succeeds fails the run
	// with ErrInitialTestRun.
	ReadyCheck time.Duration
	// Note, when set, receives vllm bench serve's lines about the initial test run and the
	// warm-ups as they start and end.
	Note func(string)
	// BeforeMeasured, when set, is called once the initial test run and the warm-ups are
	// done, before the first measured request: where vllm bench serve starts the server's
	// profiler.
	BeforeMeasured func()
	Seed           int64
	// Goodput are the objectives the run's Tally counts good requests by.
	Goodput Goodput
	// Detailed spills the per-request arrays of --save-detailed to a file in DetailDir ("":
	// the system's temporary directory) as requests finish (see Tally.EnableDetail).
	Detailed  bool
	DetailDir string
	// Backoff is the runners' back-off; Bench always stops (Backoff.Stop) where a live load
	// would pause.
	Backoff BackoffConfig
	// Sinks receive each measured result as it finishes, from the request goroutines.
	Sinks []func(Result)
	// Trace, when set, opens the trace each run replays at its own times (RequestRate and
	// Burstiness unused; MaxConcurrency caps what is in flight; NumPrompts, when positive,
	// ends the trace early). See Runner's Arrivals.
	Trace func() (ArrivalSource, error)
	// Conversations, when set, plays conversations instead: MaxConcurrency of them at once
	// (0: all of Conversations.Count); NumPrompts, when positive, caps the turns sent.
	Conversations *ConversationLoad
	// Transport and Clock, when set, send and time the requests instead of the Client on
	// the wall clock (see RunnerConfig); Bench's client may then be nil.
	Transport Transport
	Clock     Clock
	// RequestIDPrefix, when set, names each measured request prefix+index in its
	// x-request-id header (vllm bench serve's --request-id-prefix).
	RequestIDPrefix string
	// LoRA spreads the measured requests over LoRA adapters (--lora-modules).
	LoRA LoRA
	// Ramp, when on, raises the rate from request to request (RequestRate unused).
	Ramp Ramp
	// ProbeRate, when positive, sends vllm bench serve's probes at this rate during the
	// measured requests (over HTTP only).
	ProbeRate float64
}

// Replays reports whether the run's requests come from a trace or conversations rather than
// from Workload at a rate.
func (cfg BenchConfig) Replays() bool { return cfg.Trace != nil || cfg.Conversations != nil }

// BenchRun is what one run measured.
type BenchRun struct {
	// Tally holds the run's statistics and, when Detailed, its per-request arrays; the
	// caller closes it.
	Tally *Tally
	// Duration runs from the first measured dispatch until the last request ended, as vLLM's
	// benchmark_duration does.
	Duration time.Duration
	// Start is when the measured requests' schedule began.
	Start time.Time
	// RampEvents are a ramp-up's rps_change_events (nil without a ramp).
	RampEvents []RampEvent
	// Stopped is set when the run ended early because requests kept failing before any output.
	Stopped *FailingError
	// SpecDecode is the server's drafting during the measured requests (nil: none seen).
	SpecDecode *SpecDecode
	// Probes are what BenchConfig's probes measured (nil: none).
	Probes *Probes
}

// ErrNoLimit is returned by Bench when neither a request count nor a duration bounds a run.
var ErrNoLimit = errors.New("the run has no end: give a number of prompts or a duration")

// ErrUnboundedConcurrency is returned by Bench for a duration-bound run that would send every
// request at once: it needs a request rate or a concurrency cap.
var ErrUnboundedConcurrency = errors.New("a run bounded by duration needs a request rate or a maximum concurrency")

// closedLoop reports whether the config sends everything at once (vLLM's rate inf).
func (cfg BenchConfig) closedLoop() bool {
	return cfg.RequestRate <= 0 || math.IsInf(cfg.RequestRate, 1)
}

func (cfg BenchConfig) slots() int {
	if cfg.MaxConcurrency > 0 {
		return cfg.MaxConcurrency
	}
	return cfg.NumPrompts
}

// Bench runs the warm-ups, then the measured requests, and returns the measured results in a
// Tally the caller closes. It blocks until the run ends; when ctx ends first it returns what
// finished and ctx's error. Requests fail into their Result's error class; Bench itself fails
// only for a config it cannot run (and then returns no Tally).
func Bench(ctx context.Context, c *Client, cfg BenchConfig) (BenchRun, error) {
	if cfg.Replays() {
		return benchReplay(ctx, c, cfg)
	}
	if cfg.NumPrompts <= 0 && cfg.Duration <= 0 {
		return BenchRun{}, ErrNoLimit
	}
	if cfg.closedLoop() && !cfg.Ramp.On() && cfg.slots() <= 0 {
		return BenchRun{}, ErrUnboundedConcurrency
	}
	tally := NewTally(cfg.Goodput)
	if cfg.Detailed {
		if err := tally.EnableDetail(cfg.DetailDir); err != nil {
			return BenchRun{}, err
		}
	}
	backoff := cfg.Backoff
	backoff.Stop = true
	run := BenchRun{Tally: tally}
	note := cfg.Note
	if note == nil {
		note = func(string) {}
	}
	if cfg.ReadyCheck > 0 {
		note(fmt.Sprintf("Waiting for endpoint to become up in %d seconds", int(cfg.ReadyCheck/time.Second)))
		if err := readyCheck(ctx, c, cfg); err != nil {
			_ = tally.Close()
			return BenchRun{}, err
		}
		note("Initial test run completed.")
	}
	if cfg.Warmups > 0 {
		note(fmt.Sprintf("Warming up with %d requests...", cfg.Warmups))
		if err := warmUp(ctx, c, cfg, backoff); err != nil {
			if errors.As(err, &run.Stopped) {
				err = nil
			}
			return run, err // nothing measured: an empty run
		}
		note("Warmup run completed.")
	}
	if cfg.BeforeMeasured != nil {
		cfg.BeforeMeasured()
	}
	rc := RunnerConfig{
		Workload:    WithRequestIDs(WithLoRA(cfg.Workload, cfg.LoRA), cfg.RequestIDPrefix),
		NumRequests: max(cfg.NumPrompts, 0),
		Duration:    cfg.Duration,
		Seed:        cfg.Seed,
		Backoff:     backoff,
		Sinks:       append([]func(Result){tally.Add}, cfg.Sinks...),
		Transport:   cfg.Transport,
		Clock:       cfg.Clock,
	}
	switch {
	case cfg.Ramp.On():
		rc.Rate, rc.Burstiness, rc.MaxConcurrency = cfg.Ramp.rate(0, cfg.NumPrompts), cfg.Burstiness, cfg.MaxConcurrency
		rc.RampRate = func(i int) float64 { return cfg.Ramp.rate(i, cfg.NumPrompts) }
		due := newRampDue(cfg.Ramp, max(cfg.NumPrompts, 0))
		rc.Sinks = append(rc.Sinks, due.add)
		run, err := timedSpec(ctx, c, rc, run, cfg.Transport == nil, cfg.ProbeRate)
		run.RampEvents = due.events(run.Start)
		return run, err
	case cfg.closedLoop():
		rc.Concurrency, rc.ArriveAtStart = cfg.slots(), true
	default:
		rc.Rate, rc.Burstiness, rc.MaxConcurrency = cfg.RequestRate, cfg.Burstiness, cfg.MaxConcurrency
		if cfg.Duration <= 0 {
			rc.Gaps = ArrivalGaps(cfg.NumPrompts, cfg.RequestRate, cmp.Or(cfg.Burstiness, 1), cfg.Seed)
		}
	}
	return timedSpec(ctx, c, rc, run, cfg.Transport == nil, cfg.ProbeRate)
}

// timedSpec is timed, reading the server's speculative-decoding counters before and after
// the run and sending probes during it, when it sends over HTTP, as vllm bench serve does.
func timedSpec(ctx context.Context, c *Client, rc RunnerConfig, run BenchRun, scrape bool, probeRate float64) (BenchRun, error) {
	if !scrape || c == nil {
		return timed(ctx, c, rc, run)
	}
	before, ok := c.specDecodeCounts(ctx)
	stopProbes := func() *Probes { return nil }
	if probeRate > 0 {
		stopProbes = probeLoop(ctx, c, probeRate)
	}
	run, err := timed(ctx, c, rc, run)
	run.Probes = stopProbes()
	if ok {
		if after, ok := c.specDecodeCounts(context.WithoutCancel(ctx)); ok {
			run.SpecDecode = specDecodeDelta(before, after)
		}
	}
	return run, err
}

// benchReplay is Bench for a trace or conversations: no warm-ups (a replay's first requests
// are part of what it replays).
func benchReplay(ctx context.Context, c *Client, cfg BenchConfig) (BenchRun, error) {
	rc := RunnerConfig{NumRequests: max(cfg.NumPrompts, 0), Duration: cfg.Duration, Seed: cfg.Seed,
		MaxConcurrency: cfg.MaxConcurrency, Concurrency: cfg.MaxConcurrency, Transport: cfg.Transport, Clock: cfg.Clock}
	switch {
	case cfg.Trace != nil:
		src, err := cfg.Trace()
		if err != nil {
			return BenchRun{}, err
		}
		rc.Arrivals = src
	default:
		cl := cfg.Conversations
		if cl.Count <= 0 && cfg.NumPrompts <= 0 && cfg.Duration <= 0 {
			return BenchRun{}, ErrNoLimit
		}
		if rc.Concurrency <= 0 {
			if rc.Concurrency = cl.Count; cl.Count <= 0 {
				return BenchRun{}, ErrUnboundedConcurrency
			}
		}
		rc.Conversations = cl
	}
	tally := NewTally(cfg.Goodput)
	if cfg.Detailed {
		if err := tally.EnableDetail(cfg.DetailDir); err != nil {
			return BenchRun{}, err
		}
	}
	rc.Backoff = cfg.Backoff
	rc.Backoff.Stop = true
	rc.Sinks = append([]func(Result){tally.Add}, cfg.Sinks...)
	run := BenchRun{Tally: tally}
	return timed(ctx, c, rc, run)
}

// timed runs rc's Runner to its end and notes how long it took, and whether the back-off
// stopped it.
func timed(ctx context.Context, c *Client, rc RunnerConfig, run BenchRun) (BenchRun, error) {
	r := NewRunner(c, rc)
	start := r.clock.Now()
	err := r.Run(ctx)
	run.Start, run.Duration = start, r.clock.Now().Sub(start)
	if errors.As(err, &run.Stopped) {
		err = nil
	}
	return run, err
}

// warmUp sends cfg's warm-ups: the first prompt, Warmups times, MaxConcurrency at a time.
func warmUp(ctx context.Context, c *Client, cfg BenchConfig, backoff BackoffConfig) error {
	warm := RunnerConfig{Workload: firstPrompt{cfg.Workload}, NumRequests: cfg.Warmups, Seed: cfg.Seed, Backoff: backoff,
		Transport: cfg.Transport, Clock: cfg.Clock, Concurrency: cfg.Warmups}
	if cfg.MaxConcurrency > 0 {
		warm.Concurrency = min(cfg.MaxConcurrency, cfg.Warmups)
	}
	return NewRunner(c, warm).Run(ctx)
}

// ReadyRetry is the pause between two tries of the initial test run, vLLM's retry_interval.
const ReadyRetry = 5 * time.Second

// InitialTestRunError is returned by Bench when the initial test run (ReadyCheck) never
// succeeded; it reads as vLLM's error, with the last try's error.
type InitialTestRunError struct{ Last string }

func (e *InitialTestRunError) Error() string {
	return "Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: " + e.Last
}

// readyCheck is vllm bench serve's initial test run: the first measured prompt, sent until it
// succeeds or cfg.ReadyCheck has passed (vllm/benchmarks/lib/ready_checker.py).
func readyCheck(ctx context.Context, c *Client, cfg BenchConfig) error {
	clock := cfg.Clock
	if clock == nil {
		clock = newWallClock()
	}
	deadline := clock.Now().Add(cfg.ReadyCheck)
	var last Result
	for clock.Now().Before(deadline) {
		rc := RunnerConfig{Workload: firstPrompt{cfg.Workload}, NumRequests: 1, Concurrency: 1, Seed: cfg.Seed,
			Transport: cfg.Transport, Clock: cfg.Clock, Sinks: []func(Result){func(r Result) { last = r }}}
		try, cancel := ctx, context.CancelFunc(func() {})
		if cfg.Clock == nil { // a try that outlasts the deadline ends with it, as vLLM's wait does
			try, cancel = context.WithDeadline(ctx, deadline)
		}
		err := NewRunner(c, rc).Run(try)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !errors.As(err, new(*FailingError)) && try.Err() == nil:
			return err
		case last.OK():
			return nil
		case last.Error == ErrCanceled:
			last = Result{} // cut off by the deadline: vLLM reports the time-out
		}
		if wait := min(ReadyRetry, deadline.Sub(clock.Now())); wait > 0 {
			if err := clock.Wait(ctx, clock.Now().Add(wait), nil); err != nil {
				return err
			}
		}
	}
	msg := last.ErrorMessage
	if msg == "" {
		msg = fmt.Sprintf("Endpoint readiness timed out after %ds.", int(cfg.ReadyCheck/time.Second))
	}
	return &InitialTestRunError{Last: msg}
}

// firstPrompt sends w's first prompt at every index: vLLM's test request, which its ready
// check and its warm-ups repeat.
type firstPrompt struct{ w Workload }

func (f firstPrompt) Prompt(int) Prompt { return f.w.Prompt(0) }
func (f firstPrompt) Name() string      { return f.w.Name() }

// Offset shifts a workload by n prompts: its i-th prompt is w's (n+i)-th. A sweep uses it to
// give each run fresh prompts of the same shape.
func Offset(w Workload, n int) Workload {
	if n == 0 {
		return w
	}
	return offset{w, n}
}

type offset struct {
	w Workload
	n int
}

func (o offset) Prompt(i int) Prompt { return o.w.Prompt(o.n + i) }
func (o offset) Name() string        { return o.w.Name() }
