package loadgen

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vLLM turns ignore_eos on by itself for its generation backends only: an embeddings request
// carries it when --ignore-eos is given, whatever the dataset's prompts say.
func TestEmbeddingsSendIgnoreEOSOnlyWhenGiven(t *testing.T) {
	var got map[string]any
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = nil
		_ = json.Unmarshal(b, &got)
		_, _ = w.Write([]byte(`{"object":"list","data":[{"object":"embedding","embedding":[1],"index":0}],"usage":{"prompt_tokens":3,"total_tokens":3}}`))
	}))
	defer ts.Close()
	for _, given := range []bool{false, true} {
		c, err := NewClient(ClientConfig{BaseURL: ts.URL, Endpoint: EndpointEmbeddings, Model: "m", Pooling: true, PoolingIgnoreEOS: given})
		require.NoError(t, err)
		res := c.Do(context.Background(), Prompt{Text: "x", InputTokens: 1, OutputTokens: 8, IgnoreEOS: true}, nil)
		require.True(t, res.OK(), res.ErrorMessage)
		_, sent := got["ignore_eos"]
		assert.Equal(t, given, sent, "--ignore-eos given: %v", given)
	}
}
