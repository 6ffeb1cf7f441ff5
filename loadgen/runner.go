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
	NumRequests    int           // stop after this many measured requests (0 = no limit)
	Duration       time.Duration // stop starting requests after this long (0 = no limit)
	Warmup         int           // requests sent first and marked Warmup (not counted)
	Seed           int64
	// Sinks receive every result, from the request goroutines.
	Sinks []func(Result)
}

// Runner drives a workload against a Client. Its setters are safe from any goroutine and take
// effect within one request slot; Run blocks until the load stops.
type Runner struct {
	client *Client
	cfg    RunnerConfig

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

	inFlight atomic.Int64
	started  atomic.Int64
	finished atomic.Int64
	lagNanos atomic.Int64 // the dispatcher's last lateness behind the schedule
	runStart atomic.Int64 // unix nanos
}

// NewRunner builds a runner; nothing is sent until Run.
func NewRunner(c *Client, cfg RunnerConfig) *Runner {
	if cfg.Burstiness == 0 {
		cfg.Burstiness = 1
	}
	return &Runner{client: c, cfg: cfg, workload: cfg.Workload, concurrency: cfg.Concurrency, rate: cfg.Rate, burstiness: cfg.Burstiness,
		maxConc: cfg.MaxConcurrency, kick: make(chan struct{}, 1)}
}

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
func (r *Runner) Pause() { r.setPaused(true) }

// Resume starts requests again.
func (r *Runner) Resume() { r.setPaused(false) }

func (r *Runner) setPaused(p bool) {
	r.mu.Lock()
	r.paused = p
	r.mu.Unlock()
	r.poke()
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
}

// Settings names the load: "C=4" in the closed loop, "rate 2.5/s" in the open one.
func (s LoaderStats) Settings() string {
	if s.Rate > 0 {
		return "rate " + strconv.FormatFloat(s.Rate, 'f', -1, 64) + "/s"
	}
	return "C=" + strconv.Itoa(s.Concurrency)
}

// Stats returns the runner's state now.
func (r *Runner) Stats() LoaderStats {
	r.mu.Lock()
	s := LoaderStats{Concurrency: r.concurrency, Rate: r.rate, Paused: r.paused, Epoch: r.epoch}
	r.mu.Unlock()
	s.InFlight = int(r.inFlight.Load())
	s.Started = r.started.Load()
	s.Finished = r.finished.Load()
	s.Lag = time.Duration(r.lagNanos.Load())
	s.TokensReceived = r.client.TokensReceived()
	if t := r.runStart.Load(); t != 0 {
		s.Elapsed = time.Since(time.Unix(0, t))
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
}

func (r *Runner) settings(takeWatch bool) settings {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := settings{workload: r.workload, concurrency: r.concurrency, maxConc: r.maxConc, rate: r.rate, burstiness: r.burstiness, paused: r.paused, epoch: r.epoch}
	if takeWatch {
		s.watch, r.watch = r.watch, nil
	}
	return s
}

// Run drives the load until the request count or duration is reached, or ctx ends; it then
// waits for the requests in flight (cancelled with ctx) and returns ctx's error, if any.
func (r *Runner) Run(ctx context.Context) error {
	start := time.Now()
	r.runStart.Store(start.UnixNano())
	var deadline <-chan time.Time
	if r.cfg.Duration > 0 {
		t := time.NewTimer(r.cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	done := make(chan struct{}, 1)
	total := r.cfg.NumRequests
	index := 0
	var nextArrival time.Time // open loop: when the next request is due
	var rng *rand.Rand
	var lastRate float64

	for {
		if total > 0 && index >= total+r.cfg.Warmup {
			return nil
		}
		s := r.settings(false)
		inFlight := int(r.inFlight.Load())
		var wait <-chan time.Time
		canStart := false
		intended := time.Time{}
		switch {
		case s.paused:
			nextArrival = time.Time{}
		case s.rate > 0:
			if rng == nil {
				rng = newRNG(r.cfg.Seed)
			}
			now := time.Now()
			if nextArrival.IsZero() || s.rate != lastRate {
				// The schedule restarts from now at a new rate (or after a pause).
				nextArrival = now.Add(interArrival(rng, s.rate, s.burstiness))
				lastRate = s.rate
			}
			if !now.Before(nextArrival) {
				if s.maxConc == 0 || inFlight < s.maxConc {
					canStart = true
					intended = nextArrival
					r.lagNanos.Store(int64(now.Sub(nextArrival)))
				}
				// Else the due request waits for a slot; it keeps its intended time.
			} else {
				wait = time.After(nextArrival.Sub(now))
			}
		default:
			lastRate = 0
			nextArrival = time.Time{}
			canStart = inFlight < s.concurrency
		}
		if canStart {
			s = r.settings(true)
			warm := index < r.cfg.Warmup
			r.inFlight.Add(1)
			r.started.Add(1)
			wg.Add(1)
			go r.send(ctx, index, warm, intended, s, &wg, done)
			index++
			if s.rate > 0 {
				nextArrival = nextArrival.Add(interArrival(rng, s.rate, s.burstiness))
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return nil
		case <-r.kick:
		case <-done:
		case <-wait:
		}
	}
}

func (r *Runner) send(ctx context.Context, index int, warm bool, intended time.Time, s settings, wg *sync.WaitGroup, done chan<- struct{}) {
	defer wg.Done()
	p := s.workload.Prompt(index)
	var sink TokenSink
	if s.watch != nil {
		s.watch.begin(p)
		sink = s.watch
	}
	res := r.client.Do(ctx, p, sink)
	res.Index, res.Warmup, res.Epoch = index, warm, s.epoch
	res.Intended = intended
	if intended.IsZero() {
		res.Intended = res.Start
	}
	if s.watch != nil {
		s.watch.end(res)
	}
	if res.Error == ErrConnect {
		// Nothing is listening: hold the slot a moment rather than spin on refused connections.
		select {
		case <-time.After(connectBackoff):
		case <-ctx.Done():
		}
	}
	r.inFlight.Add(-1)
	r.finished.Add(1)
	for _, sink := range r.cfg.Sinks {
		sink(res)
	}
	select {
	case done <- struct{}{}:
	default:
	}
}

// connectBackoff is how long a slot waits after a request could not connect at all.
const connectBackoff = 250 * time.Millisecond

// interArrival draws the gap to the next request: gamma(shape=b, scale=1/(rate b)), as vLLM's
// benchmark does; b=+Inf gives a constant 1/rate.
func interArrival(rng *rand.Rand, rate, b float64) time.Duration {
	mean := 1 / rate
	if math.IsInf(b, 1) || b <= 0 {
		return time.Duration(mean * float64(time.Second))
	}
	return time.Duration(gamma(rng, b) * mean / b * float64(time.Second))
}

// Arrivals draws an open loop's inter-arrival gaps as Runner draws them, from the same seeded
// stream, so a run on simulated time sends on the schedule a real run would. It is not safe
// for concurrent use.
type Arrivals struct {
	rng              *rand.Rand
	rate, burstiness float64
}

// NewArrivals starts the gaps of rate requests per second with gamma shape burstiness (0: 1).
func NewArrivals(seed int64, rate, burstiness float64) *Arrivals {
	if burstiness == 0 {
		burstiness = 1
	}
	return &Arrivals{rng: newRNG(seed), rate: rate, burstiness: burstiness}
}

// Next is the gap to the next request.
func (a *Arrivals) Next() time.Duration { return interArrival(a.rng, a.rate, a.burstiness) }

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

func (w *Watched) begin(p Prompt) {
	w.mu.Lock()
	w.prompt, w.started = p, time.Now()
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
