package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTensorParallelNonTorchByReleaseAndGPU(t *testing.T) {
	const hostTP = 0.30
	cases := []struct {
		name, gpu, version string
		tp                 int
		want               float64
	}{
		{"one GPU holds no NCCL buffers", "H100-SXM-80GB", "0.19.0", 1, 0},
		{"the A100 fixture's release keeps the host figure", "A100-SXM-80GB", "0.10.1.1", 4, hostTP},
		{"H100 before the lazy NCCL release", "H100-SXM-80GB", "0.10.1.1", 2, hostTP},
		{"H100 at TP 2 from 0.11", "H100-SXM-80GB", "0.11.0", 2, 1.83},
		{"H100 at TP 2, 0.19", "H100-SXM-80GB", "0.19.0", 2, 1.83},
		{"H100 at TP 4, 0.19", "H100-SXM-80GB", "0.19.0", 4, 1.884},
		{"H100 at TP 8, 0.19", "H100-SXM-80GB", "0.19.0", 8, 1.992},
		{"H200 at TP 2, 0.30", "H200", "0.30.0", 2, 1.83},
		{"B200 at TP 4", "B200", "0.21.0", 4, 1.884},
		{"A100 is not in the measured class", "A100-SXM-80GB", "0.19.0", 2, hostTP},
		{"nor is a PCIe Hopper", "H100-PCIe-80GB", "0.19.0", 2, hostTP},
		{"nor a consumer card", "RTX-4090", "0.19.0", 2, hostTP},
		{"nor a profile the catalogue does not name", "my-gpu", "0.19.0", 2, hostTP},
		{"V0's non-torch reading saw NCCL on H100", "H100-SXM-80GB", "0.6.5", 2, 1.83},
		{"and its free-memory reading before", "H100-SXM-80GB", "0.4.3", 4, 1.884},
		{"V0 on a PCIe card keeps the host figure", "T4", "0.4.3", 2, hostTP},
		{"V0 on an A100 NVLink board: two communicators of two GPUs", "A100-SXM-80GB", "0.2.5", 2, 2 * 544.0 / 1024},
		{"and of four", "A100-SXM-40GB", "0.6.5", 4, 2 * 688.0 / 1024},
		{"before the free-memory reading, the host figure", "A100-SXM-80GB", "0.2.4", 4, hostTP},
		{"an A100 PCIe card is not on the board", "A100-PCIe-80GB", "0.4.3", 4, hostTP},
	}
	for _, c := range cases {
		s := &Setup{Config: Config{TensorParallelSize: c.tp}, GPUProfile: GPU{Name: c.gpu},
			HostProfile: Host{NonTorchTPGiB: hostTP}, Version: MustVersion(c.version)}
		assert.InDelta(t, c.want, tensorParallelNonTorchGiB(s), 1e-9, c.name)
	}
	// With pipeline stages the default group spans them all: TP 2 x PP 2 is a group of four.
	pp := &Setup{Config: Config{TensorParallelSize: 2, PipelineParallelSize: 2}, GPUProfile: GPU{Name: "A100-SXM-80GB"},
		HostProfile: Host{NonTorchTPGiB: hostTP}, Version: MustVersion("0.4.3")}
	assert.InDelta(t, (688.0+544.0)/1024, tensorParallelNonTorchGiB(pp), 1e-9)
}

// The fit-split H100 logs of vLLM 0.19 (llm-d-planner sweep) log 2.06 and 2.13 GiB of
// non-torch memory at TP 2 and TP 4. Those of vllm#10511 (0.6.5, Llama-3-8B) log 1.79 GiB at
// TP 1 and 3.58 at TP 2: V0 takes 0.35 for one GPU (vllm#10517), and what TP 2 adds is checked.
func TestNonTorchMemoryOfTensorParallelRanks(t *testing.T) {
	cases := []struct {
		version string
		tp      int
		logged  float64
	}{
		{"0.19.0", 1, 0.24},
		{"0.19.0", 2, 2.06},
		{"0.19.0", 4, 2.13},
	}
	for _, c := range cases {
		s, err := Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "H100", TensorParallelSize: c.tp,
			VLLMVersion: c.version, MaxModelLen: 8192, GPUMemoryUtilization: 0.95}, nil)
		require.NoError(t, err, "%s TP %d", c.version, c.tp)
		got := float64(s.Capacity.NonTorchBytes) / gib
		assert.InEpsilon(t, c.logged, got, 0.05, "%s TP %d: %.3f GiB", c.version, c.tp, got)
	}
	v0 := func(version string, tp int) float64 {
		s, err := Resolve(Config{Model: "meta-llama/Meta-Llama-3-8B", GPU: "H100", TensorParallelSize: tp, VLLMVersion: version}, nil)
		require.NoError(t, err, "%s TP %d", version, tp)
		return float64(s.Capacity.NonTorchBytes) / gib
	}
	assert.InDelta(t, v0NonTorchGiB, v0("0.6.5", 1), 0.001)
	assert.InEpsilon(t, 3.58-1.79, v0("0.6.5", 2)-v0("0.6.5", 1), 0.05, "what a TP 2 rank adds at 0.6.5")
	assert.Zero(t, v0("0.2.4", 2), "before vllm#2031 the profile counted only torch's allocations")

	a100, err := Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "A100-SXM-80GB", TensorParallelSize: 2, VLLMVersion: "0.19.0"}, nil)
	require.NoError(t, err)
	h := a100.HostProfile
	assert.InDelta(t, h.NonTorchGiB+nonTorchV019GiB+h.NonTorchTPGiB, float64(a100.Capacity.NonTorchBytes)/gib, 0.001, "A100 keeps the 0.10.1.1 figure for its ranks")
}

// The single-GPU figure by release: the fit logs' 0.13 GiB at 0.16 and 0.25 at 0.19.
func TestNonTorchMemoryByRelease(t *testing.T) {
	for _, c := range []struct {
		version string
		want    float64
	}{{"0.10.1", 0.007}, {"0.15.0", 0.007}, {"0.16.0", 0.13}, {"0.18.0", 0.13}, {"0.19.0", 0.25}, {"0.33.0", 0.25}} {
		s, err := Resolve(Config{Model: "Qwen/Qwen3-14B", GPU: "H100", VLLMVersion: c.version}, nil)
		require.NoError(t, err)
		assert.InDelta(t, c.want, float64(s.Capacity.NonTorchBytes)/gib, 0.002, c.version)
	}
}
