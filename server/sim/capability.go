package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Capability checks: what vLLM refuses, or changes, on a card too old for a data type or a
// quantization kernel (docs/vllm-behaviour.md#compute-capability).

// capabilityInt is the compute capability as vLLM compares it: 7.5 is 75. 0: unknown.
func (g GPU) capabilityInt() int { return int(math.Round(g.ComputeCapability * 10)) }

// torchDeviceName is the card's name as torch reports it.
func (g GPU) torchDeviceName() string {
	if g.DeviceName != "" {
		return g.DeviceName
	}
	return g.Name
}

// bf16Fallback is the first release whose automatic dtype falls back to float16 on a card
// without bfloat16 (0.8.5 still chose bfloat16 and refused it at start-up; July 2025 logs of
// 0.9.2 and later warn and fall back).
const bf16Fallback = "0.9.0"

// resolveDTypeSupport applies the card's bfloat16 support to s's model dtype: before Ampere
// (capability 8.0) an automatic bfloat16 becomes float16 with vLLM's warnings, where the
// release does that; an explicit one, or an automatic one in older releases, is the error the
// worker raises as it initialises the device, returned for Resolve to raise once the setup is
// whole. It runs before the KV-cache dtype, which follows the model's.
func resolveDTypeSupport(s *Setup, cfg Config) *StartupError {
	cc := s.GPUProfile.capabilityInt()
	if s.ModelDType != "bfloat16" || cc == 0 || cc >= 80 {
		return nil
	}
	flag := strings.ToLower(cfg.DType)
	if (flag == "" || flag == "auto") && s.Version.AtLeast(bf16Fallback) {
		s.ModelDType, s.DTypeFellBack = "float16", true
		return nil
	}
	// The worker's old check ran "the" and "`dtype`" together; the platform's check of the V1
	// releases (platforms/cuda.py) has the space.
	flagWord := "the`dtype`"
	if s.Version.AtLeast("0.8.0") {
		flagWord = "the `dtype`"
	}
	return &StartupError{Kind: DTypeUnsupported, Exception: "ValueError", Message: fmt.Sprintf(
		"Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your %s GPU has compute capability %d.%d. You can use float16 instead by explicitly setting %s flag in CLI, for example: --dtype=half.",
		s.GPUProfile.torchDeviceName(), cc/10, cc%10, flagWord)}
}

// DTypeFallbackLines are the API server's two warnings when the automatic dtype fell back
// from bfloat16 (ModelConfig's dtype resolution), or nil.
func (s *Setup) DTypeFallbackLines() []string {
	if !s.DTypeFellBack {
		return nil
	}
	g := s.GPUProfile
	cc := g.capabilityInt()
	return []string{
		fmt.Sprintf("Your device '%s' (with compute capability %d.%d) doesn't support torch.bfloat16. Falling back to torch.float16 for compatibility.", g.torchDeviceName(), cc/10, cc%10),
		"Casting torch.bfloat16 to torch.float16.",
	}
}

// quantMinCapability is get_min_capability() of the quantization methods the simulator
// sizes, where it is certain: AWQ's kernels need Turing (7.5), GPTQ's Pascal (6.0), FP8 and
// the Marlin kernels Ampere (8.0; FP8 runs weight-only through Marlin below Ada); auto_awq and
// auto_gptq keep AWQ's and GPTQ's floors (their get_min_capability). Which kernel auto_gptq then
// picks on a card below 7.5, where Marlin has no types, is not checked.
var quantMinCapability = map[string]int{"awq": 75, "gptq": 60, "fp8": 80, "awq_marlin": 80, "gptq_marlin": 80, "auto_awq": 75, "auto_gptq": 60}

// quantizationSupportError is VllmConfig's refusal of a quantization method the card cannot
// run, as it checks every method's minimum capability while the engine config is built; nil
// where the card can (or its capability is unknown).
func quantizationSupportError(s *Setup) *ValidationError {
	cc := s.GPUProfile.capabilityInt()
	q := s.QuantizationMethod()
	least, ok := quantMinCapability[q]
	if cc == 0 || !ok || cc >= least {
		return nil
	}
	return vllmConfigValueError(fmt.Sprintf("The quantization method %s is not supported for the current GPU. Minimum capability: %d. Current capability: %d.", q, least, cc), s.Version)
}

// vllmConfigValueError is a ValueError of VllmConfig's validation, which pydantic reports with
// the class's arguments shortened as in the public logs of those errors: "...additional_config':
// {}})" in 2025's releases, "... 'shutdown_timeout': 0})" in 2026's.
func vllmConfigValueError(msg string, v Version) *ValidationError {
	input := "ArgsKwargs((), {'model_co...additional_config': {}})"
	if v.AtLeast("0.19.0") {
		input = "ArgsKwargs((), {'model_co... 'shutdown_timeout': 0})"
	}
	return &ValidationError{Class: "VllmConfig", Constraint: valueError, Input: input, Message: msg}
}

// The Triton attention backend's KV-cache dtype guard (vllm#43914, merged 2026-06-15), Triton
// MLA's copy of it (vllm#47060, merged 2026-07-16): 0.23 and 0.26 by our mapping, possibly one
// release off; and FlashInfer's Ampere floor (vllm#45375: 0.23.0 ran FlashInfer on compute
// capability 7.5, 0.24.0 no longer; vllm#47549). docs/vllm-behaviour.md#compute-capability.
const (
	tritonKVGuardRelease  = "0.23.0"
	tritonMLAGuardRelease = "0.26.0"
	flashInferSM80Release = "0.24.0"
)

// flashInferHeadSizes are the head sizes FlashInfer's attention backend takes
// (FlashInferBackend.get_supported_head_sizes).
var flashInferHeadSizes = []int{64, 128, 256}

// attentionLayerError is what the first attention layer raises as the model is built, before
// its weights load: the refusal of fp8_e5m2 beside KV-cache scales, then its backend's refusal of
// a cache dtype the card cannot store.
func attentionLayerError(s *Setup) *StartupError {
	if err := e5m2KVError(s); err != nil {
		return err
	}
	if err := selectedBackendError(s); err != nil {
		return err
	}
	return kvDTypeCapabilityError(s)
}

// selectedBackendRelease is the first release whose attention selector checks a backend the
// flag names against the layer and the card and refuses it with the reasons
// (validate_configuration, vllm#24794, merged November 2025; the refusals of public logs from
// December 2025 on name it AttentionBackendEnum.X). fa4HeadRelease is the first that lets
// FlashAttention take heads up to 512 through FA4 on compute capability 9.x to 11.x (vllm#38835,
// April 2026, tested with Gemma 4; 0.20 in our mapping).
const (
	selectedBackendRelease = "0.12.0"
	fa4HeadRelease         = "0.20.0"
)

// selectedBackendError is the ValueError of vLLM's attention selector (get_attn_backend_cls in
// vllm/platforms/cuda.py) when --attention-backend names FLASH_ATTN or FLASHINFER and the first
// attention layer is one it cannot serve: the reasons of AttentionBackend.validate_configuration
// in its order (head size, dtype, KV-cache dtype, MLA, compute capability). FlashAttention takes
// head sizes that are multiples of 8 up to 256 (512 through FA4, fa4HeadRelease), 16-bit compute,
// an fp8 cache only through FA3 (compute capability 9.x), and needs 8.0; FlashInfer takes head
// sizes 64 to 512 (512 only in later releases, which are not told apart, so it is not refused)
// and needs 7.5 (8.0 from 0.24); an install without it fails the backend's import, which the
// selector reports as the one reason. Other backends, other quantized caches and attention sinks
// are not checked; nil on AMD cards and cards of unknown capability.
func selectedBackendError(s *Setup) *StartupError {
	name := strings.ToUpper(s.AttentionBackend)
	g, m := s.GPUProfile, s.ModelProfile
	cc := g.capabilityInt()
	if (name != "FLASH_ATTN" && name != "FLASHINFER") || cc == 0 || gpuArch(g) == archAMD || !s.Version.AtLeast(selectedBackendRelease) {
		return nil
	}
	heads := []int{m.HeadDim}
	if m.FullAttentionHeadDim > 0 {
		heads = append(heads, m.FullAttentionHeadDim)
	}
	if m.IsMLA() {
		heads = []int{m.KVLoraRank + m.QKRopeHeadDim} // the latent cache's width
	}
	var reasons []string
	switch {
	case name == "FLASHINFER" && s.FlashInfer == FlashInferAbsent:
		reasons = []string{"ImportError"}
	case name == "FLASH_ATTN":
		most := 256
		if s.Version.AtLeast(fa4HeadRelease) && cc >= 90 && cc < 120 {
			most = 512
		}
		reasons = backendReasons(s, heads, func(h int) bool { return h%8 == 0 && h <= most },
			strings.HasPrefix(s.KVDType, "fp8") && cc/10 != 9, 80)
	default:
		floor := 80
		if !s.Version.AtLeast(flashInferSM80Release) {
			floor = 75
		}
		reasons = backendReasons(s, heads, func(h int) bool { return slices.Contains(flashInferHeadSizes, h) || h == 512 }, false, floor)
	}
	if len(reasons) == 0 {
		return nil
	}
	return &StartupError{Kind: AttentionBackendInvalid, Exception: "ValueError", Message: fmt.Sprintf(
		"Selected backend AttentionBackendEnum.%s is not valid for this configuration. Reason: ['%s']", name, strings.Join(reasons, "', '"))}
}

// backendReasons are validate_configuration's reasons, in its order, for a backend that takes
// the head sizes headOK accepts, refuses the cache where badCache, and needs compute capability
// floor.
func backendReasons(s *Setup, heads []int, headOK func(int) bool, badCache bool, floor int) []string {
	var reasons []string
	if !all(heads, headOK) {
		reasons = append(reasons, "head_size not supported")
	}
	if s.ModelDType == "float32" {
		reasons = append(reasons, "dtype not supported")
	}
	if badCache {
		reasons = append(reasons, "kv_cache_dtype not supported")
	}
	if s.ModelProfile.IsMLA() {
		reasons = append(reasons, "MLA not supported")
	}
	if s.GPUProfile.capabilityInt() < floor {
		reasons = append(reasons, "compute capability not supported")
	}
	return reasons
}

// all reports whether ok holds for every element of xs.
func all(xs []int, ok func(int) bool) bool {
	return !slices.ContainsFunc(xs, func(x int) bool { return !ok(x) })
}

// kvDTypeCapabilityError is the ValueError a Triton attention implementation raises as the model
// is built when the card cannot store its KV-cache dtype: fp8 below compute capability 8.9
// (Triton's fp8e4nv), bfloat16 below 8.0. An MLA model's cache reaches Triton MLA, its only
// backend below Hopper; another's reaches the Triton backend where no backend before it in vLLM's
// order takes it: FlashAttention stores fp8 only through FA3 (Hopper) and
// needs 8.0; FlashInfer needs 7.5 (8.0 from 0.24), an install that has it, head sizes of 64, 128
// or 256 and no attention sinks; --attention-backend TRITON_ATTN sends every layer there. Nil
// otherwise and on AMD cards (the guard is CUDA's).
func kvDTypeCapabilityError(s *Setup) *StartupError {
	g := s.GPUProfile
	cc := g.capabilityInt()
	fp8 := strings.HasPrefix(s.KVDType, "fp8")
	bf16 := s.KVDType == "bfloat16" && cc < 80
	if (!fp8 && !bf16) || cc == 0 || cc >= 89 || gpuArch(g) == archAMD {
		return nil
	}
	backend, bf16Where := "Triton attention backend", ""
	switch {
	case s.ModelProfile.IsMLA():
		if !s.Version.AtLeast(tritonMLAGuardRelease) {
			return nil
		}
		backend, bf16Where = "Triton MLA backend", " by the Triton MLA backend"
	case !s.Version.AtLeast(tritonKVGuardRelease), flashInferTakesCache(s, cc):
		return nil
	}
	dev, capStr := g.torchDeviceName(), fmt.Sprintf("%d.%d", cc/10, cc%10)
	if bf16 {
		return &StartupError{Kind: KVDTypeUnsupported, Exception: "ValueError", Message: fmt.Sprintf(
			"bfloat16 KV cache is not supported%s on %s (compute capability %s); bfloat16 requires SM80+. Re-run with --kv-cache-dtype float16.", bf16Where, dev, capStr)}
	}
	suggested := "bfloat16"
	if cc < 80 {
		suggested = "float16"
	}
	return &StartupError{Kind: KVDTypeUnsupported, Exception: "ValueError", Message: fmt.Sprintf(
		"FP8 KV cache is not supported by the %s on %s (compute capability %s); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype %s.", backend, dev, capStr, suggested)}
}

// flashInferTakesCache reports whether FlashInfer's attention backend takes every attention
// layer's cache on a card of capability cc: each layer picks its backend, so Gemma 4's 512-wide
// global layers go to Triton; the per-token-head caches run in Triton alone; attention sinks
// (gpt-oss) only through FlashInfer's TensorRT-LLM kernels on Blackwell.
func flashInferTakesCache(s *Setup, cc int) bool {
	floor := 75
	if s.Version.AtLeast(flashInferSM80Release) {
		floor = 80
	}
	m := s.ModelProfile
	heads := slices.Contains(flashInferHeadSizes, m.HeadDim) &&
		(m.FullAttentionHeadDim == 0 || slices.Contains(flashInferHeadSizes, m.FullAttentionHeadDim))
	return cc >= floor && s.FlashInfer != FlashInferAbsent && heads &&
		!strings.HasSuffix(s.KVDType, "_per_token_head") && !m.AttentionSinks &&
		!strings.EqualFold(s.AttentionBackend, "TRITON_ATTN")
}
