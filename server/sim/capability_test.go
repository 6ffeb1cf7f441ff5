package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A card without bfloat16: the automatic dtype falls back to float16 with vLLM's warnings in
// current releases, refuses at start-up in older ones, and an explicit bfloat16 always refuses.
func TestBfloat16OnCardsWithoutIt(t *testing.T) {
	s, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "T4"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "float16", s.ModelDType)
	assert.Equal(t, "float16", s.KVDType, "the KV cache follows the model's dtype")
	assert.Equal(t, []string{
		"Your device 'Tesla T4' (with compute capability 7.5) doesn't support torch.bfloat16. Falling back to torch.float16 for compatibility.",
		"Casting torch.bfloat16 to torch.float16.",
	}, s.DTypeFallbackLines())

	a100, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "A100-SXM-80GB"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "bfloat16", a100.ModelDType)
	assert.Nil(t, a100.DTypeFallbackLines())

	for _, cfg := range []Config{
		{Model: "Qwen/Qwen3-0.6B", GPU: "V100-32GB", DType: "bfloat16"},
		{Model: "Qwen/Qwen3-0.6B", GPU: "V100-32GB", VLLMVersion: "0.8.5"},
	} {
		_, err := Resolve(cfg, nil)
		var se *StartupError
		require.ErrorAs(t, err, &se, "%+v", cfg)
		assert.Equal(t, DTypeUnsupported, se.Kind)
		assert.Equal(t, "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-32GB GPU has compute capability 7.0. You can use float16 instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.", se.Error())
		require.NotNil(t, se.Setup, "the start-up lines before the failure need the setup")
		assert.Positive(t, se.Capacity.WeightsBytes, "the plan beside the refusal")
	}
	_, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "T4", VLLMVersion: "0.7.3"}, nil)
	var old *StartupError
	require.ErrorAs(t, err, &old)
	assert.Contains(t, old.Message, "Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag", "the old worker's wording")
	_, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "V100-32GB", DType: "half"}, nil)
	assert.NoError(t, err, "float16 runs on a V100")
}

// Quantization methods need a minimum compute capability, checked as the engine config is
// built; a card of unknown capability is not checked.
func TestQuantizationNeedsItsCapability(t *testing.T) {
	cases := []struct {
		model, gpu string
		q          string // --quantization
		refused    string
	}{
		{"Qwen/Qwen2.5-7B-Instruct-AWQ", "V100-32GB", "", "The quantization method awq is not supported for the current GPU. Minimum capability: 75. Current capability: 70."},
		{"Qwen/Qwen2.5-7B-Instruct-AWQ", "T4", "", ""},
		{"Qwen/Qwen2.5-7B-Instruct", "T4", "fp8", "The quantization method fp8 is not supported for the current GPU. Minimum capability: 80. Current capability: 75."},
		{"Qwen/Qwen2.5-7B-Instruct", "A10G", "fp8", ""},
		{"Qwen/Qwen2.5-7B-Instruct-AWQ", "T4", "awq_marlin", "The quantization method awq_marlin is not supported for the current GPU. Minimum capability: 80. Current capability: 75."},
	}
	for _, tc := range cases {
		_, err := Resolve(Config{Model: tc.model, GPU: tc.gpu, Quantization: tc.q, MaxModelLen: 4096}, nil)
		if tc.refused == "" {
			assert.NoError(t, err, "%s on %s", tc.model, tc.gpu)
			continue
		}
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%s on %s", tc.model, tc.gpu)
		assert.Equal(t, "VllmConfig", ve.Class)
		assert.Equal(t, tc.refused, ve.Short())
	}

	p := BuiltinProfiles()
	v100, err := p.GPU("V100-32GB")
	require.NoError(t, err)
	v100.Name, v100.Aliases, v100.ComputeCapability = "my-old-card", nil, 0
	p.GPUs = append(p.GPUs, v100)
	_, err = Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct-AWQ", GPU: "my-old-card", MaxModelLen: 4096}, p)
	assert.NoError(t, err, "a card of unknown capability is not checked")
}

// A profile's compute capability is major.minor: vLLM's integer form (75) or a negative number
// is an error, not a silent switch-off of the checks.
func TestComputeCapabilityIsMajorMinor(t *testing.T) {
	for _, cc := range []float64{75, -1, 0.5} {
		p := Profiles{GPUs: []GPU{{Name: "card", MemoryGiB: 16, BandwidthTBps: 0.3, BF16TFLOPS: 65, EtaBandwidth: 0.8, EtaGEMM: 0.5,
			EtaAttention: 0.4, DefaultMaxNumBatchedTokens: 2048, DefaultMaxNumSeqs: 256, ComputeCapability: cc}}}
		assert.ErrorContains(t, p.validate(), "compute_capability is major.minor", "%g", cc)
	}
}
