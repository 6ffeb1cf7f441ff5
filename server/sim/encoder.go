package sim

// The V1 profile run encodes a batch of dummy multimodal items through the vision tower before
// the language model's dummy forward, and keeps the encoder outputs (the encoder cache's
// "tmp" entry) until after the sampler's run; V0 encoded them inside the dummy forward
// (docs/calibration.md#the-encoder-profile-run).

// VisionTower is the shape of a vision encoder, from the vision_config of its config.json.
type VisionTower struct {
	HiddenSize       int `json:"hidden_size"`
	IntermediateSize int `json:"intermediate_size"`
	// PatchesPerItem are the patch tokens the tower runs for the largest image; TokensPerItem
	// the embeddings it hands the language model for it (after pooling or merging).
	PatchesPerItem int `json:"patches_per_item"`
	TokensPerItem  int `json:"tokens_per_item"`
	// CrossAttention marks an encoder-decoder model (Llama-3.2-Vision), which V0 profiled with
	// an image in every one of max_num_seqs dummy sequences.
	CrossAttention bool   `json:"cross_attention,omitempty"`
	Source         string `json:"source,omitempty"`
}

// encoderPatchFactor is the vision tower's profiled peak over its MLP's live tensors (the input
// and normed hidden states, the up projection's output and its activation, in the model dtype),
// fitted on the fit-split Gemma 3 4B B200 log of 0.10.0: 9.96 GiB of activations for 64 images
// over 5.33 GiB of those tensors.
const encoderPatchFactor = 1.87

// encoderItems is how many dummy items the V1 profile run encodes in one batch
// (MultiModalBudget in vllm/multimodal/budget.py): the encoder budget, max(max_num_batched_tokens,
// tokens per item) (compute_mm_encoder_budget), over the tokens per item, capped by what
// max_num_seqs requests of max_model_len tokens can hold, and at least one.
//
// V0 ran the encoder inside the dummy forward, one image per dummy sequence: every one of
// max_num_seqs sequences for an encoder-decoder model (EncoderDecoderModelRunner.profile_run),
// else max_num_seqs capped at max_num_batched_tokens / tokens per item, at least one
// (ModelRunner.profile_run).
func encoderItems(s *Setup) int {
	v := s.ModelProfile.Vision
	if v == nil || v.TokensPerItem <= 0 {
		return 0
	}
	if !s.Version.V1Engine() {
		if v.CrossAttention {
			return s.MaxNumSeqs
		}
		return max(1, min(s.MaxNumSeqs, s.MaxNumBatchedTokens/v.TokensPerItem))
	}
	budget := max(s.MaxNumBatchedTokens, v.TokensPerItem)
	perPrompt := max(1, s.MaxModelLen/v.TokensPerItem)
	return max(1, min(budget/v.TokensPerItem, s.MaxNumSeqs*perPrompt))
}

// encoderProfileBytes is the vision tower's transient peak over the dummy batch and the encoder
// outputs the profile run keeps through the language model's forward and the sampler. Tensor
// parallelism splits the MLP's intermediate size (the tower's weights are sharded by default).
func encoderProfileBytes(s *Setup) (peak, outputs float64) {
	items := encoderItems(s)
	if items == 0 || !s.firstStage() {
		return 0, 0
	}
	v := s.ModelProfile.Vision
	b, err := dtypeBytes(s.ModelDType)
	if err != nil || b > 2 {
		b = 2
	}
	tp := float64(s.TensorParallelSize)
	perPatch := 2*float64(v.IntermediateSize)/tp + 2*float64(v.HiddenSize)
	patches := float64(items) * float64(v.PatchesPerItem)
	outputs = float64(items) * float64(v.TokensPerItem) * float64(s.ModelProfile.HiddenSize) * b
	return encoderPatchFactor * patches * perPatch * b, outputs
}
