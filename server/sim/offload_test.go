package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLanguageModelOnlyDropsTheEncoders(t *testing.T) {
	const model = "google/gemma-3-12b-it"
	full, err := Resolve(Config{Model: model, GPU: "H100-SXM-80GB"}, nil)
	require.NoError(t, err)
	require.Greater(t, full.ModelProfile.EncoderParams, 0.0)
	text, err := Resolve(Config{Model: model, GPU: "H100-SXM-80GB", LanguageModelOnly: true}, nil)
	require.NoError(t, err)
	db, _ := dtypeBytes(full.ModelDType)
	assert.InDelta(t, full.ModelProfile.EncoderParams*db, float64(full.Capacity.WeightsBytes-text.Capacity.WeightsBytes), 1<<20)
	assert.False(t, text.ModelProfile.IsMultimodal(), "image inputs are refused")
	assert.Less(t, text.Capacity.ActivationBytes, full.Capacity.ActivationBytes, "no encoder profile")
	assert.Greater(t, text.Capacity.KVCacheTokens, full.Capacity.KVCacheTokens)
	assert.Equal(t, full.ModelProfile.ExpertParams(), text.ModelProfile.ExpertParams())

	old, err := Resolve(Config{Model: model, GPU: "H100-SXM-80GB", LanguageModelOnly: true, VLLMVersion: "0.10.0"}, nil)
	require.NoError(t, err)
	full10, err := Resolve(Config{Model: model, GPU: "H100-SXM-80GB", VLLMVersion: "0.10.0"}, nil)
	require.NoError(t, err)
	assert.Equal(t, full10.Capacity.WeightsBytes, old.Capacity.WeightsBytes, "0.10.0 loaded the encoders all the same")
}

func TestCPUOffloadTakesDecoderWeightsOffTheGPU(t *testing.T) {
	const model = "Qwen/Qwen3-32B"
	base, err := Resolve(Config{Model: model, GPU: "A100-SXM-80GB"}, nil)
	require.NoError(t, err)
	off, err := Resolve(Config{Model: model, GPU: "A100-SXM-80GB", CPUOffloadGiB: 20}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(20*gib), base.Capacity.WeightsBytes-off.Capacity.WeightsBytes)
	assert.Equal(t, int64(20*gib), off.Capacity.AvailableKVBytes-base.Capacity.AvailableKVBytes)

	// A budget beyond the decoder leaves the embedding and LM head on the GPU.
	all, err := Resolve(Config{Model: model, GPU: "A100-SXM-80GB", CPUOffloadGiB: 500}, nil)
	require.NoError(t, err)
	db, _ := dtypeBytes(all.ModelDType)
	tables := 2 * all.ModelProfile.EmbeddingParams() * db
	assert.InDelta(t, tables+ropeCacheBytes(all), float64(all.Capacity.WeightsBytes), 1<<20)

	_, err = Resolve(Config{Model: model, GPU: "A100-SXM-80GB", CPUOffloadGiB: -1}, nil)
	assert.ErrorContains(t, err, "--cpu-offload-gb must be between 0 and")
}

// Speculative decoding with the model's own MTP layer loads that layer and gives it a KV cache.
func TestMTPDraftLayersTakeMemory(t *testing.T) {
	cfg := Config{Model: "zai-org/GLM-4.7-FP8", GPU: "H200", TensorParallelSize: 4}
	base, err := Resolve(cfg, nil)
	require.NoError(t, err)
	cfg.Speculative = &SpeculativeConfig{Method: "mtp", NumSpeculativeTokens: 1}
	mtp, err := Resolve(cfg, nil)
	require.NoError(t, err)
	m := base.ModelProfile
	perLayer := float64(base.Capacity.WeightsBytes) / float64(m.NumLayers)
	extra := float64(mtp.Capacity.WeightsBytes - base.Capacity.WeightsBytes)
	assert.InDelta(t, perLayer, extra, perLayer*0.1, "about one decoder layer a rank")
	assert.Equal(t, base.Capacity.Layout.FullLayers+1, mtp.Capacity.Layout.FullLayers)
	assert.Equal(t, base.Capacity.BytesPerToken/int64(m.NumLayers)*int64(m.NumLayers+1), mtp.Capacity.BytesPerToken)
	assert.Less(t, mtp.Capacity.KVCacheTokens, base.Capacity.KVCacheTokens)

	cfg.Speculative = &SpeculativeConfig{Method: "ngram", NumSpeculativeTokens: 3}
	ngram, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, base.Capacity.WeightsBytes, ngram.Capacity.WeightsBytes, "n-gram lookup has no draft weights")
}

// An EAGLE head drafting for a dense model is one decoder layer of its shape: its weights and a
// page of KV; for a mixture of experts its shape is not known and it takes nothing.
func TestEAGLEHeadTakesOneLayer(t *testing.T) {
	cfg := Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100-SXM-80GB"}
	base, err := Resolve(cfg, nil)
	require.NoError(t, err)
	cfg.Speculative = &SpeculativeConfig{Method: "eagle3", Model: "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", NumSpeculativeTokens: 3}
	eagle, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, base.Capacity.Layout.FullLayers+1, eagle.Capacity.Layout.FullLayers)
	extra := float64(eagle.Capacity.WeightsBytes-base.Capacity.WeightsBytes) / gib
	assert.InDelta(t, 0.5, extra, 0.1, "a Llama-3.1-8B layer (0.41 GiB) and the 3h x h projection (0.09)")

	moe := Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H100-SXM-80GB"}
	plain, err := Resolve(moe, nil)
	require.NoError(t, err)
	moe.Speculative = &SpeculativeConfig{Method: "eagle3", Model: "some/eagle3-head", NumSpeculativeTokens: 3}
	withHead, err := Resolve(moe, nil)
	require.NoError(t, err)
	assert.Equal(t, plain.Capacity.WeightsBytes, withHead.Capacity.WeightsBytes)
}
