package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

const gib = 1 << 30

// Capacity is the memory plan of one GPU (one tensor-parallel rank), as vLLM V1 computes it
// (docs/vllm-behaviour.md#kv-cache-memory, docs/hybrid-kv.md). Byte counts are per GPU.
type Capacity struct {
	TotalBytes      int64 // device memory as torch reports it
	FreeBytes       int64 // total minus what other processes hold
	RequestedBytes  int64 // ceil(total x gpu_memory_utilization)
	WeightsBytes    int64
	ActivationBytes int64 // transient peak of the profiling run
	NonTorchBytes   int64
	CUDAGraphBytes  int64
	// AvailableKVBytes = requested - weights - activation - non-torch - CUDA graphs, or
	// --kv-cache-memory-bytes (KVPinned).
	AvailableKVBytes int64
	KVPinned         bool
	// AutoFitFrom is the context length --max-model-len auto reduced to fit the KV cache (0: none).
	AutoFitFrom int
	// Layout is how the KV cache is grouped and paged.
	Layout KVLayout
	// BytesPerToken is the K and V of every full-attention layer for one token on this GPU:
	// what grows with the context (all layers of a dense model).
	BytesPerToken int64
	// SlidingBytesPerToken is the same for the sliding-window layers, which keep only their
	// window; StateBytesPerSeq is the Gated-DeltaNet state of all linear-attention layers,
	// a fixed size per request.
	SlidingBytesPerToken int64
	StateBytesPerSeq     int64
	BlockBytes           int64 // one block of the pool (Layout.BlockBytes)
	NumGPUBlocks         int   // floor(AvailableKVBytes / BlockBytes)
	// BlocksPerRequest is what one max_model_len request needs in all groups.
	BlocksPerRequest int
	// MaxConcurrency = NumGPUBlocks / BlocksPerRequest, logged as "Maximum concurrency ... X.XXx".
	MaxConcurrency float64
	// KVCacheTokens is the "GPU KV cache size: N tokens" figure: int(MaxConcurrency x
	// max_model_len) from 0.21 on, num_blocks // groups x block size before.
	KVCacheTokens int
	// Stages is every pipeline stage's plan with --pipeline-parallel-size above 1 (nil
	// without); the figures above are then those of the stage with the fewest blocks.
	Stages []Stage
	// ExpertsNote says how a mixture-of-experts model's routed experts are spread when they span
	// more ranks than one engine's TP group, or are dealt out whole ("" otherwise).
	ExpertsNote string
	// Unprofiled: vLLM stopped before its profile run (WithoutProfile), so nothing past the
	// weights was measured.
	Unprofiled bool
}

// WithoutProfile is c as vLLM had it when it stopped before its profile run: no activation
// peak, CUDA graphs, KV cache or blocks, on any pipeline stage.
func (c Capacity) WithoutProfile() Capacity {
	c.ActivationBytes, c.CUDAGraphBytes, c.AvailableKVBytes, c.NumGPUBlocks, c.KVCacheTokens = 0, 0, 0, 0, 0
	c.Unprofiled = true
	c.Stages = slices.Clone(c.Stages)
	for i := range c.Stages {
		st := &c.Stages[i]
		st.ActivationBytes, st.CUDAGraphBytes, st.AvailableKVBytes, st.NumGPUBlocks = 0, 0, 0, 0
	}
	return c
}

// StartupKind says which of vLLM's startup failures a StartupError is.
type StartupKind int

const (
	FreeMemoryTooLow        StartupKind = iota // other processes hold too much of the GPU
	LoadOOM                                    // the weights do not fit at all
	NoKVMemory                                 // nothing left for the KV cache
	MaxModelLenTooLarge                        // one max_model_len request does not fit in the KV cache
	KVCacheOOM                                 // a --kv-cache-memory-bytes cache does not fit on the GPU
	DTypeUnsupported                           // the card cannot compute in the model's dtype
	KVDTypeRefused                             // the weights' quantization refuses the KV cache dtype
	KVDTypeUnsupported                         // the card cannot store the KV cache dtype
	AttentionBackendInvalid                    // --attention-backend cannot serve the model on the card
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
	case KVCacheOOM:
		return "the KV cache does not fit on the GPU"
	case DTypeUnsupported:
		return "dtype not supported by the GPU"
	case KVDTypeRefused:
		return "KV cache dtype refused by the quantization"
	case KVDTypeUnsupported:
		return "KV cache dtype not supported by the GPU"
	case AttentionBackendInvalid:
		return "attention backend not valid for the model and GPU"
	}
	return "unknown"
}

// BeforeProfile reports whether vLLM stops at this failure before its profile run, while it
// builds or loads the model: no activation peak, CUDA graphs or KV cache were measured.
func (k StartupKind) BeforeProfile() bool {
	switch k {
	case FreeMemoryTooLow, LoadOOM, DTypeUnsupported, KVDTypeRefused, KVDTypeUnsupported, AttentionBackendInvalid:
		return true
	}
	return false
}

// StartupError is a failure the real engine would hit while starting, with vLLM's message.
type StartupError struct {
	Kind      StartupKind
	Exception string // the Python exception type vLLM raises, e.g. "ValueError"
	Message   string // vLLM's message, verbatim in form
	// LoggedError is what vLLM logs at ERROR before it raises, where it wraps the exception in
	// advice ("Failed to load model - not enough GPU memory. ..."); "" where it does not.
	LoggedError string
	// EstimatedMaxModelLen is set for MaxModelLenTooLarge.
	EstimatedMaxModelLen int
	Capacity             Capacity // what was computed before the failure
	// Setup is the resolved server that failed (its Capacity holds what was computed), for the
	// start-up lines vLLM prints before it fails. Nil where the failure came before a setup.
	Setup *Setup
}

// Error is the failure in a line: vLLM's advice where it logs one, else the exception.
func (e *StartupError) Error() string {
	if e.LoggedError != "" {
		return e.LoggedError
	}
	return e.Exception + ": " + e.Message
}

// computeCapacity sizes weights, activation peak and KV cache for s, or returns the
// *StartupError vLLM would raise.
func computeCapacity(s *Setup) (Capacity, error) {
	g, h := s.GPUProfile, s.HostProfile
	var c Capacity
	c.TotalBytes = int64(math.Round(g.MemoryGiB * gib))
	c.FreeBytes = c.TotalBytes - int64(math.Round(s.GPUUsedGiB*gib))
	c.RequestedBytes = int64(math.Ceil(float64(c.TotalBytes) * s.GPUMemoryUtilization))
	if c.FreeBytes < c.RequestedBytes {
		return c, &StartupError{Kind: FreeMemoryTooLow, Exception: "ValueError", Capacity: c, Message: fmt.Sprintf(
			"Free memory on device cuda:0 (%s/%s GiB) on startup is less than desired GPU memory utilization (%s, %s GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
			FormatGiB(c.FreeBytes), FormatGiB(c.TotalBytes), PyFloat(s.GPUMemoryUtilization), FormatGiB(c.RequestedBytes))}
	}

	c.WeightsBytes = gpuWeightBytes(s)
	c.ExpertsNote = expertsNote(s)
	c.ActivationBytes, c.NonTorchBytes = profileMemory(s)
	if err := attentionLayerError(s); err != nil {
		err.Capacity = c
		return c, err
	}
	if c.WeightsBytes > c.FreeBytes-c.NonTorchBytes {
		if err := loadOOMError(s, c, c.NonTorchBytes); err != nil {
			return c, err
		}
	}
	c.CUDAGraphBytes = int64(h.CUDAGraphGiB * gib)
	if s.CUDAGraphProfiled() {
		c.CUDAGraphBytes += CUDAGraphEstimateBytes(s)
	}
	c.AvailableKVBytes = c.RequestedBytes - c.WeightsBytes - c.ActivationBytes - c.NonTorchBytes - c.CUDAGraphBytes

	l, err := kvLayout(s)
	if err != nil {
		return c, err
	}
	c.Layout = l
	c.BytesPerToken = l.AttentionBytesPerToken * int64(l.FullLayers)
	c.SlidingBytesPerToken = l.SlidingBytesPerToken * int64(l.SlidingLayers)
	c.StateBytesPerSeq = l.MambaStateBytes * int64(l.MambaLayers)
	c.BlockBytes = l.BlockBytes()
	c.BlocksPerRequest = l.BlocksPerRequest(s.MaxModelLen)

	if b := s.KVCacheMemoryBytes; b > 0 {
		// Worker.determine_available_memory returns the given bytes after the profile run,
		// whose figures it no longer subtracts from anything; the allocation must still fit.
		c.AvailableKVBytes, c.KVPinned = b, true
		if err := pinnedKVError(c, l, s.Version); err != nil {
			return c, err
		}
	}
	if o := s.NumGPUBlocksOverride; o > 0 {
		// vLLM logs "Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d" and sizes
		// the cache from the override alone; the model runner then allocates it, and a cache
		// larger than the card fails there as --kv-cache-memory-bytes does.
		c.AvailableKVBytes = overrideBytes(o, c.BlockBytes)
		if err := pinnedKVError(c, l, s.Version); err != nil {
			return c, err
		}
	}
	if s.AutoFitMaxModelLen {
		if err := autoFitMaxModelLen(s, &c, l); err != nil {
			return c, err
		}
	}
	c.NumGPUBlocks, c.MaxConcurrency, c.KVCacheTokens = KVCapacity(l, c.AvailableKVBytes, s.MaxModelLen, s.Version)
	if !s.Version.V1Engine() {
		if err := v0StartupError(c, l.BlockSize, s.MaxModelLen); err != nil {
			return c, err
		}
		return c, nil
	}
	maxLen := s.MaxModelLen
	if s.stage != nil && s.stage.unifiedCheck {
		maxLen = 1 // the length is checked once every stage is planned (unifiedKVError)
	}
	if err := v1StartupError(c, l, maxLen); err != nil {
		return c, err
	}
	return c, nil
}

// overrideBytes is the cache --num-gpu-blocks-override asks for, held below what an int64
// can count: a block count no card could hold fails at allocation all the same.
func overrideBytes(blocks int, blockBytes int64) int64 {
	if blockBytes > 0 && int64(blocks) > math.MaxInt64/4/blockBytes {
		return math.MaxInt64 / 4
	}
	return int64(blocks) * blockBytes
}

// pinnedKVError is the CUDA out-of-memory error of allocating a --kv-cache-memory-bytes cache
// that does not fit beside the weights, the non-torch memory and the profile run's activations
// on the GPU's free memory: the model runner allocates the cache a layer's tensor at a time
// and fails on the first that no longer fits. Nil when it fits.
func pinnedKVError(c Capacity, l KVLayout, v Version) *StartupError {
	room := c.FreeBytes - c.WeightsBytes - c.NonTorchBytes - c.ActivationBytes
	if c.AvailableKVBytes <= room {
		return nil
	}
	tensor := c.AvailableKVBytes / int64(max(1, l.FullLayers+l.SlidingLayers+l.MambaLayers))
	free := room
	if tensor > 0 && room > 0 {
		free = room % tensor
	}
	free = max(free, 0)
	inUse := c.TotalBytes - free - (c.TotalBytes - c.FreeBytes)
	return &StartupError{Kind: KVCacheOOM, Exception: "torch.OutOfMemoryError", Capacity: c,
		Message: torchOOMMessage(v, tensor, c.TotalBytes, free, inUse, max(0, inUse-c.NonTorchBytes), 0)}
}

// torchSize is a byte count as PyTorch's out-of-memory message prints it (format_size in
// c10/cuda/CUDACachingAllocator.cpp): bytes, KiB, MiB or GiB with two decimals.
func torchSize(b int64) string {
	switch x := float64(b); {
	case b <= 1<<10:
		return fmt.Sprintf("%d bytes", b)
	case b <= 1<<20:
		return fmt.Sprintf("%.2f KiB", x/(1<<10))
	case b <= 1<<30:
		return fmt.Sprintf("%.2f MiB", x/(1<<20))
	default:
		return fmt.Sprintf("%.2f GiB", x/(1<<30))
	}
}

// autoFitMaxModelLen is --max-model-len auto (_auto_fit_max_model_len in
// vllm/v1/core/kv_cache_utils.py, vllm#29431): the model's context when one request of it fits
// the KV cache, else the longest that does, by the estimate the refusal quotes.
func autoFitMaxModelLen(s *Setup, c *Capacity, l KVLayout) error {
	full := s.MaxModelLen
	if l.neededBytes(full) <= c.AvailableKVBytes {
		return nil
	}
	est := 0
	if c.AvailableKVBytes > 0 {
		est = l.estimateMaxModelLen(c.AvailableKVBytes, full)
	}
	if est <= 0 {
		return &StartupError{Kind: NoKVMemory, Exception: "ValueError", Capacity: *c, Message: "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. Try increasing `gpu_memory_utilization`."}
	}
	s.MaxModelLen, c.AutoFitFrom = est, full
	c.BlocksPerRequest = l.BlocksPerRequest(est)
	return nil
}

// v1StartupError is the V1 engine's check of the KV cache (check_enough_kv_cache_memory): no
// memory at all, or less than one max_model_len request needs. Nil when it fits.
func v1StartupError(c Capacity, l KVLayout, maxModelLen int) *StartupError {
	if c.AvailableKVBytes <= 0 {
		return &StartupError{Kind: NoKVMemory, Exception: "ValueError", Capacity: c, Message: "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."}
	}
	if needed := l.neededBytes(maxModelLen); needed > c.AvailableKVBytes {
		est := l.estimateMaxModelLen(c.AvailableKVBytes, maxModelLen)
		return &StartupError{Kind: MaxModelLenTooLarge, Exception: "ValueError", Capacity: c, EstimatedMaxModelLen: est, Message: fmt.Sprintf(
			"To serve at least one request with the model's max seq len (%d), (%s GiB KV cache is needed, which is larger than the available KV cache memory (%s GiB). Based on the available memory, the estimated maximum model length is %d. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
			maxModelLen, FormatGiB(needed), FormatGiB(c.AvailableKVBytes), est)}
	}
	return nil
}

// V2ModelRunner reports whether vLLM runs the model with its V2 model runner: the default for
// dense models from about 0.25 (PR #44443, 2026-07-02) and for MoE and hybrid models too from
// 0.29 (PR #53183). Before, those and every model of older releases use the V1 runner
// (docs/vllm-behaviour.md#kv-cache-memory). VLLM_USE_V2_MODEL_RUNNER chooses either runner from
// 0.25, the first release whose V2 runner the memory plan models.
func (s *Setup) V2ModelRunner() bool {
	if s.V2ModelRunnerEnv != Default && s.Version.AtLeast(v2RunnerModelled) {
		return s.V2ModelRunnerEnv == On
	}
	if s.Version.AtLeast("0.29.0") {
		return true
	}
	m := s.ModelProfile
	return !m.IsMoE() && !m.IsHybrid() && s.Version.AtLeast("0.25.0")
}

// v2RunnerModelled is the first release whose V2 model runner the memory plan models; the
// runner existed from 0.12 as an experiment (PR #25266) that only the variable turned on.
const v2RunnerModelled = "0.25.0"

// CUDAGraphProfiled reports whether the CUDA-graph memory estimate comes out of the KV budget:
// from 0.21 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1) for the V1 model runner,
// unless --enforce-eager turns graphs off or --kv-cache-memory-bytes skips the profiling,
// and for the V2 runner once it measures its graphs (0.29); the V2 runner of 0.25 to 0.28
// estimates 0 and captures its graphs out of the memory above the budget.
func (s *Setup) CUDAGraphProfiled() bool {
	if s.EnforceEager || !s.Version.AtLeast("0.21.0") || s.KVCacheMemoryBytes > 0 {
		return false
	}
	return !s.V2ModelRunner() || s.Version.AtLeast("0.29.0")
}

// GraphsOutsideBudget reports whether the captured CUDA graphs come out of the memory above
// total x utilisation: with CUDA graphs on (no --enforce-eager), whenever the profiling did
// not reserve their memory.
func (s *Setup) GraphsOutsideBudget() bool {
	return !s.EnforceEager && !s.CUDAGraphProfiled()
}

// CUDAGraphEstimateBytes is the memory of the captured CUDA graphs on one GPU. For the V1 model
// runner from 0.11, which captures full graphs for decode batches beside the piecewise ones, it
// is 0.077 GiB plus 21 MiB a decoder layer on the GPU plus 0.164 GiB / TP: piecewise graphs are
// one a layer for each of some fifty batch sizes, and the buffers shared by the largest batch
// split with the tensor parallelism (docs/calibration.md#cuda-graph-memory, fitted on the eleven
// 0.19 fit logs of attention models). Elsewhere (before 0.11, hybrids, the V2 runner), about
// 0.3 GiB plus 4 MiB a layer.
func CUDAGraphEstimateBytes(s *Setup) int64 {
	layers := float64(s.ModelProfile.NumLayers)
	if pp := s.PipelineParallelSize; s.stage == nil && pp > 1 {
		layers = math.Ceil(layers / float64(pp)) // a stage's GPU captures its own layers
	}
	if !s.Version.AtLeast("0.11.0") || s.V2ModelRunner() || s.ModelProfile.IsHybrid() {
		return int64((0.3 + 0.004*layers) * gib)
	}
	return int64((0.077 + 0.0205*layers + 0.164/float64(max(1, s.TensorParallelSize))) * gib)
}

// KVCapacity is vLLM's arithmetic from available KV bytes to the logged figures for a
// layout: the number of blocks, the maximum concurrency for max_model_len-token requests,
// and the "GPU KV cache size" in tokens, whose formula changed in 0.21 (docs/hybrid-kv.md#tokens-line-by-version).
func KVCapacity(l KVLayout, availableBytes int64, maxModelLen int, v Version) (numBlocks int, maxConcurrency float64, tokens int) {
	numBlocks = l.NumBlocks(availableBytes)
	maxConcurrency = float64(numBlocks) / float64(l.BlocksPerRequest(maxModelLen))
	if v.AtLeast("0.21.0") {
		tokens = int(maxConcurrency * float64(maxModelLen))
	} else {
		tokens = numBlocks / l.NumGroups() * l.MinBlockSize()
	}
	return numBlocks, maxConcurrency, tokens
}

// KVCacheSize is vLLM's arithmetic from available KV bytes to the logged figures: the number
// of blocks, the maximum concurrency for max_model_len-token requests, and the KV cache size
// in tokens (docs/vllm-behaviour.md#blocks-tokens-and-concurrency).
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
	q := s.weightQuantization()
	if q == "" && m.LoadedWeightsGiB > 0 && db == cb {
		return m.LoadedWeightsGiB * gib
	}
	embed := m.EmbeddingParams()
	if !m.TieWordEmbeddings {
		embed *= 2
	}
	linear := linearWeightBytes(q, db)
	if m.IsMoE() {
		experts := float64(m.NumExperts) * m.ExpertParams()
		return (m.LayerParams()-experts)*linear + routedExpertBytes(s) + embed*db + m.EncoderParams*db
	}
	return m.LayerParams()*linear + embed*db + m.EncoderParams*db
}

// routedExpertBytes is what the routed experts of a MoE model take across the
// tensor-parallel ranks, as weightBytes counts them; 0 for a dense model or where the model's
// logged weights stand for the whole.
func routedExpertBytes(s *Setup) float64 {
	m := s.ModelProfile
	q := s.weightQuantization()
	db, _ := dtypeBytes(s.ModelDType)
	cb, _ := dtypeBytes(m.DType)
	switch {
	case !m.IsMoE(), q == "" && m.LoadedWeightsGiB > 0 && db == cb:
		return 0
	case m.ExpertBytesPerParam > 0 && q == "":
		return float64(s.TensorParallelSize) * mxfp4ExpertBytesPerRank(m, s.TensorParallelSize)
	}
	return float64(m.NumExperts) * m.ExpertParams() * expertBytes(m, q, db)
}

// ropeCacheBytes is the rotary embedding's cos/sin tables, which vLLM builds on every rank
// when the model is created, so they count in the weights' memory: one row of rotary_dim
// values for each position up to the derived context (max_position_embeddings, times the
// scaling factor where the scaling stretches it), in the model dtype, one table shared by the
// layers of one RoPE setting (get_rope caches it). Tens of MiB for most models; 0.56 GiB for
// Gemma 3 4B's two tables and 2.5 GiB for Llama 4 Scout's 10M positions
// (docs/calibration.md#rotary-embedding-tables). A logged weight size already holds them.
func ropeCacheBytes(s *Setup) float64 {
	m := s.ModelProfile
	if m.LoadedWeightsGiB > 0 && s.weightQuantization() == "" {
		return 0
	}
	db, _ := dtypeBytes(s.ModelDType)
	var values float64
	for _, t := range m.ropeTables() {
		values += float64(t.Positions) * float64(t.RotaryDim)
	}
	return values * db
}

// weightQuantization is the storage of the linear weights: the --quantization flag, else the
// checkpoint's own method, gptqInt8 for a GPTQ checkpoint of 8 bits; "" where the profile's
// sizes already describe it (a logged weight size, or expert storage such as gpt-oss's MXFP4).
func (s *Setup) weightQuantization() string {
	m := s.ModelProfile
	q, ckpt := strings.ToLower(s.Quantization), strings.ToLower(m.Quantization)
	if q == "" || q == strings.ToLower(m.CheckpointFormat) {
		q = ckpt // the checkpoint's own format, sized by its method
	}
	if q == ckpt && (m.ExpertBytesPerParam > 0 || m.LoadedWeightsGiB > 0) {
		return ""
	}
	// The flag's family agrees with the checkpoint's (resolveQuantization checks it); a what-if
	// of another method stores that method's bits.
	if ckpt == "gptq" && m.QuantizationBits == 8 && (s.CheckpointQuantization == "" || strings.EqualFold(s.CheckpointQuantization, "gptq")) {
		return gptqInt8
	}
	return storageMethod(q)
}

// gptqInt8 is the storage of an 8-bit GPTQ checkpoint.
const gptqInt8 = "gptq-int8"

// mxfp4ExpertBytesPerRank is what vLLM's MXFP4 MoE method allocates for the experts on one
// rank: per layer and expert, a gate/up weight of 2 x I x h values and a down weight of h x I,
// four bits each, an 8-bit scale for every 32 values and a bf16 bias for every output row, with
// I the expert intermediate size a rank holds rounded up to 128 and h the hidden size rounded up
// to 256, the padding its Marlin kernel asks for (Mxfp4MoEMethod.create_weights). The padding
// is per rank: gpt-oss-120b's 2,880 becomes 2,944 at TP 1 and 768 of 720 at TP 4
// (docs/calibration.md#model-profiles).
func mxfp4ExpertBytesPerRank(m Model, tp int) float64 {
	inter := float64(ceilDiv(ceilDiv(m.IntermediateSize, tp), 128) * 128)
	hidden := float64(ceilDiv(m.HiddenSize, 256) * 256)
	perExpert := inter*hidden*(1+1.0/16) + hidden*inter*(0.5+1.0/32) + 2*inter*2 + hidden*2
	return float64(m.NumLayers) * float64(m.NumExperts) * perExpert
}

// expertBytes is the storage of one expert parameter: the checkpoint's (MXFP4 for gpt-oss)
// unless a quantization flag overrides it.
func expertBytes(m Model, quantization string, modelBytes float64) float64 {
	switch {
	case m.ExpertBytesPerParam > 0 && quantization == "":
		return m.ExpertBytesPerParam
	case quantization == int8ExpertsOnly:
		return 1
	}
	return linearWeightBytes(quantization, modelBytes)
}

// linearWeightBytes is the bytes per parameter of the transformer's linear layers: 4-bit
// AWQ/GPTQ keep a scale and zero point per group of 128 (8-bit GPTQ the same beside a byte a
// weight), FP8 is one byte. Embeddings and the
// LM head stay in the model dtype, as in vLLM.
func linearWeightBytes(quantization string, modelBytes float64) float64 {
	switch quantization {
	case "awq", "gptq", "awq_marlin", "gptq_marlin", "auto_awq", "auto_gptq":
		return 0.5 + 4.0/128
	case gptqInt8:
		// One byte a weight, with the 4-bit builds' allowance for each group of 128.
		return 1 + 4.0/128
	case "fp8", "w8a8", "int8":
		return 1
	case "nvfp4":
		return 0.5 + 1.0/16 // FP4 with an FP8 scale per 16
	case "bitsandbytes":
		// NF4 with an 8-bit absmax per 64 and an FP32 scale per 256 of those (double quantization).
		return 0.5 + 1.0/64 + 4.0/(64*256)
	case "mxfp4":
		return 0.53125
	case "mxfp8":
		return 1 + 1.0/32 // FP8 with an 8-bit scale per 32
	}
	return modelBytes
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
