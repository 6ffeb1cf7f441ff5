package sim

import (
	"fmt"
	"strings"
)

// The quantized KV caches of the newest releases besides FP8 (docs/vllm-behaviour.md#kv-cache-dtypes):
// what a head's key and value take per token, the release each can first be in, and what
// vLLM refuses them beside.

// kvHeadBytes is one KV head's key and value for one token of a cache of dtype kv and head
// size d, as vLLM's AttentionSpec sizes a page (vllm/v1/kv_cache_interface.py): the
// per-token-head modes keep an fp32 scale beside each key and each value, carved from the
// cache; int4 packs two values a byte; NVFP4 packs two values a byte with an FP8 scale for
// every 16.
func kvHeadBytes(kv string, d int) float64 {
	switch kv {
	case "int8_per_token_head", "fp8_per_token_head":
		return 2 * float64(d+4)
	case "int4_per_token_head":
		return 2 * float64(d/2+4)
	case "nvfp4", "nvfp4_4over6":
		return 2 * float64(d/2+d/16)
	}
	b, _ := dtypeBytes(kv)
	return 2 * float64(d) * b
}

// kvDTypeSince is the first release each of these cache dtypes can be in: the versioned API
// documentation brackets them, and a pull request is in no release older than itself.
var kvDTypeSince = map[string]string{
	"fp8_ds_mla":          "0.11.0", // vllm#25896 (DeepSeek-V3.2): absent from 0.10.2's docs, in 0.11.1's
	"nvfp4_ds_mla":        "0.11.0",
	"int8_per_token_head": "0.19.0", // vllm#38378, opened 2026-03-27: absent from 0.18.1's docs, in 0.21.0's
	"fp8_per_token_head":  "0.19.0",
	"nvfp4":               "0.19.0", // vllm#40177, opened 2026-04-17
	"turboquant_k8v4":     "0.19.0", // vllm#38479, opened 2026-03-29; in 0.20.2's docs
	"turboquant_4bit_nc":  "0.19.0",
	"turboquant_k3v4_nc":  "0.19.0",
	"turboquant_3bit_nc":  "0.19.0",
	"int4_per_token_head": "0.22.0", // vllm#40835: absent from 0.21.0's docs, in 0.26.0's
	"nvfp4_4over6":        "0.22.0", // vllm#45187, opened 2026-06-10, after the int4 mode
}

// kvDTypeError refuses a cache dtype the imitated release lacks, or that no attention backend
// of vLLM runs beside this model and card.
func kvDTypeError(s *Setup) error {
	kv := s.KVDType
	if since, ok := kvDTypeSince[kv]; ok && !s.Version.AtLeast(since) {
		return &ConfigError{fmt.Sprintf("argument --kv-cache-dtype: invalid choice: '%s': it is in vLLM %s at the earliest (--sim-vllm-version is %s)", kv, strings.TrimSuffix(since, ".0"), s.Version)}
	}
	mla := s.ModelProfile.IsMLA()
	switch {
	case strings.HasSuffix(kv, "_ds_mla"):
		return &ConfigError{fmt.Sprintf("--kv-cache-dtype %s: No valid attention backend found: the packed DeepSeek cache is for sparse-attention MLA models (DeepSeek-V3.2 and later), which the simulator does not model", kv)}
	case strings.HasPrefix(kv, "turboquant_"):
		return &ConfigError{fmt.Sprintf("--kv-cache-dtype %s is not simulated: TurboQuant keeps a dense model's first and last two layers in the model dtype, a page of their own", kv)}
	case strings.HasPrefix(kv, "nvfp4") && mla:
		return &ConfigError{"nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends. Please use a different --kv-cache-dtype (e.g., 'fp8', 'auto', or 'nvfp4_ds_mla' with a sparse MLA backend) for MLA models such as DeepSeek."}
	case strings.HasSuffix(kv, "_per_token_head") && mla:
		return &ConfigError{fmt.Sprintf("--kv-cache-dtype %s: No valid attention backend found: the per-token-head caches run in the Triton attention backend, which has no MLA", kv)}
	}
	return nil
}
