package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBreakerDoublesWithJitterAndPausesAtTheThreshold(t *testing.T) {
	b := newBreaker(BackoffConfig{Base: 10 * time.Millisecond, Max: 160 * time.Millisecond, PauseAfter: 8, PauseAfterTime: time.Hour}, 1)
	t0 := time.Unix(1000, 0)
	fail := &Result{Error: ErrHTTP401, Status: 401, ErrorMessage: "HTTP 401: Invalid API key"}
	want := []time.Duration{10, 20, 40, 80, 160, 160, 160} // ms, before jitter
	now := t0
	for i, d := range want {
		if !b.until.IsZero() {
			now = b.until // the next request starts when the gate opens, and fails at once
		}
		b.note(fail, now)
		require.False(t, b.open, "failure %d", i+1)
		full := d * time.Millisecond
		assert.GreaterOrEqual(t, b.delay, full/2, "failure %d", i+1)
		assert.LessOrEqual(t, b.delay, full, "failure %d", i+1)
		assert.Equal(t, now.Add(b.delay), b.until)
	}
	b.note(fail, t0.Add(time.Second))
	require.True(t, b.open, "the 8th failure in a row pauses")
	assert.Equal(t, t0.Add(time.Second+DefaultProbeEvery), b.until, "the first probe waits ProbeEvery")
	assert.Equal(t, "8 requests in a row failed with HTTP 401 Unauthorized: Invalid API key", b.streak.String())
	assert.Equal(t, "http_401 8", b.streak.Classes())

	// A success ends the streak and the pause.
	b.note(&Result{}, t0.Add(2*time.Second))
	assert.False(t, b.open)
	assert.Zero(t, b.streak.N)
	assert.True(t, b.until.IsZero())
}

func TestBreakerCountsOnlyInstantFailures(t *testing.T) {
	b := newBreaker(BackoffConfig{PauseAfter: 2}, 1)
	now := time.Unix(1000, 0)
	for _, r := range []Result{
		{Error: ErrCanceled},                // the caller's doing
		{Error: ErrTimeout},                 // waited its deadline out
		{Error: ErrReset, Chunks: 3},        // broke after output came
		{Error: ErrStreamError, Chunks: 10}, // an error event mid-stream
	} {
		b.note(&r, now)
	}
	assert.Zero(t, b.streak.N)
	b.note(&Result{Error: ErrConnect, ErrorMessage: "dial tcp 127.0.0.1:9: connect: connection refused"}, now)
	b.note(&Result{Error: ErrProtocol, ErrorMessage: "the server sent one JSON body, not an event stream"}, now)
	assert.True(t, b.open)
	assert.Equal(t, "connect 1, protocol 1", b.streak.Classes())

	off := newBreaker(BackoffConfig{Off: true, PauseAfter: 1}, 1)
	off.note(&Result{Error: ErrHTTP5xx, Status: 503}, now)
	assert.False(t, off.open)
	assert.True(t, off.until.IsZero())
}

func TestBreakerPausesALongStreakByTime(t *testing.T) {
	b := newBreaker(BackoffConfig{PauseAfter: 1000, PauseAfterTime: 10 * time.Second}, 1)
	t0 := time.Unix(1000, 0)
	fail := &Result{Error: ErrHTTP5xx, Status: 503}
	b.note(fail, t0)
	b.note(fail, t0.Add(20*time.Second))
	assert.False(t, b.open, "two failures are not a dead server, however far apart")
	b.note(fail, t0.Add(21*time.Second))
	assert.True(t, b.open, "three failures over 10s are")
	assert.Equal(t, "3 requests in a row failed with HTTP 503 Service Unavailable", b.streak.String())
}

// stepClock is a clock the test moves: After registers a wake-up that Advance fires.
type stepClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []stepWaiter
}

type stepWaiter struct {
	at time.Time
	ch chan time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, stepWaiter{c.now.Add(d), ch})
	return ch
}

// AdvanceTo moves the clock to t and fires the wake-ups due by then.
func (c *stepClock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(t) {
			kept = append(kept, w)
			continue
		}
		w.ch <- t
	}
	c.waiters = kept
}

// runInBackground runs r until the test ends, and returns the context it runs under.
func runInBackground(t *testing.T, r *Runner) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-runDone
	})
	return ctx
}

// storm answers every request with 401 until ok is set, then streams one token.
type storm struct {
	*httptest.Server
	seen atomic.Int64
	ok   atomic.Bool
}

func newStorm(t *testing.T) *storm {
	s := &storm{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r) // a benchmark reads it for speculative decoding; not a request
			return
		}
		s.seen.Add(1)
		if !s.ok.Load() {
			http.Error(w, `{"error":{"message":"Invalid API key"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" hi\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

// TestRunnerBacksOffA401StormAndPauses drives a closed loop of 8 slots against a server that
// answers 401 to everything, on a clock the test moves: the gaps between request starts grow
// by doubling, the load pauses at the threshold with a status line that says why, a paused
// load sends nothing until the next probe, and a probe that succeeds resumes it.
func TestRunnerBacksOffA401StormAndPauses(t *testing.T) {
	srv := newStorm(t)
	c := newTestClient(t, srv.URL, EndpointCompletions)
	clk := &stepClock{now: time.Unix(1000, 0)}
	const pauseAfter = 20
	r := NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Concurrency: 8,
		Backoff: BackoffConfig{Base: time.Millisecond, Max: time.Hour, PauseAfter: pauseAfter, PauseAfterTime: 100 * time.Hour, ProbeEvery: time.Minute}})
	r.clock = wallClock{now: clk.Now, after: clk.After}
	runInBackground(t, r)

	// settled waits until nothing is in flight and the dispatcher waits for the gate (or is
	// held), and returns when the gate opens.
	settled := func() time.Time {
		var until time.Time
		require.Eventually(t, func() bool {
			if r.inFlight.Load() != 0 {
				return false
			}
			r.mu.Lock()
			until = r.breaker.until
			r.mu.Unlock()
			clk.mu.Lock()
			defer clk.mu.Unlock()
			// A gate at the clock's own time is the one just opened, before its request went:
			// the dispatcher has not settled on the next yet.
			if !until.After(clk.now) {
				return false
			}
			for _, w := range clk.waiters {
				if w.at.Equal(until) {
					return true
				}
			}
			return false
		}, 5*time.Second, time.Millisecond)
		return until
	}

	var gaps []time.Duration
	for i := 0; i < 100; i++ {
		until := settled()
		if r.Stats().PausedBy != "" {
			break
		}
		gaps = append(gaps, until.Sub(clk.Now()))
		clk.AdvanceTo(until)
	}
	st := r.Stats()
	require.NotEmpty(t, st.PausedBy, "the storm pauses the load")
	seen := srv.seen.Load()
	// Up to 8 slots go at once (until the first failure comes back); after that one request
	// per gap.
	assert.LessOrEqual(t, seen, int64(pauseAfter+8), "requests the server saw before the pause")
	assert.GreaterOrEqual(t, seen, int64(pauseAfter))
	// Each gap is drawn in [d/2, d] of a d that doubles, so none is shorter than the one before.
	require.GreaterOrEqual(t, len(gaps), pauseAfter-8)
	for i := 1; i < len(gaps); i++ {
		assert.GreaterOrEqual(t, gaps[i], gaps[i-1], "gap %d: %v after %v", i, gaps[i], gaps[i-1])
	}
	assert.Greater(t, gaps[len(gaps)-1], 500*gaps[0], "the gaps grow: %v", gaps)
	assert.Contains(t, st.Status(), "load paused: ")
	assert.Contains(t, st.Status(), "requests in a row failed with HTTP 401 Unauthorized: Invalid API key")
	assert.Contains(t, st.Status(), "one request every 1m0s")

	// Paused: the dispatcher waits for the probe's time and sends nothing before it.
	probeAt := settled()
	assert.GreaterOrEqual(t, probeAt.Sub(clk.Now()), time.Minute)
	assert.Equal(t, seen, srv.seen.Load())

	// A failed probe is one request; the next one waits a minute again.
	clk.AdvanceTo(probeAt)
	probeAt = settled()
	assert.Equal(t, seen+1, srv.seen.Load())
	assert.Equal(t, time.Minute, probeAt.Sub(clk.Now()))

	// The server recovers: the next probe succeeds and the load runs at full speed.
	srv.ok.Store(true)
	clk.AdvanceTo(probeAt)
	require.Eventually(t, func() bool { return srv.seen.Load() > seen+100 }, 5*time.Second, time.Millisecond)
	st = r.Stats()
	assert.Empty(t, st.PausedBy)
	assert.Empty(t, st.Status())
}

func TestPauseForHoldsUntilResumeAfter(t *testing.T) {
	g := newGateServer(t)
	c := newTestClient(t, g.URL, EndpointCompletions)
	r := NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Concurrency: 1})
	ctx := runInBackground(t, r)
	g.waitArrivals(t, 1)
	r.PauseFor("the server exited: exit status 1")
	assert.Equal(t, "load paused: the server exited: exit status 1", r.Stats().Status())
	g.release <- struct{}{}
	require.Eventually(t, func() bool { return r.Stats().InFlight == 0 }, 5*time.Second, time.Millisecond)
	g.noMoreArrivals(t)

	// A stale ResumeAfter (PauseFor came after it) lifts nothing; a current one does.
	ready := make(chan struct{})
	r.ResumeAfter(ctx, func(context.Context) error { <-ready; return nil })
	r.PauseFor("restarting")
	close(ready)
	resumed := make(chan struct{})
	r.ResumeAfter(ctx, func(context.Context) error { close(resumed); return nil })
	<-resumed
	g.waitArrivals(t, 1)
	assert.Empty(t, r.Stats().PausedBy)
	g.release <- struct{}{}
}

func TestFailureStreakWordsItsCause(t *testing.T) {
	for _, tc := range []struct {
		s    FailureStreak
		want string
	}{
		{FailureStreak{N: 50, Last: ErrHTTP401, LastStatus: 401, LastMsg: "HTTP 401: "}, "50 requests in a row failed with HTTP 401 Unauthorized"},
		{FailureStreak{N: 3, Last: ErrConnect, LastMsg: "dial tcp 127.0.0.1:1: connect: connection refused"}, "3 requests in a row failed with connect: dial tcp 127.0.0.1:1: connect: connection refused"},
		{FailureStreak{N: 4, Last: ErrHTTP4xx, LastStatus: 499, LastMsg: "HTTP 499: gone"}, "4 requests in a row failed with HTTP 499: gone"},
		{FailureStreak{N: 5, Last: ErrNoTokens}, "5 requests in a row failed with no_tokens"},
	} {
		assert.Equal(t, tc.want, tc.s.String())
	}
	classes := FailureStreak{ByClass: map[ErrorClass]int{ErrConnect: 2, ErrHTTP5xx: 7, ErrHTTP401: 2}}.Classes()
	assert.Equal(t, "http_5xx 7, connect 2, http_401 2", classes)
}
