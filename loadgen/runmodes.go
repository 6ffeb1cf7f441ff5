package loadgen

import (
	"container/heap"
	"context"
	"io"
	"sync"
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

// finish counts a finished request and hands it to the sinks.
func (r *Runner) finish(res Result) {
	r.mu.Lock()
	r.breaker.note(&res, r.clock.Now())
	r.mu.Unlock()
	r.inFlight.Add(-1)
	r.finished.Add(1)
	for _, sink := range r.cfg.Sinks {
		sink(res)
	}
}

type teeSink struct{ a, b TokenSink }

func (t teeSink) Token(text string, at time.Time) {
	t.a.Token(text, at)
	if t.b != nil {
		t.b.Token(text, at)
	}
}

// turn is one request a replay will send: when it is due, what it is and what follows it.
type turn struct {
	at       time.Time // intended, on the replay's schedule
	seq      int       // orders turns due at the same time
	arrival  Arrival
	timed    bool // a trace's arrival at its own time (not a session's follow-up)
	session  *replaySession
	dialogue *Dialogue
}

type turnHeap []*turn

func (h turnHeap) Len() int { return len(h) }
func (h turnHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h turnHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *turnHeap) Push(x any)   { *h = append(*h, x.(*turn)) }
func (h *turnHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ended is a finished request handed back to the scheduler's goroutine.
type ended struct {
	t      *turn
	res    Result
	answer string
	at     time.Time // when it ended, on the Runner's clock
}

// replayer is what a trace's replay and conversations share, on Run's goroutine: turns due
// at times, the requests under way and those that came back.
type replayer struct {
	r      *Runner
	turns  turnHeap
	seq    int
	active int
	// shift is how long the load was held (paused, or by the back-off): a trace's schedule
	// stands still meanwhile instead of bursting the arrivals it held when it goes on.
	shift time.Duration
	end   time.Time // when the Duration runs out (zero: never)

	mu   sync.Mutex
	back []ended
}

func newReplayer(r *Runner) *replayer {
	p := &replayer{r: r}
	if r.cfg.Duration > 0 {
		p.end = r.clock.Now().Add(r.cfg.Duration)
	}
	return p
}

func (p *replayer) push(t *turn) {
	p.seq++
	t.seq = p.seq
	heap.Push(&p.turns, t)
}

// due pops the next turn if it is due by now (on the schedule), nil otherwise.
func (p *replayer) due(now time.Time) *turn {
	if len(p.turns) == 0 || p.turns[0].at.After(now) {
		return nil
	}
	return heap.Pop(&p.turns).(*turn)
}

// over reports whether the Duration has run out.
func (p *replayer) over() bool { return !p.end.IsZero() && !p.r.clock.Now().Before(p.end) }

// returned takes the requests that ended since the last call.
func (p *replayer) returned() []ended {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.back
	p.back = nil
	return b
}

// hold waits once while the pause, PauseFor or the back-off hold the load (shifting the
// schedule by the wait when shift is set), and reports whether it did; otherwise it returns
// the gate a request may start under.
func (p *replayer) hold(ctx context.Context, shift bool) (bool, gate, error) {
	r := p.r
	now := r.clock.Now()
	s, g := r.settings(false), r.gate(now)
	var until time.Time
	switch {
	case g.stop != nil:
		return false, g, g.stop
	case s.paused || g.held:
	case g.wait > 0:
		until = now.Add(g.wait)
	case g.probe && r.inFlight.Load() > 0:
		shift = false // the probe's answer is awaited; the schedule goes on
	default:
		return false, g, nil
	}
	err := r.clock.Wait(ctx, earliest(until, p.end), r.kick)
	if shift {
		p.shift += r.clock.Now().Sub(now)
	}
	return true, g, err
}

// wait waits for the next turn's time (on the Runner's clock) or for a request to end.
func (p *replayer) wait(ctx context.Context) error {
	var next time.Time
	if len(p.turns) > 0 {
		next = p.turns[0].at.Add(p.shift)
	}
	return p.r.clock.Wait(ctx, earliest(next, p.end), p.r.kick)
}

// send starts t's prompt under g; fill completes its Result, and the Result comes back to
// returned with the answer's text when keep is set.
func (p *replayer) send(ctx context.Context, g gate, t *turn, keep bool, fill func(*Result)) {
	r := p.r
	r.starting(g, r.clock.Now())
	s := r.settings(true)
	if g.cut != nil {
		s.cut = g.cut
	}
	var itl func(time.Duration)
	if r.cfg.ITL != nil {
		itl = func(d time.Duration) { r.cfg.ITL(s.epoch, d) }
	}
	var answer *AnswerText
	var sink TokenSink
	if keep {
		answer = NewAnswerText(maxAnswerBytes)
		sink = answer
	}
	p.active++
	r.launch(ctx, t.arrival.Prompt, s, sink, itl, func(res *Result) {
		fill(res)
		e := ended{t: t, res: *res, at: r.clock.Now()}
		if answer != nil && !answer.Truncated() {
			e.answer = answer.String() // a cut answer would not be the history the server saw
		}
		p.mu.Lock()
		p.back = append(p.back, e)
		p.mu.Unlock()
	})
}
