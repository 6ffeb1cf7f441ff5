package sim

import (
	"fmt"
	"strings"
)

// How a mixture-of-experts model's routed experts are spread over the GPUs
// (docs/vllm-behaviour.md#experts-across-data-parallel-ranks). vLLM's FusedMoEParallelConfig
// flattens the tensor-parallel ranks of every data-parallel engine into one group for the
// expert layers: without expert parallelism each of the TP x DP ranks holds a 1/(TP x DP)
// slice of every expert; with it (--enable-expert-parallel) each holds whole experts, the
// model's and EPLB's redundant copies dealt out evenly, the first ranks taking one more where
// they do not divide. Attention and the dense layers stay split over TP alone, so a
// data-parallel engine repeats them.

// moeShards is the number of ranks the routed experts are spread over: TP x DP.
func (s *Setup) moeShards() int { return s.TensorParallelSize * max(1, s.DataParallelSize) }

// expertsBeyondTP reports a mixture of experts whose experts are not simply split over the
// tensor-parallel ranks: spread over data-parallel engines too, or dealt out whole.
func (s *Setup) expertsBeyondTP() bool {
	return s.ModelProfile.IsMoE() && (s.moeShards() > s.TensorParallelSize || s.expertParallel())
}

// expertParallel is whether the experts are dealt out whole: --enable-expert-parallel over
// more than one rank (use_ep is false on one).
func (s *Setup) expertParallel() bool { return s.ExpertParallel && s.moeShards() > 1 }

// expertSlices is how many slices each expert's intermediate size is cut into: TP x DP, or
// none (1) with expert parallelism.
func (s *Setup) expertSlices() int {
	if s.expertParallel() {
		return 1
	}
	return s.moeShards()
}

// LocalExperts is the number of experts the busiest rank holds with expert parallelism:
// ceil((E + redundant) / ranks); every expert, as slices, without it.
func (s *Setup) LocalExperts() int {
	m := s.ModelProfile
	if !s.expertParallel() {
		return m.NumExperts
	}
	return ceilDiv(m.NumExperts+s.RedundantExperts, s.moeShards())
}

// routedExpertRankBytes is what one rank holds of the routed experts that routedExpertBytes
// counts across the tensor-parallel group: the same divided by TP when there is one engine
// and no expert parallelism.
func routedExpertRankBytes(s *Setup) float64 {
	m := s.ModelProfile
	whole := routedExpertBytes(s)
	if whole == 0 {
		return 0
	}
	q := s.weightQuantization()
	mxfp4 := m.ExpertBytesPerParam > 0 && q == ""
	switch {
	case s.expertParallel() && mxfp4:
		// Whole experts keep the full intermediate size, padded as on one GPU.
		return mxfp4ExpertBytesPerRank(m, 1) * float64(s.LocalExperts()) / float64(m.NumExperts)
	case s.expertParallel():
		return whole * float64(s.LocalExperts()) / float64(m.NumExperts)
	case mxfp4:
		return mxfp4ExpertBytesPerRank(m, s.moeShards())
	}
	return whole / float64(s.moeShards())
}

// stageRoutedShare is the fraction of the routed experts a pipeline stage holds: those of its
// own routed layers.
func stageRoutedShare(s *Setup) float64 {
	if s.stage == nil {
		return 1
	}
	m := s.stage.full
	end := s.stage.first + s.stage.layers
	if m.FirstDenseLayers > 0 {
		here := max(0, end-max(s.stage.first, m.FirstDenseLayers))
		return float64(here) / float64(max(1, m.RoutedLayers()))
	}
	return float64(s.stage.layers) / float64(max(1, m.NumLayers))
}

// rankWeightBytes is one rank's weights: its stage's share split over TP, with the routed
// experts' part replaced by what expert sharding leaves the rank.
func rankWeightBytes(s *Setup) float64 {
	tp := float64(s.TensorParallelSize)
	w := stageWeightBytes(s) / tp
	if !s.expertsBeyondTP() {
		return w
	}
	whole := *s
	if s.stage != nil {
		whole.ModelProfile, whole.stage = s.stage.full, nil
	}
	share := stageRoutedShare(s)
	return w - routedExpertBytes(&whole)*share/tp + routedExpertRankBytes(&whole)*share
}

// expertsNote is the plan's line on the experts where their sharding is not TP's alone.
func expertsNote(s *Setup) string {
	m := s.ModelProfile
	if !s.expertsBeyondTP() {
		return ""
	}
	ranks := fmt.Sprintf("%d ranks (TP %d x DP %d)", s.moeShards(), s.TensorParallelSize, max(1, s.DataParallelSize))
	if !s.expertParallel() {
		return fmt.Sprintf("Experts: each of the %d routed experts is split over %s; attention and dense layers over TP", m.NumExperts, ranks)
	}
	total := m.NumExperts + s.RedundantExperts
	copies := ""
	if s.RedundantExperts > 0 {
		copies = fmt.Sprintf(" + %d redundant", s.RedundantExperts)
	}
	return fmt.Sprintf("Experts: %d routed%s dealt out whole over %s, up to %d a rank; attention and dense layers over TP",
		m.NumExperts, copies, ranks, ceilDiv(total, s.moeShards()))
}

// blockFP8ExpertError is the ValueError vLLM's FP8 MoE method raises as it builds the experts
// of a block-scaled checkpoint whose slice of an expert is not a whole number of blocks
// (Fp8MoEMethod.create_weights): Qwen3-235B-A22B-FP8's 1,536-wide experts cut over 8 ranks
// are 192 wide, not a multiple of 128. Expert parallelism keeps the experts whole, the
// usual way out.
func blockFP8ExpertError(cfg *Config, m Model) error {
	shards := cfg.TensorParallelSize * max(1, cfg.DataParallelSize)
	if !m.IsMoE() || len(m.WeightBlockSize) != 2 || m.WeightBlockSize[0] <= 0 || shards == 1 ||
		cfg.ExpertParallel || !strings.EqualFold(m.Quantization, "fp8") {
		return nil
	}
	slice, block := m.IntermediateSize/shards, m.WeightBlockSize[0]
	if m.IntermediateSize%shards == 0 && slice%block == 0 {
		return nil
	}
	return &EngineConfigError{fmt.Sprintf("The output_size of gate's and up's weight = %d is not divisible by weight quantization block_n = %d.", slice, block)}
}
