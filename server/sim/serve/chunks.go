package serve

import (
	"net/http"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
)

// sseSink writes a streamed response from the driver goroutine: at the end of each step the
// driver writes every stream's chunk in one pass, in the same order each step, with no
// goroutine hand-off per token. That keeps the gaps a client sees close to the engine's.
// With n > 1 the choices' streams share one sink; the response ends when all have finished.
type sseSink struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	c      *chunker
	buf    []byte
	closed bool
	err    error
	done   chan struct{} // closed once the response is complete
	open   int           // choices still generating
	// deadline is the current write deadline, renewed when half of it is used, so that
	// most writes do not touch the connection's timer.
	deadline time.Time
	// onWrite, when set, sees the time each token's chunk was written (pacing benchmarks).
	onWrite func(id string, at time.Time)
}

// writeTimeout bounds one write: a client that stops reading loses its stream instead of
// stalling the engine for everyone.
const writeTimeout = 200 * time.Millisecond

func newSSESink(w http.ResponseWriter, c *chunker) *sseSink {
	return &sseSink{w: w, rc: http.NewResponseController(w), c: c, buf: make([]byte, 0, 1024), done: make(chan struct{}), open: c.n}
}

func (k *sseSink) failed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err != nil
}

// start sends the response headers at once, as vLLM's streaming response does.
func (k *sseSink) start() {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := k.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	k.w.WriteHeader(http.StatusOK)
	_ = k.rc.Flush()
}

// close stops all further writes; the response is over.
func (k *sseSink) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.finish()
}

// finish marks the response complete; the caller holds k.mu.
func (k *sseSink) finish() {
	if k.closed {
		return
	}
	k.closed = true
	// The connection may serve another request: clear the per-write deadline.
	_ = k.rc.SetWriteDeadline(time.Time{})
	close(k.done)
}

// deliver writes one choice's tokens of a step (or its end).
func (k *sseSink) deliver(choice int, ev event) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	b := k.buf[:0]
	last := false
	if ev.reason == sim.FinishAbort {
		b = append(b, "data: {\"error\": {\"message\": \"The request was aborted: the server is shutting down.\", \"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}\n\n"...)
		last = true
	} else {
		b = k.c.appendTokens(b, choice, ev)
		if ev.finished {
			k.open--
			if last = k.open <= 0; last && k.c.usage {
				b = k.c.appendUsageChunk(b)
			}
		}
	}
	if last {
		b = append(b, "data: [DONE]\n\n"...)
	}
	k.buf = b
	if now := time.Now(); k.deadline.Sub(now) < writeTimeout/2 {
		k.deadline = now.Add(writeTimeout)
		_ = k.rc.SetWriteDeadline(k.deadline)
	}
	if _, err := k.w.Write(b); err != nil {
		k.err = err
	} else if err := k.rc.Flush(); err != nil {
		k.err = err
	}
	if k.onWrite != nil && ev.reason != sim.FinishAbort {
		k.onWrite(k.c.id, time.Now())
	}
	if last || k.err != nil {
		k.finish()
	}
}

// chunker renders vLLM's responses and streamed chunks: compact JSON with vLLM's field order.
type chunker struct {
	id           string
	chat         bool
	n            int
	created      int64
	model        string
	promptTokens int
	completion   []int  // tokens generated so far, by choice
	roleSent     []bool // chat: the role chunk of the choice went out
	usage        bool   // stream_options.include_usage
	continuous   bool   // usage on every chunk
	// topLogprobs is the number of alternatives per token, or -1 for no logprobs.
	topLogprobs int
	seeds       []uint64
	// echoes are the prompt texts to prepend to each completion choice (echo=true), nil
	// without echo.
	echoes  []string
	offsets []int // completions' text_offset so far, by choice
	// cachedOf, with --enable-prompt-tokens-details, is the prompt tokens the prefix cache
	// served, for usage.prompt_tokens_details.
	cachedOf func() int
}

func newChunker(id string, chat bool, n int, model string, promptTokens int) *chunker {
	c := &chunker{id: id, chat: chat, n: n, created: time.Now().Unix(), model: model, promptTokens: promptTokens,
		completion: make([]int, n), roleSent: make([]bool, n), topLogprobs: -1, seeds: make([]uint64, n), offsets: make([]int, n)}
	for i := range c.seeds {
		c.seeds[i] = seedOf(id, i)
	}
	return c
}

// echoOf is the prompt text choice echoes ("" without echo).
func (c *chunker) echoOf(choice int) string {
	if c.echoes == nil {
		return ""
	}
	return c.echoes[choice]
}

func (c *chunker) totalCompletion() int {
	total := 0
	for _, n := range c.completion {
		total += n
	}
	return total
}

// echoLogprobs is the echoed prompt's share of a completion's logprobs: the prompt tokens,
// the first without a logprob.
func (c *chunker) echoLogprobs(choice int) []*tokenLogprobs {
	echo := c.echoOf(choice)
	if echo == "" {
		return nil
	}
	texts := sim.TokenStrings(echo)
	out := make([]*tokenLogprobs, len(texts))
	for i, t := range texts {
		e := logprobsAt(c.seeds[choice]^0xec40, i, 0, c.topLogprobs)
		e.text = t
		if len(e.top) > 0 {
			e.top[0].text = t
		}
		e.none = i == 0
		out[i] = &e
	}
	return out
}

func (c *chunker) appendHead(b []byte, chunk bool) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, c.id)
	b = append(b, `,"object":`...)
	switch {
	case c.chat && chunk:
		b = append(b, `"chat.completion.chunk"`...)
	case c.chat:
		b = append(b, `"chat.completion"`...)
	default:
		b = append(b, `"text_completion"`...)
	}
	b = append(b, `,"created":`...)
	b = appendInt(b, c.created)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.model)
	return append(b, `,"choices":`...)
}

func (c *chunker) appendUsage(b []byte) []byte {
	completion := c.totalCompletion()
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, int64(c.promptTokens))
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, int64(c.promptTokens+completion))
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, int64(completion))
	if c.cachedOf != nil {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = appendInt(b, int64(c.cachedOf()))
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendTokens writes the chunk(s) of one choice's step: for chat, the role chunk comes first,
// with the first token (vLLM sends it when the first engine output arrives); for an echoed
// completion the prompt text leads the first chunk. A step's tokens (several with
// speculative decoding) go in one chunk, as vLLM streams them.
func (c *chunker) appendTokens(b []byte, choice int, ev event) []byte {
	if c.chat && !c.roleSent[choice] {
		c.roleSent[choice] = true
		b = c.appendRoleChunk(b, choice)
	}
	tokens := ev.tokens()
	var text []byte
	first := ev.index == 0
	if first && !c.chat {
		text = append(text, c.echoOf(choice)...)
	}
	for _, t := range tokens {
		text = append(text, sim.TokenText(t)...)
	}
	c.completion[choice] += len(tokens)
	b = append(b, "data: "...)
	b = c.appendHead(b, true)
	b = append(b, `[{"index":`...)
	b = appendInt(b, int64(choice))
	if c.chat {
		b = append(b, `,"delta":{"content":`...)
		b = appendJSONString(b, string(text))
		b = append(b, `},"logprobs":`...)
		b = c.appendChatDeltaLogprobs(b, choice, ev.index, tokens)
	} else {
		b = append(b, `,"text":`...)
		b = appendJSONString(b, string(text))
		b = append(b, `,"logprobs":`...)
		b = c.appendTextDeltaLogprobs(b, choice, ev.index, tokens, first)
	}
	b = append(b, `,"finish_reason":`...)
	if ev.finished {
		b = appendJSONString(b, string(ev.reason))
		b = append(b, `,"stop_reason":null`...)
	} else {
		b = append(b, "null"...)
		if !c.chat {
			b = append(b, `,"stop_reason":null`...)
		}
	}
	if !c.chat {
		b = append(b, `,"prompt_token_ids":null`...)
	}
	b = append(b, `,"token_ids":null}]`...)
	return c.appendChunkEnd(b)
}

// appendRoleChunk writes a chat choice's first chunk, which carries the assistant role.
func (c *chunker) appendRoleChunk(b []byte, choice int) []byte {
	b = append(b, "data: "...)
	b = c.appendHead(b, true)
	b = append(b, `[{"index":`...)
	b = appendInt(b, int64(choice))
	b = append(b, `,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
	b = append(b, `,"prompt_token_ids":null,"prompt_text":null`...)
	return c.appendChunkEnd(b)
}

// appendChunkEnd closes a chunk, with the usage so far under continuous_usage_stats.
func (c *chunker) appendChunkEnd(b []byte) []byte {
	if c.continuous {
		b = append(b, `,"usage":`...)
		b = c.appendUsage(b)
	}
	return append(b, "}\n\n"...)
}

// appendChatDeltaLogprobs writes a chat chunk's logprobs for tokens, the first at index.
func (c *chunker) appendChatDeltaLogprobs(b []byte, choice, index int, tokens []int) []byte {
	if c.topLogprobs < 0 {
		return append(b, "null"...)
	}
	entries := make([]tokenLogprobs, len(tokens))
	for i, t := range tokens {
		entries[i] = logprobsAt(c.seeds[choice], index+i, t, c.topLogprobs)
	}
	return appendChatLogprobs(b, entries)
}

// appendTextDeltaLogprobs writes a completion chunk's logprobs for tokens, the first at index,
// after the echoed prompt's in the first chunk, and advances the choice's text offset.
func (c *chunker) appendTextDeltaLogprobs(b []byte, choice, index int, tokens []int, first bool) []byte {
	if c.topLogprobs < 0 {
		return append(b, "null"...)
	}
	var entries []*tokenLogprobs
	if first {
		entries = c.echoLogprobs(choice)
	}
	for i, t := range tokens {
		e := logprobsAt(c.seeds[choice], index+i, t, c.topLogprobs)
		entries = append(entries, &e)
	}
	b = appendCompletionLogprobs(b, entries, c.offsets[choice])
	for _, e := range entries {
		c.offsets[choice] += len(e.text)
	}
	return b
}

// appendUsageChunk writes the final usage chunk ("choices":[]).
func (c *chunker) appendUsageChunk(b []byte) []byte {
	b = append(b, "data: "...)
	b = c.appendHead(b, true)
	b = append(b, `[],"usage":`...)
	b = c.appendUsage(b)
	return append(b, "}\n\n"...)
}
