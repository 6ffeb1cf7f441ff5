package sim

import (
	"fmt"
	"math"
	"strings"
)

// The memory plan changed with vLLM's engine and profiler (docs/calibration.md#memory-model-by-version):
// V0 (before 0.8) measured the profiling peak from torch's allocated peak before 0.2.5, from
// the free memory from 0.2.5 until 0.6.4 and from torch's allocated peak again after, and ran
// the sampler's full top-p/top-k pass over max_num_seqs rows on the driver rank only; the V1
// engine (0.8 on) runs its dummy sampler with top-p/top-k on every rank, through the release's
// default kernel (sampler.go).

// V0 figures, fitted on the fit split of the validation corpus (docs/validation.md).
const (
	// v0SamplerBytesPerSeqVocab is the sampler's peak per sequence and vocabulary entry:
	// float32 logits, their sort (values and int64 indices), probabilities and log-probabilities.
	v0SamplerBytesPerSeqVocab = 35
	// v0NonTorchGiB is the non-torch memory V0 logged on one GPU (vllm#10517: 0.35 GiB).
	v0NonTorchGiB = 0.35
	// v0ReservedFactor is the caching allocator's reserve over the allocated peak that V0
	// counted before 0.6.4, when it read the peak from torch.cuda.mem_get_info, for the
	// sampler and the encoder; the forward's is replayed (v0ReservedForward).
	v0ReservedFactor = 1.2
	// fusedMoEChunk is VLLM_FUSED_MOE_CHUNK_SIZE's default (vllm/envs.py) from 0.6.0; it was
	// 65,536 from the chunking's start in 0.5.1 (vllm#6029) until vllm#7995 halved it; before
	// 0.5.1 the kernel took the whole batch.
	fusedMoEChunk        = 32768
	fusedMoEChunkV05     = 65536
	fusedMoEChunkRelease = "0.5.1"
	// fusedMoESharedRelease is the first release whose fused_experts lays the down projection's
	// output over the gate/up output's buffer (vllm#13625, merged February 2025, after 0.7.3);
	// before, the two had buffers of their own.
	fusedMoESharedRelease = "0.8.0"
	// moeWorkspaceRelease is the first release whose fused-MoE kernels take their buffers from
	// vLLM's workspace manager (vllm#27532, November 2025), which keeps them for the next layer
	// and so past the forward.
	moeWorkspaceRelease = "0.12.0"
)

// activationBytes is one activation value's size: the model dtype's, 2 where it is not known.
func (s *Setup) activationBytes() float64 {
	if b, err := dtypeBytes(s.ModelDType); err == nil {
		return b
	}
	return 2
}

// fusedMoEChunkTokens is how many of the batched tokens the fused-MoE kernel works on at once.
func fusedMoEChunkTokens(s *Setup) float64 {
	// With data parallelism the expert layers take every engine's tokens, all-gathered before
	// them (docs/vllm-behaviour.md#experts-across-data-parallel-ranks).
	tokens := float64(s.MaxNumBatchedTokens * max(1, s.DataParallelSize))
	if !s.Version.AtLeast(fusedMoEChunkRelease) {
		return tokens
	}
	if !s.Version.AtLeast("0.6.0") {
		return min(tokens, fusedMoEChunkV05)
	}
	return min(tokens, fusedMoEChunk)
}

// fusedMoEBufferBytes is what vLLM's Triton fused-MoE kernel allocates for its chunk of tokens,
// in the model's dtype, with I the experts' intermediate size a rank holds (tensor parallelism
// splits it, not the hidden size h). Before 0.12, fused_experts in
// vllm/model_executor/layers/fused_moe/fused_moe.py allocates one buffer of tokens x top-k x
// max(2I, h), shared by the gate/up output and the down projection's (from 0.8; before, tokens x
// top-k x 2I and tokens x top-k x h of their own), and one of tokens x top-k x I for the
// activation, and frees them with the call. From 0.12 the modular kernel takes
// TritonExperts' workspaces from the workspace manager: tokens x top-k x max(I, h), shared with
// the output, and tokens x top-k x max(2I, h); the manager keeps them, so they are still
// allocated when the profile run's dummy sampler runs. I is cut over TP x DP ranks, and not
// at all where expert parallelism keeps the experts whole.
func fusedMoEBufferBytes(s *Setup) float64 {
	m := s.ModelProfile
	n := float64(m.IntermediateSize) / float64(s.expertSlices())
	h := float64(m.HiddenSize)
	per := max(2*n, h) + n
	if !s.Version.AtLeast(fusedMoESharedRelease) {
		per = 2*n + n + h
	}
	if s.Version.AtLeast(moeWorkspaceRelease) {
		per = max(n, h) + max(2*n, h)
	}
	return fusedMoEChunkTokens(s) * float64(m.ExpertsPerToken) * per * s.activationBytes()
}

// heldMoEWorkspaceBytes is the fused-MoE workspace that outlives the profile's forward: the
// Triton kernels' buffers from 0.12 on, 0 before and for the MXFP4/NVFP4 kernels, which
// allocate their own.
func heldMoEWorkspaceBytes(s *Setup) float64 {
	if !s.ModelProfile.IsMoE() || fourBitExperts(s) || !s.Version.AtLeast(moeWorkspaceRelease) {
		return 0
	}
	return fusedMoEBufferBytes(s)
}

// fourBitExperts reports whether the experts are stored as MXFP4 or NVFP4 (gpt-oss, the
// NVFP4 checkpoints), which vLLM runs through other kernels than the Triton fused MoE.
func fourBitExperts(s *Setup) bool {
	q := storageMethod(strings.ToLower(s.Quantization))
	if q == "" {
		q = strings.ToLower(s.ModelProfile.Quantization)
	}
	return q == "mxfp4" || q == "nvfp4" || s.ModelProfile.ExpertBytesPerParam > 0
}

// V1Engine reports whether the release runs the V1 engine by default (0.8 on).
func (v Version) V1Engine() bool { return v.AtLeast("0.8.0") }

// DefaultUtilization is --gpu-memory-utilization's default in release v: 0.9 until 0.21,
// 0.92 from 0.21, when CUDA-graph memory started coming out of the KV budget
// (docs/vllm-behaviour.md#defaults-by-version).
func DefaultUtilization(v Version) float64 {
	if v.AtLeast("0.21.0") {
		return DefaultGPUMemoryUtilization
	}
	return 0.9
}

// profileMemory is the profiling pass's transient peak (forward or sampler, whichever is
// larger) and the non-torch memory of one rank of s.
func profileMemory(s *Setup) (activation, nonTorch int64) {
	m, h := s.ModelProfile, s.HostProfile
	tp := float64(s.TensorParallelSize)
	tokens := float64(s.MaxNumBatchedTokens)
	// A dense layer's peak is at its MLP: the hidden-size tensors every rank holds whole and
	// the intermediate-size ones tensor parallelism splits, in the model's dtype.
	denseMLP := func(inter int) float64 {
		return tokens * s.activationBytes() / 2 * (h.ActivationBytesPerTokenHidden*float64(m.HiddenSize) +
			h.ActivationBytesPerTokenIntermediate*float64(inter)/tp)
	}
	var forward float64
	if m.IsMoE() {
		// The fused-MoE kernel works through the tokens in chunks of VLLM_FUSED_MOE_CHUNK_SIZE,
		// so its buffers stop growing there.
		if fourBitExperts(s) {
			// MXFP4/NVFP4 experts run through Marlin or FlashInfer kernels, whose workspace
			// the gpt-oss fit stands for: a figure per expert intermediate unit.
			forward += h.MoEActivationBytes * fusedMoEChunkTokens(s) * float64(m.ExpertsPerToken*m.IntermediateSize) / float64(s.expertSlices())
		} else {
			// The kernel's buffers beside a layer's three hidden-size tensors and the
			// experts' output, all of the whole batch; with shared experts their output too,
			// which the layer computes first and adds to the routed experts' at the end.
			hidden := 4.0
			if m.SharedExpertIntermediateSize > 0 {
				hidden++
			}
			forward += fusedMoEBufferBytes(s) + hidden*tokens*float64(m.HiddenSize)*s.activationBytes()
		}
		if m.DenseIntermediateSize > 0 {
			// The layers that do not route run a dense MLP, often far wider than an expert.
			forward = max(forward, denseMLP(m.DenseIntermediateSize))
		}
	} else {
		forward = denseMLP(m.IntermediateSize)
	}
	entries := float64(s.MaxNumSeqs) * float64(m.VocabSize)
	if !s.lastStage() {
		entries = 0 // only the last pipeline stage computes logits and samples
	}
	if s.Version.V1Engine() {
		// The encoder's batch runs first; its outputs stay through the forward and the sampler.
		encoder, kept := encoderProfileBytes(s)
		sampler := profiledHiddenBytes(s, entries) + v1SamplerPeak(s, entries)
		if entries > 0 {
			sampler += heldMoEWorkspaceBytes(s)
		}
		peak := max(encoder, kept+max(forward, sampler), coldCompilePeak(s))
		nonTorch := h.NonTorchGiB + releaseNonTorchGiB(s.Version) + tensorParallelNonTorchGiB(s)
		return int64(peak), int64(nonTorch * gib)
	}
	// The driver rank samples, and the engine sizes every rank's cache by the smallest. The
	// encoder runs inside the forward; its outputs are gone by the sampler.
	encoder, kept := encoderProfileBytes(s)
	peak := max(encoder, kept+forward, v0SamplerBytesPerSeqVocab*entries)
	if !s.Version.AtLeast("0.2.5") {
		// total x utilisation - torch's allocated peak: nothing outside torch was counted
		// until vllm#2031 read the free memory instead.
		return int64(peak), 0
	}
	if !s.Version.AtLeast("0.6.4") {
		// The free-memory reading counts the allocator's reserve: the forward's as the
		// allocator lays it out, the sampler's and the encoder's at the fitted factor.
		sampler := v0SamplerBytesPerSeqVocab * entries
		forward := kept*v0ReservedFactor + v0ReservedForward(s)
		peak = max(encoder*v0ReservedFactor, forward, sampler*v0ReservedFactor) + heldAllReduceBytes(s)
	}
	return int64(peak), int64(math.Round((v0NonTorchGiB + tensorParallelNonTorchGiB(s)) * gib))
}

// coldCompileRows is the cold compile's transient peak at a 2,048-token budget in rows of
// 2,048 tokens x the MLP width a GPU holds (intermediate_size / TP) in the model dtype: the
// middle of the range that puts every first boot of the V2 model runner in the fit set within 5%
// of its KV figure (docs/calibration.md#cold-compile-peak).
const coldCompileRows = 27.3

// coldCompilePeak is what a first boot's torch.compile leaves in the profile's torch peak, or 0.
// The V2 model runner compiles the model inside vLLM's memory-profiling window, and on a cold
// compile cache Inductor's and Triton's temporaries (compilation, autotuning) raise the
// allocator's high-water mark that the profile charges as activation memory (vllm#54122,
// vllm#54383); a warm cache loads the compiled graphs and adds nothing. The peak grows with
// the MLP width a GPU holds, and with the square root of the batched-token budget (the
// budgets 2,048 and 8,192 observed); it counts only where it tops the forward and sampler peak.
func coldCompilePeak(s *Setup) float64 {
	if s.CompileCache != CompileCold || s.EnforceEager || !s.V2ModelRunner() {
		return 0
	}
	b, err := dtypeBytes(s.ModelDType)
	if err != nil || b < 2 {
		b = 2
	}
	width := float64(s.ModelProfile.IntermediateSize) / float64(s.TensorParallelSize)
	return coldCompileRows * math.Sqrt(2048*float64(s.MaxNumBatchedTokens)) * width * b
}

// ColdCompileSetsPeak reports whether the profile's activation peak is the cold compile's.
func (s *Setup) ColdCompileSetsPeak() bool {
	peak := coldCompilePeak(s)
	return peak > 0 && int64(peak) >= s.Capacity.ActivationBytes
}

// ColdCompileNote says why --sim-compile-cache cold leaves the plan as a warm boot's, or "".
func (s *Setup) ColdCompileNote() string {
	const flag = "--sim-compile-cache cold: "
	switch {
	case s.CompileCache != CompileCold || s.ColdCompileSetsPeak():
		return ""
	case s.EnforceEager:
		return flag + "--enforce-eager compiles nothing, so the first boot's plan is a restart's."
	case !s.V2ModelRunner():
		return flag + "vLLM " + s.Version.String() + " runs this model on the V1 model runner, whose profile the cold compile is not charged to " +
			"(the V2 runner's is: dense models from 0.25, every model from 0.29), so the plan is a restart's."
	}
	return fmt.Sprintf(flag+"the compile's peak (%.2f GiB) is below the profile's forward and sampler peak (%.2f GiB), so the plan is a restart's.",
		coldCompilePeak(s)/gib, float64(s.Capacity.ActivationBytes)/gib)
}

// heldAllReduceBytes is what the profile run of a release before 0.2.6 left reserved at tensor
// parallelism through torch.distributed's recordStream: an all-reduced tensor's block is not
// reused until the NCCL stream has passed it, and the host queues the whole forward before the
// GPU gets there, so every all-reduce output of the pass (the embedding's and two a layer, each
// batched tokens x hidden in the model dtype) stays reserved and the free-memory reading counts
// it. 0.2.6 set TORCH_NCCL_AVOID_RECORD_STREAMS=1 (vllm#2151), which frees them at once.
func heldAllReduceBytes(s *Setup) float64 {
	if s.TensorParallelSize <= 1 || s.Version.AtLeast("0.2.6") {
		return 0
	}
	m := s.ModelProfile
	b, _ := dtypeBytes(s.ModelDType)
	return float64(2*m.NumLayers+1) * float64(s.MaxNumBatchedTokens) * float64(m.HiddenSize) * b
}

// profiledHiddenBytes is the profile forward's output that the V1 profile run holds through its
// dummy sampler run (profile_run deletes hidden_states only after it): max_num_batched_tokens
// rows of the hidden size in the model's dtype, where the stage samples (entries > 0).
func profiledHiddenBytes(s *Setup, entries float64) float64 {
	if entries == 0 {
		return 0
	}
	return float64(s.MaxNumBatchedTokens) * float64(s.ModelProfile.HiddenSize) * s.activationBytes()
}

// v1SamplerPeak is the V1 dummy sampler run's peak: the release's default top-k/top-p path,
// or sampler_bytes_per_seq_vocab per entry where a host profile sets it.
func v1SamplerPeak(s *Setup, entries float64) float64 {
	if entries == 0 {
		return 0 // a pipeline stage before the last samples nothing
	}
	if b := s.HostProfile.SamplerBytesPerSeqVocab; b > 0 {
		return b * entries
	}
	logitsBytes, err := dtypeBytes(s.ModelDType)
	if err != nil || logitsBytes < 2 {
		logitsBytes = 2
	}
	env := s.FlashInferSampler
	if s.FlashInfer == FlashInferAbsent {
		env = SamplerEnvOff // vLLM falls back to the native path, as with the variable at 0
	}
	return v1SamplerPeakBytes(v1SamplerPath(s.Version, gpuArch(s.GPUProfile) == archAMD, env), s.MaxNumSeqs, s.ModelProfile.VocabSize, logitsBytes)
}

// defaultBatch applies the scheduler's defaults of release v: V1 takes them from the GPU
// (get_batch_defaults); V0 schedules 256 sequences and, without chunked prefill, a budget
// of max(max_model_len, 2048) tokens. V0's engine arguments turned chunked prefill on by itself
// for contexts over 32K from 0.5.4 (for the server and the LLM class alike), with a budget of 512 tokens until 0.6 and 2048 after.
func defaultBatch(cfg *Config, m Model, g GPU, v Version) {
	if v.V1Engine() {
		// --performance-mode throughput doubles the limits left to their defaults, before the
		// context and the budget bound them (_set_default_max_num_seqs_and_batched_tokens_args).
		times := 1
		if cfg.PerformanceMode == "throughput" {
			times = 2
		}
		if cfg.MaxNumBatchedTokens == 0 {
			cfg.MaxNumBatchedTokens = serverBatchedTokens(g.DefaultMaxNumBatchedTokens, v)
			if cfg.EntryPoint == EntryLLM {
				cfg.MaxNumBatchedTokens = llmClassBatchedTokens(g.DefaultMaxNumBatchedTokens)
			}
			cfg.MaxNumBatchedTokens *= times
			if cfg.ChunkedPrefill == Off && cfg.MaxNumBatchedTokens < cfg.MaxModelLen {
				cfg.MaxNumBatchedTokens = cfg.MaxModelLen
			}
		}
		if cfg.MaxNumSeqs == 0 {
			// vLLM's default batch size, capped at the token budget (get_batch_defaults).
			cfg.MaxNumSeqs = min(times*g.DefaultMaxNumSeqs, cfg.MaxNumBatchedTokens)
		}
		return
	}
	if cfg.ChunkedPrefill == Default {
		cfg.ChunkedPrefill = Off
		// Not for sliding-window or multimodal models, whose V0 kernels lacked it.
		if v.AtLeast("0.5.4") && cfg.MaxModelLen > 32768 && m.SlidingWindow == 0 && m.EncoderParams == 0 {
			cfg.ChunkedPrefill = On
		}
	}
	if cfg.MaxNumBatchedTokens == 0 {
		switch {
		case cfg.ChunkedPrefill != On:
			cfg.MaxNumBatchedTokens = max(cfg.MaxModelLen, 2048)
		case v.AtLeast("0.6.0"):
			cfg.MaxNumBatchedTokens = 2048
		default:
			cfg.MaxNumBatchedTokens = 512
		}
	}
	if cfg.MaxNumSeqs == 0 {
		cfg.MaxNumSeqs = min(256, cfg.MaxNumBatchedTokens)
	}
}

// serverBatchedTokens is the API server's default token budget in release v on a GPU whose
// profile gives the older default profileDefault: PR #51726 (merged 2026-08-10, 0.28 by our
// mapping) raised the large-GPU budget from 8192 to 16384, as the LLM class already had it
// (docs/vllm-behaviour.md#defaults-by-version).
func serverBatchedTokens(profileDefault int, v Version) int {
	if profileDefault >= 8192 && v.AtLeast("0.28.0") {
		return 16384
	}
	return profileDefault
}

// llmClassBatchedTokens is the offline LLM class's default token budget for a GPU whose API
// server default is serverDefault: get_batch_defaults gives the LLM class 16384 where the server
// gets 8192 (large GPUs) and 8192 where it gets 2048; both take the same max_num_seqs.
func llmClassBatchedTokens(serverDefault int) int {
	if serverDefault >= 8192 {
		return 2 * serverDefault
	}
	return 4 * serverDefault
}

// v0StartupError is V0's check after profiling (raise_if_cache_size_invalid): no block at
// all, or fewer block tokens than one max_model_len request. Nil when the cache is valid.
func v0StartupError(c Capacity, blockSize, maxModelLen int) *StartupError {
	if c.NumGPUBlocks <= 0 {
		return &StartupError{Kind: NoKVMemory, Exception: "ValueError", Capacity: c, Message: "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."}
	}
	tokens := c.NumGPUBlocks * blockSize
	if maxModelLen <= tokens {
		return nil
	}
	return &StartupError{Kind: MaxModelLenTooLarge, Exception: "ValueError", Capacity: c, EstimatedMaxModelLen: tokens, Message: "The model's max seq len (" +
		itoa(maxModelLen) + ") is larger than the maximum number of tokens that can be stored in KV cache (" + itoa(tokens) +
		"). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."}
}
