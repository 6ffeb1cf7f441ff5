package serve

import (
	"context"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
)

// event is what a stream is handed: a step's tokens (one, or with speculative decoding
// several), or the end of the request.
type event struct {
	token    int
	more     []int // the step's tokens after the first (nil for one token)
	index    int   // index of token among the request's outputs
	finished bool
	reason   sim.FinishReason
}

// tokens lists the event's tokens.
func (e event) tokens() []int {
	if e.reason == sim.FinishAbort {
		return nil
	}
	if len(e.more) == 0 {
		return []int{e.token}
	}
	return append([]int{e.token}, e.more...)
}

// stream connects one request to its HTTP handler. The driver appends events; the handler
// drains them. Appending never blocks, so a slow client cannot stall the engine.
type stream struct {
	mu     sync.Mutex
	events []event
	notify chan struct{} // capacity 1: "there is something to drain"
	seq    *sim.Sequence
	// sink, when set, takes events directly instead of the queue (streamed responses);
	// choice is the stream's index among the request's n choices.
	sink   *sseSink
	choice int
	// lora is the LoRA adapter the request asked for ("" for the base model).
	lora string
	drv  *driver // the engine's driver the request went to
	// aborted is set (under the driver's lock) when the request was aborted: tokens the API
	// server's loop had still to stream are dropped.
	aborted bool
}

func newStream() *stream { return &stream{notify: make(chan struct{}, 1)} }

func (s *stream) push(ev event) {
	if s.sink != nil {
		s.sink.deliver(s.choice, ev)
		return
	}
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// drain moves the pending events into buf and returns it.
func (s *stream) drain(buf []event) []event {
	s.mu.Lock()
	buf = append(buf[:0], s.events...)
	s.events = s.events[:0]
	s.mu.Unlock()
	return buf
}

// stepObserver receives every engine step and every ended request, on the driver goroutine.
type stepObserver interface {
	ObserveStep(r *sim.StepResult)
	ObserveEnded(s *sim.Sequence)
}

// driver owns the engine and runs its steps on a clock: one timer per step, and the tokens of
// every stream in a step delivered at its end, or, where the API server's loop costs time, in
// the loop's chunks after it.
type driver struct {
	mu        sync.Mutex // guards engine and live
	engine    *sim.Engine
	live      map[*sim.Sequence]*stream
	clock     sim.Clock
	wake      chan struct{}
	observers []stepObserver
	tick      func(now time.Time) // periodic work (the stats line), on the driver goroutine
	pending   []delivery
	// later are the chunks of outputs the API server's loop streams after their step's end
	// (sim.Engine.Streamed), in time order.
	later []timedDeliveries
	// virtual is set for a sim.VirtualClock: time then moves only to the next event, never
	// while waiting for a request.
	virtual bool
}

type delivery struct {
	st *stream
	ev event
}

type timedDeliveries struct {
	at      time.Time
	items   []delivery
	observe *sim.StepResult // the step, observed with its first chunk (nil for the others)
}

func newDriver(e *sim.Engine, clock sim.Clock) *driver {
	_, virtual := clock.(*sim.VirtualClock)
	return &driver{engine: e, clock: clock, live: map[*sim.Sequence]*stream{}, wake: make(chan struct{}, 1), virtual: virtual}
}

// submit queues a request; its tokens arrive on st.
func (d *driver) submit(r sim.Request, st *stream) error {
	d.mu.Lock()
	r.Arrival = d.clock.Now()
	seq, err := d.engine.Add(r)
	if err == nil {
		seq.Tag = st
		st.seq = seq
		st.drv = d
		d.live[seq] = st
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return nil
}

// abort ends a request whose client went away, freeing its KV blocks at once.
func (d *driver) abort(st *stream) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.live[st.seq]; !ok {
		return
	}
	if d.engine.Abort(st.seq, d.clock.Now()) {
		for _, o := range d.observers {
			o.ObserveEnded(st.seq)
		}
	}
	delete(d.live, st.seq)
	st.aborted = true
	st.push(event{finished: true, reason: sim.FinishAbort})
}

// abortAll ends every live request (shutdown).
func (d *driver) abortAll() {
	d.mu.Lock()
	streams := make([]*stream, 0, len(d.live))
	for _, st := range d.live {
		streams = append(streams, st)
	}
	d.mu.Unlock()
	for _, st := range streams {
		d.abort(st)
	}
}

// inFlight is the number of live requests.
func (d *driver) inFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}

// run steps the engine until ctx ends.
func (d *driver) run(ctx context.Context) {
	var due time.Time // when the driver meant to wake: the last step's end, or a request's readiness
	for ctx.Err() == nil {
		d.mu.Lock()
		now := catchUp(d.clock.Now(), due)
		due = time.Time{}
		if d.tick != nil {
			d.tick(now)
		}
		r := d.engine.Step(now)
		if r.Idle {
			d.observeInOrder(r) // the gauges
			next := r.NextReady
			d.mu.Unlock()
			due = d.waitIdle(ctx, now, next)
			continue
		}
		d.collect(r)
		end := r.End
		d.mu.Unlock()
		if d.deliverDue(ctx, end) != nil || d.clock.SleepUntil(ctx, end) != nil {
			return
		}
		due = end
		d.finishStep(r, end)
	}
}

// waitIdle waits, with nothing to run, for the next thing due: a queued request's readiness,
// tokens the API server's loop is still streaming, or new work. It returns when the driver
// meant to wake (zero where it only waited for work).
func (d *driver) waitIdle(ctx context.Context, now, next time.Time) (due time.Time) {
	const maxIdleWait = time.Second // the stats line still needs its ticks when idle
	if len(d.later) > 0 && (next.IsZero() || d.later[0].at.Before(next)) {
		next = d.later[0].at // tokens still streaming: hand them over first
	}
	if d.virtual {
		if next.IsZero() {
			select {
			case <-d.wake:
			case <-ctx.Done():
			}
			return time.Time{}
		}
		_ = d.clock.SleepUntil(ctx, next)
		_ = d.deliverDue(ctx, next)
		return time.Time{}
	}
	if next.IsZero() || next.Sub(now) > maxIdleWait {
		next = now.Add(maxIdleWait)
	} else {
		due = next
	}
	d.idle(ctx, next)
	_ = d.deliverDue(ctx, d.clock.Now())
	return due
}

// collect takes what a step produced for its streams. The requests it finished stay live
// until their last tokens are handed over (an abort until then still ends their streams).
func (d *driver) collect(r *sim.StepResult) {
	d.pending = d.pending[:0]
	for _, out := range r.Outputs {
		st := out.Seq.Tag.(*stream)
		ev := event{token: out.Token, index: out.Index, finished: out.Finished, reason: out.Reason}
		if len(out.Tokens) > 1 {
			ev.more = append([]int(nil), out.Tokens[1:]...) // the engine reuses its buffer
		}
		d.pending = append(d.pending, delivery{st, ev})
	}
}

// finishStep hands the API server's loop the outputs of the step that ended at end: at once
// where the loop costs nothing, else in its chunks. The step is observed (metrics, stats
// line, balancer) with its first chunk, in step order; its latencies are stamped at the loop's
// pick-up (StepResult.Streamed), where vLLM's output handler stamps them.
func (d *driver) finishStep(r *sim.StepResult, end time.Time) {
	d.mu.Lock()
	start, each := d.engine.Streamed(end)
	if each == 0 || len(d.pending) == 0 {
		d.observeInOrder(r)
		d.forgetFinished(d.pending)
		d.mu.Unlock()
		d.deliver(d.pending)
		return
	}
	obs := r.Clone() // the engine reuses its result
	d.mu.Unlock()
	d.streamLater(start, each, obs)
}

// observeInOrder observes a step now, or, while earlier steps' outputs are still streaming,
// after them, as vLLM's API server handles the engine's outputs in order; d.mu is held.
func (d *driver) observeInOrder(r *sim.StepResult) {
	if len(d.later) == 0 {
		d.observe(r)
		return
	}
	d.later = append(d.later, timedDeliveries{at: d.later[len(d.later)-1].at, observe: r.Clone()})
}

// forgetFinished drops the requests whose last event is among items from the live set;
// d.mu is held.
func (d *driver) forgetFinished(items []delivery) {
	for _, p := range items {
		if p.ev.finished {
			delete(d.live, p.st.seq)
		}
	}
}

// observe hands a step, and the requests it finished, to the observers; d.mu is held.
func (d *driver) observe(r *sim.StepResult) {
	for _, o := range d.observers {
		o.ObserveStep(r)
	}
	for _, s := range r.Finished {
		for _, o := range d.observers {
			o.ObserveEnded(s)
		}
	}
}

// streamLater queues the step's outputs in the chunks the API server's loop streams them in,
// the first starting at start, each output taking each; the step is observed with the first.
func (d *driver) streamLater(start time.Time, each time.Duration, obs *sim.StepResult) {
	items := append([]delivery(nil), d.pending...) // d.pending is reused next step
	for len(items) > 0 {
		n := min(len(items), sim.OutputChunk)
		start = start.Add(time.Duration(n) * each)
		d.later = append(d.later, timedDeliveries{at: start, items: items[:n:n], observe: obs})
		items, obs = items[n:], nil
	}
}

// deliverDue hands over, each at its time, the chunks due by until.
func (d *driver) deliverDue(ctx context.Context, until time.Time) error {
	for len(d.later) > 0 && !d.later[0].at.After(until) {
		c := d.later[0]
		if err := d.clock.SleepUntil(ctx, c.at); err != nil {
			return err
		}
		d.later[0] = timedDeliveries{}
		d.later = d.later[1:]
		d.mu.Lock()
		if c.observe != nil {
			d.observe(c.observe)
		}
		d.forgetFinished(c.items)
		items := c.items[:0]
		for _, p := range c.items {
			if !p.st.aborted {
				items = append(items, p)
			}
		}
		d.mu.Unlock()
		d.deliver(items)
	}
	return nil
}

// maxCatchUp is how late the driver may wake and still start its next step at the moment it
// was due. A timer fires late by a millisecond or more on a loaded machine (0.6-1.4 ms on
// average, past 5 ms now and then, measured on a shared 2-core box); a GPU does not wait for
// it, so without this every step would be stretched by that lateness (TPOT 10% above the
// virtual clock's prediction). Simulated time then runs behind the wall clock and catches up,
// as steps already due run without sleeping. Later than this, the host itself is the
// bottleneck and the step starts when the driver runs.
const maxCatchUp = 100 * time.Millisecond

// catchUp is the start of the next step: due when the driver woke at most maxCatchUp after it.
func catchUp(now, due time.Time) time.Time {
	if !due.IsZero() && !now.Before(due) && now.Sub(due) <= maxCatchUp {
		return due
	}
	return now
}

// deliver hands the step's tokens to their streams in one pass, in the same order every
// step (admission order), so a stream's place in the pass, and so its delay, stays put.
func (d *driver) deliver(pending []delivery) {
	for _, p := range pending {
		p.st.push(p.ev)
		if p.st.sink != nil && p.st.sink.failed() {
			d.abort(p.st) // the client stopped reading or went away
		}
	}
}

// idle waits for new work, until, or the end of ctx.
func (d *driver) idle(ctx context.Context, until time.Time) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	woke := make(chan struct{})
	go func() {
		select {
		case <-d.wake:
			cancel()
		case <-ctx.Done():
		}
		close(woke)
	}()
	_ = d.clock.SleepUntil(ctx, until)
	cancel()
	<-woke
}

// scaledClock runs simulated time speed times faster than the wall clock.
type scaledClock struct {
	start time.Time
	speed float64
}

func newScaledClock(speed float64) *scaledClock { return &scaledClock{start: time.Now(), speed: speed} }

func (c *scaledClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.speed))
}

// SleepUntil waits until the simulated time t, on the wall clock's timer.
func (c *scaledClock) SleepUntil(ctx context.Context, t time.Time) error {
	return sim.WallClock{}.SleepUntil(ctx, time.Now().Add(time.Duration(float64(t.Sub(c.Now()))/c.speed)))
}
