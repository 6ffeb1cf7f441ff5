package loadgen

import (
	"context"
	"io"
	"time"
)

// replaySession is a trace session's turns still to send, each after the previous one ended.
type replaySession struct {
	busy     bool      // a turn is scheduled or under way
	lastDone time.Time // on the schedule
	waiting  []Arrival
}

// tracePlay is a trace's replay under way.
type tracePlay struct {
	*replayer
	src      ArrivalSource
	origin   time.Time
	sessions map[string]*replaySession
	queue    []*turn // due, waiting for a slot under the cap
	ahead    bool    // a timed arrival is in turns
	srcDone  bool
	srcErr   error
}

// runArrivals replays r.cfg.Arrivals open loop: each arrival is sent at its time (a session
// turn that waits on the previous one, its delay after that turn ended), whatever is in
// flight, up to MaxConcurrency at a time; an arrival that finds the cap full waits on the
// client and keeps its intended time, so the wait counts in its latency (TTFT and E2EL are
// from the intended time, and QueueDelay says how much of them was the wait). Pauses and the
// back-off stop the schedule, which then goes on where it was. NumRequests ends it after so
// many arrivals, Duration stops sending after so long; Run then waits for what is in flight.
func (r *Runner) runArrivals(ctx context.Context) error {
	t := &tracePlay{replayer: newReplayer(r), src: &limited{src: r.cfg.Arrivals, n: r.cfg.NumRequests},
		origin: r.clock.Now(), sessions: map[string]*replaySession{}}
	t.readAhead()
	err := t.play(ctx)
	r.drain()
	if _, failing := err.(*FailingError); !failing {
		if g := r.gate(r.clock.Now()); g.stop != nil {
			return g.stop // the last requests reached the threshold
		}
	}
	return err
}

func (t *tracePlay) play(ctx context.Context) error {
	for {
		t.collect()
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case t.over():
			return nil
		case t.srcDone && len(t.turns) == 0 && len(t.queue) == 0 && t.active == 0:
			return t.srcErr // what was read before a broken line is sent
		}
		held, g, err := t.hold(ctx, true)
		switch {
		case err != nil:
			return err // ctx's, or the back-off's stop
		case held:
			continue
		}
		now := t.r.clock.Now().Add(-t.shift)
		for d := t.due(now); d != nil; d = t.due(now) {
			if d.timed {
				t.ahead = false
				t.readAhead() // one timed arrival read ahead at a time: constant memory
			}
			t.queue = append(t.queue, d)
		}
		if cap := t.r.settings(false).maxConc; len(t.queue) > 0 && (cap <= 0 || t.active < cap) {
			t.start(ctx, g, t.queue[0])
			t.queue = t.queue[1:]
			continue
		}
		if err := t.wait(ctx); err != nil {
			return err
		}
	}
}

// start sends d at once, late by the time it waited for the cap.
func (t *tracePlay) start(ctx context.Context, g gate, d *turn) {
	r := t.r
	wall := d.at.Add(t.shift)
	r.lagNanos.Store(int64(r.clock.Now().Sub(wall)))
	t.send(ctx, g, d, false, func(res *Result) {
		res.Index, res.Turn, res.Intended = d.arrival.Index, d.arrival.Turn, wall
		*res = FromIntended(*res)
	})
}

// readAhead reads the trace until its next timed arrival is scheduled, queueing the session
// turns that wait on an earlier one.
func (t *tracePlay) readAhead() {
	for !t.ahead && !t.srcDone {
		a, err := t.src.Next()
		if err != nil {
			t.srcDone = true
			if err != io.EOF {
				t.srcErr = err
			}
			return
		}
		s := t.sessions[a.Session]
		if a.Session != "" && s == nil {
			s = &replaySession{}
			t.sessions[a.Session] = s
		}
		if a.AfterPrevious && s != nil && (s.busy || !s.lastDone.IsZero()) {
			s.waiting = append(s.waiting, a)
			t.followUp(s)
			continue
		}
		if s != nil {
			s.busy = true
		}
		t.ahead = true
		t.push(&turn{at: t.origin.Add(a.At), arrival: a, timed: true, session: s})
	}
}

// followUp schedules a session's next waiting turn once none of it is under way.
func (t *tracePlay) followUp(s *replaySession) {
	if s.busy || len(s.waiting) == 0 {
		return
	}
	a := s.waiting[0]
	s.waiting = s.waiting[1:]
	s.busy = true
	t.push(&turn{at: s.lastDone.Add(a.Delay), arrival: a, session: s})
}

// collect takes the requests that ended: their slots free, their sessions go on.
func (t *tracePlay) collect() {
	for _, e := range t.returned() {
		t.active--
		if s := e.t.session; s != nil {
			s.busy, s.lastDone = false, e.at.Add(-t.shift)
			t.followUp(s)
		}
	}
}

// convPlay is conversations under way.
type convPlay struct {
	*replayer
	cl    *ConversationLoad
	next  int // the next conversation's index
	under int // conversations under way
	sent  int
}

// runConversations plays r.cfg.Conversations: Concurrency conversations under way at once
// (a new one starts when one ends), each turn sent a think time after the previous answer
// with the history so far, as chat messages for a chat endpoint. Pauses and the back-off hold
// each next turn. NumRequests stops sending turns after so many, Duration after so long.
func (r *Runner) runConversations(ctx context.Context) error {
	c := &convPlay{replayer: newReplayer(r), cl: r.cfg.Conversations}
	err := c.play(ctx)
	r.drain()
	if _, failing := err.(*FailingError); !failing {
		if g := r.gate(r.clock.Now()); g.stop != nil {
			return g.stop // the last turns reached the threshold
		}
	}
	return err
}

func (c *convPlay) play(ctx context.Context) error {
	for {
		c.collect()
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.over() {
			return nil
		}
		c.startConversations()
		if c.under == 0 {
			return nil
		}
		held, g, err := c.hold(ctx, false)
		switch {
		case err != nil:
			return err // ctx's, or the back-off's stop
		case held:
			continue
		}
		if d := c.due(c.r.clock.Now()); d != nil {
			if n := c.r.cfg.NumRequests; n > 0 && c.sent >= n {
				return nil
			}
			index := c.sent
			c.sent++
			c.send(ctx, g, d, true, func(res *Result) {
				res.Index, res.Turn, res.Intended = index, d.arrival.Turn, res.Start
			})
			continue
		}
		if err := c.wait(ctx); err != nil {
			return err
		}
	}
}

// startConversations starts conversations while fewer than the concurrency are under way.
func (c *convPlay) startConversations() {
	for c.under < max(c.r.settings(false).concurrency, 1) && (c.cl.Count <= 0 || c.next < c.cl.Count) {
		d := NewDialogue(c.cl.Conversations.Conversation(c.next), c.next, c.cl.Dialogue)
		c.next++
		if c.nextTurn(d, c.r.clock.Now()) {
			c.under++
		}
	}
}

// nextTurn schedules d's next turn at at; false when d is over.
func (c *convPlay) nextTurn(d *Dialogue, at time.Time) bool {
	req, ok := d.Next()
	if !ok {
		return false
	}
	c.push(&turn{at: at, arrival: Arrival{Turn: req.Turn, Prompt: req.Prompt}, dialogue: d})
	return true
}

// collect takes the turns that ended: an answer's conversation goes on after a think time; a
// failed turn ends its conversation (there is no answer to go on from).
func (c *convPlay) collect() {
	for _, e := range c.returned() {
		c.active--
		d := e.t.dialogue
		if e.res.OK() {
			d.Answer(e.answer, e.res.OutputTokens)
			if c.nextTurn(d, e.at.Add(c.cl.Think.draw(d.cfg.Seed, d.index, e.t.arrival.Turn))) {
				continue
			}
		}
		c.under--
	}
}
