package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// The V1 engine's profiling pass ends with a dummy sampler run over one row per
// max_num_seqs, on every rank and with the full vocabulary (the logits are all-gathered),
// with temperature 0.5, top_p 0.9, top_k vocab-1, no penalties and no logprobs. Its peak
// is the model-dtype logits the run holds, their float32 copy, and what the release's
// default top-k/top-p implementation allocates on CUDA
// (docs/calibration.md#the-v1-dummy-sampler-run).

// samplerPath is the top-k/top-p implementation a release takes by default on CUDA.
type samplerPath int

const (
	// samplerFlashInferProbs is FlashInfer before its 0.2.3 API (0.8.0 to 0.9.0): softmax
	// into float32 probabilities, then FlashInfer samples from them.
	samplerFlashInferProbs samplerPath = iota
	// samplerFlashInferLogits is FlashInfer's top_k_top_p_sampling_from_logits (0.9.1 to
	// 0.11.0, and from 0.20): a float32 top-k-masked copy, then its softmax.
	samplerFlashInferLogits
	// samplerSort is PyTorch's sort-based top-k/top-p (0.11.1 to 0.16, FlashInfer off by
	// default and no Triton kernel yet).
	samplerSort
	// samplerTriton is the Triton top-k/top-p kernel (0.17 to 0.19): masks in place, then
	// softmax and exponential noise for the random draw.
	samplerTriton
)

// Bytes per logits entry (row x vocabulary) held at the sampler's peak.
const (
	// samplerFloat32Bytes is the sampler's float32 copy of the logits.
	samplerFloat32Bytes = 4
	// samplerProbsBytes is one float32 tensor of logits size: probabilities, a masked copy,
	// or the exponential noise.
	samplerProbsBytes = 4
	// samplerSortBytes is torch.sort's float32 values and int64 indices (12 B), the segmented
	// sort's int64 index input (8 B) and cub's double buffers for keys and values (12 B).
	samplerSortBytes = 32
	// samplerFewRowsSortBytes is the same sort under 128 rows, which PyTorch runs as one full
	// sort of (value, int2 index-and-segment) pairs: outputs 12 B, two int2 arrays 16 B, a
	// float32 key output 4 B and cub's double buffers 12 B.
	samplerFewRowsSortBytes = 44
	// tritonSamplerBuffers is the Triton kernel's outlier buffers, about 80 MiB by its code,
	// and 0.05 GiB more that the 0.19 fit logs show on top of the per-entry figures and the
	// profile's held hidden states (the median of five H100 logs, 0.04 to 0.10 GiB over).
	tritonSamplerBuffers = 80<<20 + 0.05*(1<<30)
)

// SamplerEnv is VLLM_USE_FLASHINFER_SAMPLER as vLLM reads it: unset, or an integer that is 0
// or not.
type SamplerEnv int

const (
	SamplerEnvUnset SamplerEnv = iota
	SamplerEnvOff
	SamplerEnvOn
)

// ParseSamplerEnv reads VLLM_USE_FLASHINFER_SAMPLER as vLLM's envs.py does, bool(int(value)),
// with int's error for a value that is not an integer.
func ParseSamplerEnv(value string) (SamplerEnv, error) {
	if value == "" {
		return SamplerEnvUnset, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil {
		return SamplerEnvUnset, fmt.Errorf("VLLM_USE_FLASHINFER_SAMPLER: invalid literal for int() with base 10: %q", value)
	}
	if n == 0 {
		return SamplerEnvOff, nil
	}
	return SamplerEnvOn, nil
}

// v1SamplerPath is the top-k/top-p path of release v on CUDA with FlashInfer installed, as
// vLLM's images have it (and its CUDA wheels, by late 2025), or on an AMD card, given
// VLLM_USE_FLASHINFER_SAMPLER. FlashInfer's sampler is CUDA-only: on ROCm TopKTopPSampler takes
// the PyTorch-native path (aiter's sampler only where VLLM_ROCM_USE_AITER asks for it, off by
// default), which sorts until the native path gained the Triton kernel in 0.17. On CUDA the
// variable turns FlashInfer off where it is the default (an install without FlashInfer does the
// same) and on where it is not.
func v1SamplerPath(v Version, amd bool, env SamplerEnv) samplerPath {
	native := samplerSort
	if v.AtLeast("0.17.0") {
		native = samplerTriton
	}
	if amd {
		return native
	}
	flashInfer := samplerFlashInferLogits
	if !v.AtLeast("0.9.1") {
		flashInfer = samplerFlashInferProbs
	}
	byDefault := v.AtLeast("0.20.0") || !v.AtLeast("0.11.1")
	switch {
	case env == SamplerEnvOff:
		return native
	case env == SamplerEnvOn || byDefault:
		return flashInfer
	}
	return native
}

// v1SamplerPeakBytes is the dummy sampler run's peak on one rank: rows of vocab logits in
// the model's dtype (logitsBytes a value) and what path allocates besides.
func v1SamplerPeakBytes(path samplerPath, rows, vocab int, logitsBytes float64) float64 {
	entries := float64(rows) * float64(vocab)
	// A float32 model's logits are already float32: the sampler's .to() copies nothing.
	held := logitsBytes
	if logitsBytes < samplerFloat32Bytes {
		held += samplerFloat32Bytes
	}
	switch path {
	case samplerFlashInferProbs:
		return entries * (held + samplerProbsBytes)
	case samplerFlashInferLogits:
		return entries * (held + 2*samplerProbsBytes)
	case samplerSort:
		sort := float64(samplerSortBytes)
		if rows > 1 && rows < 128 {
			sort = samplerFewRowsSortBytes
		}
		// One row costs as much as many: 38.27 B an entry measured (PyTorch 2.11, H100;
		// docs/calibration.md#the-v1-dummy-sampler-run).
		// The masks, softmax and cumsum of top-p after the sort stay below the sort's own
		// temporaries, and so does the final softmax and noise.
		return entries * (held + sort)
	default:
		return entries*(held+2*samplerProbsBytes) + tritonSamplerBuffers
	}
}
