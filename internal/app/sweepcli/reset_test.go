package sweepcli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
)

func resetEnv(out *bytes.Buffer, said *[]string) benchcli.Env {
	say := func(f string, a ...any) { *said = append(*said, fmt.Sprintf(f, a...)) }
	return benchcli.Env{Stdout: out, Stderr: out, Say: say, Note: say}
}

// After each run the sweep POSTs vLLM's three cache-reset endpoints, in vLLM's order.
func TestCacheResetPostsVLLMEndpoints(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	var out bytes.Buffer
	var said []string
	r := newCacheReset(srv.URL+"/", "k")
	require.NoError(t, r.do(context.Background(), resetEnv(&out, &said)))
	assert.Equal(t, []string{"POST /reset_prefix_cache Bearer k", "POST /reset_mm_cache Bearer k", "POST /reset_encoder_cache Bearer k"}, got)
	assert.Equal(t, "Resetting caches at "+srv.URL+"\n", out.String())
	assert.Empty(t, said)

	var none *cacheReset // not a vLLM server: nothing is sent
	require.NoError(t, none.do(context.Background(), resetEnv(&out, &said)))
}

// A server without the endpoints is said once and no longer asked; a failing one is an error.
func TestCacheResetMissingEndpointSaidOnce(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++; http.NotFound(w, r) }))
	defer srv.Close()
	var out bytes.Buffer
	var said []string
	r := newCacheReset(srv.URL, "")
	for range 3 {
		require.NoError(t, r.do(context.Background(), resetEnv(&out, &said)))
	}
	assert.Equal(t, 1, calls)
	require.Len(t, said, 1)
	assert.Contains(t, said[0], "/reset_prefix_cache")
	assert.Contains(t, said[0], "VLLM_SERVER_DEV_MODE=1")

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	defer bad.Close()
	err := newCacheReset(bad.URL, "").do(context.Background(), resetEnv(&out, &said))
	assert.ErrorContains(t, err, "POST /reset_prefix_cache: 500")
}
