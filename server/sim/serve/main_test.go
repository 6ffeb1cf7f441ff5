package serve

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim"
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
	assert.Equal(t, 1, code, "a config class rejects it at engine-config time, not argparse")
	assert.True(t, strings.HasSuffix(errOut.String(), "pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\n"+
		prefix(errOut.String())+"gpu_memory_utilization\n"+
		prefix(errOut.String())+"  Input should be less than or equal to 1 [type=less_than_equal, input_value=1.5, input_type=float]\n"+
		prefix(errOut.String())+"    For further information visit https://errors.pydantic.dev/2.12/v/less_than_equal\n"), errOut.String())

	errOut = syncBuffer{}
	code = Main(context.Background(), []string{"acme/Unknown-1B"}, &out, &errOut, noEnv)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut.String(), `known models are listed by vllmtop help sim`)
	assert.Less(t, len(errOut.String()), 300, "short enough to read")
	assert.Equal(t, 1, strings.Count(errOut.String(), "\n"), "one line")
}

// prefix is the "(APIServer pid=N) " of the first line of text.
func prefix(text string) string {
	if i := strings.Index(text, ") "); strings.HasPrefix(text, "(") && i > 0 {
		return text[:i+2]
	}
	return ""
}

// TestZeroAndOutOfRangeFlags: the values vLLM's pydantic configs reject get their message
// and exit 1, zeros included (they were once replaced by defaults), and the bounds that
// argparse-free configs accept pass.
func TestZeroAndOutOfRangeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpu-memory-utilization", "0"}, "1 validation error for CacheConfig\ngpu_memory_utilization\n  Input should be greater than 0 [type=greater_than, input_value=0.0, input_type=float]"},
		{[]string{"--gpu-memory-utilization", "-0.5"}, "gpu_memory_utilization\n  Input should be greater than 0 [type=greater_than, input_value=-0.5, input_type=float]"},
		{[]string{"-tp", "0"}, "1 validation error for ParallelConfig\ntensor_parallel_size\n  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]"},
		{[]string{"--block-size", "0"}, "1 validation error for CacheConfig\nblock_size\n  Input should be greater than 0 [type=greater_than, input_value=0, input_type=int]"},
		{[]string{"--max-num-batched-tokens", "0"}, "1 validation error for SchedulerConfig\nmax_num_batched_tokens\n  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]"},
		{[]string{"--max-num-seqs", "0"}, "max_num_seqs\n  Input should be greater than or equal to 1"},
	} {
		_, err := ParseArgs(tc.args, noEnv)
		var ve *sim.ValidationError
		if assert.ErrorAs(t, err, &ve, "%v", tc.args) {
			assert.Contains(t, ve.Error(), tc.want)
		}
	}
	// SchedulerConfig's cross-check, with vLLM's message.
	o, err := ParseArgs([]string{"--max-num-batched-tokens", "100", "--max-num-seqs", "256"}, noEnv)
	require.NoError(t, err)
	_, err = sim.Resolve(o.Engine, nil)
	var ve *sim.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (256).", ve.Short())
	// vLLM caps its default max_num_seqs at the token budget, so a budget of 1 alone starts.
	o, err = ParseArgs([]string{"--max-num-batched-tokens", "1"}, noEnv)
	require.NoError(t, err)
	s, err := sim.Resolve(o.Engine, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, s.MaxNumSeqs)
	// In range at the bounds.
	_, err = ParseArgs([]string{"--gpu-memory-utilization", "1", "-tp", "1", "--block-size", "1"}, noEnv)
	assert.NoError(t, err)
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

// TestMaxModelLenAboveTheModelsIsVLLMsValidationError: a --max-model-len above the model's
// context fails as vLLM 0.25.1 failed on the same command (testdata's CPU log): ModelConfig's
// pydantic error, word for word, exit 1, and the supervisor's log parser reads it as the
// same fatal reason it reads from the real log.
func TestMaxModelLenAboveTheModelsIsVLLMsValidationError(t *testing.T) {
	real, err := os.ReadFile("../../../testdata/vllm-0.25.1-cpu-serve-crash-max-model-len-rejected.log")
	require.NoError(t, err)
	var want string
	for _, ln := range strings.Split(string(real), "\n") {
		if strings.Contains(ln, "Value error, User-specified") {
			want = strings.TrimPrefix(ln, "(APIServer pid=1) ")
		}
	}
	require.NotEmpty(t, want)

	var out, errOut syncBuffer
	code := Main(context.Background(), []string{"facebook/opt-125m", "--max-model-len", "999999", "--sim-vllm-version", "0.25.1"}, &out, &errOut, noEnv)
	assert.Equal(t, 1, code)
	p := prefix(errOut.String())
	assert.Contains(t, errOut.String(), p+"pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"+p+want+"\n")
	assert.Contains(t, errOut.String(), p+"    return ModelConfig(\n"+p+"           ^^^^^^^^^^^^\n")

	var fatal *server.Fatal
	for _, ln := range strings.Split(errOut.String(), "\n") {
		if ev, ok := server.ParseLogLine(ln); ok {
			if f, isFatal := ev.(server.Fatal); isFatal {
				fatal = &f
			}
		}
	}
	require.NotNil(t, fatal, "the supervisor recognises the failure")
	assert.Equal(t, server.InvalidConfig, fatal.Reason)

	// Releases before 0.19 printed the derived length as the config's integer.
	errOut = syncBuffer{}
	Main(context.Background(), []string{"facebook/opt-125m", "--max-model-len", "4096", "--sim-vllm-version", "0.11.0"}, &out, &errOut, noEnv)
	assert.Contains(t, errOut.String(), "(max_position_embeddings=2048 or model_max_length=None in model's config.json)")

	// --print-capacity says it in one line of its own.
	errOut = syncBuffer{}
	code = Main(context.Background(), []string{"facebook/opt-125m", "--max-model-len", "4096", "--print-capacity"}, &out, &errOut, noEnv)
	assert.Equal(t, 2, code, "as the other settings --print-capacity cannot plan")
	assert.Equal(t, 1, strings.Count(errOut.String(), "\n"), errOut.String())
	assert.Contains(t, errOut.String(), "vllmtop sim: error: User-specified max_model_len (4096) is greater than the derived max_model_len")
}
