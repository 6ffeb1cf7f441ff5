package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mlaSetup(t *testing.T, cfg Config) *Setup {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "deepseek-ai/DeepSeek-V2-Lite"
	}
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = 8192
	}
	s, err := Resolve(cfg, nil)
	require.NoError(t, err)
	return s
}

// TestMLABytesPerTokenByVersion: one DeepSeek-V2-Lite layer's cache for one token, release by
// release (docs/hybrid-kv.md#mla-by-version): full K and V of 16 heads padded to 256 before
// 0.7.1; the 576-wide latent from 0.7.1, whole on every rank; 640 in V0 on CUDA from 0.7.2
// (256-byte entries, counted in the model dtype); no latent for AWQ until 0.7.3, which then
// caches K and V of 192.
func TestMLABytesPerTokenByVersion(t *testing.T) {
	for _, c := range []struct {
		version, gpu, kv, quant string
		tp                      int
		want                    int64
	}{
		{"0.5.0", "H100", "", "", 1, 2 * 16 * 256 * 2},
		{"0.5.1", "L40", "", "", 2, 2 * 8 * 256 * 2},
		{"0.6.4", "H100", "", "", 1, 2 * 16 * 256 * 2},
		{"0.7.0", "H100", "fp8", "", 1, 2 * 16 * 256},
		{"0.7.1", "H100", "", "", 1, 576 * 2},
		{"0.7.1", "H100", "", "", 2, 576 * 2},
		{"0.7.1", "H100", "", "awq", 1, 2 * 16 * 192 * 2},
		{"0.7.2", "H100", "", "gptq", 2, 2 * 8 * 192 * 2},
		{"0.7.2", "H100", "", "", 1, 640 * 2},
		{"0.7.2", "H100", "fp8", "", 1, 640},
		{"0.7.2", "MI300X", "", "", 1, 576 * 2},
		{"0.7.3", "A100-SXM-80GB", "", "awq", 1, 640 * 2},
		{"0.8.0", "H100", "", "", 1, 576 * 2},
		{"0.8.0", "H100", "fp8", "", 4, 576},
		{"0.10.0", "A100-SXM-80GB", "", "awq", 2, 576 * 2},
	} {
		name := fmt.Sprintf("%s/%s/tp%d/%s%s", c.version, c.gpu, c.tp, c.kv, c.quant)
		s := mlaSetup(t, Config{GPU: c.gpu, VLLMVersion: c.version, TensorParallelSize: c.tp, KVCacheDType: c.kv, CheckpointQuantization: c.quant})
		assert.Equal(t, c.want, s.Capacity.Layout.AttentionBytesPerToken, name)
	}
}

// TestMLABlockSizeByVersion: the block size V1 forces for the MLA decode backend it picks by
// default: FlashMLA on Hopper (64, from 0.8.0), CUTLASS MLA on B200 (128, 0.10.1 to 0.14),
// FlashInfer MLA there from 0.15 (64); Triton MLA elsewhere keeps 16. V0 keeps 16, and a block
// size the backend accepts is kept.
func TestMLABlockSizeByVersion(t *testing.T) {
	for _, c := range []struct {
		version, gpu string
		block        int
		want         int
		backend      string
	}{
		{"0.7.3", "H100", 0, 16, ""},
		{"0.8.0", "H100", 0, 64, "FlashMLA"},
		{"0.8.3", "H200", 0, 64, "FlashMLA"},
		{"0.10.0", "H20", 0, 64, "FlashMLA"},
		{"0.10.0", "GH200-96GB", 32, 64, "FlashMLA"},
		{"0.10.0", "H100", 128, 128, ""},
		{"0.10.0", "A100-SXM-80GB", 0, 16, ""},
		{"0.10.0", "L40S", 0, 16, ""},
		{"0.10.0", "B200", 0, 16, ""},
		{"0.10.1", "B200", 0, 128, "CUTLASS_MLA"},
		{"0.14.0", "B200", 64, 128, "CUTLASS_MLA"},
		{"0.15.0", "B200", 0, 64, "FlashInferMLA"},
		{"0.15.0", "B200", 32, 32, ""},
		{"0.20.0", "RTX-5090", 0, 16, ""},
		{"0.20.0", "GB10", 0, 16, ""},
		{"0.20.0", "MI300X", 0, 16, ""},
	} {
		name := fmt.Sprintf("%s/%s/%d", c.version, c.gpu, c.block)
		s := mlaSetup(t, Config{GPU: c.gpu, VLLMVersion: c.version, BlockSize: c.block, TensorParallelSize: 2})
		l := s.Capacity.Layout
		assert.Equal(t, c.want, l.BlockSize, name)
		assert.Equal(t, c.backend, l.BlockSizeForcedBy, name)
		assert.Equal(t, int64(c.want)*l.AttentionBytesPerToken*27, l.BlockBytes(), name)
	}
	dense := mlaSetup(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "H100", VLLMVersion: "0.10.0"})
	assert.Equal(t, 16, dense.Capacity.Layout.BlockSize, "only MLA models")
}

// TestMLALayoutMatchesRealLogs: the layouts reproduce vLLM's own figures.
func TestMLALayoutMatchesRealLogs(t *testing.T) {
	// PR #10927 (Dec 2024, before MLA): DeepSeek-V2-Lite-Chat, fp16, H100: "kv_cache_size=35.42GiB",
	// "# GPU blocks: 5373". 16 heads x 256 x 2 (K and V) x 2 bytes x 27 layers x 16 tokens a block.
	old := mlaSetup(t, Config{Model: "deepseek-ai/DeepSeek-V2-Lite-Chat", GPU: "H100", DType: "float16", VLLMVersion: "0.6.4"})
	assert.Equal(t, int64(7077888), old.Capacity.Layout.BlockBytes())
	assert.Equal(t, "35.42", FormatGiB(5373*old.Capacity.Layout.BlockBytes()))

	// PR #14842 (March 2025, V0 with FlashMLA's 64-token blocks): "# cuda blocks: 4739",
	// "Maximum concurrency for 163840 tokens per request: 1.85x".
	r1 := mlaSetup(t, Config{Model: "deepseek-ai/DeepSeek-R1", GPU: "H200", TensorParallelSize: 8, MaxModelLen: 163840, VLLMVersion: "0.8.0"})
	_, conc, _ := KVCapacity(r1.Capacity.Layout, 4739*r1.Capacity.Layout.BlockBytes(), 163840, r1.Version)
	assert.Equal(t, "1.85", fmt.Sprintf("%.2f", conc))
}

// TestMLAModelConfigMatchesCatalogue: DeepSeek-V2-Lite sized from its config.json lays its
// cache out as the catalogue entry does, release by release, GPU by GPU.
func TestMLAModelConfigMatchesCatalogue(t *testing.T) {
	fromConfig := loadTestConfig(t, "test/DeepSeek-V2-Lite", "deepseek-v2-lite")
	for _, v := range []string{"0.5.1", "0.6.4", "0.7.1", "0.7.2", "0.7.3", "0.8.0", "0.10.1", "0.15.0", DefaultVersion} {
		for _, g := range []string{"H100", "A100-SXM-80GB", "B200", "MI300X"} {
			for _, tp := range []int{1, 2} {
				cfg := Config{GPU: g, VLLMVersion: v, TensorParallelSize: tp, MaxModelLen: 32768}
				a := layoutFor(t, fromConfig, cfg).Capacity.Layout
				cfg.Model = "deepseek-ai/DeepSeek-V2-Lite"
				b := mlaSetup(t, cfg).Capacity.Layout
				name := fmt.Sprintf("%s/%s/tp%d", v, g, tp)
				assert.Equal(t, []int64{b.AttentionBytesPerToken, int64(b.BlockSize), b.BlockBytes()},
					[]int64{a.AttentionBytesPerToken, int64(a.BlockSize), a.BlockBytes()}, name)
				assert.Equal(t, b.BlockSizeForcedBy, a.BlockSizeForcedBy, name)
			}
		}
	}
}

// gpuArch reads the architecture from the name, and from the compute capability where the
// name is not one it knows (a --sim-profiles card of another name).
func TestGPUArchFromNameOrCapability(t *testing.T) {
	for _, tc := range []struct {
		name string
		cc   float64
		want string
	}{
		{"H100-SXM-80GB", 9.0, archHopper},
		{"my-hopper", 9.0, archHopper},
		{"B200", 10.0, archSM100},
		{"lab-blackwell", 10.3, archSM100},
		{"RTX-5090", 12.0, archOther},
		{"MI300X", 9.4, archAMD},
		{"A100-SXM-80GB", 8.0, archOther},
	} {
		assert.Equal(t, tc.want, gpuArch(GPU{Name: tc.name, ComputeCapability: tc.cc}), tc.name)
	}
}
