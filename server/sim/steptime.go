package sim

import (
	"math"
	"time"
)

// Work is one request's share of an engine step: Q new tokens computed on top of C tokens
// already in its KV cache (a decode is Q=1; a prefill chunk is Q>1).
type Work struct{ Q, C int }

// StepModel is the roofline model of one engine step (sim-model.md 6.2), with every constant
// taken from the GPU, model and host profiles. It is immutable and safe for concurrent use.
type StepModel struct {
	floor       float64 // per-layer kernel floor x layers, seconds
	weightsTime float64 // t_w: streaming the weights once, seconds
	layerFLOPs  float64 // 2 x transformer params (FLOPs per token)
	headFLOPs   float64 // 2 x LM-head params (FLOPs per sequence: only the last token needs logits)
	gemmRate    float64 // effective GEMM FLOP/s
	attnRate    float64 // effective attention FLOP/s
	bandwidth   float64 // effective bytes/s
	kvBytes     float64 // KV bytes per token on this GPU
	attnCoef    float64 // 4 x layers x heads x head_dim / TP
	hostStep    float64 // seconds
	hostPerSeq  float64 // seconds
}

// NewStepModel builds the step model for a resolved setup.
func NewStepModel(s *Setup) *StepModel {
	g, m, h := s.GPUProfile, s.ModelProfile, s.HostProfile
	tp := float64(s.TensorParallelSize)
	bw := g.EtaBandwidth * g.BandwidthTBps * 1e12
	return &StepModel{
		floor:       float64(m.NumLayers) * g.LayerFloorUS * 1e-6,
		weightsTime: readBytesPerStep(s) / bw,
		layerFLOPs:  2 * m.LayerParams() / tp,
		headFLOPs:   2 * m.EmbeddingParams() / tp,
		gemmRate:    g.EtaGEMM * g.BF16TFLOPS * 1e12,
		attnRate:    g.EtaAttention * g.BF16TFLOPS * 1e12,
		bandwidth:   bw,
		kvBytes:     float64(s.Capacity.BytesPerToken),
		attnCoef:    4 * float64(m.NumLayers*m.NumAttentionHeads*m.HeadDim) / tp,
		hostStep:    h.StepMS * 1e-3,
		hostPerSeq:  h.PerSeqUS * 1e-6,
	}
}

// GPUSeconds is the GPU time of a step: the per-layer floor, a smooth roofline over weight
// streaming and GEMM FLOPs, and attention as the larger of KV reads and attention FLOPs.
func (sm *StepModel) GPUSeconds(batch []Work) float64 {
	var tokens, seqs, kvTokens, attnFLOPs float64
	for _, w := range batch {
		q, c := float64(w.Q), float64(w.C)
		tokens += q
		seqs++
		kvTokens += c + q
		attnFLOPs += sm.attnCoef * q * (c + q/2)
	}
	return sm.gpuSeconds(tokens, seqs, kvTokens, attnFLOPs)
}

func (sm *StepModel) gpuSeconds(tokens, seqs, kvTokens, attnFLOPs float64) float64 {
	if seqs == 0 {
		return 0
	}
	tg := (sm.layerFLOPs*tokens + sm.headFLOPs*seqs) / sm.gemmRate
	gemm := math.Hypot(sm.weightsTime, tg)
	attn := max(kvTokens*sm.kvBytes/sm.bandwidth, attnFLOPs/sm.attnRate)
	return sm.floor + gemm + attn
}

// HostSeconds is the scheduler's CPU time for a step of seqs sequences.
func (sm *StepModel) HostSeconds(seqs int) float64 {
	return sm.hostStep + sm.hostPerSeq*float64(seqs)
}

// StepDuration is the whole step: host plus GPU.
func (sm *StepModel) StepDuration(batch []Work) time.Duration {
	return seconds(sm.HostSeconds(len(batch)) + sm.GPUSeconds(batch))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
