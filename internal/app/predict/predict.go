// Package predict runs vllmtop's benchmarks against the simulated vLLM engine on simulated
// time: the engine and the client share one virtual clock, nothing sleeps, and a run's numbers
// are what the simulated GPU would give, in a fraction of the time (not wall time compressed,
// as --sim-speed gives). A Target is a loadgen.Transport: loadgen's scheduler drives it as it
// drives a server over HTTP (every bench flag works the same), and it only turns each request
// into the engine's timed chunks, bypassing HTTP and SSE.
//
// A Target is not safe for concurrent use: one run at a time, as one benchmark client makes.
package predict

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// refusedCost is what a refused request (HTTP 400: too long for max_model_len) costs the
// client, as a round trip would, so that a loop of refusals still moves time on.
const refusedCost = time.Millisecond

// Target is one simulated server on simulated time. Its engine lives across runs, as a server
// does across the runs of a sweep (its prefix cache included), and its clock only moves on.
type Target struct {
	plan   *serve.Plan
	chat   bool
	engine *sim.Engine
	clock  *loadgen.VirtualClock
	live   map[*sim.Sequence]*request
	// contexts counts the live requests of each client context: a step checks these few
	// contexts, not every request, for a client that went away.
	contexts map[context.Context]int
	stepping bool // a step (or a wait for a queued request) is on the clock
	ids      int
	tokens   atomic.Int64 // read by a live view's Stats from its own goroutine
	refused  time.Time    // when the last request was refused at once
	// path and body, when set, send each request through the server's front end
	// (serve.Plan.Admit) as the client would send it: see Admit.
	path   string
	body   func(loadgen.Prompt) ([]byte, error)
	header func(loadgen.Prompt) http.Header
	// keepText collects each response's text, as loadgen.ClientConfig.KeepText does.
	keepText bool
	// timeout, when set, ends a request still going that long after it started, as the HTTP
	// client's deadline does (--request-timeout); due holds the requests in the order of their
	// deadlines (their starts), and one timer waits for the first.
	timeout time.Duration
	due     []*request
	armed   bool
}

// Timeout gives every request a deadline of d after its start (loadgen.ClientConfig's
// RequestTimeout); a request past it ends as the client's does, "request deadline exceeded".
func (t *Target) Timeout(d time.Duration) { t.timeout = d }

// KeepText makes each result carry the text the simulated server would have streamed
// (--save-detailed's generated_texts).
func (t *Target) KeepText() { t.keepText = true }

// request is one request in flight: its result as the client measures it.
type request struct {
	text    *strings.Builder // with keepText
	sink    loadgen.TokenSink
	pending int // its engine sequences still running: one a prompt and choice
	outputs int // the output tokens of those that finished
	ended   bool
	expires time.Time       // with a timeout
	seqs    []*sim.Sequence // with a timeout: its engine sequences
	ctx     context.Context
	res     loadgen.Result
	timer   loadgen.RequestTimer
	done    func(loadgen.Result)
}

// New starts a target for the plan's server, whose clients send to endpoint
// (loadgen.EndpointCompletions or loadgen.EndpointChat). Its clock starts at the wall clock's
// now, so that the times a run writes (a ramp's rps_change_events) read as the run would
// have gone had it started then; only the durations after it are simulated.
func New(plan *serve.Plan, endpoint string) *Target {
	t := &Target{plan: plan, chat: endpoint == loadgen.EndpointChat, engine: plan.NewEngine(),
		clock: loadgen.NewVirtualClock(time.Now().Truncate(time.Millisecond)), live: map[*sim.Sequence]*request{},
		contexts: map[context.Context]int{}}
	t.clock.OnIdle(t.step)
	return t
}

// Admit makes the target answer each request as the simulated server would over HTTP: header
// and body build what the client sends for a prompt to path (its key, model, parameters and
// extra body), and the server's front end checks it (serve.Plan.Admit). A request the server
// would refuse (no key, a path it does not serve, a parameter out of range, a model it does
// not serve) is refused with its status and message, and the engine gets what the body asks
// for: every prompt of a list and n choices of each, with their max_tokens, min_tokens,
// ignore_eos and priority. Without it the target takes the prompt's own
// lengths, as a client of vllmtop's that sets no other parameter would send them.
func (t *Target) Admit(path string, header func(loadgen.Prompt) http.Header, body func(loadgen.Prompt) ([]byte, error)) {
	t.path, t.header, t.body = path, header, body
}

// Model is the first model card the server would list at /v1/models.
func (t *Target) Model() loadgen.ModelCard {
	return loadgen.ModelCard{ID: t.plan.ServedModel(), Root: t.plan.Model(), MaxModelLen: t.plan.MaxModelLen()}
}

// Models are the model cards the server would list at /v1/models: its served names, then its
// LoRA adapters.
func (t *Target) Models() []loadgen.ModelCard {
	var cards []loadgen.ModelCard
	for _, m := range t.plan.Models() {
		cards = append(cards, loadgen.ModelCard{ID: m.ID, Root: m.Root, MaxModelLen: m.MaxModelLen, Request: m.ID})
	}
	return cards
}

// Plan is the server the target simulates.
func (t *Target) Plan() *serve.Plan { return t.plan }

// Counters are the simulated engine's counters since it started, as its /metrics counts them
// (prefix-cache queries and hits among them).
func (t *Target) Counters() sim.Counters { return t.engine.Counters() }

// Now is the target's simulated time.
func (t *Target) Now() time.Time { return t.clock.Now() }

// Clock is the target's simulated time, for a loadgen.Runner that drives it.
func (t *Target) Clock() *loadgen.VirtualClock { return t.clock }

// TokenStrings and PromptTokens answer as the server's /tokenize would (loadgen.Tokenizer).
func (t *Target) TokenStrings(_ context.Context, text string) ([]string, error) {
	return serve.TokenStrings(text), nil
}

// PromptTokens is the token count of text as a prompt of the target's endpoint.
func (t *Target) PromptTokens(_ context.Context, text string) (int, error) {
	return len(serve.PromptIDs(text, t.chat)), nil
}

// ChatForm and BarePromptTokens let the random dataset size a chat prompt as vLLM's does.
func (t *Target) ChatForm() bool { return t.chat }

// BarePromptTokens is the token count of text as a completions prompt.
func (t *Target) BarePromptTokens(_ context.Context, text string) (int, error) {
	return len(serve.PromptIDs(text, false)), nil
}

// Bench makes one run as loadgen.Bench makes it against a server, on simulated time.
func (t *Target) Bench(ctx context.Context, cfg loadgen.BenchConfig) (loadgen.BenchRun, error) {
	cfg.Transport, cfg.Clock = t, t.clock
	return loadgen.Bench(ctx, nil, cfg)
}

// TokensReceived counts the output chunks delivered so far (loadgen.Transport).
func (t *Target) TokensReceived() int64 { return t.tokens.Load() }

// Start adds p to the engine at the clock's time (loadgen.Transport); done is called from the
// clock's timers. A prompt the engine refuses fails as the server's HTTP 400 would.
func (t *Target) Start(ctx context.Context, p loadgen.Prompt, sink loadgen.TokenSink, itl func(time.Duration), done func(loadgen.Result)) {
	now := t.clock.Now()
	req := &request{ctx: ctx, done: done, sink: sink, res: loadgen.Result{Start: now}}
	req.timer = loadgen.NewRequestTimer(&req.res, p.OutputTokens, itl)
	if t.keepText || sink != nil {
		req.text = &strings.Builder{}
	}
	ins := []sim.Request{{MaxTokens: p.OutputTokens, IgnoreEOS: p.IgnoreEOS}}
	if t.body != nil {
		a, refusal := t.admit(p)
		if refusal != nil {
			t.refuse(req, refusal.Status, refusal.Body)
			return
		}
		ins = ins[:0]
		for i, prompt := range a.Prompts {
			req.res.PromptTokens += len(prompt)
			for c := range a.N {
				ins = append(ins, sim.Request{Prompt: prompt, MaxTokens: a.MaxTokens[i], MinTokens: a.MinTokens, IgnoreEOS: a.IgnoreEOS, N: a.N, Choice: c, Priority: a.Priority})
			}
		}
	} else {
		ins[0].Prompt = t.promptIDs(p)
		req.res.PromptTokens = len(ins[0].Prompt)
	}
	t.ids++
	var seqs []*sim.Sequence
	for _, in := range ins {
		in.ID, in.Arrival = "cmpl-"+strconv.Itoa(t.ids), now
		seq, err := t.engine.Add(in)
		if err != nil {
			t.engine.AbortMany(seqs, now)
			t.refuse(req, http.StatusBadRequest, []byte(err.Error()))
			return
		}
		seqs = append(seqs, seq)
	}
	for _, seq := range seqs {
		seq.Tag = req
		t.live[seq] = req
		t.contexts[ctx]++
	}
	req.pending = len(seqs)
	if t.timeout > 0 {
		req.expires, req.seqs = now.Add(t.timeout), seqs
		t.due = append(t.due, req)
		t.armDeadline()
	}
}

// armDeadline sets the one deadline timer for the first request in due still going, dropping
// those that ended.
func (t *Target) armDeadline() {
	for len(t.due) > 0 && t.due[0].ended {
		t.due[0] = nil
		t.due = t.due[1:]
	}
	if len(t.due) == 0 || t.armed {
		return
	}
	t.armed = true
	t.clock.At(t.due[0].expires, t.expire)
}

// expire ends the requests whose deadline has come, as the client's timeout ends them: their
// sequences are aborted (the server sees the connection close) and what they received stays.
func (t *Target) expire() {
	t.armed = false
	now := t.clock.Now()
	for len(t.due) > 0 && !t.due[0].expires.After(now) {
		req := t.due[0]
		t.due[0] = nil
		t.due = t.due[1:]
		if req.ended {
			continue
		}
		var seqs []*sim.Sequence // in the order they were added
		for _, seq := range req.seqs {
			if t.live[seq] == req {
				seqs = append(seqs, seq)
			}
		}
		t.engine.AbortMany(seqs, now)
		for _, seq := range seqs {
			t.finished(seq, req)
		}
		req.ended = true
		req.res.Error, req.res.ErrorMessage = loadgen.ErrTimeout, "request deadline exceeded"
		req.timer.End(now)
		req.done(req.res)
	}
	t.armDeadline()
}

// finished forgets a request that ended or was aborted.
func (t *Target) finished(seq *sim.Sequence, req *request) {
	delete(t.live, seq)
	if t.contexts[req.ctx]--; t.contexts[req.ctx] <= 0 {
		delete(t.contexts, req.ctx)
	}
}

// abortCanceled aborts, in one pass, the requests whose client went away, in the order they
// were added, and ends them as the client sees a canceled request.
func (t *Target) abortCanceled(now time.Time) {
	var gone []context.Context
	for c := range t.contexts {
		if c.Err() != nil {
			gone = append(gone, c)
		}
	}
	if len(gone) == 0 {
		return
	}
	var seqs []*sim.Sequence
	for seq, req := range t.live {
		if slices.Contains(gone, req.ctx) {
			seqs = append(seqs, seq)
		}
	}
	slices.SortFunc(seqs, func(a, b *sim.Sequence) int {
		if a.AddedBefore(b) {
			return -1
		}
		return 1
	})
	t.engine.AbortMany(seqs, now)
	for _, seq := range seqs {
		req := seq.Tag.(*request)
		t.finished(seq, req)
		if req.ended {
			continue // another choice of it ended it
		}
		req.ended = true
		req.res.Error, req.res.ErrorMessage = loadgen.ErrCanceled, "canceled"
		req.timer.End(now)
		req.done(req.res)
	}
}

// refuse fails req as the server's HTTP 400 would: at once, so that the back-off sees it before
// the next request starts, as it would of a refusal that comes back within the round trip;
// but a second refusal at the same moment takes refusedCost, so that a load of refusals with
// the back-off off still moves time on.
func (t *Target) refuse(req *request, status int, body []byte) {
	loadgen.FailStatus(&req.res, status, body)
	now := req.res.Start
	if !now.Equal(t.refused) {
		t.refused = now
		req.done(req.res)
		return
	}
	t.clock.At(now.Add(refusedCost), func() {
		req.timer.End(now.Add(refusedCost))
		req.done(req.res)
	})
}

// admit sends p through the server's front end as the client's body would reach it.
func (t *Target) admit(p loadgen.Prompt) (serve.Admission, *serve.Refusal) {
	b, err := t.body(p)
	if err != nil {
		return serve.Admission{}, &serve.Refusal{Status: http.StatusBadRequest, Body: []byte(err.Error())}
	}
	return t.plan.Admit(t.path, t.header(p), b)
}

func (t *Target) promptIDs(p loadgen.Prompt) []int {
	if !t.chat || len(p.Messages) == 0 {
		return serve.PromptIDs(p.Text, t.chat)
	}
	roles, contents := make([]string, len(p.Messages)), make([]string, len(p.Messages))
	for i, m := range p.Messages {
		roles[i], contents[i] = m.Role, m.Content
	}
	return serve.ChatIDs(roles, contents)
}

// step runs when the scheduler waits, so everything due at this moment has reached the
// engine: it aborts the requests whose client went away and starts the engine's next step,
// whose tokens the clock delivers at its end.
func (t *Target) step() {
	now := t.clock.Now()
	t.abortCanceled(now)
	if t.stepping || !t.engine.HasWork() {
		return
	}
	st := t.engine.Step(now)
	t.stepping = true
	switch {
	case !st.Idle:
		t.clock.At(st.End, func() { t.stepping = false; t.deliver(st) })
	case st.NextReady.After(now):
		t.clock.At(st.NextReady, func() { t.stepping = false })
	default:
		t.clock.At(now.Add(refusedCost), func() { t.stepping = false }) // nothing can run: time still moves
	}
}

// deliver hands the step's tokens to their requests when the API server's loop has streamed
// them: at the step's end where the loop costs nothing, else chunk by chunk after the work
// the loop had queued (sim.Engine.Streamed).
func (t *Target) deliver(st *sim.StepResult) {
	start, each := t.engine.Streamed(st.End)
	if each == 0 {
		t.deliverAt(st.Outputs, st.End)
		return
	}
	outs := make([]sim.Output, len(st.Outputs)) // the engine reuses its result and token buffer
	for i, out := range st.Outputs {
		out.Tokens = append([]int(nil), out.Tokens...)
		outs[i] = out
	}
	for len(outs) > 0 {
		n := min(len(outs), sim.OutputChunk)
		batch := outs[:n]
		start = start.Add(time.Duration(n) * each)
		at := start
		t.clock.At(at, func() { t.deliverAt(batch, at) })
		outs = outs[n:]
	}
}

// deliverAt hands outputs to their requests at one moment, one chunk each.
func (t *Target) deliverAt(outs []sim.Output, at time.Time) {
	for _, out := range outs {
		req, ok := out.Seq.Tag.(*request)
		if !ok || t.live[out.Seq] != req {
			continue // aborted
		}
		t.tokens.Add(1)
		last := chunk(req, out, at)
		if out.Finished {
			t.finished(out.Seq, req)
		}
		if last {
			req.ended = true
			req.done(req.res)
		}
	}
}

// chunk records one step's output of one of a request's sequences, delivered at end as one
// chunk, as a client measures it; it reports whether the request finished (its last sequence
// did), with the engine's count of its output as the server's usage.
func chunk(req *request, out sim.Output, end time.Time) bool {
	req.timer.Content(end, len(out.Tokens))
	if req.text != nil && len(out.Tokens) > 0 {
		n := req.text.Len()
		for _, id := range out.Tokens {
			loadgen.KeepText(req.text, sim.TokenText(id))
		}
		if req.sink != nil {
			req.sink.Token(req.text.String()[n:], end)
		}
	}
	if !out.Finished {
		return false
	}
	req.outputs += out.Seq.Outputs
	if req.pending--; req.pending > 0 {
		return false
	}
	if req.text != nil {
		req.res.Text = req.text.String()
	}
	req.res.FinishReason, req.res.Status = string(out.Reason), 200
	req.timer.Usage(0, req.outputs)
	req.timer.End(end)
	return true
}
