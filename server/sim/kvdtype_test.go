package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Llama-3.1-8B: 32 layers of 8 KV heads of 128. The per-token-head caches keep an fp32 scale
// beside each head's key and value; NVFP4 an FP8 scale for every 16 values.
func TestQuantizedKVCachePageSizes(t *testing.T) {
	for _, tc := range []struct {
		kv   string
		want int64
	}{
		{"auto", 32 * 8 * 2 * 128 * 2},
		{"fp8", 32 * 8 * 2 * 128},
		{"int8_per_token_head", 32 * 8 * 2 * (128 + 4)},
		{"fp8_per_token_head", 32 * 8 * 2 * (128 + 4)},
		{"int4_per_token_head", 32 * 8 * 2 * (64 + 4)},
		{"nvfp4", 32 * 8 * 2 * (64 + 8)},
		{"nvfp4_4over6", 32 * 8 * 2 * (64 + 8)},
	} {
		s, err := Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "B200", KVCacheDType: tc.kv}, nil)
		require.NoError(t, err, tc.kv)
		assert.Equal(t, tc.want, s.Capacity.BytesPerToken, tc.kv)
	}
	// At TP 2 a rank keeps 4 heads, each with its scales.
	s, err := Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100-SXM-80GB", KVCacheDType: "int8_per_token_head", TensorParallelSize: 2}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(32*4*2*(128+4)), s.Capacity.BytesPerToken)
}

func TestQuantizedKVCacheRefusals(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Model: "Qwen/Qwen3-8B", KVCacheDType: "int8_per_token_head", VLLMVersion: "0.18.1"},
			"invalid choice: 'int8_per_token_head': it is in vLLM 0.19 at the earliest (--sim-vllm-version is 0.18.1)"},
		{Config{Model: "Qwen/Qwen3-8B", KVCacheDType: "int4_per_token_head", VLLMVersion: "0.21.0"}, "it is in vLLM 0.22 at the earliest"},
		{Config{Model: "deepseek-ai/DeepSeek-V2-Lite", KVCacheDType: "nvfp4"}, "nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends."},
		{Config{Model: "deepseek-ai/DeepSeek-V2-Lite", KVCacheDType: "fp8_per_token_head"}, "the per-token-head caches run in the Triton attention backend, which has no MLA"},
		{Config{Model: "deepseek-ai/DeepSeek-V3", KVCacheDType: "fp8_ds_mla", TensorParallelSize: 8}, "for sparse-attention MLA models (DeepSeek-V3.2 and later)"},
		{Config{Model: "Qwen/Qwen3-8B", KVCacheDType: "turboquant_k8v4"}, "--kv-cache-dtype turboquant_k8v4 is not simulated"},
		{Config{Model: "Qwen/Qwen3-8B", KVCacheDType: "int2"}, "argument --kv-cache-dtype: invalid choice: 'int2' (choose from 'auto',"},
		{Config{Model: "Qwen/Qwen3-8B", KVCacheDType: "FP8"}, "argument --kv-cache-dtype: invalid choice: 'FP8'"},
		{Config{Model: "Qwen/Qwen3-8B", DType: "BFloat16"}, "argument --dtype: invalid choice: 'BFloat16'"},
		{Config{Model: "Qwen/Qwen3-8B", Quantization: "FP8"}, "argument --quantization/-q: invalid choice: 'FP8'"},
	} {
		tc.cfg.GPU = "H200"
		_, err := Resolve(tc.cfg, nil)
		require.Error(t, err, tc.cfg.KVCacheDType)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err := Resolve(Config{Model: "Qwen/Qwen3-8B", GPU: "H200", KVCacheDType: "int8_per_token_head", VLLMVersion: "0.19.0"}, nil)
	assert.NoError(t, err)
}
