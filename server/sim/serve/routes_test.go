package serve

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPoolingServerListsAndLabelsItsRoutes: a pooling server lists /v1/embeddings among its
// routes at start-up instead of the completions routes, and the HTTP metrics name the route
// it served.
func TestPoolingServerListsAndLabelsItsRoutes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var logs syncBuffer
	inst, err := Start(context.Background(), []string{"--sim-startup-seconds", "0", "--runner", "pooling"}, noEnv,
		WithListener(ln), WithLogs(&logs, &logs), WithGrace(time.Millisecond))
	require.NoError(t, err)
	require.Eventually(t, inst.Ready, 5*time.Second, time.Millisecond)
	require.NoError(t, inst.Stop())
	out := logs.String()
	assert.Contains(t, out, "Route: /v1/embeddings, Methods: POST\n")
	assert.NotContains(t, out, "Route: /v1/completions")
	assert.NotContains(t, out, "Route: /v1/chat/completions")

	s := startServer(t, "--runner", "pooling")
	code, _ := do(t, "POST", s.URL+"/v1/embeddings", `{"model":"Qwen/Qwen3-0.6B","input":"hello"}`)
	require.Equal(t, 200, code)
	_, body := do(t, "GET", s.URL+"/metrics", "")
	assert.Contains(t, body, `http_requests_total{handler="/v1/embeddings",method="POST",status="2xx"} 1.0`)
	code, _ = do(t, "GET", s.URL+"/v1/completions", "")
	assert.Equal(t, 404, code, "no such route on a pooling server")

	gen := startServer(t)
	code, _ = do(t, "GET", gen.URL+"/v1/completions", "")
	assert.Equal(t, 405, code, "the route exists with POST")
	assert.True(t, strings.HasPrefix(servedRoutes(false)[0].Path, "/health"))
}
