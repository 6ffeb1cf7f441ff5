package server

import (
	"net/http"
	"syscall"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/defaults"
)

// Defaults of the Supervisor's options.
const (
	// DefaultGrace is how long Stop waits after SIGTERM before SIGKILL. vLLM needs several
	// seconds to shut its engine and workers down and release the GPU's memory.
	DefaultGrace = 10 * time.Second
	// DefaultWaitDelay bounds how long the supervisor waits for the output pipes to close
	// after the main process exited (processes it started may hold them) before it closes
	// them and goes on to kill the rest of the group.
	DefaultWaitDelay = 3 * time.Second
	// DefaultHealthInterval is the period of GET /health once the server is ready, and the
	// longest pause between probes while it starts (probes back off from 50 ms up to it).
	DefaultHealthInterval = time.Second
	// DefaultHealthTimeout bounds one probe. vLLM answers /health from its event loop, which
	// can be slow under heavy load; a timeout counts as a failure.
	DefaultHealthTimeout = 5 * time.Second
	// DefaultUnhealthyAfter is how many failed probes in a row turn Ready into Unhealthy.
	DefaultUnhealthyAfter = 2
	// DefaultRingSize is how many log lines the supervisor keeps.
	DefaultRingSize = 5000
	// DefaultMaxLineBytes caps one log line; the rest of a longer line is discarded.
	// vLLM's engine-config line is a few KiB.
	DefaultMaxLineBytes = 16 << 10
	// DefaultMaxPendingLines is how many lines wait for the consumer before the oldest are
	// dropped from the event stream (they stay in the ring).
	DefaultMaxPendingLines = 2000
	// DefaultMaxPendingEvents is how many parsed log events wait for the consumer before new
	// ones are dropped. State changes are never dropped.
	DefaultMaxPendingEvents = 1000
	// DefaultParentDeathSignal is sent to the child by the kernel if this process dies
	// without stopping it (Linux only).
	DefaultParentDeathSignal = syscall.SIGKILL

	initialHealthDelay = 50 * time.Millisecond
)

// Option configures a Supervisor.
type Option func(*options)

type options struct {
	grace           time.Duration
	waitDelay       time.Duration
	healthInterval  time.Duration
	healthTimeout   time.Duration
	noKeeper        bool // start the server directly even when a keeper could be used
	unhealthyAfter  int
	healthURL       string
	client          *http.Client
	ringSize        int
	maxLineBytes    int
	maxPendingLines int
	maxPendingEvts  int
	deathSignal     syscall.Signal
	env             []string
	dir             string
	apiKey          *string // WithAPIKey
}

func defaultOptions() options {
	return options{
		grace:           DefaultGrace,
		waitDelay:       DefaultWaitDelay,
		healthInterval:  DefaultHealthInterval,
		healthTimeout:   DefaultHealthTimeout,
		unhealthyAfter:  DefaultUnhealthyAfter,
		ringSize:        DefaultRingSize,
		maxLineBytes:    DefaultMaxLineBytes,
		maxPendingLines: DefaultMaxPendingLines,
		maxPendingEvts:  DefaultMaxPendingEvents,
		deathSignal:     DefaultParentDeathSignal,
	}
}

// WithGrace sets how long Stop waits after SIGTERM before it sends SIGKILL to the group.
func WithGrace(d time.Duration) Option {
	return func(o *options) {
		if d >= 0 {
			o.grace = d
		}
	}
}

// WithWaitDelay sets how long to wait for the output pipes to close once the main process has
// exited (see DefaultWaitDelay).
func WithWaitDelay(d time.Duration) Option {
	return func(o *options) { o.waitDelay = defaults.Positive(d, o.waitDelay) }
}

// WithHealthInterval sets the period of the /health probe once ready, and the longest pause
// between probes while starting.
func WithHealthInterval(d time.Duration) Option {
	return func(o *options) { o.healthInterval = defaults.Positive(d, o.healthInterval) }
}

// WithHealthTimeout bounds one /health probe.
func WithHealthTimeout(d time.Duration) Option {
	return func(o *options) { o.healthTimeout = defaults.Positive(d, o.healthTimeout) }
}

// WithUnhealthyAfter sets how many failed probes in a row turn Ready into Unhealthy.
func WithUnhealthyAfter(n int) Option {
	return func(o *options) { o.unhealthyAfter = defaults.Positive(n, o.unhealthyAfter) }
}

// WithHealthURL sets the server's base URL ("http://127.0.0.1:8000") instead of deriving it from
// --host/--port in the arguments; use it when the command is a wrapper (a shell script, a
// container runtime) whose arguments do not say where vLLM listens.
func WithHealthURL(base string) Option {
	return func(o *options) { o.healthURL = base }
}

// WithHTTPClient sets the client for the /health probes (its Timeout is not used; probes are
// bounded by WithHealthTimeout). The default client uses no proxy and no keep-alive.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.client = c }
}

// WithRingSize sets how many log lines are kept for Logs.
func WithRingSize(n int) Option {
	return func(o *options) { o.ringSize = defaults.Positive(n, o.ringSize) }
}

// WithMaxLineBytes caps the length of one log line.
func WithMaxLineBytes(n int) Option {
	return func(o *options) { o.maxLineBytes = defaults.Positive(n, o.maxLineBytes) }
}

// WithMaxPending sets how many log lines and how many parsed events may wait for the consumer
// of Events before they are dropped.
func WithMaxPending(lines, events int) Option {
	return func(o *options) {
		o.maxPendingLines = defaults.Positive(lines, o.maxPendingLines)
		o.maxPendingEvts = defaults.Positive(events, o.maxPendingEvts)
	}
}

// WithParentDeathSignal sets the signal the kernel sends the child when this process dies
// (Linux; 0 disables it). The default, SIGKILL, cannot be ignored; SIGTERM would let vLLM's
// API server shut its engine processes down itself, but a hung server would survive it.
func WithParentDeathSignal(sig syscall.Signal) Option {
	return func(o *options) { o.deathSignal = sig }
}

// WithEnv sets the child's environment ("KEY=value" entries); by default it inherits ours.
func WithEnv(env []string) Option {
	return func(o *options) { o.env = append([]string(nil), env...) }
}

// WithDir sets the child's working directory.
func WithDir(dir string) Option {
	return func(o *options) { o.dir = dir }
}
