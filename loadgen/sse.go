package loadgen

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// ChunkKind classifies one server-sent event of an OpenAI-compatible stream.
type ChunkKind uint8

const (
	ChunkOther   ChunkKind = iota // no choices, no usage: ignored
	ChunkContent                  // carries a choice (text, a delta, or a finish reason)
	ChunkUsage                    // "choices":[] with the usage totals
	ChunkError                    // an error object sent after the stream began
	ChunkDone                     // data: [DONE]
)

// Chunk is one parsed event. Text is the raw JSON string content (escapes not undone) and
// aliases the input: copy it to keep it.
type Chunk struct {
	Kind         ChunkKind
	Text         []byte
	FinishReason string
	// Usage is set when the chunk carries usage (the final usage chunk, or every chunk with
	// continuous_usage_stats).
	HasUsage         bool
	PromptTokens     int
	CompletionTokens int
	ErrorMessage     string
}

var (
	doneData     = []byte("[DONE]")
	textKey      = []byte(`"text":"`)
	contentKey   = []byte(`"content":"`)
	reasoningKey = []byte(`"reasoning":"`)
	finishKey    = []byte(`"finish_reason":"`)
	usageKey     = []byte(`"usage":{`)
	promptKey    = []byte(`"prompt_tokens":`)
	complKey     = []byte(`"completion_tokens":`)
	errorPrefix  = []byte(`{"error"`)
	objectError  = []byte(`"object":"error"`)
	choicesKey   = []byte(`"choices":[`)
)

// parseSlow decodes a chunk with encoding/json: for servers that do not write compact JSON.
func parseSlow(data []byte) Chunk {
	var v struct {
		Choices *[]struct {
			Text  *string `json:"text"`
			Delta *struct {
				Content   *string `json:"content"`
				Reasoning *string `json:"reasoning"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(data, &v) != nil {
		return Chunk{}
	}
	var c Chunk
	if v.Usage != nil {
		c.HasUsage, c.PromptTokens, c.CompletionTokens = true, v.Usage.PromptTokens, v.Usage.CompletionTokens
	}
	if v.Choices == nil || len(*v.Choices) == 0 {
		if c.HasUsage {
			c.Kind = ChunkUsage
		}
		return c
	}
	c.Kind = ChunkContent
	ch := (*v.Choices)[0]
	var text string
	switch {
	case ch.Text != nil:
		text = *ch.Text
	case ch.Delta != nil && ch.Delta.Content != nil && *ch.Delta.Content != "":
		text = *ch.Delta.Content
	case ch.Delta != nil && ch.Delta.Reasoning != nil:
		text = *ch.Delta.Reasoning
	}
	if text != "" {
		// Re-escape so Text has the same form as the fast path's.
		b, _ := json.Marshal(text)
		c.Text = b[1 : len(b)-1]
	}
	if ch.FinishReason != nil {
		c.FinishReason = *ch.FinishReason
	}
	return c
}

// ParseData parses the payload of one `data:` event without decoding the JSON of ordinary
// chunks: it finds the fields a benchmark needs by their keys. Error and usage objects, which
// arrive once, are decoded properly.
func ParseData(data []byte) Chunk {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, doneData) {
		return Chunk{Kind: ChunkDone}
	}
	// An error object starts the payload (vLLM) or names itself early (older flat errors).
	if bytes.HasPrefix(data, errorPrefix) || bytes.Contains(data[:min(len(data), 64)], objectError) {
		return Chunk{Kind: ChunkError, ErrorMessage: errorMessage(data)}
	}
	p := bytes.Index(data, choicesKey)
	if p < 0 {
		return parseSlow(data) // not vLLM's compact form: decode it properly
	}
	rest := data[p+len(choicesKey):]
	var c Chunk
	// usage follows the choices in every chunk that has it.
	if i := bytes.Index(rest, usageKey); i >= 0 {
		u := rest[i:]
		c.PromptTokens, c.HasUsage = intAfter(u, promptKey)
		var ok bool
		if c.CompletionTokens, ok = intAfter(u, complKey); ok {
			c.HasUsage = true
		}
	}
	if len(rest) == 0 || rest[0] != '{' {
		if len(rest) > 0 && rest[0] == ']' && c.HasUsage {
			c.Kind = ChunkUsage
		}
		return c
	}
	c.Kind = ChunkContent
	for _, key := range [][]byte{textKey, contentKey, reasoningKey} {
		if i := bytes.Index(rest, key); i >= 0 {
			c.Text = jsonStringBody(rest[i+len(key):])
			if len(c.Text) > 0 {
				rest = rest[i+len(key)+len(c.Text):]
				break
			}
		}
	}
	if i := bytes.Index(rest, finishKey); i >= 0 {
		c.FinishReason = string(jsonStringBody(rest[i+len(finishKey):]))
	}
	return c
}

// jsonStringBody returns the bytes of a JSON string up to its closing quote (escapes kept).
func jsonStringBody(b []byte) []byte {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[:i]
		}
	}
	return nil
}

func intAfter(b, key []byte) (int, bool) {
	i := bytes.Index(b, key)
	if i < 0 {
		return 0, false
	}
	b = bytes.TrimLeft(b[i+len(key):], " ")
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	v, err := strconv.Atoi(string(b[:n]))
	return v, err == nil
}

// errorMessage extracts the message of {"error": {...}}, {"error": "..."} or a flat
// {"object":"error","message":...}.
func errorMessage(data []byte) string {
	var nested struct {
		Error json.RawMessage `json:"error"`
		Msg   string          `json:"message"`
	}
	if json.Unmarshal(data, &nested) != nil {
		return string(truncate(data, 200))
	}
	if nested.Msg != "" {
		return nested.Msg
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(nested.Error, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	var s string
	if json.Unmarshal(nested.Error, &s) == nil {
		return s
	}
	return string(truncate(data, 200))
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// UnescapeText turns a chunk's raw JSON string content into text.
func UnescapeText(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}

// EventReader splits an SSE byte stream into the payloads of its events: "data:" lines joined
// by newlines, dispatched at a blank line (or at the end of the stream); comments and other
// fields are skipped. Lines may end in \n or \r\n.
type EventReader struct {
	data    []byte
	pending bool
}

// Line feeds one line (without its terminator) and returns an event's payload when the line
// completes one. The returned slice is valid until the next call.
func (r *EventReader) Line(line []byte) ([]byte, bool) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) == 0 {
		if !r.pending {
			return nil, false
		}
		r.pending = false
		return r.data, true
	}
	if line[0] == ':' {
		return nil, false
	}
	field, value, found := bytes.Cut(line, []byte{':'})
	if !bytes.Equal(field, []byte("data")) {
		return nil, false
	}
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	if r.pending {
		r.data = append(r.data, '\n')
		r.data = append(r.data, value...)
	} else {
		r.data = append(r.data[:0], value...)
		r.pending = true
	}
	return nil, false
}

// Flush returns a pending event at the end of a stream that lacks the final blank line.
func (r *EventReader) Flush() ([]byte, bool) {
	if !r.pending {
		return nil, false
	}
	r.pending = false
	return r.data, true
}
