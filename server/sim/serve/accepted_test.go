package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flags of 0.33's command lines that change nothing the simulator models are accepted, named
// as not simulated, and checked as vLLM checks them.
func TestAcceptedFlagsOfCurrentReleases(t *testing.T) {
	o, err := ParseArgs([]string{"Qwen/Qwen3-8B", "--all2all-backend", "deepep_low_latency", "--enable-dbo",
		"--prefix-caching-hash-algo", "xxhash", "--kv-offloading-size", "10", "--mm-encoder-tp-mode", "data",
		"--tokenizer_mode", "auto", "-dcp", "1", "-sc", `{"method": "ngram", "num_speculative_tokens": 2}`}, noEnv)
	require.NoError(t, err)
	for _, name := range []string{"all2all-backend", "enable-dbo", "prefix-caching-hash-algo", "kv-offloading-size", "mm-encoder-tp-mode", "tokenizer-mode"} {
		assert.Contains(t, o.NotSimulated, "--"+name)
	}
	assert.Equal(t, map[string]string{"prefix_caching_hash_algo": "xxhash", "kv_offloading_size": "10.0"}, o.Metrics.CacheLabels,
		"vllm:cache_config_info shows the CacheConfig fields the flags set")
	require.NotNil(t, o.Engine.Speculative, "-sc is --speculative-config")
	assert.Equal(t, 2, o.Engine.Speculative.NumSpeculativeTokens)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--all2all-backend", "bogus"}, "argument --all2all-backend: invalid choice: 'bogus' (choose from 'allgather_reducescatter',"},
		{[]string{"--mm-encoder-tp-mode", "tensor"}, "invalid choice: 'tensor' (choose from 'data', 'weights')"},
		{[]string{"-dcp", "8"}, "--decode-context-parallel-size 8 is not simulated"},
		{[]string{"--headless", "-dp", "2"}, "--headless starts no API server, and the simulator is one"},
		{[]string{"--max-num-partial-prefills", "2"}, "Concurrent Partial Prefill is not supported."},
		{[]string{"--disable-log-requests"}, "unrecognized arguments: --disable-log-requests (removed in vLLM 0.17; --sim-vllm-version is 0.33.0)"},
		{[]string{"--swap-space", "4", "--sim-vllm-version", "0.18.0"}, "unrecognized arguments: --swap-space (removed in vLLM 0.18"},
	} {
		_, err := ParseArgs(append([]string{"Qwen/Qwen3-8B"}, tc.args...), noEnv)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
	// The releases before the removals still take them.
	for _, args := range [][]string{{"--disable-log-requests", "--sim-vllm-version", "0.16.0"}, {"--swap-space", "4", "--sim-vllm-version", "0.17.1"}} {
		_, err := ParseArgs(append([]string{"Qwen/Qwen3-8B"}, args...), noEnv)
		assert.NoError(t, err, args)
	}
}

// The rest of 0.33's flags run with their argparse kinds and short forms.
func TestRestOfCurrentServeFlags(t *testing.T) {
	o, err := ParseArgs([]string{"Qwen/Qwen3-8B", "--disable-custom-all-reduce", "--no-enable-sleep-mode",
		"--expert-placement-strategy", "round_robin", "-dph", "-asc", "2", "--allowed-media-domains", "a.example", "b.example",
		"--device-memory-utilization", "0.8", "-q", "fp8", "--ssl-keyfile", "k.pem", "-pcp", "1", "--grpc"}, noEnv)
	require.NoError(t, err)
	assert.InDelta(t, 0.8, o.Engine.GPUMemoryUtilization, 1e-9, "--device-memory-utilization is --gpu-memory-utilization")
	assert.Equal(t, "fp8", o.Engine.Quantization, "-q is --quantization")
	assert.Equal(t, 2, o.Engine.APIServerCount, "-asc is --api-server-count, which is simulated")
	for _, name := range []string{"--disable-custom-all-reduce", "--expert-placement-strategy", "--data-parallel-hybrid-lb",
		"--allowed-media-domains", "--ssl-keyfile", "--grpc"} {
		assert.Contains(t, o.NotSimulated, name)
	}
	for _, bad := range []string{"0", "-1"} {
		_, err = ParseArgs([]string{"Qwen/Qwen3-8B", "--api-server-count", bad}, noEnv)
		assert.ErrorContains(t, err, "--api-server-count "+bad+" starts no API server (vLLM runs headless)")
	}
	_, err = ParseArgs([]string{"Qwen/Qwen3-8B", "--api-server-count", "1000"}, noEnv)
	assert.ErrorContains(t, err, "--api-server-count must be between 1 and 256, got 1000")
	_, err = ParseArgs([]string{"Qwen/Qwen3-8B", "-pcp", "2"}, noEnv)
	assert.ErrorContains(t, err, "--prefill-context-parallel-size 2 is not simulated")
	assert.Contains(t, Help(), "--disable-custom-all-reduce", "--help names them in its list")
}
