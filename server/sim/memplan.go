package sim

import "math"

// The memory plan changed with vLLM's engine and profiler (docs/calibration.md#memory-model-by-version):
// V0 (before 0.8) measured the profiling peak from the free memory until 0.6.4, from torch's
// allocated peak after, and ran the sampler's full top-p/top-k pass over max_num_seqs rows on
// the driver rank only; the V1 engine (0.8 on) samples greedily in its dummy sampler run, on
// every rank, and counts more non-torch memory.

// V0 figures, fitted on the fit split of the validation corpus (docs/validation.md).
const (
	// v0SamplerBytesPerSeqVocab is the sampler's peak per sequence and vocabulary entry:
	// float32 logits, their sort (values and int64 indices), probabilities and log-probabilities.
	v0SamplerBytesPerSeqVocab = 35
	// v0NonTorchGiB is the non-torch memory V0 logged on one GPU (vllm#10517: 0.35 GiB).
	v0NonTorchGiB = 0.35
	// v0ReservedFactor is the caching allocator's reserve over the allocated peak that V0
	// counted before 0.6.4, when it read the peak from torch.cuda.mem_get_info.
	v0ReservedFactor = 1.2
	// fusedMoEChunk is VLLM_FUSED_MOE_CHUNK_SIZE's default (vllm/envs.py).
	fusedMoEChunk = 32768
)

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
	forward := tokens * h.ActivationBytesPerTokenHidden * float64(m.HiddenSize)
	if m.IsMoE() {
		// The fused-MoE kernel works through the tokens in chunks of VLLM_FUSED_MOE_CHUNK_SIZE
		// (32768), so its buffers stop growing there.
		forward += h.MoEActivationBytes * min(tokens, fusedMoEChunk) * float64(m.ExpertsPerToken*m.IntermediateSize) / tp
	} else {
		forward += h.ActivationBytesPerTokenIntermediate * tokens * float64(m.IntermediateSize) / tp
	}
	entries := float64(s.MaxNumSeqs) * float64(m.VocabSize)
	if s.Version.V1Engine() {
		peak := max(forward, h.SamplerBytesPerSeqVocab*entries)
		nonTorch := h.NonTorchGiB + tensorParallelNonTorchGiB(s)
		return int64(peak), int64(nonTorch * gib)
	}
	// The driver rank samples, and the engine sizes every rank's cache by the smallest.
	peak := max(forward, v0SamplerBytesPerSeqVocab*entries)
	if !s.Version.AtLeast("0.6.4") {
		peak *= v0ReservedFactor
	}
	return int64(peak), int64(math.Round(v0NonTorchGiB * gib))
}

// defaultBatch applies the scheduler's defaults of release v: V1 takes them from the GPU
// (get_batch_defaults); V0 schedules 256 sequences and, without chunked prefill, a budget
// of max(max_model_len, 2048) tokens. V0's engine arguments turned chunked prefill on by itself
// for contexts over 32K from 0.5.4 (for the server and the LLM class alike), with a budget of 512 tokens until 0.6 and 2048 after.
func defaultBatch(cfg *Config, m Model, g GPU, v Version) {
	if v.V1Engine() {
		if cfg.MaxNumBatchedTokens == 0 {
			cfg.MaxNumBatchedTokens = g.DefaultMaxNumBatchedTokens
			if cfg.EntryPoint == EntryLLM {
				cfg.MaxNumBatchedTokens = llmClassBatchedTokens(g.DefaultMaxNumBatchedTokens)
			}
			if cfg.ChunkedPrefill == Off && cfg.MaxNumBatchedTokens < cfg.MaxModelLen {
				cfg.MaxNumBatchedTokens = cfg.MaxModelLen
			}
		}
		if cfg.MaxNumSeqs == 0 {
			// vLLM's default batch size, capped at the token budget (get_batch_defaults).
			cfg.MaxNumSeqs = min(g.DefaultMaxNumSeqs, cfg.MaxNumBatchedTokens)
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
