package sim

import (
	"fmt"
	"strings"
)

// Checkpoint quantization as vLLM checks it (docs/vllm-behaviour.md#quantization-flags). A
// quantized checkpoint's config names its method; --quantization must agree with it, up to the
// faster kernels vLLM switches an AWQ or GPTQ checkpoint to (ModelConfig._verify_quantization).
// An unquantized checkpoint can be quantized as it loads only by fp8; a method that reads its
// scales from the checkpoint fails at load for want of them (get_quant_config: "Cannot find the
// config file for awq"), and mxfp4 has no method for linear layers.

// sameMethodAs maps a --quantization value to the checkpoint method it runs.
var sameMethodAs = map[string]string{
	"awq_marlin": "awq", "auto_awq": "awq",
	"gptq_marlin": "gptq", "auto_gptq": "gptq",
}

// onlineQuantization are the methods that need no scales in the checkpoint: fp8, and the
// shorthands of the online quantization frontend.
var onlineQuantization = map[string]bool{"fp8": true}

// onlineShorthands are --quantization's shorthands for quantizing a 16-bit checkpoint as it
// loads (_ONLINE_SHORTHANDS in vllm/config/quantization.py, vllm#38138), by the storage the
// plan sizes them as: FP8 for the three FP8 scalings, MXFP8 (an 8-bit scale for every 32),
// NVFP4, and INT8 for the experts alone (int8_per_channel_weight_only leaves the linear
// layers in 16 bits).
var onlineShorthands = map[string]string{
	"fp8_per_tensor": "fp8", "fp8_per_block": "fp8", "fp8_per_channel": "fp8",
	"mxfp8": "mxfp8", "nvfp4_per_token": "nvfp4", "int8_per_channel_weight_only": int8ExpertsOnly,
}

// int8ExpertsOnly is the storage of int8_per_channel_weight_only: one byte an expert weight.
const int8ExpertsOnly = "int8-experts"

// onlineShorthandRelease is the first release the shorthands can be in: vllm#38138 was opened
// in March 2026, with vllm#38378 of 0.19 at the earliest.
const onlineShorthandRelease = "0.19.0"

// storageMethod is the weight format a --quantization value stores: a shorthand's, else itself.
func storageMethod(q string) string {
	if m, ok := onlineShorthands[q]; ok {
		return m
	}
	return q
}

func init() {
	for name := range onlineShorthands {
		onlineQuantization[name] = true
	}
}

// quantizationFlagRelease is the first release that takes q as --quantization, for the values
// newer than the simulator's oldest release; "" for the rest.
func quantizationFlagRelease(q string) string {
	switch _, shorthand := onlineShorthands[q]; {
	case shorthand:
		return onlineShorthandRelease
	case q == "auto_gptq":
		return autoGPTQRelease
	case q == "auto_awq":
		return autoAWQRelease
	}
	return ""
}

// resolveQuantization checks --quantization against the checkpoint's method (the catalogue's,
// or --sim-checkpoint-quantization for a checkpoint the catalogue sizes from its base) and,
// for such a checkpoint, sizes the weights by its method.
func resolveQuantization(cfg *Config, m Model, v Version) error {
	q := strings.ToLower(cfg.Quantization)
	if q != cfg.Quantization {
		return &ConfigError{fmt.Sprintf("argument --quantization/-q: invalid choice: '%s' (its choices are lower case)", cfg.Quantization)}
	}
	_, shorthand := onlineShorthands[q]
	if first := quantizationFlagRelease(q); first != "" && !v.AtLeast(first) {
		return &ConfigError{fmt.Sprintf("argument --quantization: invalid choice: '%s': it is in vLLM %s at the earliest (--sim-vllm-version is %s)", q, strings.TrimSuffix(first, ".0"), v)}
	}
	switch {
	case shorthand, q == checkpointMethod(m), q == "", q == "awq", q == "gptq", q == "fp8", q == "awq_marlin", q == "gptq_marlin", q == "auto_awq", q == "auto_gptq", q == "mxfp4":
	default:
		return &ConfigError{fmt.Sprintf("--quantization %q is not simulated; choose awq, awq_marlin, gptq, gptq_marlin, fp8, mxfp4 or an online shorthand (fp8_per_tensor, fp8_per_block, fp8_per_channel, mxfp8, nvfp4_per_token, int8_per_channel_weight_only)", cfg.Quantization)}
	}
	ckpt := checkpointMethod(m)
	if c := strings.ToLower(cfg.CheckpointQuantization); c != "" {
		if !weightQuantizations[c] {
			return &ConfigError{fmt.Sprintf("--sim-checkpoint-quantization %q is not simulated; choose awq, gptq, fp8, mxfp4, nvfp4, w8a8 or bitsandbytes", cfg.CheckpointQuantization)}
		}
		ckpt = c
	}
	family := q
	if f, ok := sameMethodAs[q]; ok {
		family = f
	}
	switch {
	case q == "":
	case ckpt != "" && family != ckpt:
		return &EngineConfigError{Msg: fmt.Sprintf("Quantization method specified in the model config (%s) does not match the quantization method specified in the `quantization` argument (%s).", ckpt, q)}
	case ckpt == "" && q == "mxfp4":
		// MXFP4 reads packed experts from the checkpoint and has no linear-layer method.
		return &EngineConfigError{Msg: "Mxfp4 linear layer is not implemented"}
	case ckpt == "" && !onlineQuantization[q]:
		return &EngineConfigError{Msg: fmt.Sprintf("Cannot find the config file for %s", q)}
	}
	if cfg.CheckpointQuantization != "" && q == "" {
		cfg.Quantization, cfg.quantFromCheckpoint = ckpt, true
	}
	return nil
}

// QuantizationMethod is the method vLLM runs the weights with, as its engine config line names
// it: the flag, else the checkpoint's, where vLLM moves an AWQ or GPTQ checkpoint to its
// Marlin kernels on a GPU that has them (compute capability 8.0 and up; the
// override_quantization_method of AWQMarlinConfig and GPTQMarlinConfig). "" for none.
func (s *Setup) QuantizationMethod() string {
	q, fromCheckpoint := strings.ToLower(s.Quantization), s.quantFromCheckpoint
	if q == "" {
		q, fromCheckpoint = checkpointMethod(s.ModelProfile), true
	}
	family := q
	if f, ok := sameMethodAs[q]; ok {
		family = f
	}
	switch {
	case family == "gptq" && s.Version.AtLeast(autoGPTQRelease):
		return "auto_gptq"
	case family == "awq" && s.Version.AtLeast(autoAWQRelease):
		return "auto_awq"
	case fromCheckpoint && (q == "awq" || q == "gptq") && marlinGPU(s.GPUProfile) && s.Version.AtLeast("0.6.0"):
		return q + "_marlin"
	}
	return q
}

// The releases from which vLLM runs every GPTQ and AWQ checkpoint, and every spelling of
// their flags, through one method each, named auto_gptq and auto_awq whatever the GPU: vllm#38288
// (merged 2026-05-15, in 0.22.0's release notes) and vllm#42727 (merged 2026-06-18, in 0.24.0's
// notes; the rename is read from its diff). Logs of 0.26 to 0.31 show both names.
const (
	autoGPTQRelease = "0.22.0"
	autoAWQRelease  = "0.24.0"
)

// checkpointMethod is the quant_method a quantized checkpoint's config names, which vLLM
// compares --quantization with and logs: the toolkit's format where it is recorded
// (compressed-tensors for an llm-compressor FP8 or INT8 build), else the catalogue's method.
func checkpointMethod(m Model) string {
	if f := strings.ToLower(m.CheckpointFormat); f != "" {
		return f
	}
	return strings.ToLower(m.Quantization)
}

// marlinGPU reports whether the GPU runs vLLM's Marlin kernels: NVIDIA from Ampere (compute
// capability 8.0) on; not the T4 (7.5), the V100 (7.0) or AMD's.
func marlinGPU(g GPU) bool {
	if cc := g.capabilityInt(); cc > 0 {
		return gpuArch(g) != archAMD && cc >= 80
	}
	keys := gpuKeys(g.Name)
	n := keys[len(keys)-1]
	return gpuArch(g) != archAMD && !strings.HasPrefix(n, "t4") && !strings.HasPrefix(n, "v100")
}

// weightQuantizations are the checkpoint methods the weight sizing knows.
var weightQuantizations = map[string]bool{"awq": true, "gptq": true, "fp8": true, "mxfp4": true, "nvfp4": true, "w8a8": true, "bitsandbytes": true}

// EngineConfigError is a setting vLLM's argument parser accepts and its engine configuration
// then rejects with a ValueError: one line, exit status 1 as vLLM's, where a ConfigError is
// argparse's kind (2).
type EngineConfigError struct{ Msg string }

func (e *EngineConfigError) Error() string { return e.Msg }

// e5m2KVRelease is the first release whose Attention layer loads KV-cache scales from a
// quantized checkpoint and refuses fp8_e5m2 beside them (vllm#4893, merged May 2024);
// scaleFreeCTRelease the first that refuses it only where a compressed-tensors checkpoint
// stores such scales (vllm#45040, merged 2026-06-09; by our mapping, possibly one release off).
const (
	e5m2KVRelease      = "0.4.3"
	scaleFreeCTRelease = "0.24.0"
)

// loadsKVScales reports whether the weights' quantization gives vLLM's Attention layers a
// KV-cache method (they then take k/v scales from the checkpoint): FP8 (a checkpoint's fp8
// method, or --quantization fp8 on the fly), ModelOpt, and compressed-tensors, which until
// vllm#45040 gave every attention layer one and since only where the checkpoint declares a
// kv_cache_scheme. AWQ, GPTQ, bitsandbytes, MXFP4 and fbgemm_fp8 give none.
func loadsKVScales(s *Setup) bool {
	m := s.ModelProfile
	format := strings.ToLower(m.CheckpointFormat)
	if format == "" {
		format = strings.ToLower(m.Quantization)
	}
	if c := strings.ToLower(s.CheckpointQuantization); c != "" {
		format = c // a build of the catalogue's model, quantized that way
		if c == "w8a8" {
			format = "compressed-tensors" // the toolkit that writes INT8 W8A8 checkpoints
		}
	}
	if format == "" {
		format = strings.ToLower(s.Quantization) // on the fly: only fp8 exists
	}
	switch format {
	case "fp8", "modelopt", "nvfp4":
		return true
	case "w8a8": // a catalogue w8a8 model without its format recorded: compressed-tensors
		return !s.Version.AtLeast(scaleFreeCTRelease)
	case "compressed-tensors":
		return m.KVCacheScheme || !s.Version.AtLeast(scaleFreeCTRelease)
	}
	return false
}

// e5m2KVError is the ValueError vLLM's Attention layer raises as the model is built when
// --kv-cache-dtype fp8_e5m2 meets weights that load KV-cache scales, which are e4m3's
// (_init_kv_cache_quant in vllm/model_executor/layers/attention/attention.py). Nil otherwise.
func e5m2KVError(s *Setup) *StartupError {
	if s.KVDType != "fp8_e5m2" || !s.Version.AtLeast(e5m2KVRelease) || !loadsKVScales(s) {
		return nil
	}
	return &StartupError{Kind: KVDTypeRefused, Exception: "ValueError", Message: "fp8_e5m2 kv-cache is not supported with fp8 checkpoints."}
}
