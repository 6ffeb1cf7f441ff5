package loadgen

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RunnerConfig says what load to drive.
type RunnerConfig struct {
	Workload Workload
	// Concurrency is the number of closed-loop slots: a new request starts when one ends.
	// It is used when Rate is 0.
	Concurrency int
	// Rate, when positive, drives an open loop of Rate requests per second, with gamma
	// inter-arrival times of shape Burstiness (1 = Poisson; +Inf = evenly spaced).
	Rate       float64
	Burstiness float64
	// MaxConcurrency caps requests in flight in the open loop (0 = no cap). Requests that
	// arrive while it is full wait on the client, and that wait is measured.
	MaxConcurrency int
	// RampRate, when set, is the open loop's rate for the i-th request (vllm bench serve's
	// --ramp-up-strategy): the gap before request i is drawn at RampRate(i); Rate is then
	// only the loop's marker that it is open.
	RampRate func(i int) float64
	// Gaps, when set, are the open loop's gaps before each request, drawn ahead (see
	// ArrivalGaps); a request past their end gets a gap drawn as usual.
	Gaps []time.Duration
	// ArriveAtStart counts the closed loop's requests as arriving when the run starts, as
	// vllm bench serve's do (it releases every request at once to its semaphore), so that
	// each one's wait for a slot is its client-side queueing.
	ArriveAtStart bool
	NumRequests   int           // stop after this many measured requests (0 = no limit)
	Duration      time.Duration // stop starting requests after this long (0 = no limit)
	Warmup        int           // requests sent first and marked Warmup (not counted)
	Seed          int64
	// Backoff says how the runner slows down and pauses when requests fail before any output.
	Backoff BackoffConfig
	// Sinks receive every result, from the request goroutines (on a VirtualClock, from Run's).
	Sinks []func(Result)
	// ITL, when set, receives each inter-token latency of a measured request as it arrives,
	// with the request's epoch, and results carry no ITLs: a long output's memory is then
	// constant.
	ITL func(epoch int, d time.Duration)
	// Arrivals, when set, replays a trace: each arrival is sent open loop at its time (see
	// runArrivals) instead of Workload's prompts at Concurrency or Rate.
	Arrivals ArrivalSource
	// Conversations, when set, plays conversations turn by turn instead: Concurrency is the
	// number of conversations under way (see runConversations).
	Conversations *ConversationLoad
	// Transport sends the requests (nil: the Runner's Client) and Clock times them (nil: the
	// wall clock). A simulated engine on a VirtualClock is both.
	Transport Transport
	Clock     Clock
}

// Runner drives a workload over a Transport: one scheduler for every load, whatever sends the
// requests. Its setters are safe from any goroutine and take effect within one request slot;
// Run blocks until the load stops.
type Runner struct {
	transport Transport
	clock     Clock
	cfg       RunnerConfig

	mu          sync.Mutex
	workload    Workload
	concurrency int
	rate        float64
	burstiness  float64
	maxConc     int
	paused      bool
	epoch       int
	watch       *Watched
	kick        chan struct{}
	breaker     *breaker
	hold        string // PauseFor's reason; "" when not held
	holdGen     int    // counts PauseFor calls, so a stale ResumeAfter lifts nothing
	replay      string // LoaderStats.Replay
	// cut ends with CancelInFlight, which then makes a new one: every request started before
	// ends canceled.
	cut     context.Context
	cutStop context.CancelFunc

	inFlight atomic.Int64
	open     atomic.Int64 // requests started whose done has not returned yet
	started  atomic.Int64
	finished atomic.Int64
	lagNanos atomic.Int64 // the dispatcher's last lateness behind the schedule
	runStart atomic.Int64 // unix nanos
}

// NewRunner builds a runner that sends with c unless cfg names a Transport; nothing is sent
// until Run.
func NewRunner(c *Client, cfg RunnerConfig) *Runner {
	if cfg.Burstiness == 0 {
		cfg.Burstiness = 1
	}
	r := &Runner{transport: cfg.Transport, clock: cfg.Clock, cfg: cfg, workload: cfg.Workload, concurrency: cfg.Concurrency,
		rate: cfg.Rate, burstiness: cfg.Burstiness, maxConc: cfg.MaxConcurrency, kick: make(chan struct{}, 1),
		breaker: newBreaker(cfg.Backoff, cfg.Seed), replay: replayKind(cfg.Arrivals != nil, cfg.Conversations != nil)}
	if r.transport == nil {
		r.transport = c
	}
	r.cut, r.cutStop = context.WithCancel(context.Background())
	if r.clock == nil {
		r.clock = newWallClock()
	}
	return r
}

// poke wakes the scheduler: a setting changed or a request ended.
func (r *Runner) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// SetConcurrency sets the closed-loop slots. Fewer slots take effect as requests end; more
// start requests at once. Setting it switches a rate-driven runner to the closed loop. It
// starts an epoch and returns its number.
func (r *Runner) SetConcurrency(n int) int {
	return r.change(func() { r.concurrency, r.rate = max(0, n), 0 })
}

// SetRate switches to an open loop of rps requests per second (0 returns to the closed loop).
// It starts an epoch and returns its number.
func (r *Runner) SetRate(rps float64) int { return r.change(func() { r.rate = max(0, rps) }) }

// SetWorkload switches the prompts of requests that start from now on, within the epoch (the
// same load, its prompts fitted to the server's tokenizer, say).
func (r *Runner) SetWorkload(w Workload) {
	r.mu.Lock()
	r.workload = w
	r.mu.Unlock()
}

// SwitchWorkload switches the prompts as SetWorkload does and starts an epoch, so the new
// prompts' results are counted apart; it returns the epoch's number.
func (r *Runner) SwitchWorkload(w Workload) int { return r.change(func() { r.workload = w }) }

// NextEpoch marks results from now on with a new epoch number (a restart, say) and returns it.
func (r *Runner) NextEpoch() int { return r.change(func() {}) }

// change applies a change of the load and starts an epoch with it, atomically: every request
// that starts under the new load carries the new epoch's number.
func (r *Runner) change(apply func()) int {
	r.mu.Lock()
	apply()
	r.epoch++
	n := r.epoch
	r.mu.Unlock()
	r.poke()
	return n
}

// Pause stops starting requests; those in flight finish.
func (r *Runner) Pause() {
	r.mu.Lock()
	r.paused = true
	r.mu.Unlock()
	r.poke()
}

// CancelInFlight ends the requests in flight now, as cancelled (ErrCanceled: neither a
// failure nor a result), and leaves the load as it is: a restart the user asked for cuts
// them, and they say nothing of the server.
func (r *Runner) CancelInFlight() {
	r.mu.Lock()
	stop := r.cutStop
	r.cut, r.cutStop = context.WithCancel(context.Background())
	r.mu.Unlock()
	stop()
}

// Resume starts requests again: it ends a pause of any kind (Pause, PauseFor, the back-off's)
// and forgets the failures the back-off counted.
func (r *Runner) Resume() {
	r.mu.Lock()
	r.paused, r.hold = false, ""
	r.breaker.reset()
	r.mu.Unlock()
	r.poke()
}

// PauseFor stops starting requests for a reason outside the load (the server exited, say),
// which Stats reports as PausedBy, until Resume, or ResumeAfter's ready returns.
func (r *Runner) PauseFor(reason string) {
	if reason == "" {
		reason = "paused"
	}
	r.mu.Lock()
	r.hold = reason
	r.holdGen++
	r.mu.Unlock()
	r.poke()
}

// ResumeAfter waits in the background until ready returns nil (the server is up again) and
// then lifts PauseFor's pause and the back-off's, unless PauseFor was called again in the
// meantime or the user paused (Pause); it returns at once. ready gets ctx, and nothing is
// lifted when it fails.
func (r *Runner) ResumeAfter(ctx context.Context, ready func(context.Context) error) {
	r.mu.Lock()
	gen := r.holdGen
	r.mu.Unlock()
	go func() {
		if ready(ctx) != nil {
			return
		}
		r.mu.Lock()
		if r.holdGen != gen || r.paused {
			r.mu.Unlock()
			return
		}
		r.hold = ""
		r.breaker.reset()
		r.mu.Unlock()
		r.poke()
	}()
}

// Watch attaches a new Watched to the next request that starts and returns it.
func (r *Runner) Watch() *Watched {
	w := &Watched{}
	r.mu.Lock()
	r.watch = w
	r.mu.Unlock()
	return w
}

// LoaderStats is the runner's own state and health.
type LoaderStats struct {
	Concurrency int
	Rate        float64 // 0 in the closed loop
	Paused      bool
	Epoch       int
	InFlight    int
	Started     int64
	Finished    int64
	// Lag is how late the open-loop dispatcher last sent behind its schedule.
	Lag     time.Duration
	Elapsed time.Duration
	// TokensReceived counts output chunks as they arrive (for a live token rate).
	TokensReceived int64
	// PausedBy says why the load is paused when the user did not pause it: the back-off's
	// streak ("50 requests in a row failed with HTTP 401 Unauthorized") or PauseFor's reason;
	// "" otherwise. ProbeEvery is, while the back-off holds the load, how often one request
	// goes out to see whether the server has recovered (0: none).
	PausedBy   string
	ProbeEvery time.Duration
	// FailStreak counts the requests in a row that failed before any output, and Failing
	// words them while there are any; Backoff is how long the next request waits for them.
	FailStreak int
	Failing    string
	Backoff    time.Duration
	// Replay is ReplayTrace or ReplayConversations when the load replays one ("" for a
	// workload): a trace's requests come at its times, whatever the concurrency.
	Replay string
}

// LoaderStats.Replay's values.
const (
	ReplayTrace         = "trace"
	ReplayConversations = "conversations"
)

// Status is a line for a status bar when the load is held back ("load paused: 50 requests in
// a row failed with HTTP 401 Unauthorized; one request every 10s to see if it recovers", or
// "backing off: ..."), "" when it runs freely or the user paused it.
func (s LoaderStats) Status() string {
	switch {
	case s.PausedBy != "" && s.ProbeEvery > 0:
		return "load paused: " + s.PausedBy + "; one request every " + s.ProbeEvery.String() + " to see if it recovers"
	case s.PausedBy != "":
		return "load paused: " + s.PausedBy
	case s.Backoff > 0:
		return "backing off: " + s.Failing + "; next request in " + s.Backoff.Round(time.Millisecond).String()
	}
	return ""
}

// Settings names the load: "C=4" in the closed loop, "rate 2.5/s" in the open one.
func (s LoaderStats) Settings() string {
	switch s.Replay {
	case ReplayTrace:
		return "trace replay"
	case ReplayConversations:
		return "C=" + strconv.Itoa(s.Concurrency) + " conv"
	}
	if math.IsInf(s.Rate, 1) {
		return "rate inf/s" // as --request-rate spells it
	}
	if s.Rate > 0 {
		return "rate " + strconv.FormatFloat(s.Rate, 'f', -1, 64) + "/s"
	}
	return "C=" + strconv.Itoa(s.Concurrency)
}

// Stats returns the runner's state now.
func (r *Runner) Stats() LoaderStats {
	r.mu.Lock()
	s := LoaderStats{Concurrency: r.concurrency, Rate: r.rate, Paused: r.paused, Epoch: r.epoch, Replay: r.replay}
	b := r.breaker
	if s.FailStreak = b.streak.N; s.FailStreak > 0 {
		s.Failing = b.streak.String()
	}
	switch {
	case r.hold != "":
		s.PausedBy = r.hold
	case b.open:
		s.PausedBy = s.Failing
		if b.probes() {
			s.ProbeEvery = b.cfg.ProbeEvery
		}
	default:
		s.Backoff = max(b.until.Sub(r.clock.Now()), 0)
	}
	r.mu.Unlock()
	s.InFlight = int(r.inFlight.Load())
	s.Started = r.started.Load()
	s.Finished = r.finished.Load()
	s.Lag = time.Duration(r.lagNanos.Load())
	s.TokensReceived = r.transport.TokensReceived()
	if t := r.runStart.Load(); t != 0 {
		s.Elapsed = r.clock.Now().Sub(time.Unix(0, t))
	}
	return s
}

type settings struct {
	workload             Workload
	concurrency, maxConc int
	rate, burstiness     float64
	paused               bool
	epoch                int
	watch                *Watched
	// cut is CancelInFlight's context for the request launched under these settings: the
	// gate's, when the dispatcher decided on it (see gate).
	cut context.Context
}

func (r *Runner) settings(takeWatch bool) settings {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := settings{workload: r.workload, concurrency: r.concurrency, maxConc: r.maxConc, rate: r.rate, burstiness: r.burstiness, paused: r.paused, epoch: r.epoch, cut: r.cut}
	if takeWatch {
		s.watch, r.watch = r.watch, nil
	}
	return s
}

// gate is what the back-off and PauseFor allow the dispatcher now.
type gate struct {
	held  bool          // nothing starts until something changes (PauseFor, no probes)
	wait  time.Duration // nothing starts for this long
	probe bool          // the load is paused but one request may go out
	stop  error         // Run ends (BackoffConfig.Stop)
	// cut is CancelInFlight's context when the gate was read, before the dispatcher decided
	// to start a request: one decided before a cut starts cancelled, not against the server
	// a restart is stopping.
	cut context.Context
}

func (r *Runner) gate(now time.Time) gate {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.gateLocked(now)
	g.cut = r.cut
	return g
}

func (r *Runner) gateLocked(now time.Time) gate {
	b := r.breaker
	switch {
	case b.open && b.cfg.Stop:
		return gate{stop: &FailingError{Streak: b.streak.snapshot()}}
	case r.hold != "":
		return gate{held: true}
	case now.Before(b.until):
		return gate{wait: b.until.Sub(now)}
	case b.open && b.probes():
		return gate{probe: true}
	case b.open:
		return gate{held: true}
	}
	return gate{}
}

// starting notes a request that starts at now under g: a probe sets the next probe's time,
// and while failures last each start waits the back-off's delay after the one before, so a
// streak slows the closed loop to one request per delay rather than a burst per slot.
func (r *Runner) starting(g gate, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.breaker
	switch {
	case g.probe:
		b.probed(now)
	case b.streak.N > 0 && !b.open:
		b.until = now.Add(b.delay)
	}
}

// Run drives the load until the request count or duration is reached, or ctx ends; it then
// waits for the requests in flight (cancelled with ctx) and returns ctx's error, if any, or a
// *FailingError when the back-off stopped it (BackoffConfig.Stop).
func (r *Runner) Run(ctx context.Context) error {
	r.runStart.Store(r.clock.Now().UnixNano())
	switch {
	case r.cfg.Arrivals != nil:
		return r.runArrivals(ctx)
	case r.cfg.Conversations != nil:
		return r.runConversations(ctx)
	}
	err := r.runLoad(ctx)
	r.drain()
	return err
}

// drain waits until every request started has ended and its result reached the sinks; on a
// VirtualClock the waits are what moves the requests on.
func (r *Runner) drain() {
	for r.open.Load() > 0 {
		_ = r.clock.Wait(context.Background(), time.Time{}, r.kick)
	}
}

// loadLoop is the closed and the open loop's schedule, kept by Run's goroutine.
type loadLoop struct {
	r        *Runner
	index    int
	next     time.Time // open loop: when the next request is due
	rng      *rand.Rand
	lastRate float64
	end      time.Time // when the Duration runs out (zero: never)
	began    time.Time // when the loop started
}

// rateFor is the open loop's rate for the i-th request.
func (l *loadLoop) rateFor(i int, rate float64) float64 {
	if l.r.cfg.RampRate != nil {
		return l.r.cfg.RampRate(i)
	}
	return rate
}

// gap is the open loop's wait before the i-th request.
func (l *loadLoop) gap(i int, s settings) time.Duration {
	if g := l.r.cfg.Gaps; i < len(g) {
		return g[i]
	}
	return interArrival(l.rng, l.rateFor(i, s.rate), s.burstiness)
}

func (r *Runner) runLoad(ctx context.Context) error {
	l := &loadLoop{r: r, began: r.clock.Now()}
	if r.cfg.Duration > 0 {
		l.end = r.clock.Now().Add(r.cfg.Duration)
	}
	total := r.cfg.NumRequests
	for {
		if total > 0 && l.index >= total+r.cfg.Warmup {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		now := r.clock.Now()
		if !l.end.IsZero() && !now.Before(l.end) {
			return nil
		}
		g := r.gate(now)
		if g.stop != nil {
			return g.stop
		}
		start, intended, until := l.decide(g, r.settings(false), now)
		if start {
			l.send(ctx, g, intended)
			continue
		}
		if err := r.clock.Wait(ctx, earliest(until, l.end), r.kick); err != nil {
			return err
		}
	}
}

// earliest is the earlier of two times, zero standing for never.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// decide says whether a request starts now, and when it was due (zero in the closed loop),
// or else until when nothing starts unless something changes.
func (l *loadLoop) decide(g gate, s settings, now time.Time) (start bool, intended, until time.Time) {
	inFlight := int(l.r.inFlight.Load())
	switch {
	case s.paused || g.held:
		l.next = time.Time{}
	case g.wait > 0:
		// The open loop's schedule restarts after the back-off, as after a pause: no
		// burst of the arrivals it held back.
		l.next = time.Time{}
		until = now.Add(g.wait)
	case g.probe:
		l.next = time.Time{}
		start = inFlight == 0
	case s.rate > 0:
		return l.arrival(s, now, inFlight)
	default:
		l.lastRate, l.next = 0, time.Time{}
		start = inFlight < s.concurrency
	}
	return start, time.Time{}, until
}

// arrival is decide for the open loop: the next arrival starts when due, unless the cap is
// full; then it waits for a slot and keeps its intended time, so the wait is measured.
func (l *loadLoop) arrival(s settings, now time.Time, inFlight int) (bool, time.Time, time.Time) {
	if l.rng == nil {
		l.rng = newRNG(l.r.cfg.Seed)
	}
	if l.next.IsZero() || s.rate != l.lastRate {
		// The schedule restarts from now at a new rate (or after a pause).
		l.next = now.Add(l.gap(l.index, s))
		l.lastRate = s.rate
	}
	switch {
	case now.Before(l.next):
		return false, time.Time{}, l.next
	case s.maxConc > 0 && inFlight >= s.maxConc:
		return false, time.Time{}, time.Time{}
	}
	l.r.lagNanos.Store(int64(now.Sub(l.next)))
	return true, l.next, time.Time{}
}

// send starts the loop's next request, due at intended (zero: now).
func (l *loadLoop) send(ctx context.Context, g gate, intended time.Time) {
	r := l.r
	r.starting(g, r.clock.Now())
	s := r.settings(true)
	if g.cut != nil {
		s.cut = g.cut
	}
	index, warm := l.index, l.index < r.cfg.Warmup
	l.index++
	if !intended.IsZero() {
		l.next = l.next.Add(l.gap(l.index, s))
	} else if r.cfg.ArriveAtStart {
		intended = l.began
	}
	var itl func(time.Duration)
	if r.cfg.ITL != nil {
		itl = func(time.Duration) {} // a warm-up's are dropped
		if !warm {
			itl = func(d time.Duration) { r.cfg.ITL(s.epoch, d) }
		}
	}
	r.launch(ctx, s.workload.Prompt(index), s, nil, itl, func(res *Result) {
		res.Index, res.Warmup, res.Intended = index, warm, intended
		if intended.IsZero() {
			res.Intended = res.Start
		}
	})
}

// launch starts p under settings s, following it when s holds a watch; sink, when set, also
// receives its text. fill completes the Result (from the transport's goroutine) before the
// back-off and the sinks take it.
func (r *Runner) launch(ctx context.Context, p Prompt, s settings, sink TokenSink, itl func(time.Duration), fill func(*Result)) {
	watch := sink
	if s.watch != nil {
		s.watch.begin(p, r.clock.Now())
		watch = teeSink{s.watch, sink}
	}
	r.inFlight.Add(1)
	r.started.Add(1)
	r.open.Add(1)
	cut := s.cut
	if cut == nil { // settings made without the runner's snapshot
		r.mu.Lock()
		cut = r.cut
		r.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(ctx)
	if cut.Err() != nil {
		cancel() // now: AfterFunc would run it in a goroutine of its own, after the send began
	}
	uncut := context.AfterFunc(cut, cancel)
	r.transport.Start(ctx, p, watch, itl, func(res Result) {
		uncut()
		cancel()
		res.Epoch = s.epoch
		fill(&res)
		if s.watch != nil {
			s.watch.end(res)
		}
		r.finish(res)
		r.open.Add(-1)
		r.poke()
	})
}

// interArrival draws the gap to the next request: gamma(shape=b, scale=1/(rate b)), as vLLM's
// benchmark does; b=+Inf gives a constant 1/rate.
func interArrival(rng *rand.Rand, rate, b float64) time.Duration {
	mean := 1 / rate
	if math.IsInf(b, 1) || b <= 0 {
		return time.Duration(mean * float64(time.Second))
	}
	return time.Duration(gamma(rng, b) * mean / b * float64(time.Second))
}

// MaxScaledArrivals is the most requests whose gaps ArrivalGaps draws ahead. Past it the
// runner draws each gap as it goes: the scaling would need them all in memory (16 bytes a
// request), and over a million draws the total's standard deviation is 0.1% of n/rate (0.3% at
// burstiness 0.1), a drift the scaling would not be missed for.
const MaxScaledArrivals = 1 << 20

// ArrivalGaps draws the gaps before each of n requests at rate (shape b) and scales them so
// that the last request is due at exactly n/rate, as vllm bench serve does for a fixed rate,
// so that a run's length, and its throughputs, do not ride on the draw. It returns nil for
// more than MaxScaledArrivals requests.
func ArrivalGaps(n int, rate, b float64, seed int64) []time.Duration {
	if n <= 0 || n > MaxScaledArrivals || !(rate > 0) || math.IsInf(rate, 1) {
		return nil
	}
	rng := newRNG(seed)
	raw := make([]float64, n)
	var sum float64
	for i := range raw {
		raw[i] = float64(interArrival(rng, rate, b))
		sum += raw[i]
	}
	if sum == 0 {
		return nil
	}
	// Scale the cumulative times and take their differences, so the rounding does not add up.
	scale, total := float64(n)/rate*float64(time.Second)/sum, 0.0
	gaps := make([]time.Duration, n)
	var prev time.Duration
	for i, g := range raw {
		total += g
		at := time.Duration(math.Round(total * scale))
		gaps[i], prev = at-prev, at
	}
	return gaps
}

// gamma samples Gamma(shape k, scale 1) (Marsaglia and Tsang).
func gamma(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		return gamma(rng, k+1) * math.Pow(rng.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Watched is one request followed token by token, for a streaming view. Safe for concurrent use.
type Watched struct {
	mu      sync.Mutex
	prompt  Prompt
	started time.Time
	tokens  []WatchedToken
	result  *Result
}

// WatchedToken is a piece of text and when it arrived.
type WatchedToken struct {
	Text string
	At   time.Time
}

func (w *Watched) begin(p Prompt, at time.Time) {
	w.mu.Lock()
	w.prompt, w.started = p, at
	w.mu.Unlock()
}

// Token records one piece of output.
func (w *Watched) Token(text string, at time.Time) {
	w.mu.Lock()
	w.tokens = append(w.tokens, WatchedToken{text, at})
	w.mu.Unlock()
}

func (w *Watched) end(r Result) {
	w.mu.Lock()
	w.result = &r
	w.mu.Unlock()
}

// WatchedView is a copy of a watched request's state.
type WatchedView struct {
	Prompt  Prompt
	Started time.Time // zero until a request picks the watch up
	Tokens  []WatchedToken
	Result  *Result // nil while it runs
}

// View copies the state; tokens from index from on (pass the previous len to get only new ones).
func (w *Watched) View(from int) WatchedView {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := WatchedView{Prompt: w.prompt, Started: w.started, Result: w.result}
	if from < len(w.tokens) {
		v.Tokens = append([]WatchedToken(nil), w.tokens[from:]...)
	}
	return v
}

func newRNG(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0xa771)) }
