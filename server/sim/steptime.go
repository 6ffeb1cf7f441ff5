package sim

import (
	"math"
	"strings"
	"time"
)

// Work is one request's share of an engine step: Q new tokens computed on top of C tokens
// already in its KV cache (a decode is Q=1, or 1 + the draft tokens it verifies with
// speculative decoding; a prefill chunk is Q>1).
type Work struct{ Q, C int }

// StepModel is the roofline model of one engine step (docs/calibration.md#step-time-model), with every constant
// taken from the GPU, model and host profiles. It is immutable and safe for concurrent use.
//
// Beyond a dense transformer it knows three layer and weight shapes:
//   - sliding-window layers read at most their window of KV, however long the context;
//   - Gated-DeltaNet layers read and write a fixed-size state per request and step instead
//     of a growing KV cache;
//   - mixture-of-experts layers compute with the active parameters only, and stream the
//     experts a batch touches: with B tokens each choosing k of E experts, an expert is
//     read with probability 1 - (1 - k/E)^B.
type StepModel struct {
	floor       float64 // per-layer kernel floor x layers, seconds
	eagerFloor  float64 // with --enforce-eager, the CPU's launches of every layer's kernels, seconds
	denseBytes  float64 // weights every step streams: non-expert layers and the LM head, per GPU
	expertBytes float64 // all experts of all layers, per GPU (0 for a dense model)
	expertFrac  float64 // k / E
	moeLatency  float64 // the fused-MoE kernels' latency over all routed layers, seconds (fusedMoELatency)
	layerFLOPs  float64 // FLOPs per token in the layers (2 x active layer params / TP)
	expertFLOPs float64 // the routed experts' share of layerFLOPs (2 x k x one expert's params / TP)
	headFLOPs   float64 // FLOPs per sequence of the LM head (only the last token needs logits)
	gemmRate    float64 // effective GEMM FLOP/s of the layers
	expertRate  float64 // the fused-MoE kernel's effective FLOP/s on the routed experts
	headRate    float64 // the LM head's, which vLLM keeps in 16 bits in a quantized model
	attnRate    float64 // effective attention FLOP/s
	bandwidth   float64 // effective bytes/s

	kvBytes      float64 // full-attention KV bytes per token on this GPU
	slidingBytes float64 // sliding-window KV bytes per token on this GPU
	window       float64 // sliding window, tokens
	stateBytes   float64 // Gated-DeltaNet state per request, read and written every step
	attnCoef     float64 // 4 x full-attention layers x heads x head_dim / TP
	slidingCoef  float64 // the same for the sliding-window layers

	allReduce    allReduce
	peakRate     float64  // the GPU's dense tensor peak for the weights' format, FLOP/s
	draftSeconds float64  // one drafting pass of an EAGLE/MTP head, seconds (0: none, or n-gram)
	pipe         pipeline // pipeline stages (pipeline_step.go); size 1 without
	hostStep     float64  // seconds
	hostPerSeq   float64  // seconds
	overlap      bool     // async scheduling: the host's work runs while the GPU runs the last step
}

// NewStepModel builds the step model for a resolved setup.
func NewStepModel(s *Setup) *StepModel {
	g, m, h := s.GPUProfile, s.ModelProfile, s.HostProfile
	tp := float64(s.TensorParallelSize)
	bw := g.EtaBandwidth * g.BandwidthTBps * 1e12
	db, _ := dtypeBytes(s.ModelDType)
	q := s.weightQuantization()
	linear := linearWeightBytes(q, db)

	head := m.EmbeddingParams()
	layers, activeLayers := m.LayerParams(), m.LayerParams()
	var experts, frac, routed float64
	if m.IsMoE() {
		experts = float64(m.NumExperts) * m.ExpertParams()
		layers -= experts
		activeLayers = m.ActiveParams - head
		frac = float64(m.ExpertsPerToken) / float64(m.NumExperts)
		routed = float64(m.ExpertsPerToken) * m.ExpertParams()
	}
	c := s.Capacity
	sm := &StepModel{
		floor:        float64(m.NumLayers) * g.LayerFloorUS * 1e-6,
		denseBytes:   (layers*linear + head*db) / tp,
		expertBytes:  experts * expertBytes(m, q, db) / tp,
		expertFrac:   frac,
		moeLatency:   float64(m.RoutedLayers()) * fusedMoELatency,
		layerFLOPs:   2 * activeLayers / tp,
		expertFLOPs:  2 * routed / tp,
		headFLOPs:    2 * head / tp,
		gemmRate:     g.EtaGEMM * gemmPeakTFLOPS(s) * 1e12,
		expertRate:   fusedMoERate(s, expertBytes(m, q, db)) * g.EtaGEMM * g.BF16TFLOPS * 1e12,
		headRate:     g.EtaGEMM * g.BF16TFLOPS * 1e12,
		attnRate:     g.EtaAttention * g.BF16TFLOPS * 1e12,
		bandwidth:    bw,
		kvBytes:      float64(c.BytesPerToken),
		slidingBytes: float64(c.SlidingBytesPerToken),
		window:       float64(m.SlidingWindow),
		stateBytes:   2 * float64(c.StateBytesPerSeq),
		attnCoef:     4 * float64(m.NumFullAttentionLayers()*m.NumAttentionHeads*m.HeadDim) / tp,
		slidingCoef:  4 * float64(m.NumSlidingWindowLayers*m.NumAttentionHeads*m.HeadDim) / tp,
		hostStep:     h.StepMS * 1e-3,
		hostPerSeq:   h.PerSeqUS * 1e-6,
		allReduce:    newAllReduce(g, m, s.TensorParallelSize, db),
		peakRate:     g.BF16TFLOPS * 1e12,
	}
	sm.overlap = asyncScheduling(s) && !h.SerialSteps
	if s.EnforceEager {
		sm.eagerFloor = float64(m.NumLayers) * h.EagerLayerUS * 1e-6
	}
	if (q != "" || m.Quantization != "") && g.FP8TFLOPS > g.BF16TFLOPS {
		sm.peakRate = g.FP8TFLOPS * 1e12 // quantized GEMMs may run at the 8-bit peak
	}
	sm.pipe = newPipeline(s)
	if sm.pipe.size > 1 {
		sm.kvBytes, sm.slidingBytes, sm.stateBytes = wholeModelKV(s)
	}
	if sp := s.Speculative; sp != nil && sp.Method != "ngram" {
		// One drafting pass runs a single decoder layer and the LM head (EAGLE and MTP heads
		// are one layer; a draft model is taken as the same size).
		layer := (layers / float64(max(1, m.NumLayers))) * linear / tp
		sm.draftSeconds = 2*g.LayerFloorUS*1e-6 + (layer+head*db/tp)/bw
	}
	return sm
}

// fusedMoEEfficiency is the routed experts' GEMM rate as a share of the dense layers' 16-bit
// one where the kernel's timings do not say how it depends on the experts' width: the median of
// seven published timings of vLLM's Triton fused-MoE kernel at 1,024 to 4,096 tokens
// (Mixtral-8x7B, Qwen3-30B-A3B in FP8 and Gemma 4 26B-A4B on H100 and H200, 0.24 to 0.81 of
// 0.6 x the 16-bit peak). Many small GEMMs, one per expert, and the sorting of tokens by expert
// keep it below a dense GEMM of the same FLOPs (docs/calibration.md#fused-moe-kernel).
const fusedMoEEfficiency = 0.44

// The same seven timings, taken by the width of the experts a rank holds (N, the intermediate
// size over the slices it is cut into): the kernel multiplies each expert's tokens by a K x N
// slice, and the narrower the slice the fewer tiles keep the GPU busy. Least squares over the
// timings' logarithms give efficiency = fusedMoEWidthCoef x N^fusedMoEWidthExp: 0.76 at N =
// 7,168, 0.35 at 768, 0.24 at 256 (docs/calibration.md#fused-moe-kernel).
const (
	fusedMoEWidthCoef = 0.03656
	fusedMoEWidthExp  = 0.3417
)

// fusedMoERate is the routed experts' GEMM rate as a share of the 16-bit dense rate, for the
// experts of s stored at bytesPerParam: by the experts' width for 16- and 8-bit weights, the
// Triton kernel the timings measured; the flat median for 4-bit formats (MXFP4, NVFP4, AWQ,
// GPTQ), whose kernels are others and have no timings here.
func fusedMoERate(s *Setup, bytesPerParam float64) float64 {
	m := s.ModelProfile
	if bytesPerParam < 1 || m.IntermediateSize <= 0 {
		return fusedMoEEfficiency
	}
	n := float64(m.IntermediateSize) / float64(max(1, s.expertSlices()))
	return min(1, fusedMoEWidthCoef*math.Pow(n, fusedMoEWidthExp))
}

// fusedMoEBandwidth is the share of the card's effective bandwidth at which the fused-MoE kernel
// streams the experts a decode step touches, and fusedMoELatency its latency per routed layer
// while few experts are touched, scaled by the share of experts a batch leaves untouched,
// (1 - k/E)^tokens. Both are fitted together on published timings of four kernels at 1 to 128
// tokens: the bandwidth is the median of fifteen at 16 to 128 tokens (0.77 to 1.06), the latency
// the median of twelve at 1 to 4 tokens (docs/calibration.md#fused-moe-kernel).
const (
	fusedMoEBandwidth = 0.95
	fusedMoELatency   = 44e-6
)

// deepGEMMRelease is the first release that multiplies block-scaled FP8 weights with DeepGEMM
// by default on Hopper and Blackwell (vllm#24462, merged September 2025).
const deepGEMMRelease = "0.11.0"

// gemmPeakTFLOPS is the tensor peak the model's linear layers run at: the 8-bit one for FP8
// weights on a card with FP8 tensor cores (compute capability 8.9 on), where vLLM quantizes the
// activations too and multiplies in FP8 (W8A8); the 16-bit one otherwise, including FP8 weights
// on older cards, which vLLM's Marlin kernel widens to 16 bits (weight-only), and the 4-bit
// and INT8 formats, whose own peaks the GPU profiles do not carry. Block-scaled FP8 checkpoints
// (DeepSeek-V3's [128, 128] scales) reach the 8-bit rate only with DeepGEMM; vLLM's CUTLASS and
// Triton block-scaled kernels measure at about the 16-bit rate (docs/calibration.md#fp8-gemms).
func gemmPeakTFLOPS(s *Setup) float64 {
	// A quantized checkpoint's format is its own; --quantization quantizes a 16-bit one.
	g, m := s.GPUProfile, s.ModelProfile
	q := strings.ToLower(m.Quantization)
	if q == "" {
		q = storageMethod(strings.ToLower(s.Quantization))
	}
	if q != "fp8" || g.ComputeCapability < 8.9 || g.FP8TFLOPS <= g.BF16TFLOPS {
		return g.BF16TFLOPS
	}
	if len(m.WeightBlockSize) > 0 && !usesDeepGEMM(s) {
		return g.BF16TFLOPS
	}
	return g.FP8TFLOPS
}

// usesDeepGEMM reports whether the release multiplies block-scaled FP8 weights with DeepGEMM
// on this card: Hopper and SM100 Blackwell only, from deepGEMMRelease, where it is installed.
func usesDeepGEMM(s *Setup) bool {
	arch := gpuArch(s.GPUProfile)
	return (arch == archHopper || arch == archSM100) && s.Version.AtLeast(deepGEMMRelease) &&
		s.DeepGEMM != DeepGEMMAbsent
}

// PeakPrefillSeconds is the least time a cold prefill of tokens can take on this GPU: the
// decoder layers' FLOPs at the card's dense tensor peak, with no attention, no LM head and no
// efficiency below 1. A measured time to first token below it means the server did not compute
// the whole prompt (its prefix cache held it).
func (sm *StepModel) PeakPrefillSeconds(tokens int) float64 {
	return float64(tokens) * sm.layerFLOPs / sm.peakRate
}

// GPUSeconds is the GPU time of a step: the per-layer floor, a smooth roofline over weight
// streaming and GEMM FLOPs, attention as the larger of KV reads and attention FLOPs, the
// linear-attention state traffic and the tensor-parallel all-reduces; with pipeline stages, the
// pipeline's period for the batch.
func (sm *StepModel) GPUSeconds(batch []Work) float64 {
	if sm.pipe.size > 1 {
		return sm.pipelineSeconds(batch)
	}
	return sm.modelSeconds(batch)
}

// modelSeconds is one pass of batch through every layer of the model.
func (sm *StepModel) modelSeconds(batch []Work) float64 {
	var tokens, seqs, kvRead, attnFLOPs float64
	for _, w := range batch {
		q, c := float64(w.Q), float64(w.C)
		tokens += q
		seqs++
		kvRead += (c + q) * sm.kvBytes
		attnFLOPs += sm.attnCoef * q * (c + q/2)
		if sm.slidingBytes > 0 {
			kvRead += min(c+q, sm.window+q) * sm.slidingBytes
			attnFLOPs += sm.slidingCoef * q * min(c+q/2, sm.window)
		}
	}
	if seqs == 0 {
		return 0
	}
	weights := sm.denseBytes
	if sm.expertBytes > 0 {
		weights += sm.expertBytes * (1 - math.Pow(1-sm.expertFrac, tokens)) / fusedMoEBandwidth
	}
	tw := weights / sm.bandwidth
	tg := (sm.layerFLOPs-sm.expertFLOPs)*tokens/sm.gemmRate + sm.expertFLOPs*tokens/sm.expertRate +
		sm.headFLOPs*seqs/sm.headRate
	attn := max(kvRead/sm.bandwidth, attnFLOPs/sm.attnRate) + seqs*sm.stateBytes/sm.bandwidth
	gpu := sm.floor + math.Hypot(tw, tg) + attn + sm.allReduce.seconds(tokens)
	if sm.moeLatency > 0 {
		// While a batch touches few experts the kernels cannot spread their reads over the
		// GPU, and a latency shows that fades as more experts are touched.
		gpu += sm.moeLatency * math.Pow(1-sm.expertFrac, tokens)
	}
	// Without CUDA graphs the CPU launches each kernel and the GPU runs behind it: a step
	// takes the longer of the two (docs/calibration.md#eager-mode).
	return max(gpu, sm.eagerFloor)
}

// DraftSeconds is the drafting of k tokens for a step's speculating requests: k sequential
// passes of the draft head (n-gram drafting is CPU work inside the host cost).
func (sm *StepModel) DraftSeconds(k int) float64 { return float64(k) * sm.draftSeconds }

// HostSeconds is the scheduler's CPU time for a step of seqs sequences.
func (sm *StepModel) HostSeconds(seqs int) float64 {
	return sm.hostStep + sm.hostPerSeq*float64(seqs)
}

// StepDuration is the whole step: host plus GPU, or the longer of the two where async
// scheduling hides the host's work behind the GPU's.
func (sm *StepModel) StepDuration(batch []Work) time.Duration {
	if sm.overlap {
		return seconds(max(sm.HostSeconds(len(batch)), sm.GPUSeconds(batch)))
	}
	return seconds(sm.HostSeconds(len(batch)) + sm.GPUSeconds(batch))
}

// asyncScheduling reports whether the release schedules step N+1 while the GPU runs step N:
// --async-scheduling where given, else vLLM's default, on from 0.14 except with pipeline
// parallelism or drafts other than EAGLE and MTP (docs/calibration.md#async-scheduling).
func asyncScheduling(s *Setup) bool {
	switch s.Config.AsyncScheduling {
	case On:
		return true
	case Off:
		return false
	}
	drafts := true
	if sp := s.Speculative; sp != nil {
		drafts = sp.Method == "eagle" || sp.Method == "eagle3" || sp.Method == "mtp"
	}
	return s.Version.AtLeast(asyncSchedulingRelease) && s.Config.PipelineParallelSize <= 1 && drafts
}

// asyncSchedulingRelease is the first release with async scheduling on by default.
const asyncSchedulingRelease = "0.14.0"

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
