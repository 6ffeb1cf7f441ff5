package serve

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/server/sim"
)

type embedResponse struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func postEmbed(t *testing.T, s testServer, body string) (int, embedResponse, string) {
	t.Helper()
	code, out := do(t, "POST", s.URL+"/v1/embeddings", body)
	var r embedResponse
	if code == 200 {
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	}
	return code, r, out
}

func vector(t *testing.T, raw json.RawMessage) []float64 {
	t.Helper()
	var v []float64
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func TestEmbeddingsShapes(t *testing.T) {
	s := startServer(t, "--runner", "pooling")
	hidden := s.setup.ModelProfile.HiddenSize
	require.Positive(t, hidden)

	code, r, out := postEmbed(t, s, `{"input":"The scheduler batches prefills"}`)
	require.Equal(t, 200, code, out)
	assert.Equal(t, "list", r.Object)
	assert.Equal(t, "Qwen/Qwen3-0.6B", r.Model)
	require.Len(t, r.Data, 1)
	assert.Equal(t, "embedding", r.Data[0].Object)
	v := vector(t, r.Data[0].Embedding)
	assert.Len(t, v, hidden)
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	assert.InDelta(t, 1, math.Sqrt(sum), 1e-4, "a unit vector")
	n := len(sim.Tokenize("The scheduler batches prefills"))
	assert.Equal(t, n, r.Usage.PromptTokens)
	assert.Equal(t, n, r.Usage.TotalTokens)

	// The same input embeds the same; a list answers one vector each, in order.
	_, again, _ := postEmbed(t, s, `{"input":"The scheduler batches prefills"}`)
	assert.Equal(t, v, vector(t, again.Data[0].Embedding))
	code, list, out := postEmbed(t, s, `{"input":["The scheduler batches prefills","another text"],"dimensions":16}`)
	require.Equal(t, 200, code, out)
	require.Len(t, list.Data, 2)
	assert.Equal(t, 1, list.Data[1].Index)
	assert.Len(t, vector(t, list.Data[1].Embedding), 16)
	assert.NotEqual(t, vector(t, list.Data[0].Embedding), vector(t, list.Data[1].Embedding))

	code, ids, out := postEmbed(t, s, `{"input":[[1000,1001,1002],[1003]]}`)
	require.Equal(t, 200, code, out)
	assert.Len(t, ids.Data, 2)
	assert.Equal(t, 4, ids.Usage.PromptTokens)

	code, b64, out := postEmbed(t, s, `{"input":[5,6,7],"encoding_format":"base64","dimensions":8}`)
	require.Equal(t, 200, code, out)
	var enc string
	require.NoError(t, json.Unmarshal(b64.Data[0].Embedding, &enc))
	raw, err := base64.StdEncoding.DecodeString(enc)
	require.NoError(t, err)
	assert.Len(t, raw, 32, "8 float32 values")
}

func TestEmbeddingsBadInput(t *testing.T) {
	s := startServer(t, "--runner", "pooling", "--max-model-len", "64")
	for body, want := range map[string]string{
		`{}`:                                    "('body', 'input'), 'msg': 'Field required'",
		`{"input":{"a":1}}`:                     "('body', 'input'), 'msg': 'Input should be a valid string",
		`{"input":""}`:                          "The prompt cannot be empty.",
		`{"input":[]}`:                          "The prompt cannot be empty.",
		`{"input":"x","dimensions":0}`:          "dimensions must be between 1 and",
		`{"input":"x","encoding_format":"hex"}`: "Input should be 'float', 'base64' or 'bytes'",
		`{"input":"x","truncate_prompt_tokens":100}`: "truncate_prompt_tokens value (100) is greater than max_model_len (64)",
		`{"input":"x","model":"other"}`:              "The model `other` does not exist.",
	} {
		code, _, out := postEmbed(t, s, body)
		if want == "The model `other` does not exist." {
			assert.Equal(t, http.StatusNotFound, code, body)
		} else {
			assert.Equal(t, http.StatusBadRequest, code, body)
		}
		assert.Contains(t, out, want, body)
	}
	long := make([]int, 80)
	for i := range long {
		long[i] = 1000 + i
	}
	b, _ := json.Marshal(map[string]any{"input": long})
	code, _, out := postEmbed(t, s, string(b))
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, out, "you requested 80 tokens in the input for embedding generation")
	// truncate_prompt_tokens -1 keeps the last max_model_len tokens, as vLLM's benchmark asks.
	b, _ = json.Marshal(map[string]any{"input": long, "truncate_prompt_tokens": -1})
	code, r, out := postEmbed(t, s, string(b))
	require.Equal(t, 200, code, out)
	assert.Equal(t, 64, r.Usage.PromptTokens)
}

// TestEmbeddingsNeedPoolingRunner: a generate runner has no /v1/embeddings (vLLM registers the
// route for pooling models only), and a pooling runner has no completions.
func TestEmbeddingsNeedPoolingRunner(t *testing.T) {
	gen := startServer(t)
	code, out := do(t, "POST", gen.URL+"/v1/embeddings", `{"input":"x"}`)
	assert.Equal(t, http.StatusNotFound, code)
	assert.JSONEq(t, `{"detail":"Not Found"}`, out)

	for _, args := range [][]string{{"--runner", "pooling"}, {"--convert", "embed"}, {"--task", "embed"}} {
		pool := startServer(t, args...)
		code, out = do(t, "POST", pool.URL+"/v1/completions", `{"prompt":"x","max_tokens":2}`)
		assert.Equal(t, http.StatusNotFound, code, args)
		assert.JSONEq(t, `{"detail":"Not Found"}`, out)
		code, _ = do(t, "POST", pool.URL+"/v1/embeddings", `{"input":"x"}`)
		assert.Equal(t, http.StatusOK, code, args)
	}
	_, err := ParseArgs([]string{"--runner", "pool"}, noEnv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "argument --runner: invalid choice: 'pool' (choose from 'auto', 'draft', 'generate', 'pooling')")
}
