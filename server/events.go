package server

import (
	"fmt"
	"syscall"
	"time"
)

// Event is something the supervisor learnt: a state change, a batch of log lines, or a fact
// ParseLogLine found in a line (ModelLoaded, KVCacheSize, Stats, Fatal, ...). Consumers switch on
// the concrete type; the set of types is closed.
type Event interface{ event() }

// State is the life-cycle state of the supervised server.
type State int

// The states, in the order a successful run passes through them:
//
//	Idle -> Starting -> Loading -> Ready <-> Unhealthy -> Stopping -> Exited
//
// Loading and Ready/Unhealthy may be skipped (a server that fails early goes from Starting to
// Exited), and Start after Exited begins again at Starting.
const (
	Idle      State = iota // nothing started yet
	Starting               // process spawned (or attach polling begun); no sign of life from vLLM yet
	Loading                // vLLM reports it is loading the model, or /health answers but not 200
	Ready                  // GET /health returned 200
	Unhealthy              // was Ready, then /health failed several probes in a row
	Stopping               // SIGTERM sent to the process group; waiting for it to exit
	Exited                 // the process and its whole group are gone (see ExitStatus)
)

func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case Starting:
		return "starting"
	case Loading:
		return "loading"
	case Ready:
		return "ready"
	case Unhealthy:
		return "unhealthy"
	case Stopping:
		return "stopping"
	case Exited:
		return "exited"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Running reports whether s is a state in which a process (or an attachment) is live.
func (s State) Running() bool {
	switch s {
	case Starting, Loading, Ready, Unhealthy, Stopping:
		return true
	case Idle, Exited:
		return false
	}
	return false
}

// StateChanged reports a transition. It is always delivered (never dropped).
type StateChanged struct {
	Run   int // 1 for the first Start, incremented by every later Start or Restart
	From  State
	State State
	Time  time.Time
	// Exit is set when State is Exited.
	Exit ExitStatus
	// Err is the failure that caused the transition, if any: the health probe's error on a
	// move to Unhealthy, the spawn error on a move from Starting to Exited.
	Err error
}

// ExitStatus says how a run ended.
type ExitStatus struct {
	// Code is the exit status of the process; -1 if it was ended by a signal or never ran.
	Code int
	// Signal is the signal that ended the process, if one did.
	Signal syscall.Signal
	// Requested is true when the run ended because Stop, Kill, Restart or Close asked it to.
	Requested bool
	// Killed is true when the group had to be sent SIGKILL (the grace period ran out).
	Killed bool
	// Cause is the line that explains the exit: vLLM's root-cause line (for example
	// "ValueError: No available memory for the cache blocks. ..."), not the last line of
	// the traceback that follows it. Empty after a clean requested stop.
	Cause string
	// Reason classifies Cause when a known vLLM failure was recognised.
	Reason FatalReason
	// Err is the error from starting or waiting for the process, if any.
	Err error
}

// Failed reports whether the run ended in a way nobody asked for.
func (e ExitStatus) Failed() bool {
	return !e.Requested || e.Reason != ReasonUnknown
}

func (e ExitStatus) String() string {
	var s string
	switch {
	case e.Signal != 0:
		s = "terminated by signal: " + e.Signal.String()
	case e.Code < 0 && e.Err != nil:
		s = "did not start"
	case e.Code < 0:
		s = "stopped"
	default:
		s = fmt.Sprintf("exit status %d", e.Code)
	}
	if e.Cause != "" {
		s += ": " + e.Cause
	} else if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// ExitError is returned by WaitReady and Restart when the server exits before it is ready.
type ExitError struct{ Status ExitStatus }

func (e *ExitError) Error() string { return "server exited before it was ready: " + e.Status.String() }

// Stream says which of the child's output streams a line came from.
type Stream int

// The child's output streams.
const (
	Stdout Stream = iota + 1
	Stderr
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return fmt.Sprintf("Stream(%d)", int(s))
}

// Line is one line of the child's output, split on '\n' or '\r'.
type Line struct {
	Seq    uint64    // 1, 2, 3, ... across all runs of a Supervisor
	Run    int       // the run that printed it
	Time   time.Time // when the line was complete (monotonic)
	Stream Stream
	// Raw is the line as written, escapes and controls included: data, never to be printed
	// on a terminal as it is.
	Raw string
	// Text is Raw made safe for a terminal (sanitize.Text: no escape sequence, control or
	// bidi character), for display, parsing and search.
	Text string
	// Truncated is true when the line was longer than the cap and its tail was discarded.
	Truncated bool
}

// LogBatch carries the log lines that arrived since the previous batch. Batches are lossy:
// when the consumer falls behind, the oldest pending lines are dropped and counted in Dropped.
// Every line, dropped or not, is still in the ring that Logs reads.
type LogBatch struct {
	Lines   []Line
	Dropped uint64 // lines dropped between the previous batch and this one
}

func (StateChanged) event() {}
func (LogBatch) event()     {}
