package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGptOss120bFixtureCapacity reproduces the capacity lines of the real vLLM 0.10.1.1 log in
// testdata (gpt-oss-120b, TP 4 on A100-80GB, util 0.8, max-model-len 16384, 2048 batched
// tokens): "Available KV cache memory: 45.32 GiB", "GPU KV cache size: 2,640,144 tokens",
// "Maximum concurrency for 16,384 tokens per request: 284.25x".
func TestGptOss120bFixtureCapacity(t *testing.T) {
	cfg := Config{Model: "openai/gpt-oss-120b", GPU: "A100-SXM-80GB", TensorParallelSize: 4,
		GPUMemoryUtilization: 0.8, MaxModelLen: 16384, VLLMVersion: "0.10.1.1"}
	s, err := Resolve(cfg, nil)
	require.NoError(t, err)
	c := s.Capacity
	within(t, 45.32, float64(c.AvailableKVBytes)/gib, 0.01, "available KV GiB")
	within(t, 2640144, float64(c.KVCacheTokens), 0.01, "GPU KV cache size")
	within(t, 284.25, c.MaxConcurrency, 0.01, "maximum concurrency")

	// The layout the log implies (docs/hybrid-kv.md#worked-example-gpt-oss-120b): 2 KV heads per rank of 64, one 8 KiB page
	// per layer and block, 18 + 18 layers in two groups of 18 shared tensors.
	l := c.Layout
	assert.Equal(t, int64(8192), l.PageBytes)
	assert.Equal(t, 18, l.GroupSize)
	assert.Equal(t, 1, l.FullGroups)
	assert.Equal(t, 1, l.SlidingGroups)
	assert.Equal(t, 1024+137, c.BlocksPerRequest, "full: cdiv(16384, 16); sliding: cdiv(127 + 2048, 16) + 1")

	// From the exact memory the log implies, the arithmetic is exact.
	blocks, conc, tokens := KVCapacity(l, 330018*147456+1000, 16384, s.Version)
	assert.Equal(t, 330018, blocks)
	assert.Equal(t, "284.25", fmtFloat2(conc))
	assert.Equal(t, 2640144, tokens)

	// The same server on the newest vLLM: tokens as int(concurrency x max_model_len), and the
	// sliding window reserving both in-flight batches (docs/hybrid-kv.md#worked-example-gpt-oss-120b: 256.03x).
	cfg.MaxNumBatchedTokens = 2048 // A100's default; the layout is taken on a larger GPU
	blocks, conc, tokens = KVCapacity(newLayout(t, cfg, "0.26.0"), 330018*147456, 16384, MustVersion("0.26.0"))
	assert.Equal(t, "256.03", fmtFloat2(conc))
	assert.Equal(t, int(float64(blocks)/1289*16384), tokens)
}

// newLayout resolves cfg as release version on a GPU large enough to start, for its layout.
func newLayout(t *testing.T, cfg Config, version string) KVLayout {
	t.Helper()
	cfg.VLLMVersion = version
	cfg.GPU = "H200"
	cfg.GPUMemoryUtilization = 0.95
	s, err := Resolve(cfg, hybridShapes(t))
	require.NoError(t, err)
	return s.Capacity.Layout
}

// hybridShapes adds two test models with the attention and Gated-DeltaNet shapes of larger
// Qwen hybrids, as the real log lines below pin them down (their other sizes do not enter the
// KV arithmetic and are only plausible).
func hybridShapes(t *testing.T) *Profiles {
	p := BuiltinProfiles()
	p.merge(Profiles{Models: []Model{
		{Name: "test/hybrid-27b-shape", NumLayers: 64, HiddenSize: 5120, NumAttentionHeads: 24, NumKeyValueHeads: 4, HeadDim: 256,
			IntermediateSize: 17408, VocabSize: 248320, MaxPositionEmbeddings: 262144, DType: "bfloat16", Params: 27e9,
			NumLinearAttentionLayers: 48, LinearNumKeyHeads: 16, LinearNumValueHeads: 48, LinearKeyHeadDim: 128,
			LinearValueHeadDim: 128, LinearConvKernelDim: 4, MambaSSMDType: "float32"},
		{Name: "test/hybrid-35b-a3b-shape", NumLayers: 40, HiddenSize: 2048, NumAttentionHeads: 16, NumKeyValueHeads: 2, HeadDim: 256,
			IntermediateSize: 512, VocabSize: 248320, MaxPositionEmbeddings: 262144, DType: "bfloat16", Params: 35e9,
			NumLinearAttentionLayers: 30, LinearNumKeyHeads: 16, LinearNumValueHeads: 32, LinearKeyHeadDim: 128,
			LinearValueHeadDim: 128, LinearConvKernelDim: 4, MambaSSMDType: "float32"},
	}})
	require.NoError(t, p.validate())
	return p
}

// TestQwen35HybridLayout follows docs/hybrid-kv.md#worked-example-qwen35-08b for Qwen3.5-0.8B: 18 GDN layers with a
// float32 temporal state, 6 full-attention layers of 2 KV heads x 256.
func TestQwen35HybridLayout(t *testing.T) {
	s, err := Resolve(Config{Model: "Qwen/Qwen3.5-0.8B", GPU: "RTX-4060-8GB", MaxModelLen: 32768}, nil)
	require.NoError(t, err)
	l := s.Capacity.Layout
	assert.Equal(t, int64(2048), l.AttentionBytesPerToken, "2 x 2 KV heads x 256 x bf16")
	assert.Equal(t, int64(3*6144*2+16*128*128*4), l.MambaStateBytes, "conv (3 x 6144, bf16) + temporal (16 x 128 x 128, fp32)")
	// The same numbers a real log shows for a model of these layer shapes (vllm#55096):
	// "Setting attention block size to 544 tokens" and "Padding mamba page size by 2.64%".
	assert.Equal(t, 544, l.BlockSize)
	assert.True(t, l.BlockSizeRaised)
	assert.Equal(t, "2.64", fmtFloat2(l.MambaPaddingPercent))
	assert.Equal(t, 6, l.GroupSize)
	assert.Equal(t, 1, l.FullGroups)
	assert.Equal(t, 3, l.MambaGroups)
	assert.Equal(t, "none", l.MambaCacheMode, "prefix caching is off by default for hybrids")
	assert.False(t, s.PrefixCachingEnabled())
	assert.Equal(t, ceilDiv(32768, 544)+3, s.Capacity.BlocksPerRequest, "full group + 1 block per GDN group")
	assert.Equal(t, int64(544*2048*6), l.BlockBytes())
	// Capacity follows: blocks from the pool of 6 shared tensors, tokens from concurrency.
	c := s.Capacity
	assert.Equal(t, int(c.AvailableKVBytes/(544*2048)/6), c.NumGPUBlocks)
	assert.Equal(t, int(c.MaxConcurrency*32768), c.KVCacheTokens)
	assert.Positive(t, c.MaxConcurrency)

	// Qwen3.5-9B: 8 full + 24 GDN layers, 32 value heads; group size 8 gives 1 + 3 groups.
	s9, err := Resolve(Config{Model: "Qwen/Qwen3.5-9B", GPU: "H100", MaxModelLen: 65536}, nil)
	require.NoError(t, err)
	l9 := s9.Capacity.Layout
	assert.Equal(t, 8, l9.GroupSize)
	assert.Equal(t, 3, l9.MambaGroups)
	assert.Equal(t, int64(4096), l9.AttentionBytesPerToken)
	assert.Equal(t, 16*int(ceilDiv64(3*8192*2+32*128*128*4, 16*4096)), l9.BlockSize)
}

// TestHybridCapacityMatchesRealLogs checks the block size, padding and KV lines of real logs
// of larger Qwen hybrids against the arithmetic, from the available memory each log printed.
func TestHybridCapacityMatchesRealLogs(t *testing.T) {
	cases := []struct {
		name       string
		cfg        Config
		version    string
		available  float64 // GiB, as logged
		block      int
		padding    string
		wantTokens int
		wantConc   string
		source     string
	}{
		{
			name: "27B-shaped, fp8 KV, TP 2, prefix caching",
			cfg: Config{Model: "test/hybrid-27b-shape", KVCacheDType: "fp8", TensorParallelSize: 2, PrefixCaching: On,
				MaxModelLen: 131072, MaxNumBatchedTokens: 8192},
			version: "0.26.0", available: 4.99, block: 1568, padding: "0.13",
			wantTokens: 302921, wantConc: "2.31",
			source: "mitchross/talos-argocd-proxmox#1995 (GPU KV cache size: 302,921 tokens, 2.31x, 2 x 4.99 GiB pool); 1568 and 0.13% in aivrar/vllm-windows-build#17",
		},
		{
			name: "35B-A3B-shaped, fp8 KV, prefix caching",
			cfg: Config{Model: "test/hybrid-35b-a3b-shape", KVCacheDType: "fp8", PrefixCaching: On,
				MaxModelLen: 131072, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1},
			version: "0.24.0", available: 5.98, block: 2096, padding: "0.00",
			wantTokens: 567978, wantConc: "4.33",
			source: "noonghunna/club-3090#612, vLLM 0.24.0 on an RTX 5090 (Available KV cache memory: 5.98 GiB, 567,978 tokens, 4.33x)",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(t, tc.cfg, tc.version)
			assert.Equal(t, tc.block, l.BlockSize, tc.source)
			assert.Equal(t, tc.padding, fmtFloat2(l.MambaPaddingPercent), tc.source)
			assert.Equal(t, "align", l.MambaCacheMode)
			_, conc, tokens := KVCapacity(l, int64(tc.available*gib), tc.cfg.MaxModelLen, MustVersion(tc.version))
			assert.Equal(t, tc.wantConc, fmtFloat2(conc), tc.source)
			within(t, float64(tc.wantTokens), float64(tokens), 0.01, "GPU KV cache size")
		})
	}
}

// TestHybridEngineBlocks: a hybrid request holds its full-attention blocks plus one block per
// GDN group, whatever its length, and frees them all.
func TestHybridEngineBlocks(t *testing.T) {
	h := newRun(t, Config{Model: "Qwen/Qwen3.5-0.8B", GPU: "RTX-4060-8GB", MaxModelLen: 8192})
	l := h.e.Setup().Capacity.Layout
	var maxUsed int
	h.onStep = func(_ int, r *StepResult) { maxUsed = max(maxUsed, r.BlocksUsed) }
	h.closedLoop(t, 1, 1, func(int) Request {
		return Request{Prompt: fixedPrompt(1000, 1), MaxTokens: 200, IgnoreEOS: true}
	})
	assert.Equal(t, ceilDiv(1200, l.BlockSize)+l.MambaGroups, maxUsed)
	assert.Zero(t, h.e.BlocksUsed())
}

// TestSlidingWindowEngineBlocks: a gpt-oss request holds its full-attention blocks and a
// sliding-window share capped at the window plus the step's tokens.
func TestSlidingWindowEngineBlocks(t *testing.T) {
	h := newRun(t, Config{Model: "openai/gpt-oss-20b", GPU: "H100", MaxModelLen: 8192, PrefixCaching: Off})
	var maxUsed int
	h.onStep = func(_ int, r *StepResult) { maxUsed = max(maxUsed, r.BlocksUsed) }
	h.closedLoop(t, 1, 1, func(int) Request {
		return Request{Prompt: fixedPrompt(3000, 1), MaxTokens: 100, IgnoreEOS: true}
	})
	full := ceilDiv(3100, 16)
	// During the prefill of 3000 tokens the window share is cdiv(127 + 3000, 16) + 1 = 197 blocks,
	// capped at the request's length; the decode steps need cdiv(128, 16) + 1 = 9.
	assert.Equal(t, ceilDiv(3000, 16)+min(ceilDiv(3000, 16), ceilDiv(127+3000, 16)+1), maxUsed)
	assert.Less(t, full+9, maxUsed)
	assert.Zero(t, h.e.BlocksUsed())
}

// TestGptOss20bAvailableMemory: vLLM 0.19.0 serving gpt-oss-20b on one A100-80GB at util 0.65
// and max-model-len 131072 logged "Model loading took 13.72 GiB memory" and "Available KV cache
// memory: 36.56 GiB" (myoceane.fr, "vLLM 部署地端模型系統訊息記錄 A100", 2026-04-18).
func TestGptOss20bAvailableMemory(t *testing.T) {
	s, err := Resolve(Config{Model: "openai/gpt-oss-20b", GPU: "A100-SXM-80GB", GPUMemoryUtilization: 0.65,
		MaxModelLen: 131072, VLLMVersion: "0.19.0"}, nil)
	require.NoError(t, err)
	within(t, 13.72, float64(s.Capacity.WeightsBytes)/gib, 0.005, "the experts as vLLM pads them")
	within(t, 36.56, float64(s.Capacity.AvailableKVBytes)/gib, 0.01, "available KV GiB")
}

// TestMXFP4ExpertPaddingPerRank: vLLM pads the MXFP4 experts' intermediate size per rank to 128
// and the hidden size to 256, so gpt-oss-120b's weights are not a TP 4 rank's times four: 17.22
// GiB a GPU at TP 4 (the 0.10.1.1 A100 log) and 65.97 at TP 1 (the 0.10.1 H100 log of vllm#23278).
func TestMXFP4ExpertPaddingPerRank(t *testing.T) {
	m, err := BuiltinProfiles().Model("openai/gpt-oss-120b")
	require.NoError(t, err)
	perExpert := func(inter float64) float64 { return inter*3072*(1+1.0/16+0.5+1.0/32) + 4*inter + 2*3072 }
	assert.InDelta(t, 36*128*perExpert(2944), mxfp4ExpertBytesPerRank(m, 1), 1, "2,880 rounds up to 2,944")
	assert.InDelta(t, 36*128*perExpert(768), mxfp4ExpertBytesPerRank(m, 4), 1, "720 a rank rounds up to 768")
	for _, c := range []struct {
		tp  int
		gib float64
	}{{1, 65.97}, {4, 17.2217}} {
		s, err := Resolve(Config{Model: "openai/gpt-oss-120b", GPU: "A100-SXM-80GB", TensorParallelSize: c.tp, VLLMVersion: "0.10.1.1", MaxModelLen: 8192}, nil)
		require.NoError(t, err)
		within(t, c.gib, float64(s.Capacity.WeightsBytes)/gib, 0.005, fmt.Sprintf("TP %d", c.tp))
	}
}
