package serve

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe to read while Main writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMainBadFlagIsAnArgparseError(t *testing.T) {
	var out, errOut syncBuffer
	code := Main(context.Background(), []string{"--no-such-flag", "3"}, &out, &errOut, noEnv)
	assert.Equal(t, 2, code)
	assert.Equal(t, "usage: vllmtop sim [model_tag] [options]\nvllmtop sim: error: unrecognized arguments: --no-such-flag 3\n", errOut.String())
	assert.Empty(t, out.String())

	errOut = syncBuffer{}
	code = Main(context.Background(), []string{"--gpu-memory-utilization", "1.5"}, &out, &errOut, noEnv)
	assert.Equal(t, 2, code)
	assert.Equal(t, "vllmtop sim: error: --gpu-memory-utilization must be greater than 0 and at most 1, got 1.5\n", errOut.String())

	errOut = syncBuffer{}
	code = Main(context.Background(), []string{"acme/Unknown-1B"}, &out, &errOut, noEnv)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut.String(), `unknown model "acme/Unknown-1B"; known models: `)
	assert.Equal(t, 1, strings.Count(errOut.String(), "\n"), "one line")
}

func TestMainStartupFailurePrintsVLLMsError(t *testing.T) {
	var out, errOut syncBuffer
	code := Main(context.Background(), []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--gpu-memory-utilization", "0.5"}, &out, &errOut, noEnv)
	assert.Equal(t, 1, code)
	all := out.String() + errOut.String()
	assert.Contains(t, all, "EngineCore failed to start.")
	assert.Contains(t, all, "ValueError: No available memory for the cache blocks.")
	assert.Contains(t, errOut.String(), "RuntimeError: Engine core initialization failed. See root cause above.")
}

func TestMainServesUntilCancelled(t *testing.T) {
	var out, errOut syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "l4", "--port", "0", "--sim-startup-seconds", "0.05"}, &out, &errOut, noEnv)
	}()
	addr := regexp.MustCompile(`Starting vLLM server on (http://127\.0\.0\.1:\d+)`)
	var url string
	require.Eventually(t, func() bool {
		m := addr.FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil && strings.Contains(errOut.String(), "Application startup complete.")
	}, 10*time.Second, 5*time.Millisecond)
	resp, err := http.Get(url + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Regexp(t, `GPU KV cache size: [\d,]+ tokens`, out.String())
	assert.Regexp(t, `Maximum concurrency for 32,768 tokens per request: [\d.]+x`, out.String())

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code)
	case <-time.After(10 * time.Second):
		t.Fatal("Main did not return after cancel")
	}
	assert.Contains(t, errOut.String(), "Application shutdown complete.")
}
