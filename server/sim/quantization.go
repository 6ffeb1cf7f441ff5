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

// onlineQuantization are the methods that need no scales in the checkpoint.
var onlineQuantization = map[string]bool{"fp8": true}

// resolveQuantization checks --quantization against the checkpoint's method (the catalogue's,
// or --sim-checkpoint-quantization for a checkpoint the catalogue sizes from its base) and,
// for such a checkpoint, sizes the weights by its method.
func resolveQuantization(cfg *Config, m Model) error {
	q := strings.ToLower(cfg.Quantization)
	switch q {
	case "", "awq", "gptq", "fp8", "awq_marlin", "gptq_marlin", "auto_awq", "auto_gptq", "mxfp4":
	default:
		return &ConfigError{fmt.Sprintf("--quantization %q is not simulated; choose awq, awq_marlin, gptq, gptq_marlin, fp8 or mxfp4", cfg.Quantization)}
	}
	ckpt := strings.ToLower(m.Quantization)
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
		q, fromCheckpoint = strings.ToLower(s.ModelProfile.Quantization), true
	}
	if fromCheckpoint && (q == "awq" || q == "gptq") && marlinGPU(s.GPUProfile) && s.Version.AtLeast("0.6.0") {
		q += "_marlin"
	}
	return q
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
