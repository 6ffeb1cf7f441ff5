package loadgen

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// Defaults of a BackoffConfig.
const (
	DefaultBackoffBase    = 10 * time.Millisecond
	DefaultBackoffMax     = 2 * time.Second
	DefaultPauseAfter     = 50
	DefaultPauseAfterTime = 10 * time.Second
	DefaultProbeEvery     = 10 * time.Second
)

// minTimedStreak is the shortest run of failures that PauseAfterTime may end: one or two
// failures, however far apart, are not a dead server.
const minTimedStreak = 3

// BackoffConfig says how a Runner answers requests that fail before any output (refused
// connections, 401/403/404, 5xx, a protocol error at once): a run of them in a row, a streak,
// spaces the starts of new requests by an exponential delay with jitter, in the closed and
// the open loop alike, and past a threshold pauses the load; one success ends the streak.
// The zero value is the defaults.
type BackoffConfig struct {
	// Base is the delay after the first failure of a streak, doubled after each one up to Max
	// (each delay is drawn in [d/2, d]: jitter, so that many clients do not beat in step).
	Base, Max time.Duration
	// PauseAfter failures in a row pause the load, as does a streak of at least three that
	// has lasted PauseAfterTime.
	PauseAfter     int
	PauseAfterTime time.Duration
	// ProbeEvery is how often a paused load sends one request to see whether the server has
	// recovered (its success resumes the load); negative: never.
	ProbeEvery time.Duration
	// Stop ends Run with a *FailingError at the threshold, in place of a pause (a headless
	// benchmark has nobody to resume it).
	Stop bool
	// Off turns the back-off off: every failure is followed by the next request at once.
	Off bool
}

func (c BackoffConfig) withDefaults() BackoffConfig {
	if c.Base <= 0 {
		c.Base = DefaultBackoffBase
	}
	if c.Max <= 0 {
		c.Max = DefaultBackoffMax
	}
	c.Max = max(c.Max, c.Base)
	if c.PauseAfter <= 0 {
		c.PauseAfter = DefaultPauseAfter
	}
	if c.PauseAfterTime <= 0 {
		c.PauseAfterTime = DefaultPauseAfterTime
	}
	if c.ProbeEvery == 0 {
		c.ProbeEvery = DefaultProbeEvery
	}
	return c
}

// instantFailure reports whether r failed before any output for a reason a next request
// would meet again at once: not a caller's cancel, not a timeout (a request that waited its
// deadline out is not a storm), not a stream that broke after tokens came.
func instantFailure(r *Result) bool {
	return !r.OK() && r.Error != ErrCanceled && r.Error != ErrTimeout && r.Chunks == 0
}

// FailureStreak is a run of requests in a row that failed before any output.
type FailureStreak struct {
	N       int
	Since   time.Time // the first failure of the streak
	ByClass map[ErrorClass]int
	// Last is the latest failure's class, HTTP status (0 without one) and message
	// (sanitised: it came from the server).
	Last       ErrorClass
	LastStatus int
	LastMsg    string
}

// Cause words the latest failure: "HTTP 401 Unauthorized: Invalid API key", or
// "connect: dial tcp 127.0.0.1:8000: connection refused".
func (f FailureStreak) Cause() string {
	msg := f.LastMsg
	if f.LastStatus >= 300 { // an answer of 200 whose stream then failed is worded by its class
		// The message starts "HTTP 401: ..." (see Client.Do); say the status in words.
		head := fmt.Sprintf("HTTP %d", f.LastStatus)
		if text := http.StatusText(f.LastStatus); text != "" {
			head += " " + text
		}
		detail := strings.TrimPrefix(msg, fmt.Sprintf("HTTP %d", f.LastStatus))
		detail = strings.TrimSpace(strings.TrimPrefix(detail, ":"))
		if detail == "" {
			return head
		}
		return head + ": " + textfmt.OneLine(detail, 100)
	}
	if msg == "" {
		return string(f.Last)
	}
	return string(f.Last) + ": " + textfmt.OneLine(msg, 100)
}

// String is the streak in words: "50 requests in a row failed with HTTP 401 Unauthorized".
func (f FailureStreak) String() string {
	return fmt.Sprintf("%d requests in a row failed with %s", f.N, f.Cause())
}

// Classes counts the streak's failures by class, most frequent first: "http_401 50".
func (f FailureStreak) Classes() string {
	type cc struct {
		c ErrorClass
		n int
	}
	var out []cc
	for c, n := range f.ByClass {
		out = append(out, cc{c, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n || out[i].n == out[j].n && out[i].c < out[j].c })
	parts := make([]string, len(out))
	for i, x := range out {
		parts[i] = fmt.Sprintf("%s %d", x.c, x.n)
	}
	return strings.Join(parts, ", ")
}

// FailingError ends a Runner whose BackoffConfig says Stop: the streak that reached the
// threshold.
type FailingError struct{ Streak FailureStreak }

func (e *FailingError) Error() string {
	return fmt.Sprintf("stopped early: %d requests in a row failed before any output (%s; last: %s)",
		e.Streak.N, e.Streak.Classes(), e.Streak.Cause())
}

// snapshot is a copy of the streak that later failures do not change.
func (f FailureStreak) snapshot() FailureStreak {
	f.ByClass = maps.Clone(f.ByClass)
	return f
}

// breaker is a Runner's back-off state; the Runner's mutex guards it.
type breaker struct {
	cfg    BackoffConfig
	rng    *rand.Rand
	streak FailureStreak
	delay  time.Duration // the last back-off delay
	until  time.Time     // no request starts before this (a back-off, or the next probe)
	open   bool          // the threshold was reached: paused, or (Stop) stopping
}

func newBreaker(cfg BackoffConfig, seed int64) *breaker {
	return &breaker{cfg: cfg.withDefaults(), rng: rand.New(rand.NewPCG(uint64(seed), 0xb0ff))}
}

// note takes one finished request at now.
func (b *breaker) note(r *Result, now time.Time) {
	switch {
	case b.cfg.Off:
	case r.OK():
		b.reset()
	case instantFailure(r):
		b.fail(r, now)
	}
}

func (b *breaker) reset() { *b = breaker{cfg: b.cfg, rng: b.rng} }

func (b *breaker) fail(r *Result, now time.Time) {
	s := &b.streak
	if s.N == 0 {
		s.Since, s.ByClass = now, map[ErrorClass]int{}
	}
	s.N++
	s.ByClass[r.Error]++
	s.Last, s.LastStatus, s.LastMsg = r.Error, r.Status, r.ErrorMessage
	if b.open || s.N >= b.cfg.PauseAfter || s.N >= minTimedStreak && now.Sub(s.Since) >= b.cfg.PauseAfterTime {
		b.open = true
		if b.cfg.ProbeEvery > 0 {
			b.until = laterOf(b.until, now.Add(b.cfg.ProbeEvery))
		}
		return
	}
	d := b.cfg.Base << min(s.N-1, 30)
	if d <= 0 || d > b.cfg.Max {
		d = b.cfg.Max
	}
	d = d/2 + time.Duration(b.rng.Int64N(int64(d/2)+1))
	b.delay = d
	b.until = laterOf(b.until, now.Add(d))
}

// probed notes that a probe starts at now: the next one waits ProbeEvery.
func (b *breaker) probed(now time.Time) { b.until = now.Add(b.cfg.ProbeEvery) }

// probes reports whether an open breaker lets probes through.
func (b *breaker) probes() bool { return b.open && !b.cfg.Stop && b.cfg.ProbeEvery > 0 }

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
