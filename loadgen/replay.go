package loadgen

import (
	"fmt"
	"io"
	"math"
	"time"
)

// Arrival is one request of a schedule: what to send and when.
type Arrival struct {
	Index int // 0-based among the arrivals (filtered and skipped lines not counted)
	// At is when to send, from the start of the replay, with the speed-up applied. For a
	// session turn that waits on the previous one (AfterPrevious), At is unused and Delay
	// (sped up too) is the wait after the previous turn finished.
	At            time.Duration
	AfterPrevious bool
	Delay         time.Duration
	Session       string
	Turn          int // 1-based within Session; 0 outside sessions
	Prompt        Prompt
	Entry         TraceEntry
}

// ScheduleConfig says how a trace becomes arrivals.
type ScheduleConfig struct {
	// Speedup divides the trace's times: 2 replays an hour of trace in half an hour, 0.5 in
	// two hours. 0 means 1.
	Speedup float64
	// Prompt builds the index-th arrival's prompt from its entry (e.g. TracePrompts.Prompt).
	Prompt func(index int, e TraceEntry) Prompt
	// Limit stops the schedule after this many arrivals (0: the whole trace).
	Limit int
	// SkipMalformed goes on past malformed lines (each reported to OnSkip) instead of ending
	// the schedule with the line's error.
	SkipMalformed bool
	OnSkip        func(err error)
}

// Schedule turns a trace into arrivals, in file order, one line at a time (constant memory
// apart from one counter per session). Times count from the first timed entry, so the first
// request goes at once whatever the trace's zero. Timestamps must not go backwards: a
// replay cannot send into the past, so such a line is malformed. It is not safe for
// concurrent use: one goroutine calls Next.
type Schedule struct {
	r        TraceReader
	cfg      ScheduleConfig
	next     int
	first    time.Duration
	last     time.Duration
	timed    bool
	lastAt   time.Duration
	sessions map[string]int
	skipped  int
}

// The speed-ups a schedule takes: a thousand times slower to a million times faster.
const (
	minSpeedup = 1e-3
	maxSpeedup = 1e6
)

// NewSchedule reads arrivals from r.
func NewSchedule(r TraceReader, cfg ScheduleConfig) (*Schedule, error) {
	if cfg.Speedup == 0 {
		cfg.Speedup = 1
	}
	if !(cfg.Speedup >= minSpeedup && cfg.Speedup <= maxSpeedup) {
		return nil, fmt.Errorf("--trace-speedup must be a number from %g to %g, got %g", minSpeedup, maxSpeedup, cfg.Speedup)
	}
	if cfg.Prompt == nil {
		return nil, fmt.Errorf("a schedule needs a prompt builder")
	}
	return &Schedule{r: r, cfg: cfg, sessions: map[string]int{}}, nil
}

// Skipped is the number of malformed lines skipped so far.
func (s *Schedule) Skipped() int { return s.skipped }

// Next returns the next arrival, io.EOF at the end of the trace (or of Limit), or the error
// that ended it.
func (s *Schedule) Next() (Arrival, error) {
	for {
		if s.cfg.Limit > 0 && s.next >= s.cfg.Limit {
			return Arrival{}, io.EOF
		}
		e, err := s.r.Next()
		if err == nil {
			var a Arrival
			if a, err = s.arrival(e); err == nil {
				return a, nil
			}
		}
		if !s.cfg.SkipMalformed || !IsTraceLineError(err) {
			return Arrival{}, err
		}
		s.skipped++
		if s.cfg.OnSkip != nil {
			s.cfg.OnSkip(err)
		}
	}
}

func (s *Schedule) arrival(e TraceEntry) (Arrival, error) {
	a := Arrival{Index: s.next, Entry: e, Session: e.SessionID}
	switch {
	case e.HasTimestamp:
		if !s.timed {
			s.first, s.last, s.timed = e.Timestamp, e.Timestamp, true
		}
		if e.Timestamp < s.last {
			return a, &TraceError{File: s.fileOf(), Line: e.Line, Msg: fmt.Sprintf(
				"timestamp %v is before the previous line's %v: the trace must be sorted by time", e.Timestamp, s.last)}
		}
		s.last = e.Timestamp
		a.At = s.scale(e.Timestamp - s.first)
		s.lastAt = a.At
	case e.SessionID != "" && s.sessions[e.SessionID] > 0:
		a.AfterPrevious = true
		a.Delay = s.scale(e.Delay)
	case e.SessionID != "":
		// A session's first turn without a timestamp starts where the schedule is now.
		a.At = s.lastAt + s.scale(e.Delay)
	default:
		return a, &TraceError{File: s.fileOf(), Line: e.Line, Msg: "no timestamp: a replay needs one on every line (or a session_id and delay)"}
	}
	if e.SessionID != "" {
		s.sessions[e.SessionID]++
		a.Turn = s.sessions[e.SessionID]
	}
	a.Prompt = s.cfg.Prompt(a.Index, e)
	s.next++
	return a, nil
}

func (s *Schedule) scale(d time.Duration) time.Duration {
	return time.Duration(math.Round(float64(d) / s.cfg.Speedup))
}

// fileOf names the trace's file for errors the schedule finds.
func (s *Schedule) fileOf() string {
	if n, ok := s.r.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "trace"
}

// ArrivalSource is what a Runner replays (RunnerConfig.Arrivals): a *Schedule, or any other
// source of arrivals in order.
type ArrivalSource interface {
	Next() (Arrival, error)
}

// FromIntended counts r's TTFT and E2EL from when the schedule wanted it sent rather than
// from when it was: an open-loop replay's latency includes the time the client held the
// request (a late loader, a concurrency cap), which a closed loop would hide.
func FromIntended(r Result) Result {
	if r.FromIntended {
		return r
	}
	q := r.QueueDelay()
	r.FromIntended = true
	r.TTFT += q
	r.E2EL += q
	return r
}
