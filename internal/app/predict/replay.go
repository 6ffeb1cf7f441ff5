package predict

import (
	"container/heap"
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// benchReplay is Bench for a trace or conversations, as loadgen.Bench replays them on the
// wall clock: trace arrivals at their times (a session's next turn its delay after the
// previous finished), up to MaxConcurrency in flight with the wait counted in the latency;
// or MaxConcurrency conversations at once, each next turn a think time after the answer.
// The back-off stops the run as loadgen.Bench's does; it does not space the requests.
func (t *Target) benchReplay(ctx context.Context, cfg loadgen.BenchConfig) (loadgen.BenchRun, error) {
	p := &player{t: t, cfg: cfg, origin: t.now, live: map[*sim.Sequence]*replayed{}, sessions: map[string]*session{},
		backoff: loadgen.NewBackoff(cfg.Backoff, cfg.Seed)}
	switch {
	case cfg.Trace != nil:
		src, err := cfg.Trace()
		if err != nil {
			return loadgen.BenchRun{}, err
		}
		p.src, p.cap = src, cfg.MaxConcurrency
	default:
		cl := cfg.Conversations
		slots := cfg.MaxConcurrency
		if slots <= 0 {
			slots = cl.Count
		}
		switch {
		case cl.Count <= 0 && cfg.NumPrompts <= 0 && cfg.Duration <= 0:
			return loadgen.BenchRun{}, loadgen.ErrNoLimit
		case slots <= 0:
			return loadgen.BenchRun{}, loadgen.ErrUnboundedConcurrency
		}
		p.conv = cl
		for range slots {
			p.nextConversation(t.now)
		}
	}
	tally := loadgen.NewTally(cfg.Goodput)
	if cfg.Detailed {
		if err := tally.EnableDetail(cfg.DetailDir); err != nil {
			return loadgen.BenchRun{}, err
		}
	}
	p.sinks = append([]func(loadgen.Result){tally.Add}, cfg.Sinks...)
	run := loadgen.BenchRun{Tally: tally}
	err := p.play(ctx)
	run.Duration = t.now.Sub(p.origin)
	if errors.As(err, &run.Stopped) {
		err = nil
	}
	return run, err
}

// player is a replay under way on the target's clock.
type player struct {
	t      *Target
	cfg    loadgen.BenchConfig
	origin time.Time
	sinks  []func(loadgen.Result)
	live   map[*sim.Sequence]*replayed
	events events // requests due at a time
	due    []*replayed
	cap    int // the trace's MaxConcurrency (0: none)
	sent   int
	seq    int // orders events of equal time

	// A trace: the source, the next timed arrival read ahead, and each session's turns.
	src      loadgen.ArrivalSource
	ahead    *loadgen.Arrival
	srcDone  bool
	srcErr   error
	sessions map[string]*session

	// Conversations: the next conversation's index.
	conv     *loadgen.ConversationLoad
	nextConv int

	backoff *loadgen.Backoff
	stopped *loadgen.FailingError
}

// session is a trace session's turns still to send, each after the previous one finished.
type session struct {
	busy     bool // a turn is scheduled or in flight
	lastDone time.Time
	waiting  []loadgen.Arrival
}

// replayed is one request: what to send, and what follows when it ends.
type replayed struct {
	at       time.Time // intended send time
	timed    bool      // a trace arrival at its own time (not a session's follow-up)
	index    int
	turn     int
	prompt   loadgen.Prompt
	session  *session
	dialogue *loadgen.Dialogue // a conversation's turn
	conv     int
	res      loadgen.Result
	last     time.Time
}

type event struct {
	at  time.Time
	seq int
	req *replayed
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if !e[i].at.Equal(e[j].at) {
		return e[i].at.Before(e[j].at)
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

func (p *player) schedule(r *replayed) {
	p.seq++
	heap.Push(&p.events, event{at: r.at, seq: p.seq, req: r})
}

// readAhead reads the trace until the next timed arrival is known, scheduling session turns
// whose previous turn has finished and queueing the others.
func (p *player) readAhead() {
	for p.src != nil && p.ahead == nil && !p.srcDone {
		if n := p.cfg.NumPrompts; n > 0 && p.sent >= n {
			p.srcDone = true
			return
		}
		a, err := p.src.Next()
		if err != nil {
			p.srcDone = true
			if err != io.EOF {
				p.srcErr = err
			}
			return
		}
		p.sent++
		if a.Session == "" {
			p.ahead = &a
			continue
		}
		s := p.sessions[a.Session]
		if s == nil {
			s = &session{}
			p.sessions[a.Session] = s
		}
		if !a.AfterPrevious {
			p.ahead = &a
			s.busy = true
			continue
		}
		s.waiting = append(s.waiting, a)
		p.followUp(s)
	}
}

// followUp schedules a session's next waiting turn once nothing of it is pending.
func (p *player) followUp(s *session) {
	if s.busy || len(s.waiting) == 0 {
		return
	}
	a := s.waiting[0]
	s.waiting = s.waiting[1:]
	s.busy = true
	p.schedule(&replayed{at: s.lastDone.Add(a.Delay), index: a.Index, turn: a.Turn, prompt: a.Prompt, session: s})
}

// nextTimed moves the read-ahead timed arrival into the event queue.
func (p *player) nextTimed() {
	p.readAhead()
	if p.ahead == nil {
		return
	}
	a := *p.ahead
	p.ahead = nil
	r := &replayed{at: p.origin.Add(a.At), index: a.Index, turn: a.Turn, prompt: a.Prompt, timed: true}
	if a.Session != "" {
		r.session = p.sessions[a.Session]
	}
	p.schedule(r)
}

// nextConversation starts a conversation's first turn at at, if the count allows one.
func (p *player) nextConversation(at time.Time) {
	cl := p.conv
	if cl.Count > 0 && p.nextConv >= cl.Count {
		return
	}
	i := p.nextConv
	p.nextConv++
	d := loadgen.NewDialogue(cl.Conversations.Conversation(i), i, cl.Dialogue)
	p.nextTurn(d, i, at)
}

func (p *player) nextTurn(d *loadgen.Dialogue, conv int, at time.Time) {
	req, ok := d.Next()
	if !ok {
		p.nextConversation(at)
		return
	}
	p.schedule(&replayed{at: at, turn: req.Turn, prompt: req.Prompt, dialogue: d, conv: conv})
}

// allowed reports whether a request due at at may still be sent.
func (p *player) allowed(at time.Time) bool {
	if p.stopped != nil || (p.cfg.Duration > 0 && !at.Before(p.origin.Add(p.cfg.Duration))) {
		return false
	}
	return p.conv == nil || p.cfg.NumPrompts <= 0 || p.sent < p.cfg.NumPrompts
}

func (p *player) play(ctx context.Context) error {
	t := p.t
	if p.src != nil {
		p.nextTimed()
	}
	for {
		if ctx.Err() != nil {
			p.cancel()
			return ctx.Err()
		}
		p.arriveUntil(t.now.Add(1))
		if len(p.live) == 0 && len(p.due) == 0 && (p.events.Len() == 0 || !p.allowed(p.events[0].at)) {
			switch {
			case p.stopped != nil:
				return p.stopped
			case p.srcErr != nil:
				return p.srcErr
			}
			return nil
		}
		step := t.engine.Step(t.now)
		if step.Idle {
			next := step.NextReady
			if p.events.Len() > 0 && (next.IsZero() || p.events[0].at.Before(next)) {
				next = p.events[0].at
			}
			if next.IsZero() || !next.After(t.now) {
				next = t.now.Add(refusedCost)
			}
			t.now = next
			continue
		}
		p.arriveUntil(step.End)
		p.deliver(step)
		t.now = step.End
	}
}

// arriveUntil sends what is due before end, in time order; under the cap a request waits for
// a slot and keeps its intended time.
func (p *player) arriveUntil(end time.Time) {
	for p.events.Len() > 0 && p.events[0].at.Before(end) {
		e := heap.Pop(&p.events).(event)
		r := e.req
		if r.timed {
			p.nextTimed() // one timed arrival read ahead at a time: constant memory
		}
		if !p.allowed(r.at) {
			continue
		}
		if p.conv != nil {
			p.sent++
		}
		if len(p.due) == 0 && (p.cap == 0 || len(p.live) < p.cap) {
			p.start(r, r.at)
		} else {
			p.due = append(p.due, r)
		}
	}
	for len(p.due) > 0 && (p.cap == 0 || len(p.live) < p.cap) {
		r := p.due[0]
		p.due = p.due[1:]
		p.start(r, p.t.now)
	}
}

// start sends r at at.
func (p *player) start(r *replayed, at time.Time) {
	p.backoff.Starting(at)
	var ids []int
	switch {
	case p.t.chat && len(r.prompt.Messages) > 0:
		roles, contents := make([]string, len(r.prompt.Messages)), make([]string, len(r.prompt.Messages))
		for i, m := range r.prompt.Messages {
			roles[i], contents[i] = m.Role, m.Content
		}
		ids = serve.ChatIDs(roles, contents)
	default:
		ids = serve.PromptIDs(r.prompt.Text, p.t.chat)
	}
	if p.conv != nil {
		r.index = p.sent - 1
	}
	r.res = loadgen.Result{Index: r.index, Turn: r.turn, Intended: r.at, Start: at, PromptTokens: len(ids),
		ITLs: make([]time.Duration, 0, max(r.prompt.OutputTokens-1, 0))}
	seq, err := p.t.engine.Add(sim.Request{ID: "cmpl-" + strconv.Itoa(p.seq), Prompt: ids, MaxTokens: r.prompt.OutputTokens,
		IgnoreEOS: r.prompt.IgnoreEOS, Arrival: at})
	if err != nil {
		r.res.Status, r.res.Error, r.res.ErrorMessage = 400, loadgen.ErrHTTP400, "HTTP 400: "+err.Error()
		p.finish(r, at)
		return
	}
	seq.Tag = r
	p.live[seq] = r
}

// deliver hands the step's tokens to their requests at the step's end, one chunk each.
func (p *player) deliver(step *sim.StepResult) {
	end := step.End
	for _, out := range step.Outputs {
		r, ok := out.Seq.Tag.(*replayed)
		if !ok || p.live[out.Seq] != r {
			continue // a request of an earlier run, aborted
		}
		if chunk(&r.res, &r.last, out, end) {
			delete(p.live, out.Seq)
			p.finish(r, end)
		}
	}
}

// finish reports r, ended at at, and schedules what follows it: its session's next turn, or
// its conversation's after a think time.
func (p *player) finish(r *replayed, at time.Time) {
	p.backoff.Note(&r.res, at)
	if p.stopped == nil {
		p.stopped = p.backoff.Stopped()
	}
	res := loadgen.FromIntended(r.res)
	for _, sink := range p.sinks {
		sink(res)
	}
	switch {
	case r.session != nil:
		r.session.busy, r.session.lastDone = false, at
		p.followUp(r.session)
	case r.dialogue != nil && res.OK():
		r.dialogue.Answer("", res.OutputTokens)
		p.nextTurn(r.dialogue, r.conv, at.Add(p.conv.Think.Draw(p.conv.Dialogue.Seed, r.conv, r.turn)))
	case r.dialogue != nil:
		p.nextConversation(at) // a failed turn ends its conversation
	}
}

// cancel aborts the requests in flight, as a client that goes away does.
func (p *player) cancel() {
	for seq, r := range p.live {
		p.t.engine.Abort(seq, p.t.now)
		r.res.Error, r.res.ErrorMessage = loadgen.ErrCanceled, "canceled"
		delete(p.live, seq)
		p.finish(r, p.t.now)
	}
}
