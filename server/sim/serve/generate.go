package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
)

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns a message's content: a string, or the text parts of a content list.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// Ids of the chat template's special tokens (<|im_start|>, <|im_end|>, newline); prompt pieces
// hash above the generated words, so these never collide.
const (
	tokImStart = 1
	tokImEnd   = 2
	tokNewline = 3
)

// chatPrompt renders messages with a ChatML-like template: per message <|im_start|> role \n
// content <|im_end|> \n, then <|im_start|> assistant \n for the generation prompt.
func chatPrompt(msgs []chatMessage, addGenerationPrompt bool) []int {
	var ids []int
	for _, m := range msgs {
		ids = append(ids, tokImStart)
		ids = append(ids, sim.Tokenize(m.Role)...)
		ids = append(ids, tokNewline)
		ids = append(ids, sim.Tokenize(m.text())...)
		ids = append(ids, tokImEnd, tokNewline)
	}
	if addGenerationPrompt {
		ids = append(ids, tokImStart)
		ids = append(ids, sim.Tokenize("assistant")...)
		ids = append(ids, tokNewline)
	}
	return ids
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

type genRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	N                   *int            `json:"n"`
	Temperature         *float64        `json:"temperature"`
}

// promptTokens reads a completions prompt: a string, a one-element list of strings, or token ids.
func promptTokens(raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("1 validation error:\n  {'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return sim.Tokenize(s), nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		if len(list) != 1 {
			return nil, errors.New("the simulator serves one prompt per request; send the prompts as separate requests")
		}
		return sim.Tokenize(list[0]), nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return ids, nil
	}
	return nil, errors.New("1 validation error:\n  {'type': 'invalid_type', 'loc': ('body', 'prompt'), 'msg': 'Input should be a valid string or a list of token ids'}")
}

// generate serves /v1/completions (chat=false) and /v1/chat/completions.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	var req genRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.N != nil && *req.N > 1 {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("n=%d is not supported: the simulator generates one choice per request (n=1).", *req.N), ptr("n"))
		return
	}
	if req.StreamOptions != nil && !req.Stream {
		writeError(w, http.StatusBadRequest, "Bad Request", "1 validation error:\n  {'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, Stream options can only be defined when `stream=True`.'}", ptr("body"))
		return
	}
	if !s.knownModel(req.Model) {
		s.modelNotFound(w, req.Model)
		return
	}
	var prompt []int
	if chat {
		if len(req.Messages) == 0 {
			writeError(w, http.StatusBadRequest, "Bad Request", "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}", ptr("body.messages"))
			return
		}
		prompt = chatPrompt(req.Messages, true)
	} else {
		var err error
		if prompt, err = promptTokens(req.Prompt); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", err.Error(), ptr("prompt"))
			return
		}
	}
	if len(prompt) == 0 {
		writeError(w, http.StatusBadRequest, "BadRequestError", "The prompt cannot be empty.", ptr("prompt"))
		return
	}
	maxTokens := 16
	if chat {
		maxTokens = s.setup.MaxModelLen - len(prompt)
		if req.MaxCompletionTokens != nil {
			maxTokens = *req.MaxCompletionTokens
		}
	}
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if maxTokens < 1 {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("max_tokens must be at least 1, got %d. (parameter=max_tokens, value=%d)", maxTokens, maxTokens), ptr("max_tokens"))
		return
	}
	if req.MinTokens < 0 || req.MinTokens > maxTokens {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("min_tokens must be between 0 and max_tokens=%d, got %d. (parameter=min_tokens, value=%d)", maxTokens, req.MinTokens, req.MinTokens), ptr("min_tokens"))
		return
	}
	if err := sim.CheckLengths(s.setup.MaxModelLen, len(prompt), maxTokens); err != nil {
		var le *sim.LengthError
		errors.As(err, &le)
		writeError(w, http.StatusBadRequest, "BadRequestError", le.Message, ptr(le.Param))
		return
	}

	id := r.Header.Get("X-Request-Id")
	if id == "" {
		id = randomHex(8)
	}
	if chat {
		id = "chatcmpl-" + id
	} else {
		id = "cmpl-" + id
	}
	c := chunker{id: id, chat: chat, created: time.Now().Unix(), model: s.modelName, promptTokens: len(prompt)}
	if req.Model != "" {
		c.model = req.Model
	}
	st := newStream()
	if req.Stream {
		if o := req.StreamOptions; o != nil && o.IncludeUsage {
			c.usage = true
			c.continuous = o.ContinuousUsageStats
		}
		if s.opts.ForceUsage {
			c.usage, c.continuous = true, true
		}
		st.sink = newSSESink(w, &c)
		st.sink.onWrite = s.onWrite
		st.sink.start()
	}
	if err := s.drv.submit(sim.Request{ID: id, Prompt: prompt, MaxTokens: maxTokens, MinTokens: req.MinTokens, IgnoreEOS: req.IgnoreEOS}, st); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error(), nil)
		return
	}
	if req.Stream {
		s.streamResponse(r, st)
		return
	}
	s.wholeResponse(w, r, st, &c)
}

// streamResponse waits while the driver writes the stream (see sseSink), or until the
// client goes away, which aborts the request and frees its KV blocks.
func (s *Server) streamResponse(r *http.Request, st *stream) {
	select {
	case <-st.sink.done:
	case <-r.Context().Done():
		st.sink.close()
		s.drv.abort(st)
	}
	st.sink.close() // no write may reach w after the handler returns
}

// sseSink writes a streamed response from the driver goroutine: at the end of each step the
// driver writes every stream's chunk in one pass, in the same order each step, with no
// goroutine hand-off per token. That keeps the gaps a client sees close to the engine's.
type sseSink struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	c      *chunker
	buf    []byte
	closed bool
	err    error
	done   chan struct{} // closed once the response is complete
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
	return &sseSink{w: w, rc: http.NewResponseController(w), c: c, buf: make([]byte, 0, 1024), done: make(chan struct{})}
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

func (k *sseSink) deliver(ev event) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	b := k.buf[:0]
	finished := ev.finished
	if ev.reason == sim.FinishAbort {
		b = append(b, "data: {\"error\": {\"message\": \"The request was aborted: the server is shutting down.\", \"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}\n\n"...)
	} else {
		b = k.c.appendToken(b, ev)
		if finished && k.c.usage {
			b = k.c.appendUsageChunk(b)
		}
	}
	if finished {
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
	if finished || k.err != nil {
		k.finish()
	}
}

// wholeResponse waits for the whole output and writes one JSON body with usage.
func (s *Server) wholeResponse(w http.ResponseWriter, r *http.Request, st *stream, c *chunker) {
	var events []event
	var text strings.Builder
	var reason sim.FinishReason
	for reason == "" {
		select {
		case <-st.notify:
		case <-r.Context().Done():
			s.drv.abort(st)
			return
		}
		events = st.drain(events)
		for _, ev := range events {
			if ev.reason == sim.FinishAbort {
				writeError(w, http.StatusInternalServerError, "InternalServerError", "The request was aborted: the server is shutting down.", nil)
				return
			}
			text.WriteString(sim.TokenText(ev.token))
			c.completion++
			if ev.finished {
				reason = ev.reason
			}
		}
	}
	b := make([]byte, 0, 256+text.Len())
	b = c.appendHead(b, false)
	if c.chat {
		b = append(b, `[{"index":0,"message":{"role":"assistant","content":`...)
		b = appendJSONString(b, text.String())
		b = append(b, `,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning":null},"logprobs":null,"finish_reason":`...)
	} else {
		b = append(b, `[{"index":0,"text":`...)
		b = appendJSONString(b, text.String())
		b = append(b, `,"logprobs":null,"finish_reason":`...)
	}
	b = appendJSONString(b, string(reason))
	b = append(b, `,"stop_reason":null`...)
	if !c.chat {
		b = append(b, `,"prompt_logprobs":null`...)
	}
	b = append(b, `}],"usage":`...)
	b = c.appendUsage(b)
	b = append(b, `}`...)
	writeJSON(w, 200, b)
}

// chunker renders vLLM's streamed chunks: compact JSON with vLLM's field order.
type chunker struct {
	id           string
	chat         bool
	created      int64
	model        string
	promptTokens int
	completion   int
	usage        bool // stream_options.include_usage
	continuous   bool // usage on every chunk
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
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, int64(c.promptTokens))
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, int64(c.promptTokens+c.completion))
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, int64(c.completion))
	return append(b, '}')
}

// appendToken writes the chunk(s) for one token: for chat, the role chunk comes first, with
// the first token (vLLM sends it when the first engine output arrives).
func (c *chunker) appendToken(b []byte, ev event) []byte {
	if c.chat && ev.index == 0 {
		b = append(b, "data: "...)
		b = c.appendHead(b, true)
		b = append(b, `[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
		b = append(b, `,"prompt_token_ids":null,"prompt_text":null`...)
		if c.continuous {
			b = append(b, `,"usage":`...)
			b = c.appendUsage(b)
		}
		b = append(b, "}\n\n"...)
	}
	c.completion++
	b = append(b, "data: "...)
	b = c.appendHead(b, true)
	text := sim.TokenText(ev.token)
	if c.chat {
		b = append(b, `[{"index":0,"delta":{"content":`...)
		b = appendJSONString(b, text)
		b = append(b, `},"logprobs":null,"finish_reason":`...)
	} else {
		b = append(b, `[{"index":0,"text":`...)
		b = appendJSONString(b, text)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
	}
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
	if c.continuous {
		b = append(b, `,"usage":`...)
		b = c.appendUsage(b)
	}
	return append(b, "}\n\n"...)
}

// appendUsageChunk writes the final usage chunk ("choices":[]).
func (c *chunker) appendUsageChunk(b []byte) []byte {
	b = append(b, "data: "...)
	b = c.appendHead(b, true)
	b = append(b, `[],"usage":`...)
	b = c.appendUsage(b)
	return append(b, "}\n\n"...)
}
