package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModelRunnerAndGraphReserveByVersion: the V2 model runner became the default for dense
// models in 0.25 and for every model in 0.29; its profiling reserves the CUDA-graph estimate
// from 0.29 as the V1 runner's does from 0.21. --enforce-eager reserves nothing.
func TestModelRunnerAndGraphReserveByVersion(t *testing.T) {
	cases := []struct {
		model, version string
		eager          bool
		v2, reserved   bool
	}{
		{"Qwen/Qwen3-8B", "0.20.0", false, false, false},
		{"Qwen/Qwen3-8B", "0.21.0", false, false, true},
		{"Qwen/Qwen3-8B", "0.25.0", false, true, false},
		{"Qwen/Qwen3-8B", "0.28.0", false, true, false},
		{"Qwen/Qwen3-8B", "0.29.0", false, true, true},
		{"Qwen/Qwen3-8B", "0.33.0", false, true, true},
		{"Qwen/Qwen3-8B", "0.33.0", true, true, false},
		{"Qwen/Qwen3-30B-A3B", "0.28.0", false, false, true},
		{"Qwen/Qwen3-30B-A3B", "0.29.0", false, true, true},
		{"Qwen/Qwen3.5-0.8B", "0.28.0", false, false, true},
		{"Qwen/Qwen3.5-0.8B", "0.33.0", false, true, true},
	}
	for _, c := range cases {
		s, err := Resolve(Config{Model: c.model, GPU: "H100-SXM-80GB", VLLMVersion: c.version, EnforceEager: c.eager, MaxModelLen: 8192}, nil)
		require.NoError(t, err, "%+v", c)
		assert.Equal(t, c.v2, s.V2ModelRunner(), "%+v: V2 runner", c)
		assert.Equal(t, c.reserved, s.CUDAGraphProfiled(), "%+v: estimate reserved", c)
		want := int64(0)
		if c.reserved {
			want = CUDAGraphEstimateBytes(s)
		}
		assert.Equal(t, want, s.Capacity.CUDAGraphBytes, "%+v: graph bytes in the plan", c)
		assert.Equal(t, !c.eager && !c.reserved, s.GraphsOutsideBudget(), "%+v: graphs above the budget", c)
	}
}

// TestEnforceEagerLeavesTheGraphEstimateToKV: at 0.33 the eager server's KV cache is larger by
// exactly the estimate the graph-capturing one reserves.
func TestEnforceEagerLeavesTheGraphEstimateToKV(t *testing.T) {
	cfg := Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100-SXM-80GB", MaxModelLen: 9216}
	graphs, err := Resolve(cfg, nil)
	require.NoError(t, err)
	cfg.EnforceEager = true
	eager, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, CUDAGraphEstimateBytes(graphs), eager.Capacity.AvailableKVBytes-graphs.Capacity.AvailableKVBytes)
	assert.Greater(t, eager.Capacity.KVCacheTokens, graphs.Capacity.KVCacheTokens)
}

// TestServerTokenBudgetByVersion: the API server's default token budget on a large GPU went
// from 8192 to 16384 in 0.28 (PR #51726); the LLM class keeps 16384, other GPUs 2048.
func TestServerTokenBudgetByVersion(t *testing.T) {
	cases := []struct {
		gpu, version, entry string
		tokens, seqs        int
	}{
		{"H100-SXM-80GB", "0.27.1", EntryServe, 8192, 1024},
		{"H100-SXM-80GB", "0.28.0", EntryServe, 16384, 1024},
		{"H100-SXM-80GB", "0.33.0", EntryServe, 16384, 1024},
		{"H100-SXM-80GB", "0.27.1", EntryLLM, 16384, 1024},
		{"H100-SXM-80GB", "0.33.0", EntryLLM, 16384, 1024},
		{"A100-SXM-80GB", "0.33.0", EntryServe, 2048, 256},
		{"L4", "0.33.0", EntryLLM, 8192, 256},
	}
	for _, c := range cases {
		s, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: c.gpu, VLLMVersion: c.version, EntryPoint: c.entry, MaxModelLen: 8192}, nil)
		require.NoError(t, err, "%+v", c)
		assert.Equal(t, c.tokens, s.MaxNumBatchedTokens, "%+v", c)
		assert.Equal(t, c.seqs, s.MaxNumSeqs, "%+v", c)
	}
}
