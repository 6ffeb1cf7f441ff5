package sim

// One rank's weights on its GPU, after the experts' sharding (experts.go): draft layers
// added, --cpu-offload-gb's share taken off.

// gpuWeightBytes is what one rank's weights take on its GPU: its share with any draft layers
// (MTP, EAGLE), less what --cpu-offload-gb keeps in host memory, with the rotary tables built at load.
func gpuWeightBytes(s *Setup) int64 {
	w := rankWeightBytes(s)
	w += draftWeightBytes(s, w)
	return int64(w - cpuOffloadBytes(s, w) + ropeCacheBytes(s))
}

// cpuOffloadBytes is what --cpu-offload-gb takes off one rank's weights: vLLM's
// maybe_offload_to_cpu moves the decoder layers' parameters to pinned host memory one by one
// until the budget is spent, so up to the budget and at most the rank's decoder layers (not the
// embedding, LM head or encoders).
func cpuOffloadBytes(s *Setup, rankWeights float64) float64 {
	budget := s.CPUOffloadGiB * gib
	if budget <= 0 {
		return 0
	}
	db, _ := dtypeBytes(s.ModelDType)
	return min(budget, max(0, rankWeights-nonDecoderBytes(s, db)))
}

// nonDecoderBytes is the part of a rank's weights outside its decoder layers: the embedding
// on the first stage, the LM head on the last (one table where tied on one GPU) and encoders.
func nonDecoderBytes(s *Setup, db float64) float64 {
	m := s.ModelProfile
	if s.stage != nil {
		m = s.stage.full
	}
	tables := 0.0
	if s.firstStage() {
		tables++
	}
	if s.lastStage() && (s.stage != nil || !m.TieWordEmbeddings) {
		tables++ // the LM head; a tied one is the embedding on one GPU
	}
	return (tables*m.EmbeddingParams() + m.EncoderParams) * db / float64(s.TensorParallelSize)
}
