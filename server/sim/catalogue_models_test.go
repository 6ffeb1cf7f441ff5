package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// configFigures are the config.json figures a catalogue entry is checked against, as the
// entry's source cites them (docs/catalogue.md#models).
type configFigures struct {
	layers, hidden, heads, kvHeads, headDim, vocab, context int
	tied                                                    bool
	sliding, window, fullHeadDim, fullKVHeads               int
	linear, linKeyHeads, linValueHeads                      int
	experts, perToken                                       int
	quantization                                            string
	// textParams is the text model's parameter count from the shapes (below); the entry's
	// params less its encoder must match it.
	textParams float64
}

// Shape counts of the families below, biases and norms left out.

// qwenHybridDense: Qwen3.5/3.6/3.8-27B; gated attention doubles the query projection.
func qwenHybridDense() float64 {
	h := 5120.0
	attn := h*24*256*2 + 2*h*4*256 + 24*256*h
	gdn := h*(2*16*128+48*128) + h*48*128 + 2*h*48 + (2*16*128+48*128)*4 + 48*128*h
	return 64*3*h*17408 + 16*attn + 48*gdn + 2*248320*h
}

// qwenHybridMoE: Qwen3.6-35B-A3B, 256 experts of 512 and a shared expert of 512.
func qwenHybridMoE() float64 {
	h := 2048.0
	moe := 256*3*h*512 + 3*h*512 + h + h*256
	attn := h*16*256*2 + 2*h*2*256 + 16*256*h
	gdn := h*(2*16*128+32*128) + h*32*128 + 2*h*32 + (2*16*128+32*128)*4 + 32*128*h
	return 40*moe + 10*attn + 30*gdn + 2*248320*h
}

// gemma4MoE: Gemma-4 26B-A4B, a dense MLP and 128 experts in every layer; the full layers
// have K = V (no value projection in the checkpoint).
func gemma4MoE() float64 {
	h := 2816.0
	layer := 3*h*2112 + 128*3*h*704 + h*128 + h + 128
	sliding := h*16*256*2 + h*8*256*2
	full := h*16*512*2 + h*2*512
	return 30*layer + 25*sliding + 5*full + 262144*h
}

// glm47: GLM-4.5/4.6/4.7, 92 layers: 3 dense (intermediate 12,288) and 89 with 160 experts of
// 1,536 and one shared; attention of 96 query and 8 KV heads of 128 with biases on Q, K and V;
// the MTP layer, which vLLM does not load for serving, left out.
func glm47() float64 {
	h := 5120.0
	attn := h*96*128 + 2*h*8*128 + 96*128*h
	dense := 3 * h * 12288
	moe := 160*3*h*1536 + 3*h*1536 + h*160
	return 92*attn + 3*dense + 89*moe + 2*151552*h
}

// minimaxM2: 62 layers of full attention and 256 experts of 1536.
func minimaxM2() float64 {
	h := 3072.0
	layer := 256*3*h*1536 + h*256 + 256 + h*48*128*2 + h*8*128*2
	return 62*layer + 2*200064*h
}

// denseShapes counts a dense decoder: attention (with the query, key and value biases of
// Qwen2 when bias), a gated MLP, norms, and the embedding (and an untied LM head).
func denseShapes(layers, hidden, heads, kvHeads, headDim, inter, vocab int, tied, bias bool) float64 {
	h, q, kv := float64(hidden), float64(heads*headDim), float64(kvHeads*headDim)
	attn := h*q + 2*h*kv + q*h
	if bias {
		attn += q + 2*kv
	}
	emb := float64(vocab) * h
	if !tied {
		emb *= 2
	}
	return float64(layers)*(attn+3*h*float64(inter)+2*h) + emb + h
}

// qwen15MoE: Qwen1.5-MoE-A2.7B, 60 experts of 1408 and a shared expert of 5632 with its gate.
func qwen15MoE(active bool) float64 {
	h := 2048.0
	experts := 60.0
	if active {
		experts = 4
	}
	layer := 4*h*h + 3*h + experts*3*h*1408 + 3*h*5632 + h + h*60 + 2*h
	return 24*layer + 2*151936*h + h
}

// TestLoggedCatalogueEntriesMatchTheirConfigs checks the entries added for the validation
// corpus's start-ups against the config figures their sources give, and their parameter
// counts against the shapes.
func TestLoggedCatalogueEntriesMatchTheirConfigs(t *testing.T) {
	qwen25 := configFigures{layers: 28, hidden: 3584, heads: 28, kvHeads: 4, headDim: 128, vocab: 152064, context: 32768,
		textParams: denseShapes(28, 3584, 28, 4, 128, 18944, 152064, false, true)}
	w8a8, fp8 := qwen25, qwen25
	w8a8.quantization, fp8.quantization = "w8a8", "fp8"
	cases := map[string]configFigures{
		"codellama/CodeLlama-7b-hf": {layers: 32, hidden: 4096, heads: 32, kvHeads: 32, headDim: 128, vocab: 32016, context: 16384,
			textParams: denseShapes(32, 4096, 32, 32, 128, 11008, 32016, false, false)},
		"google/gemma-7b": {layers: 28, hidden: 3072, heads: 16, kvHeads: 16, headDim: 256, vocab: 256000, context: 8192, tied: true,
			textParams: denseShapes(28, 3072, 16, 16, 256, 24576, 256000, true, false)},
		"ibm-granite/granite-3.1-2b-instruct": {layers: 40, hidden: 2048, heads: 32, kvHeads: 8, headDim: 64, vocab: 49155, context: 131072, tied: true,
			textParams: denseShapes(40, 2048, 32, 8, 64, 8192, 49155, true, false)},
		"Qwen/Qwen1.5-MoE-A2.7B": {layers: 24, hidden: 2048, heads: 16, kvHeads: 16, headDim: 128, vocab: 151936, context: 8192,
			experts: 60, perToken: 4, textParams: qwen15MoE(false)},
		"RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8": w8a8,
		"RedHatAI/Qwen2.5-7B-Instruct-FP8-dynamic":    fp8,
		"RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic": {layers: 80, hidden: 8192, heads: 64, kvHeads: 8, headDim: 128, vocab: 128256, context: 131072,
			quantization: "fp8", textParams: denseShapes(80, 8192, 64, 8, 128, 28672, 128256, false, false)},
		"neuralmagic/Llama-3.2-3B-Instruct-FP8": {layers: 28, hidden: 3072, heads: 24, kvHeads: 8, headDim: 128, vocab: 128256, context: 131072,
			tied: true, quantization: "fp8", textParams: denseShapes(28, 3072, 24, 8, 128, 8192, 128256, true, false)},
	}
	checkConfigFigures(t, cases)
	moe, err := BuiltinProfiles().Model("Qwen/Qwen1.5-MoE-A2.7B")
	require.NoError(t, err)
	within(t, qwen15MoE(true), moe.ActiveParams, 0.005, "Qwen1.5-MoE active parameters")
}

func TestNewCatalogueEntriesMatchTheirConfigs(t *testing.T) {
	hybrid27 := configFigures{layers: 64, hidden: 5120, heads: 24, kvHeads: 4, headDim: 256, vocab: 248320, context: 262144,
		linear: 48, linKeyHeads: 16, linValueHeads: 48, textParams: qwenHybridDense()}
	qwen35b := configFigures{layers: 40, hidden: 2048, heads: 16, kvHeads: 2, headDim: 256, vocab: 248320, context: 262144,
		linear: 30, linKeyHeads: 16, linValueHeads: 32, experts: 256, perToken: 8, textParams: qwenHybridMoE()}
	fp8 := hybrid27
	fp8.quantization = "fp8"
	nvfp4 := qwen35b
	nvfp4.quantization = "nvfp4"
	cases := map[string]configFigures{
		"Qwen/Qwen3.6-27B":             hybrid27,
		"Qwen/Qwen3.8-27B-FP8":         fp8,
		"Qwen/Qwen3.6-35B-A3B":         qwen35b,
		"nvidia/Qwen3.6-35B-A3B-NVFP4": nvfp4,
		"google/gemma-4-26B-A4B": {layers: 30, hidden: 2816, heads: 16, kvHeads: 8, headDim: 256, vocab: 262144, context: 262144,
			tied: true, sliding: 25, window: 1024, fullHeadDim: 512, fullKVHeads: 2, experts: 128, perToken: 8, textParams: gemma4MoE()},
		"zai-org/GLM-4.7": {layers: 92, hidden: 5120, heads: 96, kvHeads: 8, headDim: 128, vocab: 151552, context: 202752,
			experts: 160, perToken: 8, textParams: glm47()},
		"zai-org/GLM-4.7-FP8": {layers: 92, hidden: 5120, heads: 96, kvHeads: 8, headDim: 128, vocab: 151552, context: 202752,
			experts: 160, perToken: 8, quantization: "fp8", textParams: glm47()},
		"MiniMaxAI/MiniMax-M2.7": {layers: 62, hidden: 3072, heads: 48, kvHeads: 8, headDim: 128, vocab: 200064, context: 196608,
			experts: 256, perToken: 8, quantization: "fp8", textParams: minimaxM2()},
	}
	checkConfigFigures(t, cases)
}

// checkConfigFigures compares each named catalogue entry with its config's figures, and its
// text parameters (all but an encoder's) with the count from the shapes.
func checkConfigFigures(t *testing.T, cases map[string]configFigures) {
	t.Helper()
	p := BuiltinProfiles()
	for name, f := range cases {
		m, err := p.Model(name)
		require.NoError(t, err, name)
		got := configFigures{m.NumLayers, m.HiddenSize, m.NumAttentionHeads, m.NumKeyValueHeads, m.HeadDim, m.VocabSize,
			m.MaxPositionEmbeddings, m.TieWordEmbeddings, m.NumSlidingWindowLayers, m.SlidingWindow, m.FullAttentionHeadDim,
			m.FullAttentionKVHeads, m.NumLinearAttentionLayers, m.LinearNumKeyHeads, m.LinearNumValueHeads, m.NumExperts,
			m.ExpertsPerToken, m.Quantization, f.textParams}
		assert.Equal(t, f, got, name)
		within(t, f.textParams, m.Params-m.EncoderParams, 0.005, name+": text parameters")
	}
}

// TestGemma4Layout: Gemma-4's sliding layers cache 8 KV heads of 256 and its full layers 2 of
// 512, half the bytes a token, so vLLM doubles the full layers' block to fill the same page
// (docs/hybrid-kv.md#layers-of-two-shapes).
func TestGemma4Layout(t *testing.T) {
	s, err := Resolve(Config{Model: "google/gemma-4-26B-A4B", GPU: "A100-SXM-80GB", MaxModelLen: 131072,
		VLLMVersion: "0.19.0"}, nil)
	require.NoError(t, err)
	l := s.Capacity.Layout
	assert.Equal(t, int64(2*8*256*2), l.SlidingBytesPerToken)
	assert.Equal(t, int64(2*2*512*2), l.AttentionBytesPerToken)
	assert.Equal(t, 32, l.BlockSize)
	assert.Equal(t, 16, l.SlidingBlockSize)
	assert.Equal(t, int64(16*8192), l.PageBytes)
	assert.Equal(t, 5, l.GroupSize)
	assert.Equal(t, 1, l.FullGroups)
	assert.Equal(t, 5, l.SlidingGroups)
	assert.Equal(t, int64(16*8192*5), l.BlockBytes())
	// 2048 batched tokens (the A100 default): full cdiv(131072, 32), sliding cdiv(1023 + 2048, 16) + 1.
	assert.Equal(t, 4096+5*193, s.Capacity.BlocksPerRequest)
	assert.Equal(t, s.Capacity.NumGPUBlocks/6*16, s.Capacity.KVCacheTokens, "the old token line counts the smallest block")
	assert.Equal(t, int64(4096*5), s.Capacity.BytesPerToken)
	assert.Equal(t, int64(8192*25), s.Capacity.SlidingBytesPerToken)

	// Tensor parallelism 2 halves both kinds of heads; the ratio, and so the blocks, stay.
	s2, err := Resolve(Config{Model: "google/gemma-4-26B-A4B", GPU: "A100-SXM-80GB", TensorParallelSize: 2,
		MaxModelLen: 131072, VLLMVersion: "0.19.0"}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2*1*512*2), s2.Capacity.Layout.AttentionBytesPerToken)
	assert.Equal(t, 32, s2.Capacity.Layout.BlockSize)
}

// TestQuantizedCheckpointWeights checks the weights of two quantized checkpoints against the
// size of their files on Hugging Face, less what vLLM does not load without speculative
// decoding (the MTP layer).
func TestQuantizedCheckpointWeights(t *testing.T) {
	weights := func(model string) float64 {
		s, err := Resolve(Config{Model: model, GPU: "H200", MaxModelLen: 8192}, nil)
		require.NoError(t, err, model)
		return float64(s.Capacity.WeightsBytes)
	}
	// Qwen3.8-27B-FP8: 24.7 GB of FP8 and 6.2 GB of BF16 tensors, of which the MTP layer
	// (an attention layer, an MLP and its fc, about 0.43e9 parameters in FP8) is not loaded.
	within(t, 30.9e9-0.43e9, weights("Qwen/Qwen3.8-27B-FP8"), 0.02, "Qwen3.8-27B-FP8 weights")
	// nvidia/Qwen3.6-35B-A3B-NVFP4: 23.5 GB of files with a BF16 MTP layer of about 0.845e9
	// parameters (its 256 experts of 512, attention and fc).
	within(t, 23.5e9-2*0.845e9, weights("nvidia/Qwen3.6-35B-A3B-NVFP4"), 0.02, "Qwen3.6-35B-A3B-NVFP4 weights")
}

// gemma4Config is the part of google/gemma-4-26B-A4B's config.json that sizes the model, as
// the copies cited in its catalogue entry give it (layer_types: five sliding layers, then one
// full, five times).
const gemma4Config = `{"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
 "tie_word_embeddings": true,
 "text_config": {"model_type": "gemma4_text", "dtype": "bfloat16", "num_hidden_layers": 30, "hidden_size": 2816,
  "intermediate_size": 2112, "moe_intermediate_size": 704, "num_attention_heads": 16, "num_key_value_heads": 8,
  "num_global_key_value_heads": 2, "head_dim": 256, "global_head_dim": 512, "attention_k_eq_v": true,
  "vocab_size": 262144, "max_position_embeddings": 262144, "sliding_window": 1024, "num_kv_shared_layers": 0,
  "enable_moe_block": true, "num_experts": 128, "top_k_experts": 8, "tie_word_embeddings": true,
  "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
   "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
   "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
   "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
   "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]},
 "vision_config": {"model_type": "gemma4_vision", "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27}}`

// TestHFConfigGemma4 reads Gemma-4's config as --sim-model-config does and finds the
// catalogue entry's shape: the full layers' own KV heads and head dimension, the dense MLP
// beside the experts, and the same text parameters.
func TestHFConfigGemma4(t *testing.T) {
	m, err := ModelFromHFConfig("test/gemma-4", []byte(gemma4Config))
	require.NoError(t, err)
	c, err := BuiltinProfiles().Model("google/gemma-4-26B-A4B")
	require.NoError(t, err)
	assert.Equal(t, []int{512, 2, 25, 1024, 128, 8, 2112},
		[]int{m.FullAttentionHeadDim, m.FullAttentionKVHeads, m.NumSlidingWindowLayers, m.SlidingWindow, m.NumExperts, m.ExpertsPerToken, m.IntermediateSize})
	assert.Equal(t, []int{c.FullAttentionHeadDim, c.FullAttentionKVHeads, c.NumSlidingWindowLayers, c.SlidingWindow, c.NumExperts, c.ExpertsPerToken, c.IntermediateSize},
		[]int{m.FullAttentionHeadDim, m.FullAttentionKVHeads, m.NumSlidingWindowLayers, m.SlidingWindow, m.NumExperts, m.ExpertsPerToken, m.IntermediateSize})
	// The shape count leaves out the norms the reader counts (two a layer and one at the end).
	within(t, gemma4MoE()+2816*61, m.Params-m.EncoderParams, 0.001, "text parameters")
	within(t, c.ActiveParams, m.ActiveParams, 0.01, "active parameters")
	within(t, c.ExpertParams(), m.ExpertParams(), 0.001, "one expert across the layers")
	t.Logf("Gemma-4 26B-A4B from its config: %.4g parameters (%.4g text, %.4g active), encoder %.3g",
		m.Params, m.Params-m.EncoderParams, m.ActiveParams, m.EncoderParams)

	// Without attention_k_eq_v the full layers keep num_key_value_heads.
	m2, err := ModelFromHFConfig("test/gemma-4", []byte(strings.Replace(gemma4Config, `"attention_k_eq_v": true`, `"attention_k_eq_v": false`, 1)))
	require.NoError(t, err)
	assert.Equal(t, 0, m2.FullAttentionKVHeads)
	assert.Equal(t, 512, m2.FullAttentionHeadDim)
}
