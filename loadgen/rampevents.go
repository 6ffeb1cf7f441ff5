package loadgen

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// RampEvent is one entry of vllm bench serve's rps_change_events: a whole rate, in requests
// per second, that a ramp-up reached, and when.
type RampEvent struct {
	RPS int
	At  time.Time
}

// maxRampEvents bounds the events a ramp records: one a whole rate between its start and end.
const maxRampEvents = 1 << 16

// rampDue keeps when the measured requests of a ramp-up that pass a whole rate were due, for
// its events: the rate grows with the request's index, so those requests are found ahead
// (crossings) and only their times are kept, however many prompts the run has.
type rampDue struct {
	ramp      Ramp
	n         int
	crossings []rampCrossing
	mu        sync.Mutex
	due       map[int]time.Time
}

// rampCrossing is the first request whose rate reaches a whole rate.
type rampCrossing struct{ index, rps int }

func newRampDue(ramp Ramp, n int) *rampDue {
	r := &rampDue{ramp: ramp, n: n, due: map[int]time.Time{}}
	for rps := ramp.StartRPS + 1; rps <= ramp.EndRPS && len(r.crossings) < maxRampEvents; rps++ {
		// The first index whose rate is at least rps: the rate rises with the index.
		i := sort.Search(n, func(i int) bool { return int(ramp.rate(i, n)) >= rps })
		if i == n {
			break
		}
		r.crossings = append(r.crossings, rampCrossing{i, rps})
	}
	return r
}

func (r *rampDue) add(res Result) {
	if _, ok := slices.BinarySearchFunc(r.crossings, res.Index, func(c rampCrossing, i int) int { return c.index - i }); !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.due[res.Index] = res.Intended
}

// events are vLLM's: the start rate when the run starts, then each whole rate the requests'
// rates pass, at the time of the request that passed it (of the last one before it that was
// sent, if it was not).
func (r *rampDue) events(start time.Time) []RampEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := start
	out := []RampEvent{{r.ramp.StartRPS, start}}
	for _, c := range r.crossings {
		if due, ok := r.due[c.index]; ok && !due.IsZero() {
			at = due
		}
		out = append(out, RampEvent{c.rps, at})
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
