package sim

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultUtilizationByVersion(t *testing.T) {
	for v, want := range map[string]float64{"0.4.2": 0.9, "0.17.0": 0.9, "0.20.2": 0.9, "0.21.0": 0.92, DefaultVersion: 0.92} {
		assert.Equal(t, want, DefaultUtilization(MustVersion(v)), v)
		s, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: v}, nil)
		require.NoError(t, err, v)
		assert.Equal(t, want, s.GPUMemoryUtilization, "%s: the release's default applies when the flag is unset", v)
	}
	s, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: "0.17.0", GPUMemoryUtilization: 0.5}, nil)
	require.NoError(t, err)
	assert.Equal(t, 0.5, s.GPUMemoryUtilization, "a given utilisation is kept")
}

func TestV0SchedulerDefaults(t *testing.T) {
	cases := []struct {
		version, name string
		maxModelLen   int
		batched, seqs int
		chunked       bool
	}{
		{"0.6.4", "no chunked prefill: the budget is max_model_len", 20000, 20000, 256, false},
		{"0.6.4", "the budget is at least 2048", 1024, 2048, 256, false},
		{"0.6.4", "long contexts turn chunked prefill on", 131072, 2048, 256, true},
		{"0.5.4", "with 512 tokens before 0.6", 131072, 512, 256, true},
		{"0.5.1", "not before 0.5.4", 40000, 40000, 256, false},
		{"0.8.0", "V1 takes the GPU's defaults", 131072, 2048, 256, true},
	}
	for _, c := range cases {
		s, err := Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "A100-SXM-80GB", MaxModelLen: c.maxModelLen, VLLMVersion: c.version}, nil)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.batched, s.MaxNumBatchedTokens, "%s %s", c.version, c.name)
		assert.Equal(t, c.seqs, s.MaxNumSeqs, "%s %s", c.version, c.name)
		assert.Equal(t, c.chunked, s.ChunkedPrefillEnabled(), "%s %s", c.version, c.name)
	}
}

func TestOfflineLLMClassDefaults(t *testing.T) {
	cases := []struct {
		gpu, version, entry string
		maxModelLen         int
		batched, seqs       int
		chunked             bool
	}{
		{"H100-SXM-80GB", "0.10.0", EntryServe, 8192, 8192, 1024, true},
		{"H100-SXM-80GB", "0.10.0", EntryLLM, 8192, 16384, 1024, true},
		{"L4", "0.10.0", EntryServe, 8192, 2048, 256, true},
		{"L4", "0.10.0", EntryLLM, 8192, 8192, 256, true},
		// V0: the server and the LLM class shared their defaults.
		{"A100-SXM-80GB", "0.6.4", EntryServe, 65536, 2048, 256, true},
		{"A100-SXM-80GB", "0.6.4", EntryLLM, 65536, 2048, 256, true},
	}
	for _, c := range cases {
		s, err := Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: c.gpu, MaxModelLen: c.maxModelLen, VLLMVersion: c.version, EntryPoint: c.entry}, nil)
		require.NoError(t, err)
		name := c.gpu + " " + c.version + " " + c.entry
		assert.Equal(t, c.batched, s.MaxNumBatchedTokens, name)
		assert.Equal(t, c.seqs, s.MaxNumSeqs, name)
		assert.Equal(t, c.chunked, s.ChunkedPrefillEnabled(), name)
	}
	// V0 kept chunked prefill off for sliding-window and multimodal models whatever the length.
	s, err := Resolve(Config{Model: "google/gemma-3-12b-it", GPU: "A100-SXM-80GB", MaxModelLen: 65536, VLLMVersion: "0.6.4"}, nil)
	require.NoError(t, err)
	assert.False(t, s.ChunkedPrefillEnabled())
	assert.Equal(t, 65536, s.MaxNumBatchedTokens)
	_, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", EntryPoint: "offline"}, nil)
	assert.EqualError(t, err, `--sim-entry-point must be serve (vllm serve) or llm (the offline LLM class), got "offline"`)
}

func TestV0RefusalsUseV0Messages(t *testing.T) {
	// vllm#10517: at 29,000 batched tokens the 3090 keeps 1,478 blocks (23,648 tokens).
	_, err := Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "RTX-3090", GPUMemoryUtilization: 0.9,
		MaxModelLen: 29000, VLLMVersion: "0.6.4"}, rtx3090Profiles(t))
	var se *StartupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, MaxModelLenTooLarge, se.Kind)
	c := se.Capacity
	assert.Equal(t, c.NumGPUBlocks*16, c.KVCacheTokens, "V0 counts the blocks' tokens")
	within(t, 23648, float64(c.KVCacheTokens), 0.01, "KV tokens of the refusal")
	assert.Contains(t, se.Message, "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (")
	assert.Contains(t, se.Message, "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")

	_, err = Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.7,
		MaxModelLen: 4096, VLLMVersion: "0.7.3"}, nil)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, NoKVMemory, se.Kind)
	assert.Equal(t, "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.", se.Message)

	_, err = Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.68,
		MaxModelLen: 4096, VLLMVersion: "0.8.0"}, nil)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, NoKVMemory, se.Kind)
	assert.Contains(t, se.Message, "See https://docs.vllm.ai/", "the V1 engine's message")
}

func TestV0SamplerPeakOnTheDriverRank(t *testing.T) {
	// V0's sampler runs on the driver rank with the whole vocabulary: tensor parallelism
	// divides the forward peak, not the sampler's.
	cfg := Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "A100-SXM-80GB", MaxModelLen: 2048, VLLMVersion: "0.6.4"}
	one, err := Resolve(cfg, nil)
	require.NoError(t, err)
	cfg.TensorParallelSize = 2
	two, err := Resolve(cfg, nil)
	require.NoError(t, err)
	want := int64(v0SamplerBytesPerSeqVocab * 256 * 128256)
	assert.Equal(t, want, one.Capacity.ActivationBytes, "the sampler is the larger peak at 2048 tokens")
	assert.Equal(t, want, two.Capacity.ActivationBytes)

	// The V1 engine samples on every rank, through FlashInfer at 0.10.1.1: 14 B an entry on
	// each of the two ranks, beside the profile forward's output it still holds (2,048 tokens
	// x 4,096 hidden in bf16).
	cfg.VLLMVersion = "0.10.1.1"
	v1, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(14*256*128256+2048*4096*2), v1.Capacity.ActivationBytes)
}

func TestColdCompilePeak(t *testing.T) {
	resolve := func(cfg Config) *Setup {
		t.Helper()
		if cfg.Model == "" {
			cfg.Model = "Qwen/Qwen2.5-7B-Instruct"
		}
		cfg.GPU, cfg.MaxModelLen, cfg.MaxNumSeqs, cfg.GPUMemoryUtilization = "A10G", 4096, 128, 0.9
		s, err := Resolve(cfg, nil)
		require.NoError(t, err)
		return s
	}
	warm := resolve(Config{VLLMVersion: "0.27.1"})
	cold := resolve(Config{VLLMVersion: "0.27.1", CompileCache: CompileCold})
	require.Equal(t, CompileWarm, warm.CompileCache, "warm is the default")
	require.True(t, cold.V2ModelRunner())
	// 27.3 rows of 2,048 tokens x 18,944 (the 7B's intermediate size) x 2 bytes: 1.97 GiB.
	peak := coldCompilePeak(cold)
	assert.InDelta(t, 1.97, peak/gib, 0.01)
	assert.Equal(t, int64(peak), cold.Capacity.ActivationBytes, "the compile peak tops the forward and sampler peak")
	assert.Less(t, warm.Capacity.ActivationBytes, cold.Capacity.ActivationBytes)
	assert.Equal(t, warm.Capacity.AvailableKVBytes-(cold.Capacity.ActivationBytes-warm.Capacity.ActivationBytes), cold.Capacity.AvailableKVBytes,
		"the KV cache is what the larger peak leaves")

	tp2 := resolve(Config{VLLMVersion: "0.27.1", CompileCache: CompileCold, TensorParallelSize: 2})
	assert.InDelta(t, peak/2, coldCompilePeak(tp2), 1, "a GPU holds half the MLP width at TP 2")
	budget := resolve(Config{VLLMVersion: "0.27.1", CompileCache: CompileCold, MaxNumBatchedTokens: 8192})
	assert.InDelta(t, peak*2, coldCompilePeak(budget), 1, "four times the budget, twice the peak")

	assert.Empty(t, cold.ColdCompileNote(), "applied: nothing to explain")
	assert.Empty(t, warm.ColdCompileNote())
	for want, cfg := range map[string]Config{
		"V1 model runner":                  {VLLMVersion: "0.19.0", CompileCache: CompileCold},
		"--enforce-eager compiles nothing": {VLLMVersion: "0.27.1", CompileCache: CompileCold, EnforceEager: true},
	} {
		assert.Contains(t, resolve(cfg).ColdCompileNote(), want)
	}
	// On an H100 the 0.6B's sampler peak over 1,024 sequences tops the compile's.
	small, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: "0.27.1", CompileCache: CompileCold}, nil)
	require.NoError(t, err)
	assert.Contains(t, small.ColdCompileNote(), "below the profile's forward and sampler peak")
	for name, cfg := range map[string]Config{
		"the V1 model runner (0.19)":               {VLLMVersion: "0.19.0", CompileCache: CompileCold},
		"--enforce-eager compiles nothing":         {VLLMVersion: "0.27.1", CompileCache: CompileCold, EnforceEager: true},
		"a MoE model on the V1 runner before 0.29": {Model: "openai/gpt-oss-20b", VLLMVersion: "0.27.1", CompileCache: CompileCold},
		"a warm cache loads the compiled graphs":   {VLLMVersion: "0.30.0"},
	} {
		s := resolve(cfg)
		assert.Zero(t, coldCompilePeak(s), name)
		cfg.CompileCache = CompileWarm
		assert.Equal(t, resolve(cfg).Capacity.ActivationBytes, s.Capacity.ActivationBytes, name)
	}

	_, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", CompileCache: "lukewarm"}, nil)
	var cerr *ConfigError
	require.ErrorAs(t, err, &cerr)
	assert.Contains(t, cerr.Error(), "--sim-compile-cache must be warm or cold")
}

// TestDenseForwardKeepsHiddenTensorsWhole: a dense layer's profiled peak is at its MLP, where the
// code holds three hidden-size tensors (the layer's input, still the caller's, the residual and
// the normalised input of the MLP) and three of the intermediate size (gate/up's output and the
// activation of it). Tensor parallelism splits the MLP's and not the hidden ones, and the
// figure follows the dtype. At TP 1 the form gives vllm#10517's 2.07 GiB (Llama-3.1-8B, 20,000
// batched tokens, 0.6.4's allocated peak) within 1%.
func TestDenseForwardKeepsHiddenTensorsWhole(t *testing.T) {
	cfg := Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "A100-SXM-80GB", MaxModelLen: 20000, VLLMVersion: "0.6.4"}
	one, err := Resolve(cfg, nil)
	require.NoError(t, err)
	require.Equal(t, 20000, one.MaxNumBatchedTokens, "V0 without chunked prefill profiles the whole context")
	const tokens = 20000.0
	assert.InDelta(t, tokens*(6*4096+6*14336), float64(one.Capacity.ActivationBytes), 1)
	within(t, 2.07, float64(one.Capacity.ActivationBytes)/gib, 0.01, "vllm#10517 at 20,000 tokens")

	cfg.TensorParallelSize = 2
	two, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.InDelta(t, tokens*(6*4096+6*14336/2), float64(two.Capacity.ActivationBytes), 1,
		"the hidden-size tensors are whole on every rank")

	cfg.TensorParallelSize, cfg.DType = 1, "float32"
	wide, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.InDelta(t, 2*float64(one.Capacity.ActivationBytes), float64(wide.Capacity.ActivationBytes), 1)
}

// TestMoEWorkspaceHeldThroughTheSampler: from 0.12 the Triton fused-MoE kernel takes its buffers
// from vLLM's workspace manager, which keeps them, so the profile's sampler peak carries them:
// Qwen3-30B-A3B on an H100 at 0.19 (8,192 tokens, top-8, 768 intermediate, 2,048 hidden) holds
// 8,192 x 8 x (2,048 + 2,048) bf16 values beside the sampler. Before 0.12 the kernel freed its
// buffers with the call, and the forward is buffers, hidden-size tensors and the experts' output.
func TestMoEWorkspaceHeldThroughTheSampler(t *testing.T) {
	cfg := Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H100", MaxModelLen: 8192, VLLMVersion: "0.19.0"}
	s, err := Resolve(cfg, nil)
	require.NoError(t, err)
	require.Equal(t, 8192, s.MaxNumBatchedTokens)
	workspace := float64(8192 * 8 * (2048 + 2048) * 2)
	assert.Equal(t, workspace, heldMoEWorkspaceBytes(s))
	entries := float64(s.MaxNumSeqs) * 151936
	want := profiledHiddenBytes(s, entries) + v1SamplerPeak(s, entries) + workspace
	assert.InDelta(t, want, float64(s.Capacity.ActivationBytes), 1, "the sampler's side, with the kept workspace")
	within(t, 2.68, float64(s.Capacity.ActivationBytes)/gib, 0.01, "the 0.19.0 H100 log's activations")

	cfg.VLLMVersion = "0.11.0"
	old, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.Zero(t, heldMoEWorkspaceBytes(old), "0.11 frees the kernel's buffers with the call")
	buffers := float64(8192 * 8 * (2048 + 768) * 2)
	assert.InDelta(t, buffers, fusedMoEBufferBytes(old), 1)

	// V0 took the whole batch before 0.5.1, 65,536 tokens at a time until 0.6.0 and 32,768
	// from it; until 0.8 the gate/up output (2 x 1,408 a token and expert) and the down
	// projection's (2,048) had buffers of their own, beside the activation's 1,408 / 2.
	long := Config{Model: "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", GPU: "H200", MaxModelLen: 163840, MaxNumBatchedTokens: 163840}
	for _, c := range []struct {
		version       string
		chunk, values float64
	}{
		{"0.5.0", 163840, 2816 + 1408 + 2048},
		{"0.5.1", 65536, 2816 + 1408 + 2048},
		{"0.6.0", 32768, 2816 + 1408 + 2048},
		{"0.7.3", 32768, 2816 + 1408 + 2048},
		{"0.8.0", 32768, 2816 + 1408},
	} {
		long.VLLMVersion = c.version
		s, err := Resolve(long, nil)
		require.NoError(t, err, c.version)
		require.Equal(t, 163840, s.MaxNumBatchedTokens, c.version)
		assert.Equal(t, c.chunk, fusedMoEChunkTokens(s), c.version)
		assert.InDelta(t, c.chunk*6*c.values*2, fusedMoEBufferBytes(s), 1, c.version)
	}
}

// TestMoEDenseLayersAndSharedExperts: a MoE model's forward peak is its widest layer's. With
// DeepSeek-V2's first dense layer (intermediate 10,944 where an expert has 1,408) over a whole
// 163,840-token V0 batch, the dense MLP tops the routed layers; the shared experts' output is
// one more hidden-size tensor beside the fused kernel's buffers. 0.6.4 counts the allocated
// peak (before, the allocator's reserve: TestV0ReservedForward).
func TestMoEDenseLayersAndSharedExperts(t *testing.T) {
	cfg := Config{Model: "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", GPU: "H200", TensorParallelSize: 2,
		MaxModelLen: 163840, MaxNumBatchedTokens: 163840, VLLMVersion: "0.6.4"}
	s, err := Resolve(cfg, nil)
	require.NoError(t, err)
	m := s.ModelProfile
	require.Equal(t, 10944, m.DenseIntermediateSize)
	require.Equal(t, 2816, m.SharedExpertIntermediateSize)

	tokens, h := 163840.0, 2048.0
	dense := tokens * (6*h + 6*10944.0/2) // bf16: 2 bytes x (3h + 3I/TP)
	routed := fusedMoEBufferBytes(s) + 5*tokens*h*2
	require.Greater(t, dense, routed, "the dense layer is the wider one here")
	sampler := v0SamplerBytesPerSeqVocab * float64(s.MaxNumSeqs) * float64(m.VocabSize)
	act, _ := profileMemory(s)
	assert.InDelta(t, math.Max(dense, sampler), float64(act), 1e6)

	// Without the dense layer, the routed layers set it, with the shared experts' output.
	s.ModelProfile.DenseIntermediateSize = 0
	act, _ = profileMemory(s)
	assert.InDelta(t, math.Max(routed, sampler), float64(act), 1e6)
	// And without shared experts, four hidden-size tensors.
	s.ModelProfile.SharedExpertIntermediateSize = 0
	act, _ = profileMemory(s)
	four := fusedMoEBufferBytes(s) + 4*tokens*h*2
	assert.InDelta(t, math.Max(four, sampler), float64(act), 1e6)
}
