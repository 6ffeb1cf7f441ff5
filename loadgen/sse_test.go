package loadgen

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// textSink collects the watched text.
type textSink struct{ b strings.Builder }

func (s *textSink) Token(text string, _ time.Time) { s.b.WriteString(text) }

// serveBytes answers every request with body as an SSE stream.
func serveBytes(t *testing.T, body []byte) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		_, _ = w.Write(body)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func newTestClient(t *testing.T, url, endpoint string) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{BaseURL: url, Endpoint: endpoint, Model: "m", StallTimeout: 5 * time.Second, RequestTimeout: 10 * time.Second})
	require.NoError(t, err)
	return c
}

// TestStreamsFromFixtures reads real and synthetic vLLM streams through the whole client path.
func TestStreamsFromFixtures(t *testing.T) {
	cases := []struct {
		file      string
		endpoint  string
		text      string
		chunks    int
		output    int
		fromUsage bool
		prompt    int
		finish    string
		err       ErrorClass
	}{
		{"vllm-sse-synthetic-completions-include-usage.txt", EndpointCompletions, " Alice, and I am a student at the University", 10, 10, true, 6, "length", ErrNone},
		{"vllm-sse-synthetic-completions-no-usage.txt", EndpointCompletions, " Alice, and I am a student at the University", 10, 10, false, 99, "length", ErrNone},
		{"vllm-sse-synthetic-chat-include-usage.txt", EndpointChat, "Hello! How can I help you today?", 9, 10, true, 12, "stop", ErrNone},
		{"vllm-sse-synthetic-chat-continuous-usage.txt", EndpointChat, "Hello! How can I help you today?", 9, 10, true, 12, "stop", ErrNone},
		{"vllm-sse-synthetic-midstream-error.txt", EndpointCompletions, " Alice", 1, 1, false, 99, "", ErrStreamError},
		// A real capture: no usage chunk, and no blank line after [DONE].
		{"vllm-0.9-xpu-completions-stream-qwen3-4b.sse", EndpointCompletions, " city in the state of California,", 7, 7, false, 99, "length", ErrNone},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile("../testdata/" + tc.file)
			require.NoError(t, err)
			for _, variant := range []struct {
				name string
				body []byte
			}{{"as captured", body}, {"no trailing newline", bytes.TrimRight(body, "\n")}, {"CRLF", bytes.ReplaceAll(body, []byte("\n"), []byte("\r\n"))}} {
				c := newTestClient(t, serveBytes(t, variant.body).URL, tc.endpoint)
				var sink textSink
				res := c.Do(context.Background(), Prompt{Text: "x", InputTokens: 99, OutputTokens: 10}, &sink)
				assert.Equal(t, tc.err, res.Error, "%s: %s", variant.name, res.ErrorMessage)
				assert.Equal(t, tc.text, sink.b.String(), variant.name)
				assert.Equal(t, tc.chunks, res.Chunks, variant.name)
				assert.Equal(t, tc.output, res.OutputTokens, variant.name)
				assert.Equal(t, tc.fromUsage, res.OutputFromUsage, variant.name)
				assert.Equal(t, tc.prompt, res.PromptTokens, variant.name)
				assert.Equal(t, tc.finish, res.FinishReason, variant.name)
				assert.Len(t, res.ITLs, tc.chunks-1, "one gap between consecutive content chunks")
				if tc.err == ErrStreamError {
					assert.Equal(t, "Internal server error", res.ErrorMessage)
				}
			}
		})
	}
}

func TestParseData(t *testing.T) {
	cases := []struct {
		in     string
		kind   ChunkKind
		text   string
		finish string
		usage  []int
		errMsg string
	}{
		{`[DONE]`, ChunkDone, "", "", nil, ""},
		{`{"id":"x","choices":[{"index":0,"text":" a\"b\\","finish_reason":null}]}`, ChunkContent, ` a\"b\\`, "", nil, ""},
		{`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}}`, ChunkContent, "hi", "stop", []int{3, 2}, ""},
		{`{"choices":[],"usage":{"prompt_tokens":6,"total_tokens":16,"completion_tokens":10}}`, ChunkUsage, "", "", []int{6, 10}, ""},
		{`{"error": {"message": "boom", "type": "X", "code": 500}}`, ChunkError, "", "", nil, "boom"},
		{`{"object":"error","message":"old style","type":"BadRequestError","code":400}`, ChunkError, "", "", nil, "old style"},
		{`{"error":"Unauthorized"}`, ChunkError, "", "", nil, "Unauthorized"},
		// Not compact: decoded properly.
		{`{"choices": [{"index": 0, "delta": {"content": "spaced"}, "finish_reason": null}]}`, ChunkContent, "spaced", "", nil, ""},
		{`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, ChunkContent, "", "", nil, ""},
		{`{"choices":[{"index":0,"delta":{"reasoning":"think"}}]}`, ChunkContent, "think", "", nil, ""},
		{`{"id":"x"}`, ChunkOther, "", "", nil, ""},
		{`not json`, ChunkOther, "", "", nil, ""},
	}
	for _, tc := range cases {
		c := ParseData([]byte(tc.in))
		assert.Equal(t, tc.kind, c.Kind, tc.in)
		assert.Equal(t, tc.text, string(c.Text), tc.in)
		assert.Equal(t, tc.finish, c.FinishReason, tc.in)
		if tc.usage != nil {
			assert.True(t, c.HasUsage, tc.in)
			assert.Equal(t, tc.usage, []int{c.PromptTokens, c.CompletionTokens}, tc.in)
		}
		assert.Equal(t, tc.errMsg, c.ErrorMessage, tc.in)
	}
	assert.Equal(t, "a\"b\n", UnescapeText([]byte(`a\"b\n`)))
}

func TestEventReaderJoinsMultilineData(t *testing.T) {
	var r EventReader
	var got []string
	for _, l := range []string{": comment", "event: x", "data: one", "data: two", "", "", "data:three", "id: 1", ""} {
		if p, ok := r.Line([]byte(l)); ok {
			got = append(got, string(p))
		}
	}
	assert.Equal(t, []string{"one\ntwo", "three"}, got)
	_, ok := r.Flush()
	assert.False(t, ok)
	r.Line([]byte("data: tail"))
	p, ok := r.Flush()
	assert.True(t, ok)
	assert.Equal(t, "tail", string(p))
}

// FuzzSSE feeds arbitrary bytes through the event reader and the chunk parser: no panic, and
// a parsed text is always a substring of the input.
func FuzzSSE(f *testing.F) {
	for _, name := range []string{"vllm-sse-synthetic-completions-include-usage.txt", "vllm-sse-synthetic-midstream-error.txt", "vllm-0.9-xpu-completions-stream-qwen3-4b.sse"} {
		b, err := os.ReadFile("../testdata/" + name)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("data: {\"choices\":[{\"text\":\"\\"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var r EventReader
		for _, line := range bytes.Split(in, []byte("\n")) {
			if p, ok := r.Line(line); ok {
				c := ParseData(p)
				if len(c.Text) > 0 && !bytes.Contains(in, c.Text) && c.Kind == ChunkContent && !bytes.Contains(p, []byte(": ")) {
					t.Fatalf("text %q not in input", c.Text)
				}
				_ = UnescapeText(c.Text)
			}
		}
		if p, ok := r.Flush(); ok {
			ParseData(p)
		}
	})
}
