package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// Errors returned by the Supervisor's methods.
var (
	ErrRunning    = errors.New("server: already running")
	ErrNotStarted = errors.New("server: not started")
	ErrClosed     = errors.New("server: supervisor closed")
	ErrAttached   = errors.New("server: attached to a server it did not start; it cannot restart it")
	// ErrAddressInUse is returned by Start when something already answers on the address the
	// server is to listen on: /health would report that other server's health.
	ErrAddressInUse = errors.New("server: address already in use")
)

// killWait bounds the wait for a process group after SIGKILL. Only a process stuck in the kernel
// (uninterruptible sleep on a hung device) survives SIGKILL for long.
const killWait = 5 * time.Second

// Status is what the supervisor knows about the current (or last) run. The capacity fields are
// the latest values vLLM logged in this run and are zero until it logs them.
type Status struct {
	State State
	Run   int      // 0 before the first Start
	PID   int      // the main process; 0 when attached or not started
	Args  []string // the command line of this run (nil when attached)
	URL   string   // the base URL /health is probed on, redacted (no password, no query values)
	// GPUMemoryUtilization is the run's --gpu-memory-utilization (vLLM's default when its
	// command line does not say; 0 when attached or running a command that is not vLLM's, see
	// KnownCommand).
	GPUMemoryUtilization float64
	// Unreachable is why the last /health probe got no answer at all ("connection refused",
	// "no answer within 2s", "no such host x"), empty once a probe gets any answer. It is set
	// for an attached server in any state, and for a supervised one once it has been ready
	// (before that, refusals are the normal sound of a server starting).
	Unreachable string

	Version          string
	ModelGiB         float64 // ModelLoaded
	ModelLoadSeconds float64
	KVCacheGiB       float64 // KVCacheMemory
	KVCacheTokens    int     // KVCacheSize
	KVCacheBlocks    int
	MaxConcurrency   float64 // MaxConcurrency, for requests of MaxModelLen tokens
	MaxModelLen      int
	CUDAGraphGiB     float64 // CUDAGraphMemory (measured if logged, else the estimate)
	// MemoryAdvice is the worker's memory account with vLLM's --kv-cache-memory advice; with
	// several workers, the one whose GPU has the least room. Zero until logged.
	MemoryAdvice MemoryAdvice
	ListenURL    string // ServerAddress, as logged
	Stats        Stats  // the last periodic stats line
	StatsTime    time.Time
	Fatal        []Fatal // the failure lines seen in this run, first first (at most 16)

	StartedAt time.Time
	ReadyAt   time.Time  // first time Ready in this run
	Exit      ExitStatus // set when State is Exited

	DroppedLines  uint64 // log lines dropped from Events since New (all are in the ring)
	DroppedEvents uint64 // parsed events dropped from Events since New
}

const maxFatals = 16

// Outcome is how a run that vllmtop started ended, for the command that started it: a server
// still running (vllmtop now stops it) or stopped because vllmtop asked is no news, whatever it
// printed on its way out (nil); one that exited or died by itself is an error in one line.
func (st Status) Outcome() error {
	if st.State != Exited || st.Exit.Requested {
		return nil
	}
	how := "exited"
	if st.Exit.Signal != 0 {
		how = "died"
	}
	return fmt.Errorf("the server %s: %s", how, st.Exit)
}

// Supervisor runs one server process at a time (vllm serve, python -m
// vllm.entrypoints.openai.api_server, vllmtop sim, ...) or watches one it did not start (Attach).
// Its methods are safe for concurrent use.
type Supervisor struct {
	opts   options
	attach string // base URL in attach mode; "" when the supervisor runs a process
	out    *outbox

	mu      sync.Mutex
	args    []string
	state   State
	changed chan struct{} // closed and replaced on every state change
	run     *run          // the current or last run
	runs    int
	status  Status
	ring    *ring
	seq     uint64
	closed  bool
}

// New returns a supervisor for the command args (args[0] is the program, looked up in PATH).
// Nothing runs until Start.
func New(args []string, opts ...Option) (*Supervisor, error) {
	if len(args) == 0 || args[0] == "" {
		return nil, errors.New("server: empty command")
	}
	s := newSupervisor(opts)
	s.args = append([]string(nil), args...)
	return s, nil
}

func newSupervisor(opts []Option) *Supervisor {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return &Supervisor{
		opts:    o,
		out:     newOutbox(o.maxPendingEvts, o.maxPendingLines),
		changed: make(chan struct{}),
		ring:    newRing(o.ringSize),
	}
}

// Events returns the channel of events: StateChanged (never dropped), the events ParseLogLine
// finds in the output (dropped only beyond WithMaxPending's limit, counted in Status), and
// LogBatch (lossy; the drop count travels in the batch). There is one channel for the
// Supervisor's life, across restarts; Close closes it once everything queued was received. The
// consumer must keep receiving until then. Producers never block on a slow consumer.
func (s *Supervisor) Events() <-chan Event { return s.out.out }

// Args returns the command line the next Start will run (the current one when running).
func (s *Supervisor) Args() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.args...)
}

// State returns the current state.
func (s *Supervisor) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Status returns a copy of what is known about the current or last run.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	st := s.status
	st.Args = append([]string(nil), st.Args...)
	st.Fatal = append([]Fatal(nil), st.Fatal...)
	s.mu.Unlock()
	st.DroppedLines, st.DroppedEvents = s.out.dropped()
	return st
}

// Logs returns the newest n log lines (all kept lines if n <= 0), oldest first.
func (s *Supervisor) Logs(n int) []Line {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.last(n)
}

// LogsSince returns the kept log lines with Seq greater than seq, oldest first.
func (s *Supervisor) LogsSince(seq uint64) []Line {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.since(seq)
}

// Start runs the command (or begins polling, when attached) and returns once the process is
// running; it does not wait for readiness (see WaitReady). ctx bounds only the start: the process
// runs until Stop, Kill, Restart, Close, or its own exit. The child gets its own process group;
// through a keeper (see MaybeRunKeeper) its whole tree ends with this process, whatever kills
// this process, and without one the child alone gets a parent-death signal (Linux). If the
// command cannot be started, or something already answers
// on the address from --host/--port (ErrAddressInUse), Start returns the error and the state goes
// to Exited.
func (s *Supervisor) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.run != nil && !s.run.ended() {
		s.mu.Unlock()
		return ErrRunning
	}
	s.runs++
	r := &run{id: s.runs, grace: s.opts.grace, done: make(chan struct{}), poke: make(chan struct{}, 1)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	s.run = r
	s.status = Status{Run: r.id, StartedAt: time.Now()}
	if s.attach != "" {
		r.base = s.attach
		r.client = s.httpClient("", false)
	} else {
		s.status.Args = append([]string(nil), s.args...)
		if KnownCommand(s.args) {
			s.status.GPUMemoryUtilization = GPUMemoryUtilization(s.args)
		}
		ep := endpointFromArgs(s.args)
		r.base = ep.base
		r.baseFromLog = !ep.explicitly || !ep.portKnown
		if s.opts.healthURL != "" {
			r.base = strings.TrimRight(s.opts.healthURL, "/")
			r.baseFromLog = false
		}
		r.client = s.httpClient(ep.socket, true)
	}
	s.status.URL = sanitize.URL(r.base)
	s.setStateLocked(r, Starting, nil, ExitStatus{})
	args := append([]string(nil), s.args...)
	check := ""
	if s.attach == "" && !r.baseFromLog && s.opts.healthURL == "" {
		if u, err := url.Parse(r.base); err == nil && u.Host != "localhost" {
			check = u.Host
		}
	}
	s.mu.Unlock()

	if s.attach != "" {
		go s.poll(r)
		return nil
	}
	if check != "" {
		if c, err := net.DialTimeout("tcp", check, 500*time.Millisecond); err == nil {
			_ = c.Close()
			err := fmt.Errorf("%w: %s answers before the server has started", ErrAddressInUse, check)
			s.finish(r, ExitStatus{Code: -1, Err: err, Cause: err.Error()}, err)
			return err
		}
	}
	return s.spawn(r, args)
}

func (s *Supervisor) spawn(r *run, args []string) error {
	if keeperUsable() && !s.opts.noKeeper {
		return s.spawnKept(r, args)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = s.opts.environ()
	cmd.Dir = s.opts.dir
	setProcAttr(cmd, s.opts.deathSignal)
	// Separate writers give each stream its own pipe and splitter, so a tqdm bar redrawing on
	// stderr never splices into a log line on stdout. exec's copying goroutines drain both
	// pipes for as long as anything holds them open; WaitDelay bounds how long Wait waits for
	// that after the main process exits (vLLM's engine processes, or anything they started,
	// may keep them open).
	outW, errW := s.newStream(r, Stdout), s.newStream(r, Stderr)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.WaitDelay = s.opts.waitDelay

	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the OS thread that forked the child exits, not
		// when this process does (golang/go#27505), so the thread that starts the child stays
		// locked to this goroutine until the child is gone. The goroutine never unlocks: the
		// runtime then retires the thread when it returns.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			s.finish(r, ExitStatus{Code: -1, Err: err, Cause: err.Error()}, err)
			started <- err
			return
		}
		r.started(cmd.Process.Pid)
		s.mu.Lock()
		if s.run == r {
			s.status.PID = cmd.Process.Pid
		}
		s.mu.Unlock()
		started <- nil
		go s.poll(r)

		waitErr := cmd.Wait()
		outW.flush()
		errW.flush()
		r.cancel()
		r.reap()
		var ws syscall.WaitStatus
		known := false
		if cmd.ProcessState != nil {
			ws, known = cmd.ProcessState.Sys().(syscall.WaitStatus)
		}
		s.finish(r, s.exitStatus(r, ws, known, waitErr), nil)
	}()
	return <-started
}

// exitStatus describes how the run's process ended, from its wait status (when known) and the
// error of waiting for it.
func (s *Supervisor) exitStatus(r *run, ws syscall.WaitStatus, known bool, waitErr error) ExitStatus {
	st := ExitStatus{Code: -1}
	if known {
		if ws.Exited() {
			st.Code = ws.ExitStatus()
		}
		if ws.Signaled() {
			st.Signal = ws.Signal()
		}
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		st.Err = waitErr
	}
	r.mu.Lock()
	st.Requested, st.Killed = r.stop, r.killed
	r.mu.Unlock()
	s.mu.Lock()
	// A process killed by a signal from outside, or one that exited cleanly (a SIGTERM it
	// handled), has no cause in its own output: its last line is whatever it happened to print
	// (an access log line), so only a recognised failure line counts then.
	st.Cause, st.Reason = r.cause.result(st.Requested || st.Signal == syscall.SIGKILL || st.Code == 0)
	s.mu.Unlock()
	return st
}

// finish records the end of run r: state Exited, then done is closed.
func (s *Supervisor) finish(r *run, st ExitStatus, err error) {
	r.cancel()
	s.mu.Lock()
	if s.run == r {
		s.status.Exit = st
		s.setStateLocked(r, Exited, err, st)
	}
	s.mu.Unlock()
	close(r.done)
}

// WaitReady blocks until the server is Ready (nil), exits (*ExitError with the cause), or ctx
// ends (ctx's error). It returns ErrNotStarted before the first Start.
func (s *Supervisor) WaitReady(ctx context.Context) error {
	for {
		s.mu.Lock()
		st, ch, exit := s.state, s.changed, s.status.Exit
		s.mu.Unlock()
		switch st {
		case Ready:
			return nil
		case Exited:
			return &ExitError{Status: exit}
		case Idle:
			return ErrNotStarted
		case Starting, Loading, Unhealthy, Stopping:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Done returns a channel that is closed when the current run has ended (state Exited), or nil
// before the first Start.
func (s *Supervisor) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return nil
	}
	return s.run.done
}

// Stop stops the server: SIGTERM to its whole process group, then, if any of the group is
// still alive after the grace period (WithGrace), SIGKILL to the group. It blocks until the
// group is gone and the state is Exited, or until ctx ends, in which case it sends SIGKILL at
// once and waits a little longer. It returns nil when the server is gone (also when it was not
// running). When attached, Stop only ends the health polling.
func (s *Supervisor) Stop(ctx context.Context) error {
	r := s.stopping()
	if r == nil {
		return nil
	}

	if s.attach != "" {
		r.mu.Lock()
		r.stop = true
		r.mu.Unlock()
		r.cancel()
		<-r.done
		return nil
	}
	r.terminate()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
	}
	r.killNow()
	t := time.NewTimer(s.opts.waitDelay + killWait)
	defer t.Stop()
	select {
	case <-r.done:
		return nil
	case <-t.C:
		return fmt.Errorf("server: process group %d still alive after SIGKILL: %w", r.pid(), ctx.Err())
	}
}

// stopping moves a running server to Stopping and returns its run, or nil when none runs.
func (s *Supervisor) stopping() *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run
	if r == nil || r.ended() {
		return nil
	}
	if s.state != Stopping {
		s.setStateLocked(r, Stopping, nil, ExitStatus{})
	}
	return r
}

// Kill sends SIGKILL to the server's process group now and returns without waiting; the
// Exited event follows. It is the second, impatient stage of a quit.
func (s *Supervisor) Kill() error {
	r := s.stopping()
	if r == nil {
		return nil
	}
	if s.attach != "" {
		go func() { _ = s.Stop(context.Background()) }()
		return nil
	}
	r.killNow()
	return nil
}

// Restart stops the server (as Stop does), applies the edits to its command line (Set,
// Remove, Switch), starts it again and waits until it is ready. It returns an *ExitError if
// the new server exits before it is ready, for example because the new settings do not fit
// the GPU; the edited command line stays in place either way (see Args).
func (s *Supervisor) Restart(ctx context.Context, edits ...ArgEdit) error {
	if s.attach != "" {
		return ErrAttached
	}
	if err := s.Stop(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.args = EditArgs(s.args, edits...)
	s.mu.Unlock()
	if err := s.Start(ctx); err != nil {
		return err
	}
	return s.WaitReady(ctx)
}

// Close stops the server as Stop does (with the full grace period), refuses later Starts, and
// closes the Events channel once the consumer has received everything queued. It blocks until
// the server is gone.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.Stop(context.Background())
	s.out.close()
	return err
}

// setStateLocked moves to st and queues the StateChanged event. s.mu is held.
func (s *Supervisor) setStateLocked(r *run, st State, err error, exit ExitStatus) {
	from := s.state
	if from == st {
		return
	}
	s.state = st
	s.status.State = st
	if st == Ready && s.status.ReadyAt.IsZero() {
		s.status.ReadyAt = time.Now()
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.out.state(StateChanged{Run: r.id, From: from, State: st, Time: time.Now(), Exit: exit, Err: err})
}

// handleLine stores a line, parses it and updates the run's state and status.
func (s *Supervisor) handleLine(r *run, which Stream, raw string, truncated bool) {
	text := sanitize.Text(raw)
	msg := Message(text)
	ev, ok := parseMessage(msg)

	s.mu.Lock()
	s.seq++
	l := Line{Seq: s.seq, Run: r.id, Time: time.Now(), Stream: which, Raw: raw, Text: text, Truncated: truncated}
	s.ring.push(l)
	r.cause.observe(msg, ev, ok)
	if ok && s.run == r {
		s.applyLocked(r, ev)
	}
	s.mu.Unlock()

	s.out.line(l)
	if ok {
		s.out.parsed(ev)
	}
}

// applyLocked folds a parsed event into the status and the state. s.mu is held.
func (s *Supervisor) applyLocked(r *run, ev Event) {
	st := &s.status
	loading := true
	switch e := ev.(type) {
	case Version:
		st.Version = e.Version
		loading = false
	case LoadStarted:
	case ModelLoaded:
		st.ModelGiB, st.ModelLoadSeconds = e.GiB, e.Seconds
	case KVCacheMemory:
		st.KVCacheGiB = e.AvailableGiB
	case KVCacheSize:
		if e.Tokens > 0 {
			st.KVCacheTokens = e.Tokens
		}
		if e.Blocks > 0 {
			st.KVCacheBlocks = e.Blocks
		}
		if e.TokensPerRequest > 0 {
			st.MaxConcurrency, st.MaxModelLen = e.Concurrency, e.TokensPerRequest
		}
	case MaxConcurrency:
		st.MaxConcurrency, st.MaxModelLen = e.Concurrency, e.TokensPerRequest
	case CUDAGraphMemory:
		if !e.Estimated || st.CUDAGraphGiB == 0 {
			st.CUDAGraphGiB = e.GiB
		}
	case MemoryAdvice:
		if st.MemoryAdvice.TotalGiB == 0 || e.FillGPUBytes < st.MemoryAdvice.FillGPUBytes {
			st.MemoryAdvice = e
		}
	case EngineInitialized:
	case ServerAddress:
		st.ListenURL = e.URL
		if base, ok := baseFromListenURL(e.URL); ok && r.baseFromLog {
			r.base, st.URL = base, sanitize.URL(base)
		}
		r.pokeHealth()
		loading = false
	case StartupComplete:
		r.pokeHealth()
		loading = false
	case Stats:
		st.Stats, st.StatsTime = e, time.Now()
		loading = false
	case Fatal:
		if len(st.Fatal) < maxFatals {
			st.Fatal = append(st.Fatal, e)
		}
		loading = false
	default:
		loading = false
	}
	if loading && s.state == Starting {
		s.setStateLocked(r, Loading, nil, ExitStatus{})
	}
}
