package loadgen

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
)

// RequestExtras are what vllm bench serve adds to each generation request besides the prompt:
// the sampling parameters and --extra-body merged over the standard fields (the extras win, as
// vLLM's payload.update does), --header's headers, and --logprobs (sent by the completions API
// only, as vLLM sends it).
type RequestExtras struct {
	Body     map[string]any
	Headers  map[string]string
	Logprobs *int
}

// plain reports whether a request body needs none of the extras.
func (e RequestExtras) plain(chat bool) bool {
	return len(e.Body) == 0 && (chat || e.Logprobs == nil)
}

// merge encodes b with the extras merged over its fields.
func (e RequestExtras) merge(b requestBody, chat bool) ([]byte, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	if e.Logprobs != nil && !chat {
		fields["logprobs"] = json.RawMessage(strconv.Itoa(*e.Logprobs))
	}
	for k, v := range e.Body {
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("--extra-body %q: %w", k, err)
		}
		fields[k] = enc
	}
	return json.Marshal(fields)
}

// outputBound is the most output tokens a request of outputTokens may stream once the extra
// body is merged: its max_tokens (or max_completion_tokens) where larger, times its n and
// the prompts of a list prompt, each choice streaming its own chunks. Absurd values stop at
// 2^24 tokens a choice and 1,024 choices.
func (e RequestExtras) outputBound(outputTokens int) int {
	count := func(key string, limit int) int {
		f, ok := e.Body[key].(float64)
		if !ok || !(f >= 1) {
			return 0
		}
		return int(min(f, float64(limit)))
	}
	tokens := max(outputTokens, count("max_tokens", 1<<24), count("max_completion_tokens", 1<<24))
	choices := max(1, count("n", 1024))
	if list, ok := e.Body["prompt"].([]any); ok && len(list) > 0 {
		if _, nested := list[0].([]any); nested || isText(list[0]) {
			choices *= min(len(list), 1024)
		}
	}
	return tokens * choices
}

func isText(v any) bool { _, ok := v.(string); return ok }

// setHeaders sets --header's headers on h, then the request id (vLLM's order: the id wins).
func (e RequestExtras) setHeaders(h http.Header, requestID string) {
	for k, v := range e.Headers {
		h.Set(k, v)
	}
	if requestID != "" {
		h.Set("X-Request-Id", requestID)
	}
}

// WithRequestIDs gives the i-th prompt of w the request id prefix+i ("" prefix: none).
func WithRequestIDs(w Workload, prefix string) Workload {
	if prefix == "" || w == nil {
		return w
	}
	return requestIDs{w, prefix}
}

type requestIDs struct {
	w      Workload
	prefix string
}

func (r requestIDs) Prompt(i int) Prompt {
	p := r.w.Prompt(i)
	p.RequestID = r.prefix + strconv.Itoa(i)
	return p
}
func (r requestIDs) Name() string { return r.w.Name() }

// LoRA spreads requests over LoRA adapters as vllm bench serve's --lora-modules and
// --lora-assignment do: each request names one adapter as its model, drawn at random (seeded)
// or in turn.
type LoRA struct {
	Modules    []string
	RoundRobin bool
	Seed       int64
}

// WithLoRA names each prompt's adapter; no modules leaves w as it is.
func WithLoRA(w Workload, l LoRA) Workload {
	if len(l.Modules) == 0 || w == nil {
		return w
	}
	return loraPrompts{w, l}
}

type loraPrompts struct {
	w Workload
	l LoRA
}

func (r loraPrompts) Prompt(i int) Prompt {
	p := r.w.Prompt(i)
	n := len(r.l.Modules)
	if r.l.RoundRobin {
		p.Model = r.l.Modules[i%n]
		return p
	}
	// A draw of its own per index, so a request's adapter does not depend on the order in
	// which prompts are asked for.
	h := fnv.New64a()
	_ = binary.Write(h, binary.LittleEndian, [2]int64{r.l.Seed, int64(i)})
	p.Model = r.l.Modules[h.Sum64()%uint64(n)]
	return p
}
func (r loraPrompts) Name() string { return r.w.Name() }
