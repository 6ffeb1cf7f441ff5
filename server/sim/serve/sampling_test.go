package serve

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errorBody is vLLM's ErrorResponse.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

// The ranges and messages of vLLM's SamplingParams._verify_args, on both endpoints.
func TestSamplingParametersRefusedAsVLLMRefusesThem(t *testing.T) {
	s := startServer(t)
	cases := []struct {
		params string
		msg    string
		param  string // "" for null
	}{
		{`"temperature":-1`, "temperature must be non-negative, got -1.0. (parameter=temperature, value=-1.0)", "temperature"},
		{`"temperature":3`, "temperature must be in [0, 2], got 3.0. (parameter=temperature, value=3.0)", "temperature"},
		{`"top_p":0`, "top_p must be in (0, 1], got 0.0. (parameter=top_p, value=0.0)", "top_p"},
		{`"top_p":1.5`, "top_p must be in (0, 1], got 1.5. (parameter=top_p, value=1.5)", "top_p"},
		{`"top_k":-2`, "top_k must be 0 (disable), or at least 1, got -2.", ""},
		{`"min_p":1.5`, "min_p must be in [0, 1], got 1.5.", ""},
		{`"min_p":-0.1`, "min_p must be in [0, 1], got -0.1.", ""},
		{`"presence_penalty":2.5`, "presence_penalty must be in [-2, 2], got 2.5.", ""},
		{`"frequency_penalty":-3`, "frequency_penalty must be in [-2, 2], got -3.0.", ""},
		{`"repetition_penalty":0`, "repetition_penalty must be greater than zero, got 0.0.", ""},
		{`"n":0`, "n must be at least 1, got 0.", ""},
		{`"n":2,"temperature":0`, "n must be 1 when using greedy sampling, got 2.", ""},
		{`"max_tokens":0`, "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)", "max_tokens"},
		{`"min_tokens":-1`, "min_tokens must be greater than or equal to 0, got -1.", ""},
		{`"max_tokens":4,"min_tokens":5`, "min_tokens must be less than or equal to max_tokens=4, got 5.", ""},
		{`"stop":["ok",""]`, "stop cannot contain an empty string.", ""},
		{`"priority":1`, "Got priority 1 but Priority scheduling is not enabled.", ""},
	}
	for _, tc := range cases {
		for _, ep := range []struct{ path, body string }{
			{"/v1/completions", `{"prompt":"x",` + tc.params + `}`},
			{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],` + tc.params + `}`},
		} {
			t.Run(ep.path+" "+tc.params, func(t *testing.T) {
				code, body := do(t, "POST", s.URL+ep.path, ep.body)
				require.Equal(t, 400, code, body)
				var e errorBody
				require.NoError(t, json.Unmarshal([]byte(body), &e), body)
				assert.Equal(t, tc.msg, e.Error.Message)
				assert.Equal(t, "BadRequestError", e.Error.Type)
				if tc.param == "" {
					assert.Nil(t, e.Error.Param)
				} else if assert.NotNil(t, e.Error.Param) {
					assert.Equal(t, tc.param, *e.Error.Param)
				}
			})
		}
	}
	// The values at the edges of each range are served.
	for _, ok := range []string{`"temperature":0`, `"temperature":2`, `"top_p":1`, `"top_k":-1`, `"top_k":0`, `"top_k":1`,
		`"min_p":0`, `"min_p":1`, `"presence_penalty":-2`, `"frequency_penalty":2`, `"repetition_penalty":0.01`, `"seed":-1`, `"stop":"x"`} {
		code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"x","max_tokens":2,`+ok+`}`)
		assert.Equal(t, 200, code, "%s: %s", ok, body)
	}
}

type completionResp struct {
	Choices []struct {
		Index        int    `json:"index"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// A list of prompts is served as vLLM serves it: n choices per prompt, indexed prompt*n+choice,
// with usage summed over the prompts.
func TestPromptListServedOneChoicePerPrompt(t *testing.T) {
	s := startServer(t)
	code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":["one two","three four five","six"],"max_tokens":3,"ignore_eos":true,"echo":true}`)
	require.Equal(t, 200, code, body)
	var r completionResp
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	require.Len(t, r.Choices, 3)
	for i, c := range r.Choices {
		assert.Equal(t, i, c.Index)
		assert.Equal(t, "length", c.FinishReason)
	}
	assert.Regexp(t, "^one two", r.Choices[0].Text, "each choice echoes its own prompt")
	assert.Regexp(t, "^three four five", r.Choices[1].Text)
	assert.Regexp(t, "^six", r.Choices[2].Text)
	assert.Equal(t, 2+3+1, r.Usage.PromptTokens)
	assert.Equal(t, 9, r.Usage.CompletionTokens)

	code, body = do(t, "POST", s.URL+"/v1/completions", `{"prompt":[[11,12],[13]],"n":2,"max_tokens":2,"ignore_eos":true}`)
	require.Equal(t, 200, code, body)
	r = completionResp{}
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	require.Len(t, r.Choices, 4, "two prompts of token ids, n=2 each")
	assert.Equal(t, 3, r.Usage.PromptTokens)

	code, body = do(t, "POST", s.URL+"/v1/completions", `{"prompt":["a b","c"],"n":2,"max_tokens":2,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	require.Equal(t, 200, code, body)
	chunks := parseChunks(t, sse(t, body))
	finished := map[int]bool{}
	for _, c := range chunks {
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				finished[ch.Index] = true
			}
		}
	}
	var idx []int
	for i := range finished {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	assert.Equal(t, []int{0, 1, 2, 3}, idx, "every choice of every prompt finishes in the stream")
	last := chunks[len(chunks)-1]
	require.NotNil(t, last.Usage)
	assert.Equal(t, 3, last.Usage.PromptTokens)
	assert.Equal(t, 8, last.Usage.CompletionTokens)

	for body, want := range map[string]string{`{"prompt":[]}`: "The prompt cannot be empty.", `{"prompt":["x",""]}`: "The prompt cannot be empty.", `{"prompt":[{"a":1}]}`: "Input should be a valid string"} {
		code, got := do(t, "POST", s.URL+"/v1/completions", body)
		assert.Equal(t, 400, code, body)
		assert.Contains(t, got, want, body)
	}
}

// An image, audio or video part in a chat message is refused by a text-only model, as vLLM's
// chat parser refuses it, and taken by a model with a vision tower; text parts are fine for
// both.
func TestChatMediaPartsNeedAMultimodalModel(t *testing.T) {
	image := `{"messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}],"max_tokens":2}`
	text := `{"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}],"max_tokens":2}`

	plain := startServer(t, "--model", "Qwen/Qwen3-0.6B", "--sim-startup-seconds", "0")
	code, body := do(t, "POST", plain.URL+"/v1/chat/completions", image)
	require.Equal(t, 400, code, body)
	var e errorBody
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	assert.Equal(t, "Qwen/Qwen3-0.6B is not a multimodal model", e.Error.Message)
	code, body = do(t, "POST", plain.URL+"/v1/chat/completions", text)
	assert.Equal(t, 200, code, body)
	// Parts vLLM reads as text are not media.
	for _, typ := range []string{"input_text", "refusal", "thinking"} {
		_, body = do(t, "POST", plain.URL+"/v1/chat/completions", strings.Replace(text, `"type":"text"`, `"type":"`+typ+`"`, 1))
		assert.NotContains(t, body, "not a multimodal model", typ)
	}
	for _, typ := range []string{"input_audio", "video_url", "image_embeds"} {
		code, body = do(t, "POST", plain.URL+"/v1/chat/completions", strings.Replace(image, `"type":"image_url"`, `"type":"`+typ+`"`, 1))
		assert.Equal(t, 400, code, "%s: %s", typ, body)
	}

	// A model that takes images though its entry sizes no encoder apart.
	llama4 := startServer(t, "--model", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "--sim-gpu", "H100", "-tp", "8", "--max-model-len", "4096", "--sim-startup-seconds", "0")
	code, body = do(t, "POST", llama4.URL+"/v1/chat/completions", image)
	assert.Equal(t, 200, code, body)

	vision := startServer(t, "--model", "google/gemma-3-4b-it", "--sim-gpu", "H100", "--max-model-len", "4096", "--sim-startup-seconds", "0")
	code, body = do(t, "POST", vision.URL+"/v1/chat/completions", image)
	assert.Equal(t, 200, code, body)
}
