package sim

import (
	"fmt"
	"math"
	"time"
)

// FinishReason is why a request ended, with vLLM's label values.
type FinishReason string

const (
	FinishStop   FinishReason = "stop"
	FinishLength FinishReason = "length"
	FinishAbort  FinishReason = "abort"
)

// Request is what the API server hands the engine.
type Request struct {
	ID        string
	Prompt    []int // token ids
	MaxTokens int   // at least 1; prompt + MaxTokens must fit in max_model_len
	MinTokens int
	IgnoreEOS bool
	// N is the n parameter of the API request this sequence is one choice of (1 if unset);
	// Choice is which (0 first). vLLM processes a request's input once and fans its choices
	// out, so only the first pays the API server's input processing.
	N, Choice int
	// Priority orders the waiting queue under --scheduling-policy priority (lower first).
	Priority int
	// Arrival is when the API server received the request; the scheduler sees it after the
	// host profile's input cost (parsing, tokenization).
	Arrival time.Time
}

// Times are the timestamps of one request's life, in the engine's time.
type Times struct {
	Arrival        time.Time // received by the API server
	Queued         time.Time // reached the engine (Arrival + host input cost)
	TakenIn        time.Time // taken into the scheduler's queue, at the first scheduling after Queued
	FirstScheduled time.Time // chosen by the scheduler for the first time
	FirstToken     time.Time
	LastToken      time.Time
	Finished       time.Time
	// Reported is when the API server's loop took up the request's last output, the end of
	// its latency as vLLM's metrics count it (Engine.Streamed); zero until then.
	Reported time.Time
}

// Sequence is a request inside the engine. Its exported fields may be read by the engine's
// owner between calls; Tag is the owner's own (e.g. the stream to deliver tokens to).
type Sequence struct {
	Request
	Tag any

	Times        Times
	Outputs      int // tokens generated so far
	Preemptions  int
	CachedTokens int // prompt tokens served from the prefix cache at the last scheduling
	Reason       FinishReason

	seqNo    uint64
	target   int            // output length this request will produce
	eosStop  bool           // the target was drawn (an EOS), not the max_tokens cap
	computed int            // tokens with KV in the cache
	blocks   int            // block positions held in the full-attention groups, cached ones included
	extra    int            // pool blocks held in sliding-window and mamba groups
	cached   []*cachedBlock // leading prompt blocks held through the prefix cache
	hashes   []uint64       // hash of each full prompt block
	rng      uint64
	state    seqState
	wasRun   bool
}

type seqState uint8

const (
	stateWaiting seqState = iota
	stateRunning
	stateDone
)

// Running reports whether the sequence is in the running batch (not waiting, not ended).
func (s *Sequence) Running() bool { return s.state == stateRunning }

// Finished reports whether the sequence ended (finished or aborted).
func (s *Sequence) Finished() bool { return s.state == stateDone }

// numTokens is prompt plus generated tokens: what the KV cache must hold for the next step.
func (s *Sequence) numTokens() int { return len(s.Prompt) + s.Outputs }

// Output is what one request generated in a step: one token, or with speculative decoding
// the accepted draft tokens and the bonus token.
type Output struct {
	Seq    *Sequence
	Token  int           // the first of Tokens
	Tokens []int         // every token of this step, in order (valid until the next Step)
	Index  int           // index of Tokens[0] among the request's outputs (0 for the first token)
	Gap    time.Duration // time since the request's previous tokens (0 for the first)
	// Drafted and Accepted are the draft tokens this step verified for the request and how
	// many of them it accepted (both 0 without speculative decoding).
	Drafted, Accepted int
	Finished          bool
	Reason            FinishReason
}

// StepResult reports one engine step. Its slices are reused by the next Step: copy what you keep.
type StepResult struct {
	// KVEvictions are the sampled prefix-cache blocks evicted in the step (--kv-cache-metrics).
	KVEvictions []KVEviction
	Start       time.Time
	Duration    time.Duration // zero when nothing was scheduled
	End         time.Time
	// Idle is true when nothing could be scheduled; NextReady is then when the earliest waiting
	// request becomes visible to the scheduler (zero if none is waiting).
	Idle      bool
	NextReady time.Time

	Outputs  []Output
	Finished []*Sequence // sequences that ended in this step (not aborts)
	// Streamed is when the API server's loop took up the step's outputs, where vLLM stamps
	// its time-to-first-token and latency metrics: the step's end unless the loop was busy
	// (Engine.Streamed; zero until it is called).
	Streamed time.Time

	// Speculative decoding in this step: requests that verified a draft, draft tokens
	// verified, tokens accepted, and accepted tokens by draft position.
	SpecDrafts, SpecDraftTokens, SpecAccepted int
	SpecAcceptedPerPos                        []int

	ScheduledSeqs    int
	ScheduledTokens  int // prefill + decode tokens computed
	PrefillTokens    int // of which prompt (or recomputed) tokens
	DecodeTokens     int
	Preempted        int
	PrefixQueries    int // prompt tokens looked up in the prefix cache
	PrefixHits       int
	PromptsCompleted int // requests whose prefill finished in this step (their first token)
	PromptTokens     int // the prompt lengths of those requests

	Running, Waiting        int
	BlocksUsed, BlocksTotal int
}

// Clone copies r, and its lists, out of the engine's reused result. The outputs' token slices
// keep their lengths but not their tokens, which the engine overwrites.
func (r *StepResult) Clone() *StepResult {
	c := *r
	c.KVEvictions = append([]KVEviction(nil), r.KVEvictions...)
	c.Outputs = append([]Output(nil), r.Outputs...)
	c.Finished = append([]*Sequence(nil), r.Finished...)
	c.SpecAcceptedPerPos = append([]int(nil), r.SpecAcceptedPerPos...)
	return &c
}

// KVCacheUsage is the fraction of KV blocks in use after the step (vllm:kv_cache_usage_perc).
func (r *StepResult) KVCacheUsage() float64 {
	if r.BlocksTotal == 0 {
		return 0
	}
	return float64(r.BlocksUsed) / float64(r.BlocksTotal)
}

// Counters are the engine's totals since it started.
type Counters struct {
	Steps            int64
	Preemptions      int64
	PromptTokens     int64 // prompt tokens of requests that got their first token
	ComputedTokens   int64 // prefill tokens computed (cache hits excluded, recomputation included)
	GenerationTokens int64
	PrefixQueries    int64
	PrefixHits       int64
	FinishedByReason map[FinishReason]int64
	BusyTime         time.Duration
}

// Engine is the simulated vLLM V1 engine core. It is not safe for concurrent use.
type Engine struct {
	setup     *Setup
	model     *StepModel
	pool      *blockPool
	queued    time.Duration // host input cost
	perActive float64       // extra input delay per request in flight, in nanoseconds
	apiLoop   apiServerLoop

	layout  KVLayout
	spec    int         // draft tokens per step (0: no speculative decoding)
	accept  Acceptance  // the simulated verifier
	waiting []*Sequence // FIFO; preempted requests go back to the front
	// arriving are the requests added but not yet taken into the scheduler's queue
	// (Times.TakenIn unset): those that reached the engine during the last step or so.
	arriving []*Sequence
	running  []*Sequence // in admission order; the newest is last
	nextSeq  uint64
	rng      uint64

	// The last step's start and end: under async scheduling the batch that starts when a step
	// ends was scheduled when that step started.
	lastStart, lastEnd time.Time

	result   StepResult
	tokenBuf []int
	drafted  []int // draft tokens verified by each entry of batchSeq
	batch    []Work
	batchSeq []*Sequence
	counters Counters
}

// NewEngine builds an engine for a resolved setup.
func NewEngine(s *Setup) *Engine {
	e := &Engine{
		setup:  s,
		model:  NewStepModel(s),
		pool:   newBlockPool(s.Capacity.NumGPUBlocks-1, s.Capacity.Layout.FullGroups, s.PrefixCachingEnabled()),
		layout: s.Capacity.Layout,
		spec:   s.NumSpeculativeTokens(),
		// The API server's input cost and its output cost for the first token both add to TTFT
		// alone (not to inter-token gaps), so both delay the request's entry to the scheduler.
		queued:    seconds((s.HostProfile.InputMS + s.HostProfile.OutputMS) * 1e-3),
		perActive: s.HostProfile.InputMSPerActiveRequest * 1e6,
		apiLoop: apiServerLoop{
			share:    apiLoopShare(s),
			input:    nanoseconds(s.HostProfile.InputLoopMS * 1e6 * apiLoopShare(s)),
			perToken: nanoseconds(s.HostProfile.InputLoopUSPerToken * 1e3 * apiLoopShare(s)),
			output:   nanoseconds(s.HostProfile.OutputLoopUS * 1e3 * apiLoopShare(s)),
		},
		rng: uint64(s.Seed)*0x9E3779B97F4A7C15 + 1,
	}
	if s.KVCacheMetricsSample > 0 && e.pool.cache != nil {
		e.pool.residency = &residency{sample: s.KVCacheMetricsSample}
	}
	if e.spec > 0 {
		e.accept = NewAcceptance(e.spec, s.Speculative.AcceptanceRate)
	}
	e.counters.FinishedByReason = map[FinishReason]int64{}
	return e
}

// Acceptance is the simulated verifier of speculative decoding (zero without it).
func (e *Engine) Acceptance() Acceptance { return e.accept }

// Setup returns the configuration the engine was built from.
func (e *Engine) Setup() *Setup { return e.setup }

// StepModel returns the engine's step-time model.
func (e *Engine) StepModel() *StepModel { return e.model }

// Counters returns the totals since the engine started (the map is a copy).
func (e *Engine) Counters() Counters {
	c := e.counters
	c.FinishedByReason = make(map[FinishReason]int64, len(e.counters.FinishedByReason))
	for k, v := range e.counters.FinishedByReason {
		c.FinishedByReason[k] = v
	}
	return c
}

// Running and Waiting are the current queue lengths.
func (e *Engine) Running() int { return len(e.running) }

// Waiting is the number of requests not yet (or no longer) running.
func (e *Engine) Waiting() int { return len(e.waiting) }

// schedulerWaiting is what vLLM's num_requests_waiting counts: the requests the scheduler
// holds and does not run, not those still on their way from the API server (not yet taken
// in), which its engine core has not received.
func (e *Engine) schedulerWaiting() int {
	n := len(e.waiting)
	for _, s := range e.arriving {
		if s.state == stateWaiting {
			n--
		}
	}
	return n
}

// BlocksUsed and BlocksTotal describe the KV cache now.
func (e *Engine) BlocksUsed() int { return e.pool.used }

// BlocksTotal is the number of usable KV blocks.
func (e *Engine) BlocksTotal() int { return e.pool.capacity }

// HasWork reports whether any request is waiting or running.
func (e *Engine) HasWork() bool { return len(e.waiting)+len(e.running) > 0 }

// LengthError is a request vLLM's API server rejects with 400 for its length.
type LengthError struct {
	Param   string // "input_tokens" or "max_tokens"
	Value   int
	Message string // vLLM's message, "(parameter=..., value=...)" included
}

func (e *LengthError) Error() string { return e.Message }

// CheckLengths applies vLLM's context-length checks to a prompt of promptLen tokens asking for
// maxTokens output tokens; it returns a *LengthError with vLLM's message, or nil.
func CheckLengths(maxModelLen, promptLen, maxTokens int) error {
	if maxTokens > maxModelLen {
		return &LengthError{Param: "max_tokens", Value: maxTokens, Message: fmt.Sprintf(
			"max_tokens=%d cannot be greater than max_model_len=max_total_tokens=%d. Please request fewer output tokens. (parameter=max_tokens, value=%d)",
			maxTokens, maxModelLen, maxTokens)}
	}
	if promptLen+maxTokens > maxModelLen {
		return &LengthError{Param: "input_tokens", Value: promptLen, Message: fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains %d input tokens, for a total of %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)",
			maxModelLen, maxTokens, promptLen, promptLen+maxTokens, promptLen)}
	}
	return nil
}

// Streamed is called at or after a step's end, once every request that arrived before the end
// was added (requests that arrived after it may have been added too):
// it returns when the API server's loop starts streaming the step's outputs and how long
// each output takes (docs/calibration.md#the-api-servers-event-loop). vLLM streams them in chunks of
// OutputChunk, each reaching its clients when the chunk is done.
func (e *Engine) Streamed(end time.Time) (start time.Time, each time.Duration) {
	start, each = e.apiLoop.streamed(end)
	if r := &e.result; !r.Idle && r.End.Equal(end) {
		r.Streamed = start
		for _, s := range r.Finished {
			s.Times.Reported = start
		}
	}
	return start, each
}

// OutputChunk is how many outputs vLLM's API server processes before it yields to the
// requests' streams (VLLM_V1_OUTPUT_PROC_CHUNK_SIZE's default).
const OutputChunk = 128

// Add queues a request. It fails, as vLLM's API server would, when the request cannot fit.
func (e *Engine) Add(r Request) (*Sequence, error) {
	if len(r.Prompt) == 0 {
		return nil, fmt.Errorf("the prompt is empty")
	}
	if r.MaxTokens < 1 {
		return nil, fmt.Errorf("max_tokens must be at least 1, got %d", r.MaxTokens)
	}
	if err := CheckLengths(e.setup.MaxModelLen, len(r.Prompt), r.MaxTokens); err != nil {
		return nil, err
	}
	e.nextSeq++
	s := &Sequence{Request: r, seqNo: e.nextSeq}
	s.rng = splitmix(uint64(e.setup.Seed) ^ (s.seqNo * 0x2545F4914F6CDD1D))
	s.Times.Arrival = r.Arrival
	active := len(e.waiting) + len(e.running)
	wait := e.apiLoop.admit(r.Arrival, len(r.Prompt), r.Choice)
	s.Times.Queued = r.Arrival.Add(wait + e.queued + time.Duration(float64(active)*e.perActive))
	s.target, s.eosStop = outputLength(&s.rng, r)
	if e.pool.cache != nil {
		s.hashes = hashBlocks(r.Prompt, e.layout.BlockSize)
	}
	e.enqueue(s)
	e.arriving = append(e.arriving, s)
	return s, nil
}

// outputLength draws how many tokens a request generates: max_tokens with ignore_eos,
// otherwise a log-normal "natural" length (median 180 tokens) clamped to [min_tokens, max_tokens].
func outputLength(rng *uint64, r Request) (n int, eos bool) {
	if r.IgnoreEOS {
		return r.MaxTokens, false
	}
	u1 := (float64(next(rng)>>11) + 0.5) / (1 << 53)
	u2 := (float64(next(rng)>>11) + 0.5) / (1 << 53)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	natural := int(math.Round(180 * math.Exp(0.9*z)))
	natural = max(natural, r.MinTokens, 1)
	if natural >= r.MaxTokens {
		return r.MaxTokens, false
	}
	return natural, true
}

// Abort ends a request at once (the client went away) and frees its blocks. It reports
// whether the request was still live.
func (e *Engine) Abort(s *Sequence, now time.Time) bool {
	switch s.state {
	case stateWaiting:
		e.waiting = removeSeq(e.waiting, s)
	case stateRunning:
		e.running = removeSeq(e.running, s)
	default:
		return false
	}
	e.freeBlocks(s)
	s.state = stateDone
	s.Reason = FinishAbort
	s.Times.Finished = now
	e.counters.FinishedByReason[FinishAbort]++
	return true
}

// AddedBefore reports whether s was added to its engine before o.
func (s *Sequence) AddedBefore(o *Sequence) bool { return s.seqNo < o.seqNo }

// AbortMany is Abort for several requests at once, in one pass over the queues (a client
// that goes away with thousands in flight), freeing their blocks in the order given. It returns
// how many were still live.
func (e *Engine) AbortMany(seqs []*Sequence, now time.Time) int {
	gone := make(map[*Sequence]bool, len(seqs))
	for _, s := range seqs {
		if s.state == stateWaiting || s.state == stateRunning {
			gone[s] = true
		}
	}
	if len(gone) == 0 {
		return 0
	}
	keep := func(list []*Sequence) []*Sequence {
		out := list[:0]
		for _, x := range list {
			if !gone[x] {
				out = append(out, x)
			}
		}
		clear(list[len(out):])
		return out
	}
	e.waiting, e.running = keep(e.waiting), keep(e.running)
	n := 0
	for _, s := range seqs {
		if !gone[s] {
			continue
		}
		delete(gone, s) // a sequence given twice is ended once
		e.freeBlocks(s)
		s.state = stateDone
		s.Reason = FinishAbort
		s.Times.Finished = now
		e.counters.FinishedByReason[FinishAbort]++
		n++
	}
	return n
}

func removeSeq(list []*Sequence, s *Sequence) []*Sequence {
	for i, x := range list {
		if x == s {
			copy(list[i:], list[i+1:])
			list[len(list)-1] = nil
			return list[:len(list)-1]
		}
	}
	return list
}

// Step schedules and runs one engine iteration starting at now, as vLLM V1 does: running
// requests first (a decode token or their next prefill chunk), preempting the newest running
// request when KV blocks run out; then waiting requests in FIFO order within the token budget
// and max_num_seqs. It returns when the step would end on the simulated GPU.
func (e *Engine) Step(now time.Time) *StepResult {
	r := &e.result
	*r = StepResult{Start: now, End: now, Outputs: r.Outputs[:0], Finished: r.Finished[:0], SpecAcceptedPerPos: r.SpecAcceptedPerPos[:0]}
	e.batch, e.batchSeq, e.drafted = e.batch[:0], e.batchSeq[:0], e.drafted[:0]
	chunked := e.setup.ChunkedPrefillEnabled()
	e.startResidencyStep(now)

	budget, preempted := e.scheduleRunning(r, e.setup.MaxNumBatchedTokens, chunked)
	chosen := e.scheduledAt(now)
	if len(e.batch) == 0 {
		// Nothing ran on: vLLM chose no batch ahead, waited for the last step and then
		// schedules everything that has arrived.
		chosen = now
	}
	e.takeIn(chosen)
	if !preempted {
		e.admitWaiting(r, chosen, budget, chunked)
	}

	r.KVEvictions = e.residencyEvictions()
	if len(e.batch) == 0 {
		r.Idle = true
		if len(e.waiting) > 0 {
			r.NextReady = e.waiting[0].Times.Queued
		}
		e.fillGauges(r)
		return r
	}

	d := e.stepDuration()
	end := now.Add(d)
	r.Duration, r.End = d, end
	e.lastStart, e.lastEnd = now, end
	e.counters.Steps++
	e.counters.BusyTime += d

	e.applyBatch(r, end)
	e.apiLoop.stream(now, end, len(r.Outputs))
	if len(r.Finished) > 0 {
		e.dropFinished()
	}
	e.counters.Preemptions += int64(r.Preempted)
	e.fillGauges(r)
	return r
}

// scheduleRunning schedules the running requests, oldest first, within budget tokens, preempting
// the newest running request while KV blocks run out. It returns the budget left and whether it
// had to preempt.
func (e *Engine) scheduleRunning(r *StepResult, budget int, chunked bool) (int, bool) {
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		need := s.numTokens() - s.computed
		if e.spec > 0 && s.Outputs > 0 && need == 1 {
			// A decode verifies the draft tokens with the new one, never past max_tokens or
			// max_model_len.
			need += max(0, min(e.spec, e.setup.MaxModelLen-s.numTokens(), s.MaxTokens-s.Outputs-1))
		}
		n := min(need, budget)
		if !chunked && n < s.numTokens()-s.computed {
			continue
		}
		scheduled := true
		for !e.reserve(s, s.computed+n, n) {
			victim := e.victim(i)
			e.preempt(victim)
			preempted = true
			r.Preempted++
			if victim == s {
				scheduled = false
				break
			}
		}
		if !scheduled {
			break
		}
		e.schedule(s, n)
		budget -= n
	}
	return budget, preempted
}

// admitWaiting admits waiting requests in FIFO order while the token budget, max_num_seqs and
// the KV blocks allow, stopping at the first that does not fit or had not reached the scheduler
// when it chose the batch.
func (e *Engine) admitWaiting(r *StepResult, chosen time.Time, budget int, chunked bool) {
	for len(e.waiting) > 0 && budget > 0 && len(e.running) < e.setup.MaxNumSeqs {
		s := e.waiting[0]
		if s.Times.Queued.After(chosen) {
			break
		}
		if s.computed == 0 {
			e.matchPrefix(s)
		}
		need := s.numTokens() - s.computed
		n := min(need, budget)
		if (!chunked && need > budget) || !e.reserve(s, s.computed+n, n) {
			// Not admitted: give back the prefix hits; they are looked up again next time.
			e.freeBlocks(s)
			s.computed = 0
			break
		}
		if e.pool.cache != nil {
			r.PrefixQueries += len(s.Prompt)
			r.PrefixHits += s.computed
		}
		e.waiting = e.waiting[1:]
		s.state = stateRunning
		if !s.wasRun {
			s.wasRun = true
			s.Times.FirstScheduled = chosen
		}
		e.running = append(e.running, s)
		e.schedule(s, n)
		budget -= n
	}
}

// takeIn stamps the requests that had reached the engine by the scheduling at chosen: vLLM's
// engine loop takes new requests in only between steps, right before it schedules, and its
// queue time (vllm:request_queue_time_seconds) runs from then. Only the requests not yet taken
// in are visited, whatever order the waiting queue keeps.
func (e *Engine) takeIn(chosen time.Time) {
	kept := e.arriving[:0]
	for _, s := range e.arriving {
		if s.Times.Queued.After(chosen) {
			kept = append(kept, s)
			continue
		}
		s.Times.TakenIn = chosen
	}
	clear(e.arriving[len(kept):])
	e.arriving = kept
}

// scheduledAt is when the scheduler chose the batch that starts at now. With async scheduling
// (vLLM's EngineCore.step_with_batch_queue) it schedules the next batch as soon as the last one
// is launched, so a batch that follows another back to back was chosen when that one started,
// and a request that arrived since waits one more step; after an idle gap it is chosen at now.
func (e *Engine) scheduledAt(now time.Time) time.Time {
	if e.model.overlap && !e.lastEnd.IsZero() && !now.After(e.lastEnd) {
		return e.lastStart
	}
	return now
}

// stepDuration is the simulated GPU time of the scheduled batch: the forward pass, the draft
// model's proposals when any request drafted, and the configured jitter.
func (e *Engine) stepDuration() time.Duration {
	d := e.model.StepDuration(e.batch)
	if e.spec > 0 && e.model.draftSeconds > 0 {
		for _, k := range e.drafted {
			if k > 0 {
				d += seconds(e.model.DraftSeconds(e.spec))
				break
			}
		}
	}
	if j := e.setup.Jitter; j > 0 {
		u1 := (float64(next(&e.rng)>>11) + 0.5) / (1 << 53)
		u2 := (float64(next(&e.rng)>>11) + 0.5) / (1 << 53)
		z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
		d = time.Duration(float64(d) * max(0.5, 1+j*z))
	}
	return d
}

// applyBatch advances every scheduled request; those that caught up sample a token (and, with
// speculative decoding, keep the draft tokens the verifier accepts).
func (e *Engine) applyBatch(r *StepResult, end time.Time) {
	if need := len(e.batchSeq) * (1 + e.spec); cap(e.tokenBuf) < need {
		e.tokenBuf = make([]int, 0, 2*need)
	}
	e.tokenBuf = e.tokenBuf[:0]
	if e.spec > 0 {
		r.SpecAcceptedPerPos = append(r.SpecAcceptedPerPos, make([]int, e.spec)...)
	}
	for i, s := range e.batchSeq {
		q, drafted := e.batch[i].Q, e.drafted[i]
		accepted := 0
		if drafted > 0 {
			accepted = min(e.accept.Draw(&s.rng), drafted)
			r.SpecDrafts++
			r.SpecDraftTokens += drafted
			r.SpecAccepted += accepted
			for p := range accepted {
				r.SpecAcceptedPerPos[p]++
			}
		}
		// The rejected drafts' KV is discarded: only the verified token and the accepted
		// drafts stay computed.
		s.computed += q - drafted + accepted
		if e.pool.cache != nil {
			e.publishFullBlocks(s, e.layout.BlockSize)
		}
		if s.computed < s.numTokens() {
			continue // mid-prefill chunk
		}
		if s.Outputs == 0 {
			r.PromptsCompleted++
			r.PromptTokens += len(s.Prompt)
			e.counters.PromptTokens += int64(len(s.Prompt))
			s.Times.FirstToken = end
		}
		r.Outputs = append(r.Outputs, e.emit(r, s, end, drafted, accepted))
	}
}

// emit samples the verified token and the accepted drafts of s at end, finishing s when it
// reaches its target length or max_model_len.
func (e *Engine) emit(r *StepResult, s *Sequence, end time.Time, drafted, accepted int) Output {
	out := Output{Seq: s, Index: s.Outputs, Drafted: drafted, Accepted: accepted}
	if s.Outputs > 0 {
		out.Gap = end.Sub(s.Times.LastToken)
	}
	first := len(e.tokenBuf)
	for range 1 + accepted {
		e.tokenBuf = append(e.tokenBuf, wordBase+int(next(&s.rng)%uint64(len(outputWords))))
		s.Outputs++
		e.counters.GenerationTokens++
		if s.Outputs >= s.target || s.numTokens() >= e.setup.MaxModelLen {
			out.Finished = true
			break
		}
	}
	out.Tokens = e.tokenBuf[first:len(e.tokenBuf):len(e.tokenBuf)]
	out.Token = out.Tokens[0]
	s.Times.LastToken = end
	if out.Finished {
		out.Reason = FinishLength
		if s.eosStop && s.Outputs >= s.target {
			out.Reason = FinishStop
		}
		s.Reason = out.Reason
		s.state = stateDone
		s.Times.Finished = end
		e.freeBlocks(s)
		e.counters.FinishedByReason[out.Reason]++
		r.Finished = append(r.Finished, s)
	}
	return out
}

// dropFinished removes the requests that finished this step from the running list, in place.
func (e *Engine) dropFinished() {
	kept := e.running[:0]
	for _, s := range e.running {
		if s.state == stateRunning {
			kept = append(kept, s)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept
}

func (e *Engine) fillGauges(r *StepResult) {
	r.Running, r.Waiting = len(e.running), e.schedulerWaiting()
	r.BlocksUsed, r.BlocksTotal = e.pool.used, e.pool.capacity
	e.counters.PrefixQueries += int64(r.PrefixQueries)
	e.counters.PrefixHits += int64(r.PrefixHits)
}

// schedule adds n tokens of s to this step's batch. For a decode, the tokens beyond the
// first are draft tokens to verify.
func (e *Engine) schedule(s *Sequence, n int) {
	e.batch = append(e.batch, Work{Q: n, C: s.computed})
	e.batchSeq = append(e.batchSeq, s)
	r := &e.result
	r.ScheduledSeqs++
	r.ScheduledTokens += n
	if s.Outputs > 0 && s.numTokens()-s.computed == 1 {
		e.drafted = append(e.drafted, n-1)
		r.DecodeTokens += n
		return
	}
	e.drafted = append(e.drafted, 0)
	r.PrefillTokens += n
	e.counters.ComputedTokens += int64(n)
}

// reserve makes s hold enough blocks in every group for tokens tokens, scheduled of them in
// this step; false if the pool is too short.
func (e *Engine) reserve(s *Sequence, tokens, scheduled int) bool {
	positions := max(0, e.layout.FullBlockPositions(tokens)-s.blocks)
	extra := e.layout.ExtraBlocks(tokens, scheduled)
	grow := positions*e.pool.unit + extra - s.extra
	if grow > e.pool.free() {
		return false
	}
	if shrink := s.extra - extra; shrink > 0 {
		e.pool.release(shrink) // blocks that slid out of the window
		e.pool.take(positions * e.pool.unit)
	} else if grow > 0 {
		e.pool.take(grow)
	}
	s.blocks += positions
	s.extra = extra
	return true
}

// preempt frees all of s's blocks and puts it at the front of the waiting queue, to be
// recomputed from scratch (vLLM V1 preempts by recompute).
func (e *Engine) preempt(s *Sequence) {
	e.freeBlocks(s)
	s.computed = 0
	s.state = stateWaiting
	s.Preemptions++
	e.requeue(s)
}

func (e *Engine) freeBlocks(s *Sequence) {
	for _, b := range s.cached {
		e.pool.drop(b)
	}
	e.pool.release((s.blocks-len(s.cached))*e.pool.unit + s.extra)
	s.cached = s.cached[:0]
	s.blocks, s.extra = 0, 0
}

// matchPrefix looks the prompt's full blocks up in the prefix cache; hits become blocks the
// request holds and tokens it need not compute. As in vLLM, the last prompt token is always
// computed, so a prompt that hits entirely recomputes its last block.
func (e *Engine) matchPrefix(s *Sequence) {
	if e.pool.cache == nil {
		return
	}
	bs := e.layout.BlockSize
	maxHit := (len(s.Prompt) - 1) / bs
	hits := 0
	for hits < maxHit {
		b := e.pool.lookup(s.hashes[hits])
		if b == nil {
			break
		}
		e.pool.acquire(b)
		s.cached = append(s.cached, b)
		hits++
	}
	s.blocks = hits
	s.computed = hits * bs
	s.CachedTokens = s.computed
}

// publishFullBlocks caches every prompt block s has now fully computed.
func (e *Engine) publishFullBlocks(s *Sequence, bs int) {
	full := min(s.computed, len(s.Prompt)) / bs
	for i := len(s.cached); i < full; i++ {
		s.cached = append(s.cached, e.pool.publish(s.hashes[i]))
	}
}

// splitmix is a seed scrambler; next is xorshift-multiply over a 64-bit state.
func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

func next(state *uint64) uint64 {
	*state += 0x9E3779B97F4A7C15
	return splitmix(*state)
}
