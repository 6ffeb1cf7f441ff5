package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The online shorthands of --quantization quantize a 16-bit checkpoint as it loads:
// Qwen3-30B-A3B's experts are most of its weights.
func TestOnlineQuantizationShorthands(t *testing.T) {
	weights := func(q string) (*Setup, float64) {
		s, err := Resolve(Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H100-SXM-80GB", Quantization: q}, nil)
		require.NoError(t, err, q)
		return s, float64(s.Capacity.WeightsBytes)
	}
	base, bf16 := weights("")
	_, fp8 := weights("fp8")
	for _, q := range []string{"fp8_per_tensor", "fp8_per_block", "fp8_per_channel"} {
		s, w := weights(q)
		assert.Equal(t, fp8, w, q)
		assert.Equal(t, q, s.QuantizationMethod(), "the engine config names the shorthand")
		assert.Greater(t, gemmPeakTFLOPS(s), gemmPeakTFLOPS(base), "%s multiplies in FP8 on an H100", q)
	}
	_, mx := weights("mxfp8")
	assert.Greater(t, mx, fp8, "a scale for every 32")
	_, nv := weights("nvfp4_per_token")
	assert.Less(t, nv, fp8)
	_, int8 := weights("int8_per_channel_weight_only")
	experts := routedExpertBytes(base)
	assert.InDelta(t, bf16-experts/2, int8, 1<<20, "the experts alone go to one byte")

	_, err := Resolve(Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H100-SXM-80GB", Quantization: "mxfp8", VLLMVersion: "0.18.0"}, nil)
	assert.ErrorContains(t, err, "invalid choice: 'mxfp8': it is in vLLM 0.19 at the earliest")
	_, err = Resolve(Config{Model: "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", GPU: "H100-SXM-80GB", Quantization: "fp8_per_tensor"}, nil)
	assert.ErrorContains(t, err, "does not match the quantization method specified in the `quantization` argument (fp8_per_tensor)", "a quantized checkpoint keeps its own method")
}

// An llm-compressor checkpoint's config names compressed-tensors: vLLM compares --quantization
// with that and logs it, though its weights are FP8.
func TestCompressedTensorsCheckpointMethod(t *testing.T) {
	const model = "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic"
	s, err := Resolve(Config{Model: model, GPU: "H100-SXM-80GB", TensorParallelSize: 2}, nil)
	require.NoError(t, err)
	assert.Equal(t, "compressed-tensors", s.QuantizationMethod())
	named, err := Resolve(Config{Model: model, GPU: "H100-SXM-80GB", TensorParallelSize: 2, Quantization: "compressed-tensors"}, nil)
	require.NoError(t, err)
	assert.Equal(t, s.Capacity.WeightsBytes, named.Capacity.WeightsBytes)
	_, err = Resolve(Config{Model: model, GPU: "H100-SXM-80GB", TensorParallelSize: 2, Quantization: "fp8"}, nil)
	assert.EqualError(t, err, "Quantization method specified in the model config (compressed-tensors) does not match the quantization method specified in the `quantization` argument (fp8).")
}
