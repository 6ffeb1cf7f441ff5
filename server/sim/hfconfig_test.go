package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The configs in testdata/hf-configs are the models' config.json as published:
// https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite/blob/main/config.json and
// https://huggingface.co/Qwen/Qwen3-235B-A22B-FP8/blob/main/config.json.
const hfConfigDir = "../../testdata/hf-configs/"

func loadTestConfig(t *testing.T, name, dir string) Model {
	t.Helper()
	m, err := LoadHFModel(name, hfConfigDir+dir+"/config.json")
	require.NoError(t, err)
	return m
}

// layoutFor resolves m on gpu at version with cfg's other settings.
func layoutFor(t *testing.T, m Model, cfg Config) *Setup {
	t.Helper()
	p := BuiltinProfiles()
	p.Prefer(m)
	cfg.Model = m.Name
	s, err := Resolve(cfg, p)
	require.NoError(t, err)
	return s
}

// TestHFConfigDeepSeekV2LiteMLA sizes DeepSeek-V2-Lite from its config and checks it against
// real logs: the 0.95 GiB a 32768-token request needs (vllm#15871, vLLM 0.8.3, "0.95 GiB KV
// cache is needed, which is larger than the available KV cache memory (0.93 GiB)"), and the
// 29.301 GiB of weights vLLM 0.5.0 loaded (vllm PR #4650).
func TestHFConfigDeepSeekV2LiteMLA(t *testing.T) {
	m := loadTestConfig(t, "test/DeepSeek-V2-Lite", "deepseek-v2-lite")
	assert.True(t, m.IsMLA())
	assert.Equal(t, []int{512, 64, 128, 128}, []int{m.KVLoraRank, m.QKRopeHeadDim, m.QKNopeHeadDim, m.VHeadDim})
	assert.Equal(t, []int{64, 6, 1408}, []int{m.NumExperts, m.ExpertsPerToken, m.IntermediateSize})
	assert.Equal(t, []int{10944, 2816}, []int{m.DenseIntermediateSize, m.SharedExpertIntermediateSize},
		"the first layer's dense MLP; two shared experts of 1408")
	assert.Equal(t, 26, m.RoutedLayers(), "first_k_dense_replace 1 of 27 layers")
	catalogued, err := BuiltinProfiles().Model("deepseek-ai/DeepSeek-V2-Lite")
	require.NoError(t, err)
	assert.Equal(t, catalogued.MoELayers, m.MoELayers, "the catalogue's moe_layers is the config's")
	assert.Equal(t, 1, m.FirstDenseLayers, "the dense layer comes first")
	assert.Equal(t, catalogued.FirstDenseLayers, m.FirstDenseLayers, "the catalogue's first_dense_layers is the config's")
	assert.Equal(t, 163840, m.MaxPositionEmbeddings, "yarn: 4096 x 40")
	assert.InDelta(t, 15.71e9, m.Params, 0.01*15.71e9, "the card's 15.7B")
	assert.InDelta(t, 2.45e9, m.ActiveParams, 0.05*2.45e9, "the card's 2.4B active")

	s := layoutFor(t, m, Config{GPU: "H100", MaxModelLen: 32768, VLLMVersion: "0.10.0"})
	l := s.Capacity.Layout
	assert.Equal(t, int64(576*2), l.AttentionBytesPerToken, "latent 512 + rope 64, bf16")
	assert.Equal(t, "0.95", FormatGiB(l.neededBytes(32768)), "vllm#15871")
	assert.Less(t, l.estimateMaxModelLen(gibBytes(0.93), 32768), 32768, "0.93 GiB does not hold it")
	assert.InDelta(t, 29.301, weightBytes(s)/gib, 0.01*29.301, "vllm PR #4650 loaded 29.301 GiB")

	tp2 := layoutFor(t, m, Config{GPU: "H100", MaxModelLen: 32768, VLLMVersion: "0.10.0", TensorParallelSize: 2})
	assert.Equal(t, l.AttentionBytesPerToken, tp2.Capacity.Layout.AttentionBytesPerToken, "MLA is whole on every rank")

	t.Logf("DeepSeek-V2-Lite from its config: %.4g parameters (%.4g active), %.3f GiB of weights, %s GiB for a 32768-token request",
		m.Params, m.ActiveParams, weightBytes(s)/gib, FormatGiB(l.neededBytes(32768)))
	sameKV(t, m, "deepseek-ai/DeepSeek-V2-Lite")

	old := &Setup{Config: Config{TensorParallelSize: 2}, ModelProfile: m, KVDType: "bfloat16", Version: MustVersion("0.5.0")}
	assert.Equal(t, int64(2*8*256*2), attentionBytesPerToken(old), "before MLA: 8 heads a rank, padded to 256")
}

// TestHFConfigQwen3MoE sizes Qwen3-235B-A22B-FP8 from its config and checks the KV cache
// against vllm#21348 (vLLM 0.9.2, TP 4 on H100s: "Available KV cache memory: 8.11 GiB",
// "GPU KV cache size: 178,880 tokens"; the token line is the smallest rank's, hence 2%).
func TestHFConfigQwen3MoE(t *testing.T) {
	m := loadTestConfig(t, "test/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b-fp8")
	assert.Equal(t, []int{94, 4, 128, 128, 8, 1536}, []int{m.NumLayers, m.NumKeyValueHeads, m.HeadDim, m.NumExperts, m.ExpertsPerToken, m.IntermediateSize})
	assert.Equal(t, 94, m.RoutedLayers(), "every layer routes")
	assert.Zero(t, m.FirstDenseLayers)
	assert.Equal(t, "fp8", m.Quantization)
	assert.Equal(t, []int{128, 128}, m.WeightBlockSize, "block-scaled FP8")
	assert.Equal(t, 40960, m.MaxPositionEmbeddings)
	assert.Zero(t, m.NumSlidingWindowLayers, "use_sliding_window is false")
	assert.InDelta(t, 235.09e9, m.Params, 0.01*235.09e9)
	assert.InDelta(t, 22.14e9, m.ActiveParams, 0.03*22.14e9)

	s := layoutFor(t, m, Config{GPU: "H100", TensorParallelSize: 4, VLLMVersion: "0.10.0"})
	l := s.Capacity.Layout
	assert.Equal(t, int64(2*1*128*2), l.AttentionBytesPerToken, "one KV head a rank")
	_, _, tokens := KVCapacity(l, gibBytes(8.11), 40960, s.Version)
	assert.InDelta(t, 178880, tokens, 0.02*178880)
	t.Logf("Qwen3-235B-A22B-FP8 from its config: %.4g parameters (%.4g active); %d KV tokens from 8.11 GiB at TP 4 (logged 178880)",
		m.Params, m.ActiveParams, tokens)
	sameKV(t, m, "Qwen/Qwen3-235B-A22B-FP8")
}

// sameKV: the catalogue entry of a model and the one sized from its config agree on what
// sizes the KV cache and the weights.
func sameKV(t *testing.T, fromConfig Model, name string) {
	t.Helper()
	c, err := BuiltinProfiles().Model(name)
	require.NoError(t, err)
	shape := func(m Model) []int {
		return []int{m.NumLayers, m.NumKeyValueHeads, m.HeadDim, m.KVLoraRank, m.QKRopeHeadDim, m.NumExperts,
			m.ExpertsPerToken, m.IntermediateSize, m.VocabSize, m.MaxPositionEmbeddings, m.NumSlidingWindowLayers}
	}
	assert.Equal(t, shape(c), shape(fromConfig), name)
	assert.Equal(t, c.Quantization, fromConfig.Quantization, name)
	assert.InDelta(t, c.Params, fromConfig.Params, 0.01*c.Params, name)
}

func TestHFConfigShapes(t *testing.T) {
	gemma3 := `{"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
	  "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 34, "hidden_size": 2560, "num_attention_heads": 8,
	    "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 10240, "vocab_size": 262208,
	    "max_position_embeddings": 131072, "sliding_window": 1024, "sliding_window_pattern": 6},
	  "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27}, "torch_dtype": "bfloat16"}`
	m, err := ModelFromHFConfig("t/g3", []byte(gemma3))
	require.NoError(t, err)
	assert.Equal(t, []int{29, 1024, 34}, []int{m.NumSlidingWindowLayers, m.SlidingWindow, m.NumLayers})
	assert.True(t, m.TieWordEmbeddings, "gemma ties by default")
	assert.InDelta(t, 0.41e9, m.EncoderParams, 0.02e9)

	qwen35 := `{"text_config": {"model_type": "qwen3_5_text", "num_hidden_layers": 24, "hidden_size": 1024, "num_attention_heads": 8,
	  "num_key_value_heads": 2, "head_dim": 256, "intermediate_size": 3584, "vocab_size": 248320, "max_position_embeddings": 262144,
	  "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_key_head_dim": 128,
	  "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float32", "tie_word_embeddings": true,
	  "torch_dtype": "bfloat16"}}`
	m, err = ModelFromHFConfig("t/q35", []byte(qwen35))
	require.NoError(t, err)
	assert.Equal(t, []int{18, 6}, []int{m.NumLinearAttentionLayers, m.NumFullAttentionLayers()})
	assert.True(t, m.IsHybrid())

	nemotron := `{"model_type": "nemotron_h", "num_hidden_layers": 6, "hybrid_override_pattern": "M-M*-M", "hidden_size": 1024,
	  "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 4096, "vocab_size": 131072,
	  "max_position_embeddings": 8192, "mamba_num_heads": 32, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8,
	  "conv_kernel": 4, "torch_dtype": "bfloat16"}`
	m, err = ModelFromHFConfig("t/nh", []byte(nemotron))
	require.NoError(t, err)
	assert.Equal(t, []int{4, 3, 1}, []int{m.NumLayers, m.NumLinearAttentionLayers, m.NumFullAttentionLayers()}, "MLP layers hold no cache")
	assert.Equal(t, []int{8, 32, 128, 64}, []int{m.LinearNumKeyHeads, m.LinearNumValueHeads, m.LinearKeyHeadDim, m.LinearValueHeadDim})

	// Nemotron-H with experts: the pattern's E layers route, 23 of its 52 (29 mixers and 23 MoE).
	nemotronMoE := `{"model_type": "nemotron_h", "num_hidden_layers": 52,
	  "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", "hidden_size": 2688,
	  "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 1856, "vocab_size": 131072,
	  "max_position_embeddings": 262144, "mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8,
	  "conv_kernel": 4, "torch_dtype": "bfloat16", "n_routed_experts": 128, "num_experts_per_tok": 6,
	  "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712, "n_shared_experts": 1}`
	m, err = ModelFromHFConfig("t/nhmoe", []byte(nemotronMoE))
	require.NoError(t, err)
	assert.Equal(t, []int{29, 23}, []int{m.NumLayers, m.RoutedLayers()})
	assert.Less(t, m.Params, 35e9, "experts on the 23 E layers only (all 52 would count 68e9)")
	t.Logf("Nemotron-H MoE shapes: %.3g parameters, %.3g active", m.Params, m.ActiveParams)

	mistral := `{"model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
	  "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "max_position_embeddings": 32768,
	  "sliding_window": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}, "torch_dtype": "bfloat16"}`
	m, err = ModelFromHFConfig("t/m", []byte(mistral))
	require.NoError(t, err)
	assert.Equal(t, []int{32, 128, 65536}, []int{m.NumSlidingWindowLayers, m.HeadDim, m.MaxPositionEmbeddings})
	assert.False(t, m.TieWordEmbeddings)
	assert.InDelta(t, 7.24e9, m.Params, 0.01*7.24e9, "Mistral-7B's shapes")
	assert.False(t, m.AttentionSinks)

	gptOSS := `{"model_type": "gpt_oss", "num_hidden_layers": 24, "hidden_size": 2880, "num_attention_heads": 64,
	  "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "vocab_size": 201088,
	  "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}`
	m, err = ModelFromHFConfig("t/oss", []byte(gptOSS))
	require.NoError(t, err)
	assert.True(t, m.AttentionSinks, "vLLM's gpt-oss attention carries a sink per head")
}

// TestHFConfigHostile: every bad config is a one-line error, and size is capped.
func TestHFConfigHostile(t *testing.T) {
	base := `"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 128`
	for name, cfg := range map[string]string{
		"not json":          `{"num_hidden_layers": `,
		"array":             `[1, 2]`,
		"missing layers":    `{` + base + `}`,
		"negative layers":   `{"num_hidden_layers": -3, ` + base + `}`,
		"fractional":        `{"num_hidden_layers": 2.5, ` + base + `}`,
		"huge":              `{"num_hidden_layers": 1e300, ` + base + `}`,
		"layer types count": `{"num_hidden_layers": 2, "layer_types": ["full_attention"], ` + base + `}`,
		"unknown layer":     `{"num_hidden_layers": 1, "layer_types": ["quantum\nattention"], ` + base + `}`,
		"only mamba":        `{"num_hidden_layers": 1, "layer_types": ["mamba"], ` + base + `}`,
		"unknown quant":     `{"num_hidden_layers": 1, "quantization_config": {"quant_method": "magic\nbits"}, ` + base + `}`,
		"bad dtype":         `{"num_hidden_layers": 1, "torch_dtype": "int3", ` + base + `}`,
		"kv over heads":     `{"num_hidden_layers": 1, "num_key_value_heads": 8, ` + base + `}`,
	} {
		_, err := ModelFromHFConfig("t/x", []byte(cfg))
		require.Error(t, err, name)
		assert.NotContains(t, err.Error(), "\n", name)
	}
	// The messages speak JSON and the config's field names, not the decoder's Go types.
	for cfg, msg := range map[string]string{
		`[1, 2]`:                      "not a config.json: it holds a JSON array, not an object",
		`{"num_hidden_layers": "32"}`: `not a config.json: "num_hidden_layers" is a JSON string, not a number`,
		`{"num_hidden_layers": 1e6, ` + base + `}`: "num_hidden_layers is 1000000; it must be a whole number from 1 to",
	} {
		_, err := ModelFromHFConfig("t/x", []byte(cfg))
		assert.ErrorContains(t, err, msg, cfg)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat(" ", MaxHFConfigBytes+1)), 0o600))
	_, err := LoadHFModel("t/big", path)
	require.ErrorContains(t, err, "not a config.json")
}

// TestFindHFConfig finds a model in a Hugging Face cache laid out as huggingface_hub does,
// and nothing without one.
func TestFindHFConfig(t *testing.T) {
	home := t.TempDir()
	commit := strings.Repeat("ab", 20)
	snap := filepath.Join(home, "hub", "models--acme--Tiny-1B", "snapshots", commit)
	require.NoError(t, os.MkdirAll(snap, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(snap, "config.json"), []byte("{}"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "hub", "models--acme--Tiny-1B", "refs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "hub", "models--acme--Tiny-1B", "refs", "main"), []byte(commit+"\n"), 0o600))
	env := func(k string) string {
		if k == "HF_HOME" {
			return home
		}
		return ""
	}
	assert.Equal(t, filepath.Join(snap, "config.json"), FindHFConfig("acme/Tiny-1B", env))
	assert.Empty(t, FindHFConfig("acme/Other", env))
	assert.Empty(t, FindHFConfig("../../etc/passwd", env))
	assert.Empty(t, FindHFConfig("acme/Tiny-1B", func(string) string { return "" }))
	assert.Equal(t, filepath.Join(snap, "config.json"), FindHFConfig(snap, func(string) string { return "" }), "a model directory")
}

func gibBytes(g float64) int64 { return int64(g * gib) }

// TestGPUNamesUsersType: torch's device names and common spellings find their profile.
func TestGPUNamesUsersType(t *testing.T) {
	p := BuiltinProfiles()
	for name, want := range map[string]string{
		"T4": "T4", "NVIDIA Tesla T4": "T4", "Tesla T4": "T4", "H100-80GB-HBM3": "H100-SXM-80GB",
		"NVIDIA H100 80GB HBM3": "H100-SXM-80GB", "NVIDIA GeForce RTX 4090": "RTX-4090", "NVIDIA GeForce RTX 3090": "RTX-3090",
		"AMD Instinct MI300X": "MI300X", "Tesla V100-SXM2-32GB": "V100-32GB", "NVIDIA A100-SXM4-80GB": "A100-SXM-80GB",
		"NVIDIA A100 80GB PCIe": "A100-PCIe-80GB", "NVIDIA H100 NVL": "H100-NVL-94GB", "NVIDIA RTX A6000": "RTX-A6000",
		"NVIDIA L40S": "L40S", "NVIDIA B200": "B200", "NVIDIA GB10": "GB10", "NVIDIA GH200 480GB": "GH200-96GB",
		"NVIDIA A10": "A10", "NVIDIA A10G": "A10G", "NVIDIA H20": "H20",
	} {
		g, err := p.GPU(name)
		if assert.NoError(t, err, name) {
			assert.Equal(t, want, g.Name, name)
		}
	}
}

// TestCatalogueNamesUnique: no two entries answer to the same name, or the same name without
// its organisation, which Model also matches.
func TestCatalogueNamesUnique(t *testing.T) {
	p := BuiltinProfiles()
	owner := map[string]string{}
	for _, m := range p.Models {
		for _, n := range append([]string{m.Name}, m.Aliases...) {
			n = strings.ToLower(n)
			for _, k := range []string{n, n[strings.LastIndex(n, "/")+1:]} {
				if o, ok := owner[k]; ok && o != m.Name {
					t.Errorf("%q answers for both %s and %s", k, o, m.Name)
				}
				owner[k] = m.Name
			}
		}
		assert.NotEmpty(t, m.Source, m.Name)
	}
	keys := map[string]string{}
	for _, g := range p.GPUs {
		assert.NotEmpty(t, g.Source, g.Name)
		for _, n := range append([]string{g.Name}, g.Aliases...) {
			k := normalize(n)
			if o, ok := keys[k]; ok && o != g.Name {
				t.Errorf("%q answers for both %s and %s", n, o, g.Name)
			}
			keys[k] = g.Name
		}
	}
	assert.GreaterOrEqual(t, len(p.GPUs), 24)
	assert.GreaterOrEqual(t, len(p.Models), 50)
}

// The rotary tables vLLM builds count in the weights: their rows and widths come from the
// config's context, scaling and partial rotation.
func TestHFConfigRopeTables(t *testing.T) {
	gemma3 := `{"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 34,
	  "hidden_size": 2560, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 10240,
	  "vocab_size": 262208, "max_position_embeddings": 131072, "sliding_window": 1024, "sliding_window_pattern": 6,
	  "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "rope_local_base_freq": 10000.0, "rope_theta": 1000000.0},
	  "torch_dtype": "bfloat16"}`
	m, err := ModelFromHFConfig("t/g3", []byte(gemma3))
	require.NoError(t, err)
	assert.Equal(t, 131072, m.MaxPositionEmbeddings, "vLLM does not scale Gemma 3's context")
	assert.Equal(t, []RopeTable{{131072, 256}, {1048576, 256}}, m.RopeTables, "a local table and the global one, 8x longer")
	assert.InDelta(t, 0.5625*gib, ropeCacheBytes(&Setup{ModelProfile: m, ModelDType: "bfloat16"}), 1)

	base := `"num_hidden_layers": 4, "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 8,
	  "head_dim": 128, "intermediate_size": 4096, "vocab_size": 32000, "torch_dtype": "bfloat16"`
	cases := []struct {
		name, extra string
		positions   int
		rotary      int
	}{
		{"plain", `"max_position_embeddings": 8192`, 8192, 128},
		{"linear scaling stretches the table", `"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 4.0}`, 16384, 128},
		{"llama3 keeps it", `"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}`, 131072, 128},
		{"yarn from the original length", `"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}`, 131072, 128},
		{"flat rope_parameters", `"max_position_embeddings": 4096, "rope_parameters": {"rope_type": "linear", "factor": 2.0}`, 8192, 128},
		{"partial_rotary_factor", `"max_position_embeddings": 2048, "partial_rotary_factor": 0.4`, 2048, 51},
		{"in rope_parameters", `"max_position_embeddings": 262144, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.25}`, 262144, 32},
		{"rotary_pct", `"max_position_embeddings": 2048, "rotary_pct": 0.25`, 2048, 32},
		{"rotary_dim", `"max_position_embeddings": 2048, "rotary_dim": 64`, 2048, 64},
		{"a factor out of range is the whole head", `"max_position_embeddings": 2048, "partial_rotary_factor": 7`, 2048, 128},
	}
	for _, tc := range cases {
		m, err := ModelFromHFConfig("t/x", []byte("{"+base+", "+tc.extra+"}"))
		require.NoError(t, err, tc.name)
		assert.Equal(t, []RopeTable{{tc.positions, tc.rotary}}, m.ropeTables(), tc.name)
	}
}

func TestRopeCacheBytesInTheWeights(t *testing.T) {
	p, err := LoadProfiles("")
	require.NoError(t, err)
	scout, err := p.Model("meta-llama/Llama-4-Scout-17B-16E-Instruct")
	require.NoError(t, err)
	s := &Setup{ModelProfile: scout, ModelDType: "bfloat16"}
	assert.InDelta(t, 10485760*128*2, ropeCacheBytes(s), 1, "10M positions x 128 x bf16, on every rank")
	qwen, err := p.Model("Qwen/Qwen3.6-35B-A3B")
	require.NoError(t, err)
	assert.InDelta(t, 262144*64*2, ropeCacheBytes(&Setup{ModelProfile: qwen, ModelDType: "bfloat16"}), 1, "a quarter of a 256 head")
	logged := scout
	logged.LoadedWeightsGiB = 50
	assert.Zero(t, ropeCacheBytes(&Setup{ModelProfile: logged, ModelDType: "bfloat16"}), "a logged weight size holds the tables")
}

// A multimodal config.json whose tower sees one image size gets the catalogue's encoder profile
// shape, so its KV cache matches the catalogue model's on a release that profiles the encoder
// (0.33 here); the configs have the shapes of the published google/gemma-3-27b-it and
// mistralai/Mistral-Small-3.1-24B-Instruct-2503 files (Gemma 3's text_config leaves its
// vocabulary, context and layer pattern to the config class's defaults). A Qwen-VL tower, whose
// largest image is in preprocessor_config.json, gets none.
func TestHFConfigVisionTowers(t *testing.T) {
	gemma3 := `{"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "mm_tokens_per_image": 256,
	  "text_config": {"model_type": "gemma3_text", "hidden_size": 5376, "intermediate_size": 21504, "num_hidden_layers": 62,
	    "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "query_pre_attn_scalar": 168, "sliding_window": 1024,
	    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}},
	  "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model",
	    "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false},
	  "torch_dtype": "bfloat16"}`
	mistral3 := `{"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "spatial_merge_size": 2,
	  "text_config": {"head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768, "max_position_embeddings": 131072,
	    "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "vocab_size": 131072},
	  "vision_config": {"head_dim": 64, "hidden_act": "silu", "hidden_size": 1024, "image_size": 1540, "intermediate_size": 4096,
	    "model_type": "pixtral", "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 24, "patch_size": 14},
	  "torch_dtype": "bfloat16"}`
	p := BuiltinProfiles()
	for name, config := range map[string]string{"google/gemma-3-27b-it": gemma3, "mistralai/Mistral-Small-3.1-24B-Instruct-2503": mistral3} {
		m, err := ModelFromHFConfig(name, []byte(config))
		require.NoError(t, err, name)
		c, err := p.Model(name)
		require.NoError(t, err, name)
		sameKV(t, m, name)
		require.NotNil(t, m.Vision, name)
		got, want := *m.Vision, *c.Vision
		got.Source, want.Source = "", ""
		assert.Equal(t, want, got, name)

		cfg := Config{GPU: "H100-SXM-80GB", VLLMVersion: "0.33", MaxModelLen: 16384}
		fromConfig := layoutFor(t, m, cfg)
		cfg.Model = name
		catalogue, err := Resolve(cfg, p)
		require.NoError(t, err, name)
		assert.InDelta(t, float64(catalogue.Capacity.AvailableKVBytes), float64(fromConfig.Capacity.AvailableKVBytes), 0.01*float64(catalogue.Capacity.AvailableKVBytes), name)
	}

	qwenVL := `{"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl", "hidden_size": 3584,
	  "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
	  "max_position_embeddings": 128000, "torch_dtype": "bfloat16",
	  "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "patch_size": 14, "spatial_merge_size": 2}}`
	m, err := ModelFromHFConfig("t/qwen-vl", []byte(qwenVL))
	require.NoError(t, err)
	assert.Nil(t, m.Vision, "no image size in config.json: no encoder profile")

	_, err = ModelFromHFConfig("t/bad", []byte(strings.Replace(gemma3, `"image_size": 896`, `"image_size": 7`, 1)))
	assert.ErrorContains(t, err, "smaller than its patch_size")
}

// A block-scaled FP8 checkpoint is told by its weight_block_size, or by a compressed-tensors
// group quantized by block; hostile values mark it block-scaled with bounded sizes, or are
// ignored where they are not a list, and never refuse the config.
func TestHFConfigWeightBlockSize(t *testing.T) {
	base := `"num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 128`
	fp8 := func(extra string) string {
		return `{` + base + `, "quantization_config": {"quant_method": "fp8"` + extra + `}}`
	}
	for name, tc := range map[string]struct {
		cfg  string
		want []int
	}{
		"per-tensor":        {fp8(``), nil},
		"DeepSeek's blocks": {fp8(`, "weight_block_size": [128, 128]`), []int{128, 128}},
		"one entry":         {fp8(`, "weight_block_size": [64]`), []int{64, 64}},
		"zero and negative": {fp8(`, "weight_block_size": [0, -5]`), []int{1, 1}},
		"huge":              {fp8(`, "weight_block_size": [1e300, 1.5]`), []int{65536, 2}},
		"strings":           {fp8(`, "weight_block_size": ["a\nb", null]`), []int{1, 1}},
		"a number":          {fp8(`, "weight_block_size": 128`), nil},
		"empty list":        {fp8(`, "weight_block_size": []`), nil},
		"compressed-tensors block": {`{` + base + `, "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}}}}}`,
			[]int{128, 128}},
		"compressed-tensors channel": {`{` + base + `, "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}}`,
			nil},
	} {
		m, err := ModelFromHFConfig("t/x", []byte(tc.cfg))
		require.NoError(t, err, name)
		assert.Equal(t, "fp8", m.Quantization, name)
		assert.Equal(t, tc.want, m.WeightBlockSize, name)
	}
}
