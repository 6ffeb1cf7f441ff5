package sim

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vLLM's Attention layer refuses an fp8_e5m2 KV cache beside weights whose quantization loads
// KV-cache scales, as the model is built: FP8 (checkpoint or on the fly) and ModelOpt always,
// compressed-tensors until 0.24 unless the checkpoint declares a kv_cache_scheme, never AWQ,
// GPTQ or fbgemm_fp8; and not before 0.4.3, when the scales came.
func TestE5M2KVCacheBesideKVScales(t *testing.T) {
	ctWithScheme := BuiltinProfiles()
	m, err := ctWithScheme.Model("RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8")
	require.NoError(t, err)
	m.Name, m.Aliases, m.KVCacheScheme = "acme/Qwen2.5-7B-w8a8-kv", nil, true
	ctWithScheme.Prefer(m)

	for _, tc := range []struct {
		name    string
		cfg     Config
		refused bool
	}{
		{"fp8 on the fly", Config{Model: "Qwen/Qwen2.5-7B-Instruct", Quantization: "fp8"}, true},
		{"an fp8 checkpoint", Config{Model: "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8"}, true},
		{"a ModelOpt checkpoint", Config{Model: "nvidia/Qwen3.6-35B-A3B-NVFP4", GPU: "B200"}, true},
		{"compressed-tensors before the fix", Config{Model: "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8", VLLMVersion: "0.23.0"}, true},
		{"compressed-tensors without KV scales after it", Config{Model: "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8"}, false},
		{"compressed-tensors with a kv_cache_scheme", Config{Model: "acme/Qwen2.5-7B-w8a8-kv"}, true},
		{"fbgemm_fp8", Config{Model: "meta-llama/Llama-3.1-405B-Instruct-FP8", TensorParallelSize: 8}, false},
		{"AWQ", Config{Model: "Qwen/Qwen2.5-7B-Instruct-AWQ"}, false},
		{"a build quantized with w8a8 before the fix", Config{Model: "Qwen/Qwen2.5-7B-Instruct", CheckpointQuantization: "w8a8", VLLMVersion: "0.23.0"}, true},
		{"a build quantized with w8a8 after it", Config{Model: "Qwen/Qwen2.5-7B-Instruct", CheckpointQuantization: "w8a8"}, false},
		{"a build quantized with AWQ", Config{Model: "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", CheckpointQuantization: "awq"}, false},
		{"unquantized", Config{Model: "Qwen/Qwen2.5-7B-Instruct"}, false},
		{"before the scales", Config{Model: "Qwen/Qwen2.5-7B-Instruct", Quantization: "fp8", VLLMVersion: "0.4.2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg.GPU == "" {
				cfg.GPU = "H200"
			}
			cfg.KVCacheDType, cfg.MaxModelLen = "fp8_e5m2", 4096
			_, err := Resolve(cfg, ctWithScheme)
			var se *StartupError
			if !tc.refused {
				if assert.False(t, errors.As(err, &se) && se.Kind == KVDTypeRefused, "%v", err) {
					assert.NoError(t, err)
				}
				return
			}
			require.ErrorAs(t, err, &se)
			assert.Equal(t, KVDTypeRefused, se.Kind)
			assert.Equal(t, "ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints.", se.Error())
			assert.Positive(t, se.Capacity.WeightsBytes, "the plan is still drawn")

			cfg.KVCacheDType = "fp8" // e4m3 takes the scales
			_, err = Resolve(cfg, ctWithScheme)
			assert.NoError(t, err)
		})
	}
}

// A config.json's quantization_config names the checkpoint's format and whether it declares an
// FP8 KV cache with its scales: compressed-tensors' kv_cache_scheme, ModelOpt's
// kv_cache_quant_algo.
func TestHFQuantizationFormat(t *testing.T) {
	base := `"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 4,
		"num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"`
	ctGroups := `"config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}`
	for _, tc := range []struct {
		quant, method, format string
		scheme, fp8KV         bool
	}{
		{`{"quant_method": "fp8"}`, "fp8", "", false, false},
		{`{"quant_method": "compressed-tensors", ` + ctGroups + `}`, "fp8", "compressed-tensors", false, false},
		{`{"quant_method": "compressed-tensors", ` + ctGroups + `, "kv_cache_scheme": null}`, "fp8", "compressed-tensors", false, false},
		{`{"quant_method": "compressed-tensors", ` + ctGroups + `, "kv_cache_scheme": {"num_bits": 8, "type": "float"}}`, "fp8", "compressed-tensors", true, true},
		{`{"quant_method": "compressed-tensors", ` + ctGroups + `, "kv_cache_scheme": {"num_bits": 8, "type": "int"}}`, "fp8", "compressed-tensors", true, false},
		{`{"quant_method": "fbgemm_fp8"}`, "fp8", "fbgemm_fp8", false, false},
		{`{"quant_method": "modelopt_fp4"}`, "nvfp4", "modelopt", false, false},
		{`{"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}`, "nvfp4", "modelopt", false, true},
		{`{"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4"}`, "nvfp4", "modelopt", false, false},
		{`{"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": null}`, "fp8", "modelopt", false, false},
		{`{"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": false}}`, "fp8", "modelopt", false, true},
		{`{"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": true}}`, "fp8", "modelopt", false, false},
		{`{"quant_method": "awq", "bits": 4}`, "awq", "", false, false},
	} {
		m, err := ModelFromHFConfig("acme/m", []byte(`{`+base+`, "quantization_config": `+tc.quant+`}`))
		require.NoError(t, err, tc.quant)
		assert.Equal(t, tc.method, m.Quantization, tc.quant)
		assert.Equal(t, tc.format, m.CheckpointFormat, tc.quant)
		assert.Equal(t, tc.scheme, m.KVCacheScheme, tc.quant)
		assert.Equal(t, tc.fp8KV, m.DeclaredKVFP8, tc.quant)
	}
}

// Left automatic, the KV-cache dtype follows a checkpoint that declares an FP8 cache from 0.14:
// ModelOpt's as fp8_e4m3 in the engine config, compressed-tensors' as fp8 when the attention
// layers are built (the engine config and cache_config_info still say auto), where a 16-bit
// flag did not win before 0.21 and an MLA model's layers never take it. A what-if build of
// another quantization declares none. The fp8 cache holds twice the tokens of the 16-bit one.
func TestCheckpointDeclaredFP8KVCache(t *testing.T) {
	base := `"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 16,
		"num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"`
	ctGroups := `"config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}`
	ctKV := `{"quant_method": "compressed-tensors", ` + ctGroups + `, "kv_cache_scheme": {"num_bits": 8, "type": "float"}}`
	mla := `"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
		"num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 102400, "max_position_embeddings": 163840,
		"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "torch_dtype": "bfloat16"`
	p := BuiltinProfiles()
	for name, cfg := range map[string]string{
		"acme/ct-kv":       `{` + base + `, "quantization_config": ` + ctKV + `}`,
		"acme/modelopt-kv": `{` + base + `, "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}`,
		"acme/ct":          `{` + base + `, "quantization_config": {"quant_method": "compressed-tensors", ` + ctGroups + `}}`,
		"acme/mla-ct-kv":   `{` + mla + `, "quantization_config": ` + ctKV + `}`,
	} {
		m, err := ModelFromHFConfig(name, []byte(cfg))
		require.NoError(t, err, name)
		p.Prefer(m)
	}
	if m, err := p.Model("acme/mla-ct-kv"); assert.NoError(t, err) {
		assert.True(t, m.IsMLA() && m.DeclaredKVFP8, "an MLA model that declares the cache")
	}
	resolve := func(c Config) *Setup {
		c.GPU, c.MaxModelLen = "H100-SXM-80GB", 8192
		s, err := Resolve(c, p)
		require.NoError(t, err, "%+v", c)
		return s
	}
	for _, tc := range []struct {
		cfg            Config
		want, engine   string
		fromCheckpoint bool
	}{
		{Config{Model: "acme/ct-kv"}, "fp8", "auto", true},
		{Config{Model: "acme/ct-kv", KVCacheDType: "auto", VLLMVersion: "0.14.0"}, "fp8", "auto", true},
		{Config{Model: "acme/ct-kv", VLLMVersion: "0.13.0"}, "bfloat16", "auto", false},
		{Config{Model: "acme/ct-kv", KVCacheDType: "bfloat16"}, "bfloat16", "bfloat16", false},
		{Config{Model: "acme/ct-kv", KVCacheDType: "bfloat16", VLLMVersion: "0.20.0"}, "fp8", "bfloat16", true},
		{Config{Model: "acme/ct-kv", CheckpointQuantization: "awq"}, "bfloat16", "auto", false},
		{Config{Model: "acme/modelopt-kv"}, "fp8_e4m3", "fp8_e4m3", true},
		{Config{Model: "acme/modelopt-kv", KVCacheDType: "bfloat16", VLLMVersion: "0.20.0"}, "bfloat16", "bfloat16", false},
		{Config{Model: "acme/ct"}, "bfloat16", "auto", false},
		{Config{Model: "acme/mla-ct-kv"}, "bfloat16", "auto", false},
	} {
		s := resolve(tc.cfg)
		assert.Equal(t, tc.want, s.KVDType, "%+v", tc.cfg)
		assert.Equal(t, tc.engine, s.EngineConfigKVDType(), "%+v", tc.cfg)
		assert.Equal(t, tc.fromCheckpoint, s.KVDTypeFromCheckpoint, "%+v", tc.cfg)
	}
	fp8, bf16 := resolve(Config{Model: "acme/ct-kv"}), resolve(Config{Model: "acme/ct-kv", KVCacheDType: "bfloat16"})
	assert.InDelta(t, 2, float64(fp8.Capacity.KVCacheTokens)/float64(bf16.Capacity.KVCacheTokens), 0.01)
}
