package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEmbeddingsRequestBody(t *testing.T) {
	var got map[string]any
	var path, accept string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got)
		path, accept = r.URL.Path, r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"object":"embedding","embedding":[0.6,0.8],"index":0}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}`))
	}))
	defer ts.Close()
	c, err := NewClient(ClientConfig{BaseURL: ts.URL, Endpoint: EndpointEmbeddings, Model: "m", Pooling: true,
		Extras: RequestExtras{Body: map[string]any{"dimensions": 2}}})
	require.NoError(t, err)
	res := c.Do(context.Background(), Prompt{Text: "embed this", InputTokens: 3, OutputTokens: 128}, nil)
	require.True(t, res.OK(), res.ErrorMessage)
	assert.Equal(t, EndpointEmbeddings, path)
	assert.Empty(t, accept, "not a stream")
	assert.Equal(t, map[string]any{"model": "m", "input": "embed this", "truncate_prompt_tokens": -1.0, "dimensions": 2.0}, got,
		"vLLM's openai-embeddings payload: no max_tokens, stream or stream_options")
	assert.Equal(t, 7, res.PromptTokens, "the server's usage.prompt_tokens")
	assert.Zero(t, res.OutputTokens)
	assert.Positive(t, res.E2EL)
	assert.Equal(t, res.E2EL, res.TTFT)
}

func TestEmbeddingsRequestErrors(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "missing") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"detail":"Not Found"}`))
			return
		}
		_, _ = w.Write([]byte(`not json`))
	}))
	defer ts.Close()
	for endpoint, want := range map[string]ErrorClass{"/missing/embeddings": ErrHTTP404, "/v1/embeddings": ErrProtocol} {
		c, err := NewClient(ClientConfig{BaseURL: ts.URL, Endpoint: endpoint, Pooling: true})
		require.NoError(t, err)
		res := c.Do(context.Background(), Prompt{Text: "x"}, nil)
		assert.Equal(t, want, res.Error, endpoint)
	}
}

func TestPoolingReport(t *testing.T) {
	s := Summarize([]Result{
		{E2EL: 10 * time.Millisecond, TTFT: 10 * time.Millisecond, PromptTokens: 5},
		{E2EL: 30 * time.Millisecond, TTFT: 30 * time.Millisecond, PromptTokens: 7},
	}, 2*time.Second, []float64{99}, Goodput{})
	info := RunInfo{Backend: BackendEmbeddings, RequestRate: math.Inf(1), Burstiness: 1, Metrics: []string{"ttft", "e2el"}, Percentiles: []float64{99}}
	var b bytes.Buffer
	require.NoError(t, PrintResult(&b, s, info))
	out := b.String()
	assert.Contains(t, out, "Total input tokens:                      12        \n")
	assert.Contains(t, out, "Input throughput (inputs/s):             1.00      \n")
	assert.Contains(t, out, "Mean E2EL (ms):                          20.00     \n")
	for _, no := range []string{"TTFT", "generated", "Output token", "Peak"} {
		assert.NotContains(t, out, no, "vLLM's pooling table has no %s row", no)
	}
	doc := ResultJSON(s, info, []Field{{"input_lens", []int{5, 7}}, {"ttfts", []float64{0.01, 0.03}}})
	_, ok := doc.Get("mean_ttft_ms")
	assert.False(t, ok)
	_, ok = doc.Get("failed")
	assert.False(t, ok, "vLLM's pooling result has no failed count")
	v, ok := doc.Get("mean_e2el_ms")
	require.True(t, ok)
	assert.InDelta(t, 20, float64(v.(PyFloat)), 1e-9)
	_, ok = doc.Get("input_lens")
	assert.True(t, ok, "--save-detailed's input_lens stays")
	_, ok = doc.Get("ttfts")
	assert.False(t, ok, "--save-detailed's ttfts is not a pooling key")
}

func TestBackendEmbeddingsEndpoint(t *testing.T) {
	b, e, err := Backend(BackendEmbeddings, EndpointEmbeddings, true)
	require.NoError(t, err)
	assert.Equal(t, BackendEmbeddings, b)
	assert.Equal(t, EndpointEmbeddings, e)
	_, _, err = Backend(BackendEmbeddings, EndpointCompletions, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must end with 'embeddings'")
	assert.True(t, PoolingBackend(BackendEmbeddings))
}

func TestBackendChatEndpoint(t *testing.T) {
	b, e, err := Backend(BackendChat, EndpointCompletions, false)
	require.NoError(t, err, "an endpoint left out follows the chat backend")
	assert.Equal(t, BackendChat, b)
	assert.Equal(t, EndpointChat, e)
	_, _, err = Backend(BackendChat, EndpointCompletions, true)
	require.Error(t, err, "completions requests would run labelled chat")
	assert.Contains(t, err.Error(), "must end with 'chat/completions'")
	_, _, err = Backend("openai-chat-completions", "/v1/chat/completions", true)
	require.NoError(t, err)
}
