package sim

import (
	"fmt"
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
		release    string
		refused    string
	}{
		{"Qwen/Qwen2.5-7B-Instruct-AWQ", "V100-32GB", "", "0.19.0", "The quantization method awq is not supported for the current GPU. Minimum capability: 75. Current capability: 70."},
		{"Qwen/Qwen2.5-7B-Instruct-AWQ", "T4", "", "0.19.0", ""},
		{"Qwen/Qwen2.5-7B-Instruct", "T4", "fp8", "0.19.0", "The quantization method fp8 is not supported for the current GPU. Minimum capability: 80. Current capability: 75."},
		{"Qwen/Qwen2.5-7B-Instruct", "A10G", "fp8", "0.19.0", ""},
		{"Qwen/Qwen2.5-7B-Instruct-AWQ", "T4", "awq_marlin", "0.19.0", "The quantization method awq_marlin is not supported for the current GPU. Minimum capability: 80. Current capability: 75."},
		// From 0.24 every AWQ spelling is auto_awq, with AWQ's floor of 7.5.
		{"Qwen/Qwen2.5-7B-Instruct-AWQ", "V100-32GB", "", "", "The quantization method auto_awq is not supported for the current GPU. Minimum capability: 75. Current capability: 70."},
		{"Qwen/Qwen2.5-7B-Instruct-AWQ", "T4", "awq_marlin", "", ""},
	}
	for _, tc := range cases {
		_, err := Resolve(Config{Model: tc.model, GPU: tc.gpu, Quantization: tc.q, MaxModelLen: 4096, VLLMVersion: tc.release}, nil)
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

// The Triton attention backend refuses a KV-cache dtype the card cannot store (fp8 below
// compute capability 8.9, bfloat16 below 8.0) from 0.23; the cache reaches it where FlashInfer
// does not take it: below 7.5, below 8.0 from 0.24, without FlashInfer installed, or at a head
// size FlashInfer lacks. An MLA model's reaches Triton MLA, which refuses it from 0.26.
func TestKVCacheDTypeTheCardCannotStore(t *testing.T) {
	const t4FP8 = "ValueError: FP8 KV cache is not supported by the Triton attention backend on Tesla T4 (compute capability 7.5); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype float16."
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" where vLLM starts
	}{
		{"fp8 on a T4", Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "T4", KVCacheDType: "fp8"}, t4FP8},
		{"fp8_e5m2 on a T4", Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "T4", KVCacheDType: "fp8_e5m2"}, t4FP8},
		{"fp8 on a T4 at 0.23, through FlashInfer", Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "T4", KVCacheDType: "fp8", VLLMVersion: "0.23.0"}, ""},
		{"fp8 on a T4 before the guard", Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "T4", KVCacheDType: "fp8", VLLMVersion: "0.22.0"}, ""},
		{"fp8 on a V100 at 0.23", Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "V100-32GB", KVCacheDType: "fp8", VLLMVersion: "0.23.0"},
			"ValueError: FP8 KV cache is not supported by the Triton attention backend on Tesla V100-SXM2-32GB (compute capability 7.0); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype float16."},
		{"bfloat16 on a T4", Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "T4", KVCacheDType: "bfloat16"},
			"ValueError: bfloat16 KV cache is not supported on Tesla T4 (compute capability 7.5); bfloat16 requires SM80+. Re-run with --kv-cache-dtype float16."},
		{"int8 per token head on a T4", Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "T4", KVCacheDType: "int8_per_token_head"}, ""},
		{"fp8 on an A10G, through FlashInfer", Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "A10G", KVCacheDType: "fp8"}, ""},
		{"fp8 on an A10G without FlashInfer", Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "A10G", KVCacheDType: "fp8", FlashInfer: FlashInferAbsent},
			"ValueError: FP8 KV cache is not supported by the Triton attention backend on NVIDIA A10G (compute capability 8.6); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype bfloat16."},
		{"fp8 on an A100 at head size 96", Config{Model: "microsoft/Phi-3.5-mini-instruct", GPU: "A100-SXM-80GB", KVCacheDType: "fp8"},
			"ValueError: FP8 KV cache is not supported by the Triton attention backend on NVIDIA A100-SXM4-80GB (compute capability 8.0); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype bfloat16."},
		{"fp8 on an L4 without FlashInfer", Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "L4", KVCacheDType: "fp8", FlashInfer: FlashInferAbsent}, ""},
		{"fp8 on an H100 at head size 96", Config{Model: "microsoft/Phi-3.5-mini-instruct", GPU: "H100-SXM-80GB", KVCacheDType: "fp8"}, ""},
		{"fp8 for an MLA model on an A100, through Triton MLA", Config{Model: "deepseek-ai/DeepSeek-V2-Lite", GPU: "A100-SXM-80GB", KVCacheDType: "fp8"},
			"ValueError: FP8 KV cache is not supported by the Triton MLA backend on NVIDIA A100-SXM4-80GB (compute capability 8.0); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype bfloat16."},
		{"bfloat16 for an MLA model on a T4", Config{Model: "deepseek-ai/DeepSeek-V2-Lite", GPU: "T4", KVCacheDType: "bfloat16"},
			"ValueError: bfloat16 KV cache is not supported by the Triton MLA backend on Tesla T4 (compute capability 7.5); bfloat16 requires SM80+. Re-run with --kv-cache-dtype float16."},
		{"fp8 for an MLA model before Triton MLA's guard", Config{Model: "deepseek-ai/DeepSeek-V2-Lite", GPU: "A100-SXM-80GB", KVCacheDType: "fp8", VLLMVersion: "0.25.0"}, ""},
		{"fp8 for an MLA model on an L40S", Config{Model: "deepseek-ai/DeepSeek-V2-Lite", GPU: "L40S", KVCacheDType: "fp8"}, ""},
		{"fp8 per token head on an A10G, Triton's alone", Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "A10G", KVCacheDType: "fp8_per_token_head"},
			"ValueError: FP8 KV cache is not supported by the Triton attention backend on NVIDIA A10G (compute capability 8.6); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype bfloat16."},
		{"fp8 for gpt-oss on an A100: sinks are not FlashInfer's there", Config{Model: "openai/gpt-oss-20b", GPU: "A100-SXM-80GB", KVCacheDType: "fp8"},
			"ValueError: FP8 KV cache is not supported by the Triton attention backend on NVIDIA A100-SXM4-80GB (compute capability 8.0); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype bfloat16."},
		{"fp8 for Gemma 4 on an A100: its global layers' 512", Config{Model: "google/gemma-4-26B-A4B", GPU: "A100-SXM-80GB", KVCacheDType: "fp8"},
			"ValueError: FP8 KV cache is not supported by the Triton attention backend on NVIDIA A100-SXM4-80GB (compute capability 8.0); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype bfloat16."},
		{"bfloat16 in Triton on an A100", Config{Model: "microsoft/Phi-3.5-mini-instruct", GPU: "A100-SXM-80GB", KVCacheDType: "bfloat16"}, ""},
		{"fp8 on an A10G with Triton asked for", Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "A10G", KVCacheDType: "fp8", AttentionBackend: "TRITON_ATTN"},
			"ValueError: FP8 KV cache is not supported by the Triton attention backend on NVIDIA A10G (compute capability 8.6); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype bfloat16."},
		{"fp8 on an H100 with Triton asked for", Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "H100-SXM-80GB", KVCacheDType: "fp8", AttentionBackend: "TRITON_ATTN"}, ""},
		{"fp8 on an A10G with FlashInfer asked for", Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "A10G", KVCacheDType: "fp8", AttentionBackend: "FLASHINFER"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) { assertBuildRefusal(t, tc.cfg, KVDTypeUnsupported, tc.want) })
	}
}

// assertBuildRefusal resolves cfg at a 4,096-token context and checks that it starts where want
// is "", else that the model's building refuses it with kind and want, its plan still drawn.
func assertBuildRefusal(t *testing.T, cfg Config, kind StartupKind, want string) {
	t.Helper()
	cfg.MaxModelLen = 4096
	_, err := Resolve(cfg, nil)
	if want == "" {
		require.NoError(t, err)
		return
	}
	var se *StartupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, kind, se.Kind)
	assert.Equal(t, want, se.Error())
	assert.Positive(t, se.Capacity.WeightsBytes, "the plan is still drawn")
}

// --attention-backend FLASH_ATTN or FLASHINFER is checked by vLLM's selector against the first
// attention layer and the card, and refused with its reasons in validate_configuration's order.
func TestSelectedBackendNotValid(t *testing.T) {
	const notValid = "ValueError: Selected backend AttentionBackendEnum.%s is not valid for this configuration. Reason: [%s]"
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" where vLLM starts
	}{
		{"FlashAttention on a T4", Config{Model: "Qwen/Qwen3-0.6B", GPU: "T4", AttentionBackend: "FLASH_ATTN"},
			fmt.Sprintf(notValid, "FLASH_ATTN", "'compute capability not supported'")},
		{"FlashAttention's fp8 cache on an L4 (FA2)", Config{Model: "Qwen/Qwen3-8B", GPU: "L4", AttentionBackend: "flash_attn", KVCacheDType: "fp8"},
			fmt.Sprintf(notValid, "FLASH_ATTN", "'kv_cache_dtype not supported'")},
		{"FlashAttention's fp8 cache on an H100 (FA3)", Config{Model: "Qwen/Qwen3-8B", GPU: "H100", AttentionBackend: "FLASH_ATTN", KVCacheDType: "fp8"}, ""},
		{"FlashAttention for Gemma 4's 512-wide layers through FA4", Config{Model: "google/gemma-4-26B-A4B", GPU: "H100", AttentionBackend: "FLASH_ATTN"}, ""},
		{"FlashAttention for Gemma 4's 512-wide layers before FA4 took them", Config{Model: "google/gemma-4-26B-A4B", GPU: "H100", AttentionBackend: "FLASH_ATTN", VLLMVersion: "0.19.0"},
			fmt.Sprintf(notValid, "FLASH_ATTN", "'head_size not supported'")},
		{"FlashAttention for Gemma 4 on an A100, without FA4", Config{Model: "google/gemma-4-26B-A4B", GPU: "A100-SXM-80GB", AttentionBackend: "FLASH_ATTN"},
			fmt.Sprintf(notValid, "FLASH_ATTN", "'head_size not supported'")},
		{"FlashAttention's fp8 cache on a B200: FA3 only", Config{Model: "Qwen/Qwen3-8B", GPU: "B200", AttentionBackend: "FLASH_ATTN", KVCacheDType: "fp8"},
			fmt.Sprintf(notValid, "FLASH_ATTN", "'kv_cache_dtype not supported'")},
		{"FlashInfer in an install without it", Config{Model: "Qwen/Qwen3-8B", GPU: "A10G", AttentionBackend: "FLASHINFER", FlashInfer: FlashInferAbsent},
			fmt.Sprintf(notValid, "FLASHINFER", "'ImportError'")},
		{"FlashInfer for an MLA model", Config{Model: "deepseek-ai/DeepSeek-V2-Lite", GPU: "H100", AttentionBackend: "FLASHINFER"},
			fmt.Sprintf(notValid, "FLASHINFER", "'head_size not supported', 'MLA not supported'")},
		{"FlashInfer on a T4 from 0.24", Config{Model: "Qwen/Qwen3-0.6B", GPU: "T4", AttentionBackend: "FLASHINFER"},
			fmt.Sprintf(notValid, "FLASHINFER", "'compute capability not supported'")},
		{"FlashInfer on a T4 at 0.23", Config{Model: "Qwen/Qwen3-0.6B", GPU: "T4", AttentionBackend: "FLASHINFER", VLLMVersion: "0.23.0"}, ""},
		{"FlashAttention on a T4 before the selector checked it", Config{Model: "Qwen/Qwen3-0.6B", GPU: "T4", AttentionBackend: "FLASH_ATTN", VLLMVersion: "0.11.0"}, ""},
		{"FlashAttention on an A10G", Config{Model: "Qwen/Qwen3-8B", GPU: "A10G", AttentionBackend: "FLASH_ATTN"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) { assertBuildRefusal(t, tc.cfg, AttentionBackendInvalid, tc.want) })
	}
}
