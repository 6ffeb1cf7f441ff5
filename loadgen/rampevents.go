package loadgen

import (
	"fmt"
	"sync"
	"time"
)

// RampEvent is one entry of vllm bench serve's rps_change_events: a whole rate, in requests
// per second, that a ramp-up reached, and when.
type RampEvent struct {
	RPS int
	At  time.Time
}

// rampDue keeps when each measured request of a ramp-up was due, for its events.
type rampDue struct {
	mu  sync.Mutex
	due []time.Time
}

func (r *rampDue) add(res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res.Index >= 0 && res.Index < len(r.due) {
		r.due[res.Index] = res.Intended
	}
}

// events are vLLM's: the start rate when the run starts, then each whole rate the requests'
// rates pass, at the time of the request that passed it.
func (r *rampDue) events(ramp Ramp, start time.Time) []RampEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, at := ramp.StartRPS, start
	out := []RampEvent{{last, start}}
	for i, due := range r.due {
		if !due.IsZero() {
			at = due
		}
		for cur := int(ramp.rate(i, len(r.due))); last < cur; {
			last++
			out = append(out, RampEvent{last, at})
		}
	}
	return out
}

// rampEventsJSON is the events as vLLM writes them: {"rps": N, "timestamp": ISO local time}.
func rampEventsJSON(events []RampEvent) []ResultDoc {
	out := make([]ResultDoc, len(events))
	for i, e := range events {
		out[i] = ResultDoc{{"rps", e.RPS}, {"timestamp", pyISOTime(e.At)}}
	}
	return out
}

// pyISOTime is Python's datetime.isoformat() of a local time: microseconds only when not 0.
func pyISOTime(t time.Time) string {
	t = t.Local()
	s := t.Format("2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += fmt.Sprintf(".%06d", us)
	}
	return s
}

// sidelineFields are the keys vLLM writes between the run's figures and its latencies: the
// probes', a ramp-up's events and the server's drafting, in that order.
func (s Summary) sidelineFields() []Field {
	d := s.Probes.fields()
	if len(s.RampEvents) > 0 {
		d = append(d, Field{"rps_change_events", rampEventsJSON(s.RampEvents)})
	}
	return append(d, s.SpecDecode.fields()...)
}
