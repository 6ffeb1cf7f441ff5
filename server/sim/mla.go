package sim

import (
	"math"
	"strings"
)

// mlaPaddedHeadSize is the head size vLLM gave DeepSeek-V2/V3 attention before it cached MLA's
// latent: the 192-wide query and key head padded to FlashAttention's 256, keys and values both
// (docs/hybrid-kv.md#mla-by-version).
const mlaPaddedHeadSize = 256

// mlaLatent reports whether vLLM caches multi-head latent attention's compressed latent for
// this setup: from 0.7.1, and in 0.7.1 and 0.7.2 only for unquantized, FP8 and
// compressed-tensors checkpoints, as MLA was switched off for the other quantizations until
// 0.7.3 (docs/hybrid-kv.md#mla-by-version).
func mlaLatent(s *Setup) bool {
	v := s.Version
	if !s.ModelProfile.IsMLA() || !v.AtLeast("0.7.1") {
		return false
	}
	if v.AtLeast("0.7.3") {
		return true
	}
	q := strings.ToLower(s.Quantization)
	if q == "" {
		q = strings.ToLower(s.ModelProfile.Quantization)
	}
	return q == "" || q == "fp8" || q == "compressed-tensors"
}

// mlaBytesPerToken is one MLA layer's cache for one token on one GPU. With the latent cached:
// kv_lora_rank + qk_rope_head_dim values, whole on every tensor-parallel rank, each entry padded
// to 256 bytes by V0's cache engine on CUDA in 0.7.2 and 0.7.3. Without: keys and values of the
// rank's heads, padded to 256 before 0.7.1 and qk_nope + qk_rope wide after.
func mlaBytesPerToken(s *Setup) int64 {
	m := s.ModelProfile
	kvBytes, _ := dtypeBytes(s.KVDType)
	if !mlaLatent(s) {
		heads := m.NumKeyValueHeads
		if heads <= 0 {
			heads = m.NumAttentionHeads
		}
		heads = max(1, heads/s.TensorParallelSize)
		head := mlaPaddedHeadSize
		if s.Version.AtLeast("0.7.1") {
			head = m.QKNopeHeadDim + m.QKRopeHeadDim
		}
		return int64(math.Round(2 * float64(heads*head) * kvBytes))
	}
	entry := m.KVLoraRank + m.QKRopeHeadDim
	if s.Version.AtLeast("0.7.2") && !s.Version.V1Engine() && gpuArch(s.GPUProfile) != archAMD {
		// align_to_256bytes counts elements of the model dtype, whatever the cache dtype.
		modelBytes, _ := dtypeBytes(s.ModelDType)
		if per := int(256 / modelBytes); per > 0 {
			entry = ceilDiv(entry, per) * per
		}
	}
	return int64(math.Round(float64(entry) * kvBytes))
}

// mlaBlockSize is the block size V1 runs an MLA model with: the CUDA platform raises it for
// the decode backend it picks by default, FlashMLA on Hopper (64, from 0.8.0), CUTLASS MLA on
// SM100 Blackwell (128, 0.10.1 to 0.14) and FlashInfer MLA there after (64). backend names it
// as vLLM's "Forcing kv cache block size" line does; "" when the block size is kept.
func mlaBlockSize(s *Setup, blockSize int) (size int, backend string) {
	if !mlaLatent(s) || !s.Version.V1Engine() {
		return blockSize, ""
	}
	switch gpuArch(s.GPUProfile) {
	case archHopper:
		if blockSize%64 != 0 {
			return 64, "FlashMLA"
		}
	case archSM100:
		switch {
		case s.Version.AtLeast("0.15.0"):
			if blockSize != 32 && blockSize%64 != 0 {
				return 64, "FlashInferMLA"
			}
		case s.Version.AtLeast("0.10.1"):
			if blockSize%128 != 0 {
				return 128, "CUTLASS_MLA"
			}
		}
	}
	return blockSize, ""
}

// GPU architectures that choose vLLM's attention kernels.
const (
	archOther  = ""
	archHopper = "sm90"
	archSM100  = "sm100"
	archAMD    = "rocm"
)

// gpuArch tells the architecture from a profile's name: Hopper (H100, H200, H20, H800,
// GH200), SM100 Blackwell (B200, B300, GB200, GB300; not the RTX 50 series or GB10), or an
// AMD card. A profile of another name is told by its compute capability (9.0 Hopper, 10.x
// SM100); the rest are other CUDA cards.
func gpuArch(g GPU) string {
	keys := gpuKeys(g.Name)
	for _, p := range []string{"amd", "radeon", "instinct", "mi"} {
		if strings.HasPrefix(keys[0], p) {
			return archAMD
		}
	}
	n := keys[len(keys)-1]
	for _, p := range []string{"h100", "h200", "h20", "h800", "gh200"} {
		if strings.HasPrefix(n, p) {
			return archHopper
		}
	}
	for _, p := range []string{"b200", "b300", "gb200", "gb300"} {
		if strings.HasPrefix(n, p) {
			return archSM100
		}
	}
	switch cc := g.capabilityInt(); {
	case cc == 90:
		return archHopper
	case cc >= 100 && cc < 110:
		return archSM100
	}
	return archOther
}
