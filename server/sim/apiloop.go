package sim

import (
	"math"
	"time"
)

// apiServerLoop is the API server's single event loop (docs/calibration.md#the-api-servers-event-loop): it
// processes each request's input before the engine sees it and streams every step's outputs, one
// job at a time, in the order they become ready. A request that arrives while the loop is busy
// waits; at steady rates the loop is mostly idle and nothing waits.
type apiServerLoop struct {
	share    float64       // the engine's share of the API servers' time (apiLoopShare); costs are scaled by it
	input    time.Duration // loop time one request's input processing takes, besides tokenizing
	perToken time.Duration // loop time tokenizing one prompt token takes
	output   time.Duration // loop time streaming one output takes
	free     time.Time     // when the loop finishes the work taken so far
	// pending are output jobs of steps not yet ended: the engine plans a step before its
	// outputs exist, so an arrival before the step's end is served first.
	pending []loopJob
	// lastStart and lastReady are the start and readiness of the last output job run, which
	// an arrival after a step's end may run before the step's owner asks when it started.
	lastStart, lastReady time.Time
	// lastArrival and lastWait are the last request's, which its further choices share.
	lastArrival time.Time
	lastWait    time.Duration
}

type loopJob struct {
	ready time.Time
	work  time.Duration
}

// admit takes choice number choice of a request of tokens prompt tokens arriving at t and
// returns how long it waits for the loop and then tokenizes; the rest of its input processing
// is the host profile's fixed input time. The first choice pays the loop; the others were
// fanned out with it.
func (l *apiServerLoop) admit(t time.Time, tokens, choice int) time.Duration {
	if l.input <= 0 && l.perToken <= 0 {
		return 0
	}
	if choice > 0 && t.Equal(l.lastArrival) {
		return l.lastWait
	}
	l.settle(t)
	start := t
	if l.free.After(start) {
		start = l.free
	}
	tokenize := time.Duration(tokens) * l.perToken
	l.free = start.Add(l.input + tokenize)
	// One server tokenizes the request, whatever share of the servers' time an engine has.
	own := tokenize
	if l.share > 0 {
		own = time.Duration(float64(tokenize) / l.share)
	}
	l.lastArrival, l.lastWait = t, start.Sub(t)+own
	return l.lastWait
}

// stream queues the streaming of n outputs of a step planned at now that become ready at end;
// the jobs of steps that ended by now are run first.
func (l *apiServerLoop) stream(now, end time.Time, n int) {
	if l.output <= 0 || n == 0 {
		return
	}
	l.settle(now)
	l.pending = append(l.pending, loopJob{ready: end, work: time.Duration(n) * l.output})
}

// streamed settles the loop up to a step's end and returns when it starts streaming that
// step's outputs and how long each takes; at end itself and no time each where the loop
// costs nothing.
func (l *apiServerLoop) streamed(end time.Time) (time.Time, time.Duration) {
	if l.output <= 0 {
		return end, 0
	}
	l.settle(end)
	if l.lastReady.Equal(end) {
		return l.lastStart, l.output
	}
	return end, l.output // the step had no outputs to stream
}

// settle runs the output jobs that became ready at or before t, noting when the last of them
// started and became ready.
func (l *apiServerLoop) settle(t time.Time) {
	i := 0
	for ; i < len(l.pending) && !l.pending[i].ready.After(t); i++ {
		j := l.pending[i]
		if j.ready.After(l.free) {
			l.free = j.ready
		}
		l.lastStart, l.lastReady = l.free, j.ready
		l.free = l.free.Add(j.work)
	}
	l.pending = append(l.pending[:0], l.pending[i:]...)
}

// apiServersPerEngineRelease is the first release whose --api-server-count defaults to the
// data-parallel size, one API server per engine (vllm/entrypoints/cli/serve.py logs
// "Defaulting api_server_count to data_parallel_size"; before, one API server served them all).
const apiServersPerEngineRelease = "0.15.0"

// APIServers is the number of API server processes s runs: --api-server-count, or the
// release's default.
func (s *Setup) APIServers() int {
	switch {
	case s.APIServerCount > 0:
		return s.APIServerCount
	case s.Version.AtLeast(apiServersPerEngineRelease):
		return max(1, s.DataParallelSize)
	}
	return 1
}

// apiLoopShare is how much of one API server's loop time an engine's requests and outputs
// take: the API servers share every engine's load, so each engine has APIServers /
// DataParallelSize servers' worth of loop time. The simulator runs one loop per engine with
// its costs scaled by the share: the same throughput as the servers side by side. A request's
// own tokenizing is still one server's; its wait behind others is the scaled loop's, longer
// than N loops side by side would give when the share is below one, shorter above.
func apiLoopShare(s *Setup) float64 {
	return float64(max(1, s.DataParallelSize)) / float64(s.APIServers())
}

// nanoseconds rounds a host cost to whole nanoseconds.
func nanoseconds(ns float64) time.Duration { return time.Duration(math.Round(ns)) }
