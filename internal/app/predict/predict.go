// Package predict runs vllmtop's benchmarks against the simulated vLLM engine on simulated
// time: the engine and the client share one virtual clock, nothing sleeps, and a run's numbers
// are what the simulated GPU would give, in a fraction of the time (not wall time compressed,
// as --sim-speed gives). It drives the engine in-process and so bypasses HTTP and SSE; the
// prompts, arrival schedule, results, statistics and reports are loadgen's, so a run reads as a
// real one, and a test holds its figures to the same run on the wall clock.
//
// A Target is not safe for concurrent use: one run at a time, as one benchmark client makes.
package predict

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// refusedCost is what a refused request (HTTP 400: too long for max_model_len) costs the
// client, as a round trip would, so that a loop of refusals still moves time on.
const refusedCost = time.Millisecond

// Target is one simulated server on simulated time. Its engine lives across runs, as a server
// does across the runs of a sweep (its prefix cache included), and its clock only moves on.
type Target struct {
	plan   *serve.Plan
	chat   bool
	engine *sim.Engine
	now    time.Time
}

// New starts a target for the plan's server, whose clients send to endpoint
// (loadgen.EndpointCompletions or loadgen.EndpointChat).
func New(plan *serve.Plan, endpoint string) *Target {
	return &Target{plan: plan, chat: endpoint == loadgen.EndpointChat, engine: plan.NewEngine(),
		now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Model is the model card the server would list at /v1/models.
func (t *Target) Model() loadgen.ModelCard {
	return loadgen.ModelCard{ID: t.plan.ServedModel(), Root: t.plan.Model(), MaxModelLen: t.plan.MaxModelLen()}
}

// Plan is the server the target simulates.
func (t *Target) Plan() *serve.Plan { return t.plan }

// Counters are the simulated engine's counters since it started, as its /metrics counts them
// (prefix-cache queries and hits among them).
func (t *Target) Counters() sim.Counters { return t.engine.Counters() }

// Now is the target's simulated time.
func (t *Target) Now() time.Time { return t.now }

// TokenStrings and PromptTokens answer as the server's /tokenize would (loadgen.Tokenizer).
func (t *Target) TokenStrings(_ context.Context, text string) ([]string, error) {
	return serve.TokenStrings(text), nil
}

// PromptTokens is the token count of text as a prompt of the target's endpoint.
func (t *Target) PromptTokens(_ context.Context, text string) (int, error) {
	return len(serve.PromptIDs(text, t.chat)), nil
}

// Bench makes one run as loadgen.Bench makes it against a server (warm-ups first, then the
// measured requests, closed or open loop, the back-off from requests refused at once), on
// simulated time, and returns its statistics in a Tally the caller closes. It has
// loadgen.SweepConfig's Bench signature. When ctx ends, the requests in flight are aborted and
// reported canceled; when refusals reach the back-off's threshold the run stops early
// (BenchRun.Stopped), as loadgen.Bench's does.
func (t *Target) Bench(ctx context.Context, cfg loadgen.BenchConfig) (loadgen.BenchRun, error) {
	if cfg.Replays() {
		return t.benchReplay(ctx, cfg)
	}
	closed := cfg.RequestRate <= 0 || math.IsInf(cfg.RequestRate, 1)
	slots := cfg.MaxConcurrency
	if slots <= 0 {
		slots = cfg.NumPrompts
	}
	switch {
	case cfg.NumPrompts <= 0 && cfg.Duration <= 0:
		return loadgen.BenchRun{}, loadgen.ErrNoLimit
	case closed && slots <= 0:
		return loadgen.BenchRun{}, loadgen.ErrUnboundedConcurrency
	}
	tally := loadgen.NewTally(cfg.Goodput)
	if cfg.Detailed {
		if err := tally.EnableDetail(cfg.DetailDir); err != nil {
			return loadgen.BenchRun{}, err
		}
	}
	run := loadgen.BenchRun{Tally: tally}
	if cfg.Warmups > 0 {
		warm := load{workload: loadgen.Offset(cfg.Workload, max(cfg.NumPrompts, 0)), count: cfg.Warmups, closed: true,
			slots: cfg.Warmups, seed: cfg.Seed, backoff: cfg.Backoff}
		if cfg.MaxConcurrency > 0 {
			warm.slots = min(cfg.MaxConcurrency, cfg.Warmups)
		}
		if err := t.run(ctx, warm); err != nil {
			if errors.As(err, &run.Stopped) {
				err = nil
			}
			return run, err // nothing measured: an empty run
		}
	}
	l := load{workload: cfg.Workload, count: max(cfg.NumPrompts, 0), duration: cfg.Duration, closed: closed,
		slots: slots, rate: cfg.RequestRate, burstiness: cfg.Burstiness, maxConc: cfg.MaxConcurrency, seed: cfg.Seed,
		backoff: cfg.Backoff, sinks: append([]func(loadgen.Result){tally.Add}, cfg.Sinks...)}
	start := t.now
	err := t.run(ctx, l)
	run.Duration = t.now.Sub(start)
	if errors.As(err, &run.Stopped) {
		err = nil
	}
	return run, err
}

// load is one Runner's worth of requests.
type load struct {
	workload loadgen.Workload
	count    int           // requests to send (0: bound by duration)
	duration time.Duration // stop starting requests after this long (0: none)
	closed   bool          // closed loop of slots; else open loop at rate, capped by maxConc
	slots    int
	rate     float64
	// burstiness is the gamma shape of the open loop's gaps.
	burstiness float64
	maxConc    int
	seed       int64
	backoff    loadgen.BackoffConfig
	sinks      []func(loadgen.Result)
}

// request is one request in flight: its result as the client measures it.
type request struct {
	res         loadgen.Result
	seq         *sim.Sequence
	lastContent time.Time
}

// run drives one load to its end. Its error is ctx's, or a *loadgen.FailingError when the
// back-off stopped it.
func (t *Target) run(ctx context.Context, l load) error {
	r := runState{t: t, l: l, origin: t.now, live: map[*sim.Sequence]*request{}, backoff: loadgen.NewBackoff(l.backoff, l.seed)}
	if !l.closed {
		r.arrivals = loadgen.NewArrivals(l.seed, l.rate, l.burstiness)
		r.next = r.origin.Add(r.arrivals.Next())
	}
	for {
		if ctx.Err() != nil {
			r.cancel()
			return ctx.Err()
		}
		r.fill(t.now)
		if !r.more() && len(r.live) == 0 {
			if r.stopped != nil {
				return r.stopped
			}
			return nil
		}
		step := t.engine.Step(t.now)
		if step.Idle {
			next := step.NextReady
			if r.openMore() && (next.IsZero() || r.next.Before(next)) {
				next = r.next
			}
			if w := r.backoff.Next(); r.l.closed && r.more() && w.After(t.now) && (next.IsZero() || w.Before(next)) {
				next = w // a slot the back-off holds
			}
			if next.IsZero() || !next.After(t.now) {
				next = t.now.Add(refusedCost) // only refusals in flight: time still moves
			}
			t.now = next
			continue
		}
		// Requests that arrive while the step runs reach the engine before its end.
		r.arriveUntil(step.End)
		r.deliver(step)
		t.now = step.End
	}
}

// runState is a run under way.
type runState struct {
	t        *Target
	l        load
	origin   time.Time
	index    int // the next request's index
	live     map[*sim.Sequence]*request
	due      []time.Time
	arrivals *loadgen.Arrivals
	next     time.Time // the open loop's next arrival
	// restart is set while next is the end of a back-off: the schedule restarts there, one
	// gap later, as a Runner's does.
	restart bool
	// backoff spaces and stops requests that fail at once as a Runner's does; stopped is set
	// when it reached its threshold (then nothing more starts).
	backoff *loadgen.Backoff
	stopped *loadgen.FailingError
}

// more reports whether requests remain to be started at some time.
func (r *runState) more() bool {
	switch {
	case r.stopped != nil:
		return false
	case r.l.closed:
		return r.allowed(later(r.t.now, r.backoff.Next()))
	}
	return (len(r.due) > 0 && r.inTime(r.t.now)) || r.openMore()
}

// openMore reports whether the open loop has arrivals still to come.
func (r *runState) openMore() bool { return !r.l.closed && r.stopped == nil && r.allowed(r.next) }

// held reports whether nothing may start at at: the back-off holds it, or stopped the run.
func (r *runState) held(at time.Time) bool { return r.stopped != nil || at.Before(r.backoff.Next()) }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (r *runState) inFlight() int { return len(r.live) }

// inTime reports whether at is before the run's duration ends (when it has one).
func (r *runState) inTime(at time.Time) bool {
	return r.l.duration == 0 || at.Before(r.origin.Add(r.l.duration))
}

// allowed reports whether a request arriving at at may still be sent: the count is not reached
// (due arrivals included) and the duration has not run out.
func (r *runState) allowed(at time.Time) bool {
	if r.l.count > 0 && r.index+len(r.due) >= r.l.count {
		return false
	}
	return r.inTime(at)
}

// fill starts what may start at now: free closed-loop slots, or due open-loop arrivals. It
// starts at most one loop's worth, so refused requests (which free their slot at once) cannot
// hold time still.
func (r *runState) fill(now time.Time) {
	if r.l.closed {
		for n := 0; n < r.l.slots && r.inFlight() < r.l.slots && r.allowed(now) && !r.held(now); n++ {
			r.start(now, now)
		}
		return
	}
	r.arriveUntil(now.Add(1)) // arrivals at now itself
	for len(r.due) > 0 && r.inTime(now) && !r.held(now) && (r.l.maxConc == 0 || r.inFlight() < r.l.maxConc) {
		intended := r.due[0]
		r.due = r.due[1:]
		r.start(now, intended)
	}
}

// arriveUntil takes what starts before end: the open loop's arrivals, each sent at once or
// waiting for a slot under the cap (it keeps its intended time, and the wait counts); in the
// closed loop, the free slots a back-off held until then.
func (r *runState) arriveUntil(end time.Time) {
	if r.l.closed {
		for r.inFlight() < r.l.slots && r.stopped == nil {
			at := r.backoff.Next()
			if !at.After(r.t.now) || !at.Before(end) || !r.allowed(at) {
				return
			}
			r.start(at, at)
		}
		return
	}
	for r.stopped == nil && r.next.Before(end) && r.allowed(r.next) {
		if r.restart {
			r.next, r.restart = r.next.Add(r.arrivals.Next()), false
			continue
		}
		at := r.next
		r.next = r.next.Add(r.arrivals.Next())
		if len(r.due) == 0 && (r.l.maxConc == 0 || r.inFlight() < r.l.maxConc) {
			r.start(at, at)
		} else {
			r.due = append(r.due, at)
		}
	}
}

// start sends request r.index at at.
func (r *runState) start(at, intended time.Time) {
	i := r.index
	r.index++
	r.backoff.Starting(at)
	r.rescheduled(at)
	p := r.l.workload.Prompt(i)
	ids := serve.PromptIDs(p.Text, r.t.chat)
	req := &request{res: loadgen.Result{Index: i, Intended: intended, Start: at, PromptTokens: len(ids),
		ITLs: make([]time.Duration, 0, max(p.OutputTokens-1, 0))}}
	seq, err := r.t.engine.Add(sim.Request{ID: "cmpl-" + strconv.Itoa(i), Prompt: ids, MaxTokens: p.OutputTokens, IgnoreEOS: p.IgnoreEOS, Arrival: at})
	if err != nil {
		req.res.Status, req.res.Error, req.res.ErrorMessage = 400, loadgen.ErrHTTP400, "HTTP 400: "+err.Error()
		r.finish(req, at) // its slot is free at once; the back-off (or refusedCost) moves time on
		return
	}
	seq.Tag = req
	req.seq = seq
	r.live[seq] = req
}

// deliver hands the step's tokens to their requests at the step's end, one chunk each.
func (r *runState) deliver(step *sim.StepResult) {
	end := step.End
	for _, out := range step.Outputs {
		req, ok := out.Seq.Tag.(*request)
		if !ok || r.live[out.Seq] != req {
			continue // a request of an earlier run, aborted
		}
		if chunk(&req.res, &req.lastContent, out, end) {
			delete(r.live, out.Seq)
			r.finish(req, end)
		}
	}
}

// chunk records one step's output of a request, delivered at end as one chunk, as a client
// measures it (last is the previous chunk's time); it reports whether the request finished.
func chunk(res *loadgen.Result, last *time.Time, out sim.Output, end time.Time) bool {
	if res.Chunks == 0 {
		res.TTFT = end.Sub(res.Start)
	} else {
		res.ITLs = append(res.ITLs, end.Sub(*last))
	}
	*last = end
	res.Chunks++
	res.OutputTokens += len(out.Tokens)
	if out.Finished {
		res.FinishReason = string(out.Reason)
		res.E2EL = end.Sub(res.Start)
		res.Status, res.OutputFromUsage = 200, true
	}
	return out.Finished
}

// finish reports a request's result, ended at at, to the back-off and the sinks.
func (r *runState) finish(req *request, at time.Time) {
	r.backoff.Note(&req.res, at)
	if r.stopped == nil {
		r.stopped = r.backoff.Stopped()
	}
	r.rescheduled(at)
	for _, sink := range r.l.sinks {
		sink(req.res)
	}
}

// rescheduled restarts the open loop's schedule after a back-off that now holds requests, as a
// Runner does: the arrivals it held back (and those waiting for a slot) are not sent in a
// burst when it ends.
func (r *runState) rescheduled(now time.Time) {
	if w := r.backoff.Next(); !r.l.closed && w.After(now) {
		r.due, r.next, r.restart = nil, w, true
	}
}

// cancel aborts the requests in flight, as a client that goes away does.
func (r *runState) cancel() {
	for seq, req := range r.live {
		r.t.engine.Abort(seq, r.t.now)
		req.res.Error, req.res.ErrorMessage = loadgen.ErrCanceled, "canceled"
		delete(r.live, seq)
		r.finish(req, r.t.now)
	}
}
