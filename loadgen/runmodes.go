package loadgen

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// ConversationLoad is a multi-turn load: conversations played turn by turn, each next turn
// sent a think time after the previous answer arrived, with the history so far.
type ConversationLoad struct {
	Conversations Conversations
	Dialogue      DialogueConfig
	Think         ThinkTime
	// Count is the conversations to play (0: no limit); a conversation that starts is played
	// to its end unless the run's request count or duration ends it first.
	Count int
}

// maxAnswerBytes is the most of each answer a conversation keeps for its history.
const maxAnswerBytes = 256 << 10

func replayKind(trace, conversations bool) string {
	switch {
	case trace:
		return ReplayTrace
	case conversations:
		return ReplayConversations
	}
	return ""
}

// broadcast wakes every goroutine waiting for a change of the load or a finished request.
func (r *Runner) broadcast() {
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// changes is the channel the next broadcast closes.
func (r *Runner) changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// admit waits until the pause, PauseFor and the back-off let a request start, and returns how
// long it waited. While the back-off only probes, one request goes out when none is in flight.
func (r *Runner) admit(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	for {
		ch := r.changes()
		s := r.settings(false)
		g := r.gate(r.now())
		var wait <-chan time.Time
		switch {
		case g.stop != nil:
			return time.Since(t0), g.stop
		case s.paused || g.held:
		case g.wait > 0:
			wait = r.after(g.wait)
		case g.probe && r.inFlight.Load() > 0:
		default:
			r.starting(g, r.now())
			return time.Since(t0), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(t0), ctx.Err()
		case <-ch:
		case <-wait:
		}
	}
}

// slot waits until fewer than limit() requests (or conversations) are under way.
func (r *Runner) slot(ctx context.Context, active *atomic.Int64, limit func(settings) int) error {
	for {
		ch := r.changes()
		if n := limit(r.settings(false)); n <= 0 || int(active.Load()) < n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// pausedClock is a replay's clock: the wall clock less the time the load spent paused or
// held back, so that a pause shifts the rest of the schedule instead of bursting the arrivals
// it held when it ends, as the open loop's schedule restarts after one.
type pausedClock struct {
	r     *Runner
	shift atomic.Int64 // nanoseconds spent held
}

func (c *pausedClock) Now() time.Time { return time.Now().Add(-time.Duration(c.shift.Load())) }

// wall is schedule time t on the wall clock.
func (c *pausedClock) wall(t time.Time) time.Time { return t.Add(time.Duration(c.shift.Load())) }

func (c *pausedClock) SleepUntil(ctx context.Context, t time.Time) error {
	for {
		ch := c.r.changes()
		s := c.r.settings(false)
		g := c.r.gate(c.r.now())
		if s.paused || g.held || g.wait > 0 || g.stop != nil {
			// Held: the schedule stands still until the load may go on.
			held, err := c.r.admitHeld(ctx, s, g, ch)
			c.shift.Add(int64(held))
			if err != nil {
				return err
			}
			continue
		}
		d := time.Until(c.wall(t))
		if d <= 0 {
			return ctx.Err()
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-ch: // a pause may have begun: look again
		case <-timer.C:
		}
		timer.Stop()
	}
}

// admitHeld waits for one change while the load is held and returns how long that took.
func (r *Runner) admitHeld(ctx context.Context, s settings, g gate, ch <-chan struct{}) (time.Duration, error) {
	t0 := time.Now()
	if g.stop != nil {
		return 0, g.stop
	}
	var wait <-chan time.Time
	if g.wait > 0 && !s.paused && !g.held {
		wait = r.after(g.wait)
	}
	select {
	case <-ctx.Done():
		return time.Since(t0), ctx.Err()
	case <-ch:
	case <-wait:
	}
	return time.Since(t0), nil
}

// limited ends a source after n arrivals (0: no limit).
type limited struct {
	src  ArrivalSource
	n, i int
}

func (l *limited) Next() (Arrival, error) {
	if l.n > 0 && l.i >= l.n {
		return Arrival{}, io.EOF
	}
	l.i++
	return l.src.Next()
}

// withDuration bounds ctx by the run's Duration, if any.
func (r *Runner) withDuration(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.cfg.Duration > 0 {
		return context.WithTimeout(ctx, r.cfg.Duration)
	}
	return context.WithCancel(ctx)
}

// runArrivals replays r.cfg.Arrivals open loop: each arrival is sent at its time (a session
// turn that waits on the previous one, its delay after that turn finished), whatever is in
// flight, up to MaxConcurrency at a time; an arrival that finds the cap full waits on the
// client and keeps its intended time, so the wait counts in its latency (TTFT and E2EL are
// from the intended time, and QueueDelay says how much of them was the wait). Pauses and the
// back-off stop the schedule, which then goes on where it was. NumRequests ends it after so
// many arrivals, Duration stops sending after so long; Run then waits for what is in flight.
func (r *Runner) runArrivals(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	sendCtx := ctx
	ctx, cancel := r.withDuration(ctx)
	defer cancel()
	clock := &pausedClock{r: r}
	var active atomic.Int64
	var failed atomic.Pointer[FailingError]
	capOf := func(s settings) int { return s.maxConc }
	err := Replay(ctx, &limited{src: r.cfg.Arrivals, n: r.cfg.NumRequests}, clock, func(ctx context.Context, a Arrival, intended time.Time, finished func()) {
		if r.slot(ctx, &active, capOf) != nil {
			finished()
			return
		}
		if _, err := r.admit(ctx); err != nil {
			if fe, ok := err.(*FailingError); ok {
				failed.Store(fe)
				cancel()
			}
			finished()
			return
		}
		s := r.settings(true)
		active.Add(1)
		r.inFlight.Add(1)
		r.started.Add(1)
		wall := clock.wall(intended)
		r.lagNanos.Store(int64(time.Since(wall)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := r.do(sendCtx, a.Prompt, s, nil)
			res.Index, res.Turn, res.Intended = a.Index, a.Turn, wall
			res = FromIntended(res)
			finished()
			active.Add(-1)
			r.finish(res)
		}()
	})
	wg.Wait()
	if fe := failed.Load(); fe != nil {
		return fe
	}
	if g := r.gate(r.now()); g.stop != nil {
		return g.stop // the last requests reached the threshold
	}
	if err != nil && sendCtx.Err() == nil && ctx.Err() != nil {
		return nil // the duration ran out
	}
	return err
}

// do sends one request under settings s, following it when s holds a watch; sink, when set,
// also receives its text.
func (r *Runner) do(ctx context.Context, p Prompt, s settings, sink TokenSink) Result {
	var watch TokenSink = sink
	if s.watch != nil {
		s.watch.begin(p)
		watch = teeSink{s.watch, sink}
	}
	var itl func(time.Duration)
	if r.cfg.ITL != nil {
		itl = func(d time.Duration) { r.cfg.ITL(s.epoch, d) }
	}
	res := r.client.DoITL(ctx, p, watch, itl)
	res.Epoch = s.epoch
	if s.watch != nil {
		s.watch.end(res)
	}
	return res
}

// finish counts a finished request and hands it to the sinks.
func (r *Runner) finish(res Result) {
	r.mu.Lock()
	r.breaker.note(&res, r.now())
	r.mu.Unlock()
	r.inFlight.Add(-1)
	r.finished.Add(1)
	for _, sink := range r.cfg.Sinks {
		sink(res)
	}
	r.broadcast()
}

type teeSink struct{ a, b TokenSink }

func (t teeSink) Token(text string, at time.Time) {
	t.a.Token(text, at)
	if t.b != nil {
		t.b.Token(text, at)
	}
}

// runConversations plays r.cfg.Conversations: Concurrency conversations under way at once
// (a new one starts when one ends), each turn sent a think time after the previous answer
// with the history so far, as chat messages for a chat endpoint. Pauses and the back-off hold
// each next turn. NumRequests stops sending turns after so many, Duration after so long.
func (r *Runner) runConversations(ctx context.Context) error {
	cl := r.cfg.Conversations
	var wg sync.WaitGroup
	defer wg.Wait()
	sendCtx := ctx
	ctx, cancel := r.withDuration(ctx)
	defer cancel()
	var active, sent atomic.Int64
	var failed atomic.Pointer[FailingError]
	var clock WallClock
	send := func(ctx context.Context, req TurnRequest, intended time.Time) (Result, string) {
		if _, err := r.admit(ctx); err != nil {
			if fe, ok := err.(*FailingError); ok {
				failed.Store(fe)
				cancel()
			}
			return Result{Error: ErrCanceled}, ""
		}
		if n := sent.Add(1); r.cfg.NumRequests > 0 && n > int64(r.cfg.NumRequests) {
			cancel()
			return Result{Error: ErrCanceled}, ""
		}
		s := r.settings(true)
		r.inFlight.Add(1)
		r.started.Add(1)
		answer := NewAnswerText(maxAnswerBytes)
		res := r.do(sendCtx, req.Prompt, s, answer)
		res.Index, res.Turn, res.Intended = int(sent.Load())-1, req.Turn, res.Start
		r.finish(res)
		if answer.Truncated() {
			return res, "" // a cut answer would not be the history the server saw: a stand-in
		}
		return res, answer.String()
	}
	concurrency := func(s settings) int { return max(s.concurrency, 1) }
	for i := 0; cl.Count <= 0 || i < cl.Count; i++ {
		if r.slot(ctx, &active, concurrency) != nil {
			break
		}
		d := NewDialogue(cl.Conversations.Conversation(i), i, cl.Dialogue)
		active.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = PlayConversation(ctx, d, clock, cl.Think, send)
			active.Add(-1)
			r.broadcast()
		}()
	}
	wg.Wait()
	if fe := failed.Load(); fe != nil {
		return fe
	}
	if g := r.gate(r.now()); g.stop != nil {
		return g.stop
	}
	return sendCtx.Err()
}
