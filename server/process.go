package server

import (
	"context"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// run is one process (or one attachment) from Start to Exited.
type run struct {
	id     int
	grace  time.Duration
	done   chan struct{} // closed after Exited has been queued
	ctx    context.Context
	cancel context.CancelFunc // stops the health poller
	poke   chan struct{}      // probe now
	client *http.Client

	// Guarded by Supervisor.mu.
	base        string // URL probed
	baseFromLog bool   // the log's listen address may replace base
	fails       int    // failed probes in a row
	cause       causeTracker

	// Guarded by mu: signalling the process group.
	mu      sync.Mutex
	pgid    int // the main process's pid, which is its group's id; 0 until started
	stop    bool
	killReq bool
	termAt  time.Time
	killed  bool
	reaped  bool
	timer   *time.Timer
}

// stream receives one of the child's output streams and hands its lines to handleLine.
type stream struct{ sp *splitter }

func (s *Supervisor) newStream(r *run, which Stream) *stream {
	return &stream{sp: newSplitter(s.opts.maxLineBytes, func(line []byte, truncated bool) {
		s.handleLine(r, which, string(line), truncated)
	})}
}

// Write never fails and never blocks on the consumer, so the child's pipe is always drained.
func (w *stream) Write(p []byte) (int, error) { return w.sp.Write(p) }

func (w *stream) flush() { w.sp.Flush() }

func (r *run) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *run) pokeHealth() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

func (r *run) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pgid
}

// started records the main process's pid (its group's id) and acts on a Stop or Kill that
// arrived while the process was being started.
func (r *run) started(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pgid = pid
	switch {
	case r.killReq:
		r.killLocked()
	case r.stop:
		r.termLocked()
	}
}

// terminate sends SIGTERM to the group once and arms the SIGKILL that follows after the grace
// period.
func (r *run) terminate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop = true
	if r.pgid != 0 {
		r.termLocked()
	}
}

func (r *run) termLocked() {
	if r.reaped || !r.termAt.IsZero() {
		return
	}
	r.termAt = time.Now()
	_ = signalGroup(r.pgid, syscall.SIGTERM)
	r.timer = time.AfterFunc(r.grace, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.killLocked()
	})
}

// killNow sends SIGKILL to the group at once.
func (r *run) killNow() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop = true
	r.killReq = true
	if r.pgid != 0 {
		r.killLocked()
	}
}

func (r *run) killLocked() {
	// Once the group is reaped its id may be reused by an unrelated process group.
	if r.reaped {
		return
	}
	if signalGroup(r.pgid, syscall.SIGKILL) == nil {
		r.killed = true
	}
}

// reap makes sure nothing of the group outlives the main process, which has exited: vLLM's
// engine core and workers, or anything they started. Survivors get SIGTERM (unless a Stop sent
// it already) and, after the grace period, SIGKILL.
func (r *run) reap() {
	r.mu.Lock()
	pgid := r.pgid
	if groupAlive(pgid) && r.termAt.IsZero() {
		r.termAt = time.Now()
		_ = signalGroup(pgid, syscall.SIGTERM)
	}
	deadline := r.termAt.Add(r.grace)
	r.mu.Unlock()

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var killedAt time.Time
	for groupAlive(pgid) {
		now := time.Now()
		if killedAt.IsZero() && !now.Before(deadline) {
			r.mu.Lock()
			r.killLocked()
			r.mu.Unlock()
			killedAt = now
		}
		if !killedAt.IsZero() && now.Sub(killedAt) > killWait {
			break
		}
		<-tick.C
	}
	r.mu.Lock()
	r.reaped = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
}
