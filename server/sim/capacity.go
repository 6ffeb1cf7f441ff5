package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

const gib = 1 << 30

// Capacity is the memory plan of one GPU (one tensor-parallel rank), as vLLM V1 computes it
// (vllm.md 3.1-3.4). Byte counts are per GPU.
type Capacity struct {
	TotalBytes      int64 // device memory as torch reports it
	FreeBytes       int64 // total minus what other processes hold
	RequestedBytes  int64 // ceil(total x gpu_memory_utilization)
	WeightsBytes    int64
	ActivationBytes int64 // transient peak of the profiling run
	NonTorchBytes   int64
	CUDAGraphBytes  int64
	// AvailableKVBytes = requested - weights - activation - non-torch - CUDA graphs.
	AvailableKVBytes int64
	BytesPerToken    int64 // K and V of every layer for one token on this GPU
	BlockBytes       int64 // BytesPerToken x block size
	NumGPUBlocks     int   // floor(AvailableKVBytes / BlockBytes)
	// BlocksPerRequest is what one max_model_len request needs: ceil(max_model_len / block size).
	BlocksPerRequest int
	// MaxConcurrency = NumGPUBlocks / BlocksPerRequest, logged as "Maximum concurrency ... X.XXx".
	MaxConcurrency float64
	// KVCacheTokens = int(MaxConcurrency x max_model_len), logged as "GPU KV cache size: N tokens".
	KVCacheTokens int
}

// StartupKind says which of vLLM's startup failures a StartupError is.
type StartupKind int

const (
	FreeMemoryTooLow    StartupKind = iota // other processes hold too much of the GPU
	LoadOOM                                // the weights do not fit at all
	NoKVMemory                             // nothing left for the KV cache
	MaxModelLenTooLarge                    // one max_model_len request does not fit in the KV cache
)

func (k StartupKind) String() string {
	switch k {
	case FreeMemoryTooLow:
		return "free memory below requested"
	case LoadOOM:
		return "weights do not fit"
	case NoKVMemory:
		return "no memory for the KV cache"
	case MaxModelLenTooLarge:
		return "max_model_len does not fit in the KV cache"
	}
	return "unknown"
}

// StartupError is a failure the real engine would hit while starting, with vLLM's message.
type StartupError struct {
	Kind      StartupKind
	Exception string // the Python exception type vLLM raises, e.g. "ValueError"
	Message   string // vLLM's message, verbatim in form
	// EstimatedMaxModelLen is set for MaxModelLenTooLarge.
	EstimatedMaxModelLen int
	Capacity             Capacity // what was computed before the failure
}

func (e *StartupError) Error() string { return e.Exception + ": " + e.Message }

// computeCapacity sizes weights, activation peak and KV cache for s, or returns the
// *StartupError vLLM would raise.
func computeCapacity(s *Setup) (Capacity, error) {
	m, g, h := s.ModelProfile, s.GPUProfile, s.HostProfile
	tp := float64(s.TensorParallelSize)
	var c Capacity
	c.TotalBytes = int64(math.Round(g.MemoryGiB * gib))
	c.FreeBytes = c.TotalBytes - int64(math.Round(s.GPUUsedGiB*gib))
	c.RequestedBytes = int64(math.Ceil(float64(c.TotalBytes) * s.GPUMemoryUtilization))
	if c.FreeBytes < c.RequestedBytes {
		return c, &StartupError{Kind: FreeMemoryTooLow, Exception: "ValueError", Capacity: c, Message: fmt.Sprintf(
			"Free memory on device cuda:0 (%s/%s GiB) on startup is less than desired GPU memory utilization (%s, %s GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
			FormatGiB(c.FreeBytes), FormatGiB(c.TotalBytes), PyFloat(s.GPUMemoryUtilization), FormatGiB(c.RequestedBytes))}
	}

	c.WeightsBytes = int64(weightBytes(s) / tp)
	if c.WeightsBytes > c.FreeBytes {
		return c, &StartupError{Kind: LoadOOM, Exception: "torch.OutOfMemoryError", Capacity: c, Message: fmt.Sprintf(
			"Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. (original error: CUDA out of memory. Tried to allocate %s GiB. GPU 0 has a total capacity of %.2f GiB of which %.2f GiB is free.)",
			FormatGiB(c.WeightsBytes-c.FreeBytes+512<<20), float64(c.TotalBytes)/gib, float64(c.FreeBytes)/gib)}
	}

	forward := h.ActivationBytesPerTokenHidden * float64(s.MaxNumBatchedTokens) * float64(m.HiddenSize)
	sampler := h.SamplerBytesPerSeqVocab * float64(s.MaxNumSeqs) * float64(m.VocabSize)
	c.ActivationBytes = int64(max(forward, sampler))
	c.NonTorchBytes = int64(h.NonTorchGiB * gib)
	c.CUDAGraphBytes = int64(h.CUDAGraphGiB * gib)
	c.AvailableKVBytes = c.RequestedBytes - c.WeightsBytes - c.ActivationBytes - c.NonTorchBytes - c.CUDAGraphBytes

	kvBytes, _ := dtypeBytes(s.KVDType)
	kvHeads := max(1, m.NumKeyValueHeads/s.TensorParallelSize)
	c.BytesPerToken = int64(2 * float64(m.NumLayers*kvHeads*m.HeadDim) * kvBytes)
	c.BlockBytes = c.BytesPerToken * int64(s.BlockSize)
	c.BlocksPerRequest = ceilDiv(s.MaxModelLen, s.BlockSize)

	if o := s.NumGPUBlocksOverride; o > 0 {
		// vLLM logs "Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d" and sizes
		// the cache from the override alone.
		c.AvailableKVBytes = int64(o) * c.BlockBytes
	}
	if c.AvailableKVBytes <= 0 {
		return c, &StartupError{Kind: NoKVMemory, Exception: "ValueError", Capacity: c, Message: "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."}
	}
	needed := int64(c.BlocksPerRequest) * c.BlockBytes
	if needed > c.AvailableKVBytes {
		est := int(c.AvailableKVBytes/c.BlockBytes) * s.BlockSize
		return c, &StartupError{Kind: MaxModelLenTooLarge, Exception: "ValueError", Capacity: c, EstimatedMaxModelLen: est, Message: fmt.Sprintf(
			"To serve at least one request with the model's max seq len (%d), (%s GiB KV cache is needed, which is larger than the available KV cache memory (%s GiB). Based on the available memory, the estimated maximum model length is %d. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
			s.MaxModelLen, FormatGiB(needed), FormatGiB(c.AvailableKVBytes), est)}
	}
	c.NumGPUBlocks, c.MaxConcurrency, c.KVCacheTokens = KVCacheSize(c.AvailableKVBytes, c.BytesPerToken, s.BlockSize, s.MaxModelLen)
	return c, nil
}

// KVCacheSize is vLLM's arithmetic from available KV bytes to the logged figures: the number
// of blocks, the maximum concurrency for max_model_len-token requests, and the KV cache size
// in tokens (vllm.md 3.4).
func KVCacheSize(availableBytes, bytesPerToken int64, blockSize, maxModelLen int) (numBlocks int, maxConcurrency float64, tokens int) {
	numBlocks = int(availableBytes / (bytesPerToken * int64(blockSize)))
	maxConcurrency = float64(numBlocks) / float64(ceilDiv(maxModelLen, blockSize))
	tokens = int(maxConcurrency * float64(maxModelLen))
	return numBlocks, maxConcurrency, tokens
}

// weightBytes is the size of all weights across tensor-parallel ranks.
func weightBytes(s *Setup) float64 {
	m := s.ModelProfile
	db, _ := dtypeBytes(s.ModelDType)
	cb, _ := dtypeBytes(m.DType)
	q := strings.ToLower(s.Quantization)
	if q == "" && m.LoadedWeightsGiB > 0 && db == cb {
		return m.LoadedWeightsGiB * gib
	}
	embed := m.EmbeddingParams()
	if !m.TieWordEmbeddings {
		embed *= 2
	}
	return m.LayerParams()*linearWeightBytes(q, db) + embed*db
}

// linearWeightBytes is the bytes per parameter of the transformer's linear layers: 4-bit
// AWQ/GPTQ keep a scale and zero point per group of 128, FP8 is one byte. Embeddings and the
// LM head stay in the model dtype, as in vLLM.
func linearWeightBytes(quantization string, modelBytes float64) float64 {
	switch quantization {
	case "awq", "gptq", "awq_marlin", "gptq_marlin", "auto_awq", "auto_gptq":
		return 0.5 + 4.0/128
	case "fp8":
		return 1
	}
	return modelBytes
}

// readBytesPerStep is what one forward pass streams from memory on one GPU: the transformer
// weights and the LM head (the embedding is a gather).
func readBytesPerStep(s *Setup) float64 {
	m := s.ModelProfile
	db, _ := dtypeBytes(s.ModelDType)
	w := m.LayerParams()*linearWeightBytes(strings.ToLower(s.Quantization), db) + m.EmbeddingParams()*db
	return w / float64(s.TensorParallelSize)
}

// FormatGiB renders bytes as vLLM's format_gib does: str(round(b / 2**30, 2)), so 5.0 stays "5.0".
func FormatGiB(b int64) string {
	return PyFloat(math.Round(float64(b)/gib*100) / 100)
}

// PyFloat renders f as Python's str(float) does: the shortest digits that round-trip, ".0" on
// integral values, and exponent form below 1e-4 or from 1e16 up. vLLM prints its numbers (in
// logs and metric labels) this way.
func PyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		// Go's shortest exponent form ("1e-05", "1.5e+16") is Python's.
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// fmtFloat2 renders like Python's "%.2f".
func fmtFloat2(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
