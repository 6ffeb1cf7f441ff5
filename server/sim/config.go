package sim

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Toggle is a tri-state flag: unset takes vLLM's default.
type Toggle int

const (
	Default Toggle = iota
	On
	Off
)

// Config is what a user chooses, with vLLM's flag names. Zero values take vLLM's defaults.
type Config struct {
	Model                string  // --model: a Hugging Face name known to the profiles
	GPU                  string  // --sim-gpu
	Host                 string  // --sim-host-profile: "v1" (default), "v1-4vcpu" or "legacy"
	GPUMemoryUtilization float64 // --gpu-memory-utilization (default: DefaultUtilization of the release)
	MaxModelLen          int     // --max-model-len (default: the model's max_position_embeddings)
	// AutoFitMaxModelLen is --max-model-len auto (or -1): the model's context, or the longest one
	// the KV cache holds when that does not fit (from autoFitRelease).
	AutoFitMaxModelLen  bool
	MaxNumSeqs          int // --max-num-seqs (default: by GPU)
	MaxNumBatchedTokens int // --max-num-batched-tokens (default: by GPU)
	// PerformanceMode is --performance-mode (from performanceModeRelease): "" or "balanced",
	// "interactivity" or "throughput", which doubles the default batch limits.
	PerformanceMode string
	BlockSize       int    // --block-size (default 16)
	KVCacheDType    string // --kv-cache-dtype (default "auto": the model dtype)
	// AttentionBackend is --attention-backend ("": vLLM's choice); TRITON_ATTN sends every
	// attention layer to the Triton backend and its KV-cache dtype checks.
	AttentionBackend string
	DType            string // --dtype (default "auto": the checkpoint dtype)
	Quantization     string // --quantization: "", "awq", "gptq", "fp8"
	// CheckpointQuantization is the checkpoint's own quantization method where it is not the
	// catalogue entry's: a quantized build of a catalogue model, sized from its base
	// (--sim-checkpoint-quantization).
	CheckpointQuantization string
	// quantFromCheckpoint is set when Quantization was filled in from CheckpointQuantization,
	// not given as a flag.
	quantFromCheckpoint  bool
	TensorParallelSize   int // --tensor-parallel-size (default 1)
	PipelineParallelSize int // --pipeline-parallel-size (default 1)
	// DataParallelSize is --data-parallel-size (default 1): engines of their own GPUs and KV
	// cache. A mixture-of-experts model's routed experts span every engine's ranks all the
	// same (experts.go), so the size changes what one rank holds.
	DataParallelSize int
	// APIServerCount is --api-server-count: the API server processes in front of the engines
	// (0: the release's default, the data-parallel size from apiServersPerEngineRelease, else
	// one).
	APIServerCount int
	ExpertParallel bool // --enable-expert-parallel: whole experts per rank, not slices of each
	// RedundantExperts is --eplb-config's num_redundant_experts with --enable-eplb: copies of
	// experts spread over the expert-parallel ranks on top of the model's own.
	RedundantExperts int
	EPLB             bool // --enable-eplb: the physical experts must divide evenly over the ranks
	// LanguageModelOnly is --language-model-only: a multimodal model served as text only, its
	// encoders neither loaded nor profiled (from textOnlyRelease).
	LanguageModelOnly bool
	// CPUOffloadGiB is --cpu-offload-gb: decoder layers' weights kept in host memory, per GPU.
	CPUOffloadGiB    float64
	PPLayerPartition string // VLLM_PP_LAYER_PARTITION: layers per stage, "16,32"
	PrefixCaching    Toggle // --enable-prefix-caching (default on)
	ChunkedPrefill   Toggle // --enable-chunked-prefill (default on)
	// AsyncScheduling is --async-scheduling / --no-async-scheduling, taken as vLLM takes them:
	// where on, a step takes the longer of the scheduler's and the GPU's time
	// (docs/calibration.md#async-scheduling).
	AsyncScheduling Toggle
	// V2ModelRunnerEnv mirrors VLLM_USE_V2_MODEL_RUNNER: Default (unset, the release's rule),
	// On (1) or Off (0); see Setup.V2ModelRunner.
	V2ModelRunnerEnv     Toggle
	NumGPUBlocksOverride int // --num-gpu-blocks-override: fix the KV cache size (for preemption experiments)
	// KVCacheMemoryBytes is --kv-cache-memory-bytes: the KV cache of each GPU in bytes, which
	// skips the memory profiling and ignores the utilisation's budget (0: profile).
	KVCacheMemoryBytes int64
	EnforceEager       bool    // --enforce-eager: no CUDA graphs, so none captured or reserved
	GPUUsedGiB         float64 // --sim-gpu-used-gib: memory other processes already hold
	Seed               int64   // --sim-seed: output lengths and text, and step jitter
	Jitter             float64 // relative standard deviation of step times (0 = deterministic)
	// AllowLongMaxModelLen mirrors VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.
	AllowLongMaxModelLen bool
	// FlashInferSampler mirrors VLLM_USE_FLASHINFER_SAMPLER: SamplerEnvUnset (the release's
	// default), SamplerEnvOff (0) or SamplerEnvOn (1).
	FlashInferSampler SamplerEnv
	// FlashInfer is whether the imitated install has FlashInfer (--sim-flashinfer):
	// FlashInferInstalled (default, as vLLM's images have it) or FlashInferAbsent (a pip wheel of
	// 0.10.1 to 0.11.0, say), whose sampler then takes the PyTorch-native path and whose
	// attention layers fall to the Triton backend where FlashInfer would run them.
	FlashInfer string
	// DeepGEMM is whether the imitated install has DeepGEMM (--sim-deepgemm): DeepGEMMInstalled
	// (default) or DeepGEMMAbsent, where block-scaled FP8 falls back to CUTLASS at the 16-bit
	// rate in every release (docs/calibration.md#fp8-gemms).
	DeepGEMM string
	// VLLMVersion is the release to imitate (--sim-vllm-version; default DefaultVersion).
	VLLMVersion string
	// EntryPoint is how the imitated vLLM was started (--sim-entry-point): EntryServe, the
	// OpenAI API server (default), or EntryLLM, the offline LLM class, whose scheduler
	// defaults differ and so does the memory its profiling pass takes.
	EntryPoint string
	// CompileCache is the state of vLLM's torch.compile cache at start-up (--sim-compile-cache):
	// CompileWarm (default), the cache holds this shape's compiled graphs, or CompileCold, the
	// first boot of the shape compiles them inside the memory profile (coldCompilePeak).
	CompileCache string
	// Speculative is --speculative-config (nil: no speculative decoding).
	Speculative *SpeculativeConfig
	// SchedulingPolicy is --scheduling-policy: "fcfs" (default) or PolicyPriority.
	SchedulingPolicy string
	// KVCacheMetricsSample is the fraction of prefix-cache blocks whose residency is recorded
	// (--kv-cache-metrics-sample with --kv-cache-metrics; 0: none).
	KVCacheMetricsSample float64
}

// Defaults vLLM applies (docs/vllm-behaviour.md#defaults-by-version).
const (
	DefaultGPUMemoryUtilization = 0.92 // the newest releases'; DefaultUtilization has each release's
	DefaultBlockSize            = 16
	DefaultModel                = "Qwen/Qwen3-0.6B"
	DefaultGPU                  = "H100-SXM-80GB"
	DefaultHost                 = "v1"
	EntryServe                  = "serve"
	EntryLLM                    = "llm"
	CompileWarm                 = "warm"
	CompileCold                 = "cold"
	FlashInferInstalled         = "installed"
	FlashInferAbsent            = "absent"
	DeepGEMMInstalled           = "installed"
	DeepGEMMAbsent              = "absent"
)

// Setup is a Config resolved against profiles: every default applied, every value checked,
// and the KV-cache capacity computed. It is what the engine and the logs are built from.
type Setup struct {
	Config
	ModelProfile Model
	GPUProfile   GPU
	HostProfile  Host
	// ModelDType and KVDType are resolved names ("bfloat16", "fp8", ...).
	ModelDType string
	KVDType    string
	// DTypeFellBack: the automatic dtype was bfloat16 and the card has none, so vLLM runs in
	// float16 and warns (DTypeFallbackLines).
	DTypeFellBack bool
	// KVDTypeFromCheckpoint: the checkpoint's declared FP8 cache set KVDType, over an automatic
	// --kv-cache-dtype or one vLLM overrode (checkpointKVDType).
	KVDTypeFromCheckpoint bool
	Capacity              Capacity
	// Version is the vLLM release imitated.
	Version Version
	stage   *ppStage // set on one pipeline stage's view (pipeline.go)
}

// NumSpeculativeTokens is the number of draft tokens per step (0 without speculative decoding).
func (s *Setup) NumSpeculativeTokens() int {
	if s.Speculative == nil {
		return 0
	}
	return s.Speculative.NumSpeculativeTokens
}

// PrefixCachingEnabled reports whether prefix caching is on: by default for every model but
// hybrids on the V1 engine (vLLM's arg_utils: default_prefix_caching = not is_hybrid), and
// off by default before it (V0's EngineArgs.enable_prefix_caching = False).
func (s *Setup) PrefixCachingEnabled() bool {
	if s.PrefixCaching == Default {
		return s.Version.V1Engine() && !s.ModelProfile.IsHybrid()
	}
	return s.PrefixCaching == On
}

// ChunkedPrefillEnabled reports whether chunked prefill is on.
func (s *Setup) ChunkedPrefillEnabled() bool { return s.ChunkedPrefill != Off }

// ParseEnvToggle reads an on/off environment variable as vLLM's envs.py reads its integer
// switches, bool(int(value)): unset is Default, 0 Off, any other integer On, anything else
// int()'s error.
func ParseEnvToggle(name, value string) (Toggle, error) {
	if value == "" {
		return Default, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil {
		return Default, fmt.Errorf("%s: invalid literal for int() with base 10: %q", name, value)
	}
	if n == 0 {
		return Off, nil
	}
	return On, nil
}

// ConfigError is an invalid flag value, reported before any "engine" starts.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// Resolve applies defaults to cfg, checks it, and computes the KV-cache capacity. A nil
// profiles uses the built-in ones. Errors are *ConfigError (a bad value) or *StartupError (the
// engine would fail to start, with vLLM's own message).
func Resolve(cfg Config, profiles *Profiles) (_ *Setup, err error) {
	s, err := resolveProfiles(&cfg, profiles)
	if err != nil {
		return nil, err
	}
	defer func() {
		// A refusal of vLLM's config check names the model and card it refused: they may be
		// defaults the user never typed.
		var ve *ValidationError
		if errors.As(err, &ve) && ve.Model == "" {
			ve.Model, ve.GPU = cfg.Model, s.GPUProfile.Name
		}
	}()
	if cfg.LanguageModelOnly {
		dropEncoders(s)
	}
	m, g := s.ModelProfile, s.GPUProfile
	if cfg.GPUMemoryUtilization == 0 {
		cfg.GPUMemoryUtilization = DefaultUtilization(s.Version)
	}
	if err := resolveLayout(&cfg, m); err != nil {
		return nil, err
	}
	if err := resolveQuantization(&cfg, m, s.Version); err != nil {
		return nil, err
	}
	dtypeErr, err := resolveDTypes(s, cfg)
	if err != nil {
		return nil, err
	}
	if err := resolveLimits(&cfg, m, g, s.Version); err != nil {
		return nil, err
	}
	if cfg.Speculative, err = resolveSpeculative(cfg.Speculative, m); err != nil {
		return nil, err
	}

	s.Config = cfg
	if err := quantizationSupportError(s); err != nil {
		return nil, err
	}
	if dtypeErr != nil {
		// The device check comes before any memory is planned; the plan with the dtype given
		// is what --print-capacity shows beside the refusal.
		c, perr := planCapacity(s)
		var se *StartupError
		if errors.As(perr, &se) {
			c = se.Capacity
		}
		s.Capacity, dtypeErr.Capacity, dtypeErr.Setup = c, c, s
		return nil, dtypeErr
	}
	if s.Capacity, err = planCapacity(s); err != nil {
		var se *StartupError
		if errors.As(err, &se) && se.Setup == nil {
			s.Capacity = se.Capacity
			se.Setup = s
		}
		return nil, err
	}
	return s, nil
}

// resolveProfiles defaults the model, GPU, host and vLLM version of cfg and looks them up.
func resolveProfiles(cfg *Config, profiles *Profiles) (*Setup, error) {
	if profiles == nil {
		profiles = BuiltinProfiles()
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.GPU == "" {
		cfg.GPU = DefaultGPU
	}
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	s := &Setup{}
	var err error
	if s.ModelProfile, err = profiles.Model(cfg.Model); err != nil {
		return nil, &ConfigError{err.Error()}
	}
	if s.GPUProfile, err = profiles.GPU(cfg.GPU); err != nil {
		return nil, &ConfigError{err.Error()}
	}
	if s.HostProfile, err = profiles.Host(cfg.Host); err != nil {
		return nil, &ConfigError{err.Error()}
	}
	if cfg.VLLMVersion == "" {
		cfg.VLLMVersion = DefaultVersion
	}
	switch cfg.EntryPoint {
	case "":
		cfg.EntryPoint = EntryServe
	case EntryServe, EntryLLM:
	default:
		return nil, &ConfigError{fmt.Sprintf("--sim-entry-point must be %s (vllm serve) or %s (the offline LLM class), got %q", EntryServe, EntryLLM, cfg.EntryPoint)}
	}
	for _, c := range []struct {
		flag  string
		value *string
		def   string
		other string
	}{
		{"--sim-compile-cache", &cfg.CompileCache, CompileWarm, CompileCold},
		{"--sim-flashinfer", &cfg.FlashInfer, FlashInferInstalled, FlashInferAbsent},
		{"--sim-deepgemm", &cfg.DeepGEMM, DeepGEMMInstalled, DeepGEMMAbsent},
	} {
		switch *c.value {
		case "":
			*c.value = c.def
		case c.def, c.other:
		default:
			return nil, &ConfigError{fmt.Sprintf("%s must be %s or %s, got %q", c.flag, c.def, c.other, *c.value)}
		}
	}
	if s.Version, err = ParseVersion(cfg.VLLMVersion); err != nil {
		return nil, &ConfigError{"--sim-vllm-version: " + err.Error()}
	}
	if s.Version.Less(oldestVersion) || newestVersion.Less(s.Version) {
		return nil, &ConfigError{fmt.Sprintf("--sim-vllm-version %s is not simulated; the simulator imitates vLLM 0.10.0 to %s, serves from 0.8 and plans memory (--print-capacity) from %s", s.Version, NewestMinor(), oldestVersion)}
	}
	return s, nil
}

// resolveLayout defaults and checks the memory fraction, the tensor parallelism and the block
// size.
func resolveLayout(cfg *Config, m Model) error {
	if !(cfg.GPUMemoryUtilization > 0 && cfg.GPUMemoryUtilization <= 1) {
		return &ConfigError{fmt.Sprintf("--gpu-memory-utilization must be greater than 0 and at most 1, got %g", cfg.GPUMemoryUtilization)}
	}
	if cfg.TensorParallelSize == 0 {
		cfg.TensorParallelSize = 1
	}
	if cfg.TensorParallelSize < 0 || cfg.TensorParallelSize > 64 {
		return &ConfigError{fmt.Sprintf("--tensor-parallel-size must be between 1 and 64, got %d", cfg.TensorParallelSize)}
	}
	if cfg.PipelineParallelSize == 0 {
		cfg.PipelineParallelSize = 1
	}
	if cfg.PipelineParallelSize < 0 || cfg.PipelineParallelSize > 64 {
		return &ConfigError{fmt.Sprintf("--pipeline-parallel-size must be between 1 and 64, got %d", cfg.PipelineParallelSize)}
	}
	if cfg.DataParallelSize == 0 {
		cfg.DataParallelSize = 1
	}
	if cfg.DataParallelSize < 0 || cfg.DataParallelSize > 64 {
		return &ConfigError{fmt.Sprintf("--data-parallel-size must be between 1 and 64, got %d", cfg.DataParallelSize)}
	}
	if cfg.APIServerCount < 0 || cfg.APIServerCount > 256 {
		return &ConfigError{fmt.Sprintf("--api-server-count must be between 1 and 256, got %d", cfg.APIServerCount)}
	}
	if cfg.ExpertParallel && !m.IsMoE() {
		return &EngineConfigError{"Number of experts in the model must be greater than 0 when expert parallelism is enabled."}
	}
	if !(cfg.CPUOffloadGiB >= 0 && cfg.CPUOffloadGiB <= 1<<20) {
		return &ConfigError{fmt.Sprintf("--cpu-offload-gb must be between 0 and 1048576, got %g", cfg.CPUOffloadGiB)}
	}
	if cfg.RedundantExperts < 0 || cfg.RedundantExperts > 4096 {
		return &ConfigError{fmt.Sprintf("num_redundant_experts must be between 0 and 4096, got %d", cfg.RedundantExperts)}
	}
	if err := blockFP8ExpertError(cfg, m); err != nil {
		return err
	}
	if ranks := cfg.TensorParallelSize * max(1, cfg.DataParallelSize); cfg.EPLB && m.IsMoE() && (m.NumExperts+cfg.RedundantExperts)%ranks != 0 {
		return &EngineConfigError{fmt.Sprintf("EPLB currently only supports even distribution of experts across ranks. Got %d experts and %d EP ranks.", m.NumExperts+cfg.RedundantExperts, ranks)}
	}
	if m.NumAttentionHeads%cfg.TensorParallelSize != 0 {
		return &EngineConfigError{fmt.Sprintf("Total number of attention heads (%d) must be divisible by tensor parallel size (%d).", m.NumAttentionHeads, cfg.TensorParallelSize)}
	}
	if cfg.BlockSize == 0 {
		cfg.BlockSize = DefaultBlockSize
	}
	switch cfg.BlockSize {
	case 1, 8, 16, 32, 64, 128, 256:
	default:
		return &ConfigError{fmt.Sprintf("--block-size must be one of 1, 8, 16, 32, 64, 128, 256, got %d", cfg.BlockSize)}
	}
	return nil
}

// fp8KVRelease is the first release with an FP8 KV cache (vllm#2279, fp8_e5m2).
const fp8KVRelease = "0.3.0"

// resolveDTypes sets the model and KV-cache data types of s, and returns the start-up error
// of a dtype the card cannot compute in (resolveDTypeSupport), which Resolve raises last.
func resolveDTypes(s *Setup, cfg Config) (*StartupError, error) {
	var err error
	if s.ModelDType, err = resolveModelDType(cfg.DType, s.ModelProfile.DType); err != nil {
		return nil, &ConfigError{err.Error()}
	}
	unsupported := resolveDTypeSupport(s, cfg)
	if s.KVDType, err = resolveKVDType(cfg.KVCacheDType, s.ModelDType); err != nil {
		return nil, &ConfigError{err.Error()}
	}
	if kv := checkpointKVDType(s, cfg); kv != "" {
		s.KVDType, s.KVDTypeFromCheckpoint = kv, true
	}
	if strings.HasPrefix(s.KVDType, "fp8") && !s.Version.AtLeast(fp8KVRelease) {
		return nil, &ConfigError{fmt.Sprintf("argument --kv-cache-dtype: invalid choice: '%s' (choose from 'auto'): an FP8 KV cache came with vLLM 0.3.0", cfg.KVCacheDType)}
	}
	if err := kvDTypeError(s); err != nil {
		return nil, err
	}
	return unsupported, nil
}

// schedulerValueError is a refusal of SchedulerConfig's model validator (_verify_args), which
// pydantic reports with the class's arguments shortened as in a public log of the error:
// "ArgsKwargs((), {'runner_t..., 'stream_interval': 1})".
func schedulerValueError(msg string) *ValidationError {
	return &ValidationError{Class: "SchedulerConfig", Constraint: valueError, Input: "ArgsKwargs((), {'runner_t..., 'stream_interval': 1})", Message: msg}
}

// maxModelLenTooLong is ModelConfig's refusal of a --max-model-len above the model's derived
// context, as vLLM prints it (docs/vllm-behaviour.md#--max-model-len-above-the-models): 0.19 on
// print the derived length as a float and end pydantic's shortened input with the last
// ModelConfig field of those releases; 0.11's log has the integer and its last field.
func maxModelLenTooLong(asked, derived int, v Version) *ValidationError {
	length, tail := strconv.Itoa(derived), "...rocessor_plugin': None})"
	if v.AtLeast("0.19.0") {
		length, tail = length+".0", "...nderer_num_workers': 1})"
	}
	msg := fmt.Sprintf("User-specified max_model_len (%d) is greater than the derived max_model_len (max_position_embeddings=%s or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error.", asked, length)
	return &ValidationError{Class: "ModelConfig", Constraint: valueError, Input: "ArgsKwargs((), {'model': " + tail, Message: msg}
}

// autoFitRelease is the first release that takes --max-model-len auto (vllm#29431, in the 0.14.0
// release notes).
const autoFitRelease = "0.14.0"

// performanceModeRelease is the first release with --performance-mode (vllm#34936, merged
// 2026-02; first in 0.17.0).
const performanceModeRelease = "0.17.0"

// resolveLimits defaults and checks the context length, the per-step token and sequence
// budgets, the memory already in use, the block override and the jitter.
func resolveLimits(cfg *Config, m Model, g GPU, v Version) error {
	if cfg.AutoFitMaxModelLen {
		if !v.AtLeast(autoFitRelease) {
			return &ConfigError{fmt.Sprintf("--max-model-len auto (or -1) fits the context to the KV cache from vLLM %s; %s takes a number", autoFitRelease, v)}
		}
		cfg.MaxModelLen = 0 // the model's, until the KV cache is known
	}
	switch cfg.PerformanceMode {
	case "", "balanced", "interactivity", "throughput":
	default:
		return &ConfigError{fmt.Sprintf("--performance-mode: invalid choice %q (choose from balanced, interactivity, throughput)", cfg.PerformanceMode)}
	}
	if cfg.PerformanceMode != "" && !v.AtLeast(performanceModeRelease) {
		return &ConfigError{fmt.Sprintf("--performance-mode came with vLLM %s; %s does not take it", performanceModeRelease, v)}
	}
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = m.MaxPositionEmbeddings
	}
	if cfg.MaxModelLen < 0 {
		return &ConfigError{fmt.Sprintf("--max-model-len must be positive, got %d", cfg.MaxModelLen)}
	}
	if cfg.MaxModelLen > m.MaxPositionEmbeddings && !cfg.AllowLongMaxModelLen {
		return maxModelLenTooLong(cfg.MaxModelLen, m.MaxPositionEmbeddings, v)
	}

	defaultBatch(cfg, m, g, v)
	chunked := cfg.ChunkedPrefill != Off
	if cfg.MaxNumBatchedTokens < 0 {
		return &ConfigError{fmt.Sprintf("--max-num-batched-tokens must be positive, got %d", cfg.MaxNumBatchedTokens)}
	}
	if !chunked && cfg.MaxNumBatchedTokens < cfg.MaxModelLen {
		return schedulerValueError(fmt.Sprintf("max_num_batched_tokens (%d) is smaller than max_model_len (%d). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.", cfg.MaxNumBatchedTokens, cfg.MaxModelLen))
	}
	if cfg.MaxNumSeqs < 0 {
		return &ConfigError{fmt.Sprintf("--max-num-seqs must be positive, got %d", cfg.MaxNumSeqs)}
	}
	if cfg.MaxNumBatchedTokens < cfg.MaxNumSeqs {
		return schedulerValueError(fmt.Sprintf("max_num_batched_tokens (%d) must be greater than or equal to max_num_seqs (%d).", cfg.MaxNumBatchedTokens, cfg.MaxNumSeqs))
	}
	if !(cfg.GPUUsedGiB >= 0 && cfg.GPUUsedGiB <= g.MemoryGiB) { // NaN fails both
		return &ConfigError{fmt.Sprintf("--sim-gpu-used-gib must be between 0 and the GPU's %.2f GiB, got %g", g.MemoryGiB, cfg.GPUUsedGiB)}
	}
	if cfg.NumGPUBlocksOverride < 0 {
		return &ConfigError{fmt.Sprintf("--num-gpu-blocks-override must be positive, got %d", cfg.NumGPUBlocksOverride)}
	}
	if cfg.KVCacheMemoryBytes < 0 || float64(cfg.KVCacheMemoryBytes) > g.MemoryGiB*(1<<30) {
		return &ConfigError{fmt.Sprintf("--kv-cache-memory-bytes must be between 0 and the GPU's %.2f GiB, got %d", g.MemoryGiB, cfg.KVCacheMemoryBytes)}
	}
	if cfg.Jitter < 0 || cfg.Jitter > 0.5 || math.IsNaN(cfg.Jitter) {
		return &ConfigError{fmt.Sprintf("step jitter must be between 0 and 0.5, got %g", cfg.Jitter)}
	}
	return nil
}

// resolveModelDType reads --dtype; argparse's choices are case-sensitive, so "BFLOAT16" is not one.
func resolveModelDType(flag, checkpoint string) (string, error) {
	switch flag {
	case "", "auto":
		// vLLM: FP16 for FP32/FP16 checkpoints, BF16 for BF16 ones.
		if strings.EqualFold(checkpoint, "float32") {
			return "float16", nil
		}
		return strings.ToLower(checkpoint), nil
	case "half", "float16":
		return "float16", nil
	case "bfloat16":
		return "bfloat16", nil
	case "float", "float32":
		return "float32", nil
	}
	return "", fmt.Errorf("argument --dtype: invalid choice: '%s' (choose from auto, half, float16, bfloat16, float, float32)", flag)
}

// Releases whose KV-cache dtype follows a checkpoint that declares an FP8 cache (0.14 and 0.21
// by our mapping, possibly one release off): from checkpointKVRelease ModelOpt's
// kv_cache_quant_algo as the engine config is built (vllm#30785, merged December 2025) and
// compressed-tensors' kv_cache_scheme as each attention layer is built (vllm#30141, opened
// December 2025), whatever --kv-cache-dtype says short of an FP8 one; from
// explicitKVWinsRelease an explicit dtype wins over the latter (vllm#42782, merged May 2026).
const (
	checkpointKVRelease   = "0.14.0"
	explicitKVWinsRelease = "0.21.0"
)

// checkpointKVDType is the cache dtype vLLM takes from the checkpoint: fp8_e4m3 for ModelOpt
// (its name in vLLM's map) where --kv-cache-dtype is automatic, fp8 for compressed-tensors
// where it is automatic or, before explicitKVWinsRelease, 16-bit; never for an MLA model's
// compressed-tensors declaration (MLAAttention has no such override), nor for a what-if build
// quantized another way (--sim-checkpoint-quantization). "" where the flag decides.
func checkpointKVDType(s *Setup, cfg Config) string {
	m, flag := s.ModelProfile, cfg.KVCacheDType
	auto := flag == "" || flag == "auto"
	if !m.DeclaredKVFP8 || !s.Version.AtLeast(checkpointKVRelease) || cfg.CheckpointQuantization != "" {
		return ""
	}
	switch strings.ToLower(m.CheckpointFormat) {
	case "modelopt":
		if auto {
			return "fp8_e4m3"
		}
	case "compressed-tensors":
		overridden := auto || (!s.Version.AtLeast(explicitKVWinsRelease) && !strings.HasPrefix(flag, "fp8"))
		if overridden && !m.IsMLA() {
			return "fp8"
		}
	}
	return ""
}

// CheckpointKVNote says where the checkpoint's declaration chose the KV cache's dtype, and what
// keeps the model's dtype instead; "" where it did not.
func (s *Setup) CheckpointKVNote() string {
	if !s.KVDTypeFromCheckpoint {
		return ""
	}
	keep := "--kv-cache-dtype " + s.ModelDType + " keeps it in the model's dtype"
	if strings.EqualFold(s.ModelProfile.CheckpointFormat, "compressed-tensors") && !s.Version.AtLeast(explicitKVWinsRelease) {
		keep = "before 0.21 no 16-bit --kv-cache-dtype keeps the model's dtype"
	}
	return "The checkpoint declares an FP8 KV cache, which vLLM takes: the cache is " + s.KVDType + " (" + keep + ")."
}

// EngineConfigKVDType is the cache dtype the engine's config names, in its start-up line and in
// cache_config_info: the flag (auto where none was given), or the dtype a ModelOpt checkpoint set
// as the config was built. A compressed-tensors declaration changes the cache only later, in the
// worker's attention layers, so the API server's config keeps the flag.
func (s *Setup) EngineConfigKVDType() string {
	if s.KVDTypeFromCheckpoint && s.KVDType == "fp8_e4m3" {
		return s.KVDType
	}
	if kv := strings.ToLower(s.KVCacheDType); kv != "" {
		return kv
	}
	return "auto"
}

func resolveKVDType(flag, modelDType string) (string, error) {
	f := flag // argparse's choices are case-sensitive
	switch f {
	case "", "auto":
		return modelDType, nil
	case "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla", "nvfp4_ds_mla",
		"turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc",
		"int4_per_token_head", "int8_per_token_head", "fp8_per_token_head", "nvfp4", "nvfp4_4over6":
		return f, nil
	}
	return "", fmt.Errorf("argument --kv-cache-dtype: invalid choice: '%s' (choose from 'auto', 'float16', 'bfloat16', 'fp8', 'fp8_e4m3', 'fp8_e5m2', 'fp8_inc', 'fp8_ds_mla', 'nvfp4_ds_mla', 'turboquant_k8v4', 'turboquant_4bit_nc', 'turboquant_k3v4_nc', 'turboquant_3bit_nc', 'int4_per_token_head', 'int8_per_token_head', 'fp8_per_token_head', 'nvfp4', 'nvfp4_4over6')", flag)
}
