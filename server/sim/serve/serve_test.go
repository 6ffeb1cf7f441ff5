package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/server/sim"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type testServer struct {
	*Server
	URL string
}

// startServer runs a simulated server on a virtual clock (steps run back to back, so tests
// take milliseconds) behind httptest on loopback.
func startServer(t *testing.T, args ...string) testServer {
	t.Helper()
	return startServerClock(t, sim.NewVirtualClock(t0), args...)
}

func startServerClock(t *testing.T, clock sim.Clock, args ...string) testServer {
	t.Helper()
	opts, err := ParseArgs(args, noEnv)
	require.NoError(t, err)
	setup, err := sim.Resolve(opts.Engine, nil)
	require.NoError(t, err)
	srv := New(opts, setup, clock, nil)
	ctx, cancel := context.WithCancel(context.Background())
	srv.Start(ctx)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		cancel()
	})
	return testServer{srv, hs.URL}
}

func do(t *testing.T, method, url, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// sse reads a stream's data payloads, checking vLLM's framing: "data: <json>\n\n" only.
func sse(t *testing.T, body string) []string {
	t.Helper()
	require.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"), "stream ends with [DONE]: %q", tail(body))
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		require.True(t, strings.HasPrefix(ev, "data: "), "event %q", ev)
		require.NotContains(t, ev, "\n")
		out = append(out, strings.TrimPrefix(ev, "data: "))
	}
	return out
}

func tail(s string) string {
	if len(s) > 200 {
		return s[len(s)-200:]
	}
	return s
}

type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Created int64  `json:"created"`
	Choices []struct {
		Index int     `json:"index"`
		Text  *string `json:"text"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		TotalTokens      int `json:"total_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func parseChunks(t *testing.T, payloads []string) []chunk {
	t.Helper()
	var out []chunk
	for _, p := range payloads[:len(payloads)-1] {
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(p), &c), p)
		out = append(out, c)
	}
	return out
}

func TestInfoEndpoints(t *testing.T) {
	s := startServer(t, "--max-model-len", "4096")
	code, body := do(t, "GET", s.URL+"/health", "")
	assert.Equal(t, 200, code)
	assert.Empty(t, body)
	code, _ = do(t, "POST", s.URL+"/ping", "")
	assert.Equal(t, 200, code)
	code, body = do(t, "GET", s.URL+"/version", "")
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"version":"0.33.0"}`, body)
	code, body = do(t, "GET", s.URL+"/load", "")
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"server_load":0}`, body)

	code, body = do(t, "GET", s.URL+"/v1/models", "")
	require.Equal(t, 200, code)
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			Root        string `json:"root"`
			Parent      *string
			MaxModelLen int `json:"max_model_len"`
			Permission  []struct {
				ID     string `json:"id"`
				Object string `json:"object"`
			} `json:"permission"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &models))
	require.Len(t, models.Data, 1)
	assert.Equal(t, "list", models.Object)
	assert.Equal(t, "Qwen/Qwen3-0.6B", models.Data[0].ID)
	assert.Equal(t, "vllm", models.Data[0].OwnedBy)
	assert.Equal(t, 4096, models.Data[0].MaxModelLen)
	assert.Regexp(t, `^modelperm-[0-9a-f]{16}$`, models.Data[0].Permission[0].ID)
	assert.Contains(t, body, `"parent":null`)

	code, body = do(t, "POST", s.URL+"/tokenize", `{"prompt":"Hello, my name is"}`)
	require.Equal(t, 200, code)
	var tok struct {
		Count       int      `json:"count"`
		MaxModelLen int      `json:"max_model_len"`
		Tokens      []int    `json:"tokens"`
		TokenStrs   []string `json:"token_strs"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &tok))
	assert.Equal(t, sim.CountTokens("Hello, my name is"), tok.Count)
	assert.Len(t, tok.Tokens, tok.Count)
	assert.Equal(t, 4096, tok.MaxModelLen)
	assert.Contains(t, body, `"token_strs":null`)

	code, body = do(t, "POST", s.URL+"/tokenize", `{"messages":[{"role":"user","content":"Hi there"}]}`)
	require.Equal(t, 200, code)
	require.NoError(t, json.Unmarshal([]byte(body), &tok))
	assert.Equal(t, len(chatPrompt([]chatMessage{{Role: "user", Content: json.RawMessage(`"Hi there"`)}}, true)), tok.Count)
	assert.Greater(t, tok.Count, sim.CountTokens("Hi there"), "the chat template adds tokens")

	code, body = do(t, "POST", s.URL+"/detokenize", `{"tokens":[1000,1001]}`)
	require.Equal(t, 200, code)
	assert.JSONEq(t, `{"prompt":" the of"}`, body)

	code, body = do(t, "GET", s.URL+"/metrics", "")
	require.Equal(t, 200, code)
	assert.Contains(t, body, "vllm:num_requests_running{")
	assert.Contains(t, body, `vllm:cache_config_info{`)

	code, _ = do(t, "GET", s.URL+"/nope", "")
	assert.Equal(t, 404, code)
}

func TestHealthIs503WhileLoading(t *testing.T) {
	opts, err := ParseArgs(nil, noEnv)
	require.NoError(t, err)
	setup, err := sim.Resolve(opts.Engine, nil)
	require.NoError(t, err)
	srv := New(opts, setup, sim.NewVirtualClock(t0), nil)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	code, _ := do(t, "GET", hs.URL+"/health", "")
	assert.Equal(t, 503, code)
	code, _ = do(t, "POST", hs.URL+"/v1/completions", `{"prompt":"x"}`)
	assert.Equal(t, 503, code)
}

func TestStreamedCompletionWithUsage(t *testing.T) {
	s := startServer(t)
	code, body := do(t, "POST", s.URL+"/v1/completions", `{"model":"Qwen/Qwen3-0.6B","prompt":"Tell me about paged attention","max_tokens":12,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	require.Equal(t, 200, code, body)
	payloads := sse(t, body)
	chunks := parseChunks(t, payloads)
	require.Len(t, chunks, 13, "12 token chunks and the usage chunk")
	var text strings.Builder
	for i, c := range chunks[:12] {
		assert.Equal(t, "text_completion", c.Object)
		assert.Regexp(t, `^cmpl-[0-9a-f]{16}$`, c.ID)
		assert.Equal(t, chunks[0].ID, c.ID)
		assert.Equal(t, chunks[0].Created, c.Created)
		require.Len(t, c.Choices, 1)
		text.WriteString(*c.Choices[0].Text)
		if i < 11 {
			assert.Nil(t, c.Choices[0].FinishReason)
		}
		assert.Nil(t, c.Usage)
	}
	assert.Equal(t, "length", *chunks[11].Choices[0].FinishReason)
	assert.NotEmpty(t, text.String())
	u := chunks[12]
	assert.Empty(t, u.Choices)
	assert.Contains(t, payloads[12], `"choices":[]`)
	require.NotNil(t, u.Usage)
	assert.Equal(t, sim.CountTokens("Tell me about paged attention"), u.Usage.PromptTokens)
	assert.Equal(t, 12, u.Usage.CompletionTokens)
	assert.Equal(t, u.Usage.PromptTokens+12, u.Usage.TotalTokens)
	// vLLM's exact field order in a content chunk.
	assert.Regexp(t, `^\{"id":"cmpl-[0-9a-f]+","object":"text_completion","created":\d+,"model":"Qwen/Qwen3-0.6B","choices":\[\{"index":0,"text":"[^"]*","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null\}\]\}$`, payloads[0])
	assert.Regexp(t, `^\{"id":"cmpl-[0-9a-f]+","object":"text_completion","created":\d+,"model":"Qwen/Qwen3-0.6B","choices":\[\],"usage":\{"prompt_tokens":\d+,"total_tokens":\d+,"completion_tokens":12\}\}$`, payloads[12])
}

func TestStreamedChatRoleChunkFirstNoUsage(t *testing.T) {
	s := startServer(t)
	code, body := do(t, "POST", s.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":5,"ignore_eos":true,"stream":true}`, "X-Request-Id", "abc123")
	require.Equal(t, 200, code, body)
	payloads := sse(t, body)
	chunks := parseChunks(t, payloads)
	require.Len(t, chunks, 6, "the role chunk and five content chunks, no usage")
	assert.Equal(t, "chatcmpl-abc123", chunks[0].ID, "X-Request-Id names the request")
	assert.Equal(t, "assistant", *chunks[0].Choices[0].Delta.Role)
	assert.Equal(t, "", *chunks[0].Choices[0].Delta.Content)
	assert.Contains(t, payloads[0], `"prompt_token_ids":null,"prompt_text":null}`)
	for _, c := range chunks[1:] {
		assert.Equal(t, "chat.completion.chunk", c.Object)
		assert.Nil(t, c.Choices[0].Delta.Role)
		assert.NotNil(t, c.Choices[0].Delta.Content)
		assert.Nil(t, c.Usage)
	}
	assert.Equal(t, "length", *chunks[5].Choices[0].FinishReason)
	assert.Regexp(t, `"choices":\[\{"index":0,"delta":\{"content":"[^"]*"\},"logprobs":null,"finish_reason":null,"token_ids":null\}\]\}$`, payloads[1])
}

func TestContinuousUsageStats(t *testing.T) {
	s := startServer(t)
	_, body := do(t, "POST", s.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
	chunks := parseChunks(t, sse(t, body))
	require.Len(t, chunks, 6)
	for i, c := range chunks {
		require.NotNil(t, c.Usage, "chunk %d", i)
		want := i // the role chunk counts 0, then one more per content chunk
		if i == 5 {
			want = 4
		}
		assert.Equal(t, want, c.Usage.CompletionTokens, "chunk %d", i)
	}
}

func TestForceIncludeUsage(t *testing.T) {
	s := startServer(t, "--enable-force-include-usage")
	_, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"x y z","max_tokens":3,"ignore_eos":true,"stream":true}`)
	chunks := parseChunks(t, sse(t, body))
	require.Len(t, chunks, 4)
	for _, c := range chunks {
		assert.NotNil(t, c.Usage)
	}
	assert.Empty(t, chunks[3].Choices)
}

func TestNonStreamedResponses(t *testing.T) {
	s := startServer(t)
	code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":7,"ignore_eos":true}`)
	require.Equal(t, 200, code)
	var resp struct {
		Object  string `json:"object"`
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens, CompletionTokens, TotalTokens int
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	assert.Equal(t, "text_completion", resp.Object)
	assert.Equal(t, "length", resp.Choices[0].FinishReason)
	assert.Contains(t, body, `"usage":{"prompt_tokens":4,"total_tokens":11,"completion_tokens":7}`)

	code, body = do(t, "POST", s.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"max_completion_tokens":3,"ignore_eos":true}`)
	require.Equal(t, 200, code, body)
	assert.Contains(t, body, `"object":"chat.completion"`)
	assert.Contains(t, body, `"message":{"role":"assistant","content":"`)
	assert.Contains(t, body, `"completion_tokens":3}`)
}

func TestDefaultMaxTokensAndStops(t *testing.T) {
	s := startServer(t, "--sim-seed", "4")
	_, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"hello"}`)
	assert.Contains(t, body, `"completion_tokens":16}`, "completions default to max_tokens 16")
	stops := 0
	for i := 0; i < 10; i++ {
		_, body = do(t, "POST", s.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hello"}],"max_tokens":400,"min_tokens":5}`)
		if strings.Contains(body, `"finish_reason":"stop"`) {
			stops++
		}
	}
	assert.Greater(t, stops, 3, "without ignore_eos most answers stop on their own")
}

func TestErrorsAsVLLMSendsThem(t *testing.T) {
	s := startServer(t, "--max-model-len", "1024", "--api-key", "sekret")
	auth := []string{"Authorization", "Bearer sekret"}
	long := strings.TrimSpace(strings.Repeat("word ", 1000)) // 1000 tokens
	cases := []struct {
		name   string
		path   string
		body   string
		header []string
		code   int
		want   string
	}{
		{"no key", "/v1/completions", `{"prompt":"x"}`, nil, 401, `{"error":"Unauthorized"}`},
		{"wrong key", "/v1/models", ``, []string{"Authorization", "Bearer nope"}, 401, `{"error":"Unauthorized"}`},
		{"context too long", "/v1/completions", `{"prompt":"` + long + `","max_tokens":100}`, auth, 400,
			`{"error":{"message":"This model's maximum context length is 1024 tokens. However, you requested 100 output tokens and your prompt contains 1000 input tokens, for a total of 1100 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=1000)","type":"BadRequestError","param":"input_tokens","code":400}}`},
		{"max_tokens too large", "/v1/completions", `{"prompt":"x","max_tokens":5000}`, auth, 400,
			`{"error":{"message":"max_tokens=5000 cannot be greater than max_model_len=max_total_tokens=1024. Please request fewer output tokens. (parameter=max_tokens, value=5000)","type":"BadRequestError","param":"max_tokens","code":400}}`},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-4","messages":[{"role":"user","content":"x"}]}`, auth, 404,
			"{\"error\":{\"message\":\"The model `gpt-4` does not exist.\",\"type\":\"NotFoundError\",\"param\":\"model\",\"code\":404}}"},
		{"malformed JSON", "/v1/completions", `{"prompt":`, auth, 400, `"type":"Bad Request"`},
		{"n out of range", "/v1/completions", `{"prompt":"x","n":0}`, auth, 400, `{"error":{"message":"n must be at least 1, got 0.","type":"BadRequestError","param":null,"code":400}}`},
		{"tools", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`, auth, 400, "`tools` is not supported: this server (vllmtop sim) does not model tool calling."},
		{"response_format", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`, auth, 400, "`response_format` is not supported"},
		{"guided_json", "/v1/completions", `{"prompt":"x","guided_json":{"type":"object"}}`, auth, 400, "`guided_json` is not supported: this server (vllmtop sim) does not model guided decoding."},
		{"too many logprobs", "/v1/completions", `{"prompt":"x","logprobs":21}`, auth, 400, "Requested sample logprobs of 21, which is greater than max allowed: 20"},
		{"top_logprobs without logprobs", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}`, auth, 400, "when using `top_logprobs`, `logprobs` must be set to true."},
		{"stream options without stream", "/v1/completions", `{"prompt":"x","stream_options":{"include_usage":true}}`, auth, 400, "Stream options can only be defined when `stream=True`."},
		{"no messages", "/v1/chat/completions", `{"messages":[]}`, auth, 400, `'messages'`},
		{"wrong type", "/v1/completions", `{"prompt":"x","max_tokens":"many"}`, auth, 400, `"type":"Bad Request"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := "POST"
			if tc.body == "" {
				method = "GET"
			}
			code, body := do(t, method, s.URL+tc.path, tc.body, tc.header...)
			assert.Equal(t, tc.code, code, body)
			if strings.HasPrefix(tc.want, "{") {
				assert.Equal(t, tc.want, body)
			} else {
				assert.Contains(t, body, tc.want)
			}
			if code != 401 {
				var e struct {
					Error struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal([]byte(body), &e))
				assert.Equal(t, code, e.Error.Code, "the HTTP status equals error.code")
			}
		})
	}
	// Unguarded paths need no key; the right key works.
	code, _ := do(t, "GET", s.URL+"/health", "")
	assert.Equal(t, 200, code)
	code, _ = do(t, "GET", s.URL+"/metrics", "")
	assert.Equal(t, 200, code)
	code, _ = do(t, "GET", s.URL+"/v1/models", "", auth...)
	assert.Equal(t, 200, code)
}

// metricValue reads the value of the first series of a family from /metrics text.
func metricValue(t *testing.T, url, series string) float64 {
	t.Helper()
	_, body := do(t, "GET", url+"/metrics", "")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, series) {
			v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			require.NoError(t, err, line)
			return v
		}
	}
	t.Fatalf("%s not in /metrics", series)
	return 0
}

func TestClientDisconnectAbortsAndFreesBlocks(t *testing.T) {
	s := startServerClock(t, newScaledClock(1), "--max-model-len", "8192")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/completions", strings.NewReader(`{"prompt":"a long story","max_tokens":5000,"ignore_eos":true,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "data: {"))
	assert.Equal(t, 1.0, metricValue(t, s.URL, "vllm:num_requests_running{"))
	assert.Positive(t, metricValue(t, s.URL, "vllm:kv_cache_usage_perc{"))

	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool {
		return metricValue(t, s.URL, "vllm:num_requests_running{") == 0 &&
			metricValue(t, s.URL, "vllm:kv_cache_usage_perc{") == 0
	}, 10*time.Second, 5*time.Millisecond, "the aborted request's blocks are freed")
	assert.Equal(t, 0, s.drv.inFlight())
	assert.Equal(t, 1.0, metricValue(t, s.URL, `vllm:request_success_total{engine="0",finished_reason="abort",model_name="Qwen/Qwen3-0.6B"}`))
}

func TestShutdownEndsStreamsWithAnErrorChunk(t *testing.T) {
	s := startServerClock(t, newScaledClock(1), "--max-model-len", "8192")
	resp, err := http.Post(s.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":5000,"ignore_eos":true,"stream":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	_, err = r.ReadString('\n')
	require.NoError(t, err)
	s.drv.abortAll()
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Contains(t, string(rest), `data: {"error": {"message": "The request was aborted: the server is shutting down.", "type": "InternalServerError", "param": null, "code": 500}}`+"\n\n")
	assert.True(t, strings.HasSuffix(string(rest), "data: [DONE]\n\n"))
}
