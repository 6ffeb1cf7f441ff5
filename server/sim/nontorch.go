package sim

// Non-torch memory of a tensor-parallel rank on the V1 engine
// (docs/calibration.md#tensor-parallel-non-torch-memory). Two changes of 2025-09 moved it:
// vLLM stopped forcing NCCL_CUMEM_ENABLE=0 (vllm#24141) and started NCCL before its memory
// snapshot (vllm#25359). Since then the profile run counts what NCCL and the all-reduce
// kernels allocate at their first large collective; on Hopper and Blackwell boards with
// NVLink that is about 1.8 GiB a rank, fitted on fit-split H100 cases of vLLM 0.19.
const (
	// lazyNCCLRelease is the first release with both changes.
	lazyNCCLRelease = "0.11.0"
	// nvlinkTPNonTorchGiB and nvlinkTPNonTorchPerPeerGiB: a rank's extra non-torch memory on
	// an NVLink Hopper/Blackwell board is the first at TP 2 plus the second for each rank
	// beyond two (fit split, 0.19 H100: 1.83 GiB at TP 2, 1.88 at TP 4, over TP 1).
	nvlinkTPNonTorchGiB        = 1.83
	nvlinkTPNonTorchPerPeerGiB = 0.027
)

// nvlinkHopperClass names the built-in GPUs of compute capability 9.0 or 10.0 that are sold
// on NVLink/NVSwitch baseboards (SXM): where the lazily connected NCCL channels and
// FlashInfer's fused all-reduce (Hopper and Blackwell only) were measured.
var nvlinkHopperClass = map[string]bool{
	"H100-SXM-80GB": true,
	"H200":          true,
	"H20":           true,
	"H20-141GB":     true,
	"B200":          true,
}

// a100NVLinkClass names the built-in A100s on NVLink baseboards (SXM), where the device memory
// of one NCCL communicator was measured (NVIDIA/nccl#964).
var a100NVLinkClass = map[string]bool{
	"A100-SXM-80GB": true,
	"A100-SXM-40GB": true,
}

// What one NCCL communicator holds on a 4 x A100 NVLink node, PyTorch's process groups with a
// 4 MB all-reduce run on each (NVIDIA/nccl#964, August 2023): 544 MiB for a group of two GPUs,
// 688 MiB for more. V0's profile sees two on every tensor-parallel rank: the default group,
// which the worker warms up with an all-reduce before it builds the model-parallel groups, and
// the tensor-parallel group, which every layer's all-reduce uses.
const (
	a100NCCLCommPairGiB  = 544.0 / 1024
	a100NCCLCommGroupGiB = 688.0 / 1024
)

// a100NCCLCommGiB is what one communicator of ranks GPUs holds on an A100 NVLink board.
func a100NCCLCommGiB(ranks int) float64 {
	if ranks <= 2 {
		return a100NCCLCommPairGiB
	}
	return a100NCCLCommGroupGiB
}

// tensorParallelNonTorchGiB is what one rank at s's tensor-parallel size holds outside torch
// besides the single-GPU figure: host.NonTorchTPGiB (fitted on A100 at 0.10.1.1) where the
// profile does not see NCCL's buffers or the GPU was not measured, the NVLink Hopper figure
// where it does, and V0's two communicators on an A100 NVLink board.
func tensorParallelNonTorchGiB(s *Setup) float64 {
	tp := s.TensorParallelSize
	if tp <= 1 {
		return 0
	}
	if !profileCountsNCCL(s.Version) {
		return s.HostProfile.NonTorchTPGiB
	}
	switch {
	case nvlinkHopperClass[s.GPUProfile.Name]:
		return nvlinkTPNonTorchGiB + nvlinkTPNonTorchPerPeerGiB*float64(tp-2)
	case !s.Version.V1Engine() && a100NVLinkClass[s.GPUProfile.Name]:
		// The default group spans every rank (TP x PP), the tensor-parallel group its TP.
		return a100NCCLCommGiB(tp*max(1, s.PipelineParallelSize)) + a100NCCLCommGiB(tp)
	}
	return s.HostProfile.NonTorchTPGiB
}

// profileCountsNCCL reports whether release v's memory profile counts what NCCL allocates on
// the device. V0 did from 0.2.5, where vllm#2031 read the device's free memory (sampled before
// the communicators were set up) and, from 0.6.4, every byte outside torch: the fit-split
// logs of vllm#10511 (0.6.5, Llama-3-8B on H100s) put 1.79 GiB more on a TP 2 rank than on
// one GPU, the size of the V1 figure. V1 did not from 0.8 to 0.10 (NCCL set up before the
// snapshot, cuMem off) and does again from lazyNCCLRelease.
func profileCountsNCCL(v Version) bool {
	if !v.V1Engine() {
		return v.AtLeast("0.2.5")
	}
	return v.AtLeast(lazyNCCLRelease)
}

// Single-GPU non-torch memory grew over V1's releases; what each fit log shows over the host
// profile's figure (0.007 GiB, fitted on the 0.10.1.1 Qwen2-7B fixture; the 0.10.0 B200 fit
// log prints 0.07). Each step is taken from the first release whose fit log shows it: the
// change happened there or before (docs/calibration.md#activation-memory).
const (
	// nonTorchV016GiB: 0.13 GiB at 0.16.0 (requested minus weights, activations and KV cache
	// in the fit log of Qwen3-14B on an H100), over 0.007.
	nonTorchV016GiB = 0.123
	// nonTorchV019GiB: 0.25 GiB at 0.19.0 (the median of the DEBUG lines of eight fit logs on
	// H100, 0.24 to 0.26), over 0.007.
	nonTorchV019GiB = 0.243
)

// releaseNonTorchGiB is what release v's single-GPU non-torch memory adds to the host
// profile's figure.
func releaseNonTorchGiB(v Version) float64 {
	switch {
	case v.AtLeast("0.19.0"):
		return nonTorchV019GiB
	case v.AtLeast("0.16.0"):
		return nonTorchV016GiB
	}
	return 0
}
