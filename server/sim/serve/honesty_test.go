package serve

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChatLogprobsWithOpenAIClient: logprobs come back in the shape the OpenAI SDK decodes,
// for every choice of n, with plausible values: the sampled token first among its top
// alternatives, all log probabilities negative and decreasing.
func TestChatLogprobsWithOpenAIClient(t *testing.T) {
	s := startServer(t)
	client := openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:       "Qwen/Qwen3-0.6B",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me about KV caches.")},
		MaxTokens:   openai.Int(12),
		Logprobs:    openai.Bool(true),
		TopLogprobs: openai.Int(3),
		N:           openai.Int(2),
	}, option.WithJSONSet("ignore_eos", true))
	require.NoError(t, err)
	require.Len(t, resp.Choices, 2)
	assert.EqualValues(t, 24, resp.Usage.CompletionTokens, "usage sums the choices")
	for i, ch := range resp.Choices {
		assert.EqualValues(t, i, ch.Index)
		content := ch.Logprobs.Content
		require.Len(t, content, 12)
		text := ""
		for _, tok := range content {
			text += tok.Token
			assert.Less(t, tok.Logprob, 0.0)
			assert.Equal(t, []byte(tok.Token), int64sToBytes(tok.Bytes))
			require.Len(t, tok.TopLogprobs, 3)
			assert.Equal(t, tok.Token, tok.TopLogprobs[0].Token, "the sampled token is the most likely")
			assert.Equal(t, tok.Logprob, tok.TopLogprobs[0].Logprob)
			for j := 1; j < 3; j++ {
				assert.Less(t, tok.TopLogprobs[j].Logprob, tok.TopLogprobs[j-1].Logprob)
				assert.NotEqual(t, tok.Token, tok.TopLogprobs[j].Token)
			}
		}
		assert.Equal(t, ch.Message.Content, text, "the logprob tokens spell the content")
	}
	assert.NotEqual(t, resp.Choices[0].Message.Content, resp.Choices[1].Message.Content, "choices are sampled independently")
}

func int64sToBytes(v []int64) []byte {
	out := make([]byte, len(v))
	for i, x := range v {
		out[i] = byte(x)
	}
	return out
}

// TestCompletionLogprobsEchoStream: a streamed completion with logprobs=2 and echo: the first
// chunk leads with the prompt, whose first token has no logprob (null); offsets run on.
func TestCompletionLogprobsEchoStream(t *testing.T) {
	s := startServer(t)
	code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"Paged attention","max_tokens":4,"ignore_eos":true,"stream":true,"logprobs":2,"echo":true}`)
	require.Equal(t, 200, code)
	type lp struct {
		TextOffset    []int                `json:"text_offset"`
		TokenLogprobs []*float64           `json:"token_logprobs"`
		Tokens        []string             `json:"tokens"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	}
	var texts []string
	var all lp
	for _, p := range sse(t, body)[:4] {
		var c struct {
			Choices []struct {
				Text     string `json:"text"`
				Logprobs lp     `json:"logprobs"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(p), &c), p)
		ch := c.Choices[0]
		texts = append(texts, ch.Text)
		assert.Equal(t, ch.Text, strings.Join(ch.Logprobs.Tokens, ""))
		all.TextOffset = append(all.TextOffset, ch.Logprobs.TextOffset...)
		all.TokenLogprobs = append(all.TokenLogprobs, ch.Logprobs.TokenLogprobs...)
		all.Tokens = append(all.Tokens, ch.Logprobs.Tokens...)
		all.TopLogprobs = append(all.TopLogprobs, ch.Logprobs.TopLogprobs...)
	}
	assert.True(t, strings.HasPrefix(texts[0], "Paged attention"), texts[0])
	assert.Nil(t, all.TokenLogprobs[0], "the first prompt token has no logprob")
	assert.Nil(t, all.TopLogprobs[0])
	offset := 0
	for i, tok := range all.Tokens {
		assert.Equal(t, offset, all.TextOffset[i])
		offset += len(tok)
		if i > 0 {
			require.NotNil(t, all.TokenLogprobs[i])
			assert.Less(t, *all.TokenLogprobs[i], 0.0)
			assert.Len(t, all.TopLogprobs[i], 2)
			assert.Equal(t, *all.TokenLogprobs[i], all.TopLogprobs[i][tok])
		}
	}
}

// TestCompletionNStream: n=3 streams three choices, each ended by its finish_reason, then one
// usage chunk and [DONE].
func TestCompletionNStream(t *testing.T) {
	s := startServer(t)
	code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"x y","max_tokens":5,"ignore_eos":true,"stream":true,"n":3,"stream_options":{"include_usage":true}}`)
	require.Equal(t, 200, code)
	chunks := parseChunks(t, sse(t, body))
	finished := map[int]int{}
	tokens := map[int]int{}
	for _, c := range chunks[:len(chunks)-1] {
		require.Len(t, c.Choices, 1)
		ch := c.Choices[0]
		tokens[ch.Index]++
		if ch.FinishReason != nil {
			finished[ch.Index]++
			assert.Equal(t, "length", *ch.FinishReason)
		}
	}
	assert.Equal(t, map[int]int{0: 1, 1: 1, 2: 1}, finished)
	assert.Equal(t, map[int]int{0: 5, 1: 5, 2: 5}, tokens)
	usage := chunks[len(chunks)-1].Usage
	require.NotNil(t, usage)
	assert.Equal(t, 15, usage.CompletionTokens)
	// Each choice is a request in the engine, with n recorded.
	assert.Equal(t, 3.0, metricValue(t, s.URL, `vllm:request_params_n_sum{`)/3, "three requests with n=3")
}

// TestWrongMethodIs405: FastAPI's answer to a known path with another method.
func TestWrongMethodIs405(t *testing.T) {
	s := startServer(t)
	for path, allow := range map[string]string{"/v1/completions": "POST", "/v1/models": "GET", "/tokenize": "POST"} {
		method := "GET"
		if allow == "GET" {
			method = "DELETE"
		}
		req, err := http.NewRequest(method, s.URL+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var body struct {
			Detail string `json:"detail"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		assert.Equal(t, 405, resp.StatusCode, path)
		assert.Equal(t, "Method Not Allowed", body.Detail)
		assert.Equal(t, allow, resp.Header.Get("Allow"))
	}
	code, body := do(t, "GET", s.URL+"/v2/nothing", "")
	assert.Equal(t, 404, code)
	assert.Equal(t, `{"detail":"Not Found"}`, body)
	// The instrumentator counts them by route, unknown paths as "none".
	assert.Equal(t, 1.0, metricValue(t, s.URL, `http_requests_total{handler="/v1/completions",method="GET",status="4xx"}`))
	assert.Equal(t, 1.0, metricValue(t, s.URL, `http_requests_total{handler="none",method="GET",status="4xx"}`))
}

// TestSpeculativeServe: with --speculative-config, streamed chunks carry several tokens (the
// accepted drafts and the bonus token), and the spec-decode counters add up to what was sent.
func TestSpeculativeServe(t *testing.T) {
	s := startServer(t, "--speculative-config", `{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}`, "--sim-spec-acceptance", "0.7")
	code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"a b c","max_tokens":200,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
	require.Equal(t, 200, code)
	chunks := parseChunks(t, sse(t, body))
	multi, tokens := 0, 0
	for _, c := range chunks[:len(chunks)-1] {
		n := c.Usage.CompletionTokens - tokens // the running count says how many this chunk carried
		tokens = c.Usage.CompletionTokens
		if n > 1 {
			multi++
		}
	}
	assert.Equal(t, 200, chunks[len(chunks)-1].Usage.CompletionTokens)
	assert.Positive(t, multi, "some chunks carry accepted drafts")
	drafts := metricValue(t, s.URL, "vllm:spec_decode_num_drafts_total{")
	draftTokens := metricValue(t, s.URL, "vllm:spec_decode_num_draft_tokens_total{")
	accepted := metricValue(t, s.URL, "vllm:spec_decode_num_accepted_tokens_total{")
	content := float64(len(chunks) - 1)
	// Drafts are 3 tokens but never reach past max_tokens: the last steps draft fewer.
	assert.LessOrEqual(t, draftTokens, 3*drafts)
	assert.GreaterOrEqual(t, draftTokens, 3*drafts-3)
	assert.GreaterOrEqual(t, drafts, content-3, "every step after the first drafts, but the last ones")
	assert.Equal(t, 200.0, content+accepted, "each chunk is one verified token plus the drafts accepted")
	assert.Equal(t, 200, tokens)
	pos0 := metricValue(t, s.URL, `vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="Qwen/Qwen3-0.6B",position="0"}`)
	pos2 := metricValue(t, s.URL, `vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="Qwen/Qwen3-0.6B",position="2"}`)
	assert.Greater(t, pos0, pos2)
	assert.False(t, math.IsNaN(accepted))
}
