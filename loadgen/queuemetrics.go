package loadgen

import "math"

// The client-side queueing metrics of --percentile-metrics: the wait for a --max-concurrency
// slot (from when the schedule released the request to its send), and the end-to-end latency
// with that wait. vLLM reports them only with --max-concurrency, the second only at a finite
// --request-rate.
const (
	MetricClientQueue   = "client_queue_time"
	MetricE2ELInclQueue = "e2el_including_client_queue"
)

// QueueMetrics are the client-side queueing metrics, in vLLM's print order.
var QueueMetrics = []string{MetricClientQueue, MetricE2ELInclQueue}

// reported are the selected metrics the run reports, in vLLM's order.
func (info RunInfo) reported() []string {
	var out []string
	for _, m := range PercentileMetrics {
		if info.selected(m) {
			out = append(out, m)
		}
	}
	if info.MaxConcurrency <= 0 {
		return out
	}
	if info.selected(MetricClientQueue) {
		out = append(out, MetricClientQueue)
	}
	if info.selected(MetricE2ELInclQueue) && !math.IsInf(info.RequestRate, 1) {
		out = append(out, MetricE2ELInclQueue)
	}
	return out
}

// perRequest is what vLLM keeps of every request without --save-detailed: its latency (0 for
// a failure) and its wait for a slot, in seconds.
type perRequest struct{ latency, queue float64 }

// note keeps r's latency and queue time at its index.
func (t *Tally) note(r *Result) {
	if r.Index < 0 || r.Index > 1<<26 {
		return
	}
	for len(t.perReq) <= r.Index {
		t.perReq = append(t.perReq, perRequest{})
	}
	p := perRequest{queue: r.QueueDelay().Seconds()}
	if r.OK() {
		p.latency = r.E2EL.Seconds()
	}
	t.perReq[r.Index] = p
}

// arrays are the latencies and queue times of the requests, in request order.
func (t *Tally) arrays() (lat, queue []float64) {
	lat, queue = make([]float64, len(t.perReq)), make([]float64, len(t.perReq))
	for i, p := range t.perReq {
		lat[i], queue[i] = p.latency, p.queue
	}
	return lat, queue
}

// pyFloats are xs as Python floats in JSON (an empty list, not null).
func pyFloats(xs []float64) []PyFloat {
	out := make([]PyFloat, len(xs))
	for i, x := range xs {
		out[i] = PyFloat(x)
	}
	return out
}
