package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

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

// mediaPart is the type of the first content part of msgs that carries an image, audio or video
// (image_url, input_image, image_embeds, audio_url, input_audio, video_url, ...), "" when there
// is none; vLLM reads text, input_text, output_text, thinking and refusal parts as text.
func mediaPart(msgs []chatMessage) string {
	for _, m := range msgs {
		var parts []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			continue // a string, or no list
		}
		for _, p := range parts {
			if t := strings.ToLower(p.Type); strings.Contains(t, "image") || strings.Contains(t, "audio") || strings.Contains(t, "video") {
				return p.Type
			}
		}
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
	samplingParams
	// Logprobs is an int for completions and a bool for chat.
	Logprobs    json.RawMessage `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`
	Echo        bool            `json:"echo"`

	// Features the simulator does not model: a request using one is refused, never served
	// as if it had been honoured.
	Tools                 json.RawMessage `json:"tools"`
	ToolChoice            json.RawMessage `json:"tool_choice"`
	Functions             json.RawMessage `json:"functions"`
	ResponseFormat        json.RawMessage `json:"response_format"`
	StructuredOutputs     json.RawMessage `json:"structured_outputs"`
	GuidedJSON            json.RawMessage `json:"guided_json"`
	GuidedRegex           json.RawMessage `json:"guided_regex"`
	GuidedChoice          json.RawMessage `json:"guided_choice"`
	GuidedGrammar         json.RawMessage `json:"guided_grammar"`
	GuidedDecodingBackend json.RawMessage `json:"guided_decoding_backend"`
	UseBeamSearch         bool            `json:"use_beam_search"`
	PromptLogprobs        json.RawMessage `json:"prompt_logprobs"`
}

// maxN bounds the choices of one request (vLLM has no fixed limit; every choice is a request
// in the engine).
const maxN = 128

// unsupported names the first parameter of req the simulator does not model, with the reason.
func (req *genRequest) unsupported() (param, what string) {
	set := func(raw json.RawMessage) bool {
		t := bytes.TrimSpace(raw)
		return len(t) > 0 && !bytes.Equal(t, []byte("null"))
	}
	var choice string
	_ = json.Unmarshal(req.ToolChoice, &choice)
	var format struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(req.ResponseFormat, &format)
	switch {
	case set(req.Tools) && !bytes.Equal(bytes.TrimSpace(req.Tools), []byte("[]")):
		return "tools", "tool calling"
	case set(req.ToolChoice) && choice != "none" && choice != "auto":
		return "tool_choice", "tool calling"
	case set(req.Functions):
		return "functions", "function calling"
	case set(req.ResponseFormat) && format.Type != "text":
		return "response_format", "structured outputs"
	case set(req.StructuredOutputs):
		return "structured_outputs", "structured outputs"
	case set(req.GuidedJSON):
		return "guided_json", "guided decoding"
	case set(req.GuidedRegex):
		return "guided_regex", "guided decoding"
	case set(req.GuidedChoice):
		return "guided_choice", "guided decoding"
	case set(req.GuidedGrammar):
		return "guided_grammar", "guided decoding"
	case set(req.GuidedDecodingBackend):
		return "guided_decoding_backend", "guided decoding"
	case req.UseBeamSearch:
		return "use_beam_search", "beam search"
	case set(req.PromptLogprobs):
		return "prompt_logprobs", "prompt logprobs"
	}
	return "", ""
}

// logprobsOf reads the logprob request: for completions "logprobs" is the number of top
// alternatives (absent: none); for chat "logprobs" is a bool and "top_logprobs" the number.
// It returns -1 for no logprobs, or a 400 message and its parameter.
func (s *Server) logprobsOf(req *genRequest, chat bool) (k int, msg, param string) {
	raw := bytes.TrimSpace(req.Logprobs)
	given := len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
	if chat {
		var on bool
		if given && json.Unmarshal(raw, &on) != nil {
			return 0, "1 validation error:\n  {'type': 'bool_parsing', 'loc': ('body', 'logprobs'), 'msg': 'Input should be a valid boolean'}", "body.logprobs"
		}
		top := 0
		if req.TopLogprobs != nil {
			top = *req.TopLogprobs
			if !on {
				return 0, "1 validation error:\n  {'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, when using `top_logprobs`, `logprobs` must be set to true.'}", "body"
			}
		}
		if !on {
			return -1, "", ""
		}
		k, param = top, "top_logprobs"
	} else {
		if !given {
			return -1, "", ""
		}
		if json.Unmarshal(raw, &k) != nil {
			return 0, "1 validation error:\n  {'type': 'int_parsing', 'loc': ('body', 'logprobs'), 'msg': 'Input should be a valid integer'}", "body.logprobs"
		}
		param = "logprobs"
	}
	switch {
	case k < 0:
		return 0, fmt.Sprintf("`%s` must be a positive value. (parameter=%s, value=%d)", param, param, k), param
	case s.opts.MaxLogprobs >= 0 && k > s.opts.MaxLogprobs:
		return 0, fmt.Sprintf("Requested sample logprobs of %d, which is greater than max allowed: %d (parameter=%s, value=%d)", k, s.opts.MaxLogprobs, param, k), param
	}
	return k, "", ""
}

// generate serves /v1/completions (chat=false) and /v1/chat/completions. A completions
// prompt may be a list: each prompt is a request of n choices, numbered prompt*n+choice.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	if s.opts.Pooling {
		// A pooling runner's server has no generation routes.
		writeJSON(w, http.StatusNotFound, []byte(`{"detail":"Not Found"}`))
		return
	}
	a, ok := s.admit(w, r, chat)
	if !ok {
		return
	}
	req, n, topK, prompts, maxTokens := &a.req, a.n, a.topK, a.prompts, a.maxTokens

	c := s.chunkerFor(r, req, chat, n, prompts, topK)
	var sink *sseSink
	if req.Stream {
		sink = s.startStream(w, req, c)
	}
	reqs := make([]sim.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = sim.Request{ID: c.id, Prompt: p.ids, MaxTokens: maxTokens[i], MinTokens: req.MinTokens, IgnoreEOS: req.IgnoreEOS, N: n, Priority: req.Priority}
	}
	var lora string
	if l := s.loraModule(req.Model); l != nil {
		lora = l.Name
	}
	streams, ok := s.submitChoices(w, reqs, c, sink, lora)
	if !ok {
		return
	}
	if req.Stream {
		s.streamResponse(r, sink, streams)
		return
	}
	s.wholeResponse(w, r, streams, c)
}

// admitted is a generation request the front end accepted, with what it asks of the engine.
type admitted struct {
	req       genRequest
	n, topK   int
	prompts   []promptInput
	maxTokens []int
}

// admit runs the checks vLLM's front end makes of a generation request before any engine
// sees it: the body, the parameters, the model, the prompts and their lengths. On a refusal
// it has written the response and returns false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, chat bool) (*admitted, bool) {
	a := &admitted{}
	if !decodeBody(w, r, &a.req) {
		return nil, false
	}
	var ok bool
	if a.n, a.topK, ok = s.checkParams(w, &a.req, chat); !ok {
		return nil, false
	}
	if !s.knownModel(a.req.Model) {
		s.modelNotFound(w, a.req.Model)
		return nil, false
	}
	if chat && !s.setup.ModelProfile.IsMultimodal() {
		if part := mediaPart(a.req.Messages); part != "" {
			// vLLM's chat parser refuses a media part for a model with no encoder for it.
			writeError(w, http.StatusBadRequest, "BadRequestError", s.setup.Model+" is not a multimodal model", nil)
			return nil, false
		}
	}
	if a.prompts, ok = requestPrompts(w, &a.req, chat); !ok {
		return nil, false
	}
	if a.maxTokens, ok = s.checkLengths(w, &a.req, chat, a.prompts); !ok {
		return nil, false
	}
	return a, true
}

// checkParams refuses, with vLLM's 400 response, a request whose parameters the simulator
// does not model or that are out of range; it returns the number of choices and the top
// logprobs asked for (-1 for none).
func (s *Server) checkParams(w http.ResponseWriter, req *genRequest, chat bool) (n, topK int, ok bool) {
	if param, what := req.unsupported(); param != "" {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("`%s` is not supported: this server (vllmtop sim) does not model %s. (parameter=%s)", param, what, param), ptr(param))
		return 0, 0, false
	}
	if req.StreamOptions != nil && !req.Stream {
		writeError(w, http.StatusBadRequest, "Bad Request", "1 validation error:\n  {'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, Stream options can only be defined when `stream=True`.'}", ptr("body"))
		return 0, 0, false
	}
	topK, msg, param := s.logprobsOf(req, chat)
	if msg != "" {
		typ := "BadRequestError"
		if strings.HasPrefix(msg, "1 validation error") {
			typ = "Bad Request"
		}
		writeError(w, http.StatusBadRequest, typ, msg, ptr(param))
		return 0, 0, false
	}
	if chat && req.Echo {
		// Chat's echo repeats the last message when it is the assistant's; the simulator
		// does not model it.
		writeError(w, http.StatusBadRequest, "BadRequestError", "`echo` is not supported for chat completions by this server (vllmtop sim). (parameter=echo)", ptr("echo"))
		return 0, 0, false
	}
	n = 1
	if req.N != nil {
		n = *req.N
	}
	if e := firstParamError(checkN(n), req.check(), req.checkGreedy(n), checkPriority(req.Priority, s.opts.SchedulingPolicy)); e != nil {
		var param *string
		if e.param != "" {
			param = ptr(e.param)
		}
		writeError(w, http.StatusBadRequest, "BadRequestError", e.msg, param)
		return 0, 0, false
	}
	return n, topK, true
}

func firstParamError(errs ...*paramError) *paramError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// checkLengths works out each prompt's max_tokens (vLLM's defaults: 16 for completions, the
// rest of the context for chat) and refuses lengths the model cannot serve.
func (s *Server) checkLengths(w http.ResponseWriter, req *genRequest, chat bool, prompts []promptInput) (maxTokens []int, ok bool) {
	maxTokens = make([]int, len(prompts))
	for i, p := range prompts {
		m := 16
		if chat {
			m = s.setup.MaxModelLen - len(p.ids)
			if req.MaxCompletionTokens != nil {
				m = *req.MaxCompletionTokens
			}
		}
		if req.MaxTokens != nil {
			m = *req.MaxTokens
		}
		if msg, param := checkTokenLimits(m, req.MinTokens); msg != "" {
			writeError(w, http.StatusBadRequest, "BadRequestError", msg, param)
			return nil, false
		}
		if err := sim.CheckLengths(s.setup.MaxModelLen, len(p.ids), m); err != nil {
			var le *sim.LengthError
			errors.As(err, &le)
			writeError(w, http.StatusBadRequest, "BadRequestError", le.Message, ptr(le.Param))
			return nil, false
		}
		maxTokens[i] = m
	}
	return maxTokens, true
}

// checkTokenLimits is vLLM's max_tokens and min_tokens checks, with their messages.
func checkTokenLimits(maxTokens, minTokens int) (msg string, param *string) {
	switch {
	case maxTokens < 1:
		return validationMessage(fmt.Sprintf("max_tokens must be at least 1, got %d.", maxTokens), "max_tokens", strconv.Itoa(maxTokens)), ptr("max_tokens")
	case minTokens < 0:
		return fmt.Sprintf("min_tokens must be greater than or equal to 0, got %d.", minTokens), nil
	case minTokens > maxTokens:
		return fmt.Sprintf("min_tokens must be less than or equal to max_tokens=%d, got %d.", maxTokens, minTokens), nil
	}
	return "", nil
}

// chunkerFor names the response (the client's X-Request-Id or a random one) and sets up the
// chunker that writes its choices, n for each prompt.
func (s *Server) chunkerFor(r *http.Request, req *genRequest, chat bool, n int, prompts []promptInput, topK int) *chunker {
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		id = randomHex(8)
	}
	if chat {
		id = "chatcmpl-" + id
	} else {
		id = "cmpl-" + id
	}
	promptTokens := 0
	for _, p := range prompts {
		promptTokens += len(p.ids)
	}
	c := newChunker(id, chat, n*len(prompts), s.modelName, promptTokens)
	if req.Model != "" {
		c.model = req.Model
	}
	c.topLogprobs = topK
	if req.Echo {
		c.echoes = make([]string, c.n)
		for i := range c.echoes {
			c.echoes[i] = prompts[i/n].text
		}
	}
	return c
}

// startStream starts the SSE response, with usage as stream_options or
// --enable-force-include-usage ask.
func (s *Server) startStream(w http.ResponseWriter, req *genRequest, c *chunker) *sseSink {
	if o := req.StreamOptions; o != nil && o.IncludeUsage {
		c.usage = true
		c.continuous = o.ContinuousUsageStats
	}
	if s.opts.ForceUsage {
		c.usage, c.continuous = true, true
	}
	sink := newSSESink(w, c)
	sink.onWrite = s.onWrite
	sink.start()
	return sink
}

// submitChoices submits one engine request per choice of each prompt, the streams all made
// first so that the chunker may read their sequences' cached tokens (usage details) at any
// time; when a request is refused it aborts those already submitted and answers the client,
// returning ok false.
func (s *Server) submitChoices(w http.ResponseWriter, reqs []sim.Request, c *chunker, sink *sseSink, lora string) (streams []*stream, ok bool) {
	var owners []sim.Request
	for _, req := range reqs {
		for c := range req.N {
			st := newStream()
			st.choice, st.sink, st.lora = len(streams), sink, lora
			streams = append(streams, st)
			req.Choice = c
			owners = append(owners, req)
		}
	}
	if s.opts.PromptTokensDetails {
		n := reqs[0].N
		c.cachedOf = func() int {
			cached := 0
			for i := 0; i < len(streams); i += n {
				if seq := streams[i].seq; seq != nil {
					cached += seq.CachedTokens
				}
			}
			return cached
		}
	}
	for i, st := range streams {
		if err := s.submit(owners[i], st); err != nil {
			s.abortAll(streams[:i])
			if sink != nil {
				sink.close()
				return nil, false
			}
			writeError(w, http.StatusBadRequest, "BadRequestError", err.Error(), nil)
			return nil, false
		}
	}
	return streams, true
}

func (s *Server) abortAll(streams []*stream) {
	for _, st := range streams {
		if st.drv != nil {
			st.drv.abort(st)
		}
	}
}

// streamResponse waits while the driver writes the stream (see sseSink), or until the
// client goes away, which aborts the requests and frees their KV blocks.
func (s *Server) streamResponse(r *http.Request, sink *sseSink, streams []*stream) {
	select {
	case <-sink.done:
	case <-r.Context().Done():
		sink.close()
		s.abortAll(streams)
	}
	sink.close() // no write may reach w after the handler returns
}

// wholeResponse waits for every choice's output and writes one JSON body with usage.
func (s *Server) wholeResponse(w http.ResponseWriter, r *http.Request, streams []*stream, c *chunker) {
	outs, ok := s.collectChoices(w, r, streams, c)
	if !ok {
		return
	}
	b := make([]byte, 0, 256+64*c.totalCompletion())
	b = c.appendHead(b, false)
	b = append(b, '[')
	for i := range outs {
		if i > 0 {
			b = append(b, ',')
		}
		b = c.appendWholeChoice(b, i, &outs[i])
	}
	b = append(b, `],"usage":`...)
	b = c.appendUsage(b)
	b = append(b, `}`...)
	writeJSON(w, 200, b)
}

// choiceOutput is one choice of a non-streamed response, gathered as the engine runs it.
type choiceOutput struct {
	text     strings.Builder
	reason   sim.FinishReason
	logprobs []*tokenLogprobs
}

// collectChoices gathers every choice's tokens until each finishes. It returns ok false when
// the client went away or the server is shutting down (answered with a 500), having aborted
// the requests.
func (s *Server) collectChoices(w http.ResponseWriter, r *http.Request, streams []*stream, c *chunker) ([]choiceOutput, bool) {
	outs := make([]choiceOutput, len(streams))
	var events []event
	for i, st := range streams {
		out := &outs[i]
		for out.reason == "" {
			select {
			case <-st.notify:
			case <-r.Context().Done():
				s.abortAll(streams)
				return nil, false
			}
			events = st.drain(events)
			for _, ev := range events {
				if ev.reason == sim.FinishAbort {
					s.abortAll(streams)
					writeError(w, http.StatusInternalServerError, "InternalServerError", "The request was aborted: the server is shutting down.", nil)
					return nil, false
				}
				for j, tok := range ev.tokens() {
					out.text.WriteString(sim.TokenText(tok))
					if c.topLogprobs >= 0 {
						e := logprobsAt(c.seeds[i], ev.index+j, tok, c.topLogprobs)
						out.logprobs = append(out.logprobs, &e)
					}
				}
				c.completion[i] += len(ev.tokens())
				if ev.finished {
					out.reason = ev.reason
				}
			}
		}
	}
	return outs, true
}

// appendWholeChoice appends choice i of a non-streamed response: a chat message or a
// completion's text, with its logprobs and finish reason.
func (c *chunker) appendWholeChoice(b []byte, i int, out *choiceOutput) []byte {
	b = append(b, `{"index":`...)
	b = appendInt(b, int64(i))
	if c.chat {
		b = append(b, `,"message":{"role":"assistant","content":`...)
		b = appendJSONString(b, out.text.String())
		b = append(b, `,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning":null},"logprobs":`...)
		if c.topLogprobs >= 0 {
			entries := make([]tokenLogprobs, len(out.logprobs))
			for j, e := range out.logprobs {
				entries[j] = *e
			}
			b = appendChatLogprobs(b, entries)
		} else {
			b = append(b, "null"...)
		}
	} else {
		b = append(b, `,"text":`...)
		b = appendJSONString(b, c.echoOf(i)+out.text.String())
		b = append(b, `,"logprobs":`...)
		if c.topLogprobs >= 0 {
			b = appendCompletionLogprobs(b, append(c.echoLogprobs(i), out.logprobs...), 0)
		} else {
			b = append(b, "null"...)
		}
	}
	b = append(b, `,"finish_reason":`...)
	b = appendJSONString(b, string(out.reason))
	b = append(b, `,"stop_reason":null`...)
	if !c.chat {
		b = append(b, `,"prompt_logprobs":null`...)
	}
	return append(b, '}')
}
