package sim

import (
	"fmt"
	"strings"
)

// Checkpoint quantization as vLLM checks it (docs/vllm-behaviour.md#quantization-flags). A
// quantized checkpoint's config names its method; --quantization must agree with it, up to the
// faster kernels vLLM switches an AWQ or GPTQ checkpoint to (ModelConfig._verify_quantization).
// An unquantized checkpoint can be quantized as it loads only by the online methods (fp8, and
// mxfp4 for gpt-oss-style experts); a method that reads its scales from the checkpoint fails
// at load for want of them (get_quant_config: "Cannot find the config file for awq").

// sameMethodAs maps a --quantization value to the checkpoint method it runs.
var sameMethodAs = map[string]string{
	"awq_marlin": "awq", "auto_awq": "awq",
	"gptq_marlin": "gptq", "auto_gptq": "gptq",
}

// onlineQuantization are the methods that need no scales in the checkpoint.
var onlineQuantization = map[string]bool{"fp8": true, "mxfp4": true}

// resolveQuantization checks --quantization against the checkpoint's method (the catalogue's,
// or --sim-checkpoint-quantization for a checkpoint the catalogue sizes from its base) and,
// for such a checkpoint, sizes the weights by its method.
func resolveQuantization(cfg *Config, m Model) error {
	q := strings.ToLower(cfg.Quantization)
	switch q {
	case "", "awq", "gptq", "fp8", "awq_marlin", "gptq_marlin", "auto_awq", "auto_gptq", "mxfp4":
	default:
		return &ConfigError{fmt.Sprintf("--quantization %q is not simulated; choose awq, gptq, fp8 or mxfp4", cfg.Quantization)}
	}
	ckpt := strings.ToLower(m.Quantization)
	if c := strings.ToLower(cfg.CheckpointQuantization); c != "" {
		if _, ok := weightQuantizations[c]; !ok {
			return &ConfigError{fmt.Sprintf("--sim-checkpoint-quantization %q is not simulated; choose awq, gptq, fp8, mxfp4 or nvfp4", cfg.CheckpointQuantization)}
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
		return &ConfigError{fmt.Sprintf("Quantization method specified in the model config (%s) does not match the quantization method specified in the `quantization` argument (%s).", ckpt, q)}
	case ckpt == "" && !onlineQuantization[q]:
		return &ConfigError{fmt.Sprintf("Cannot find the config file for %s", q)}
	}
	if cfg.CheckpointQuantization != "" && q == "" {
		cfg.Quantization = ckpt
	}
	return nil
}

// weightQuantizations are the checkpoint methods the weight sizing knows.
var weightQuantizations = map[string]bool{"awq": true, "gptq": true, "fp8": true, "mxfp4": true, "nvfp4": true, "w8a8": true, "bitsandbytes": true}
