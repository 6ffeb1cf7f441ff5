package benchcli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// vLLM's client gives a request 6 h, and no byte need come before its first token: a request
// queued on a busy server must not be cut off as stalled.
func TestBenchRequestsWaitAsLongAsVLLMs(t *testing.T) {
	o := parseOptions(t)
	assert.Equal(t, 6*time.Hour, o.Client.RequestTimeout)
	assert.Equal(t, o.Client.RequestTimeout, o.Client.StallTimeout)
	o = parseOptions(t, "--request-timeout", "10m")
	assert.Equal(t, 10*time.Minute, o.Client.RequestTimeout)
	assert.Equal(t, 10*time.Minute, o.Client.StallTimeout)
}

func TestEmbeddingsTakeIgnoreEOSFromTheFlagAlone(t *testing.T) {
	args := []string{"--backend", "openai-embeddings", "--endpoint", "/v1/embeddings"}
	assert.False(t, parseOptions(t, args...).Client.PoolingIgnoreEOS, "random's forced ignore_eos is the generation backends'")
	assert.True(t, parseOptions(t, append(args, "--ignore-eos")...).Client.PoolingIgnoreEOS)
}
