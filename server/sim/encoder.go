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
	CrossAttention bool `json:"cross_attention,omitempty"`
	// PixelValuesPerPatch is the pixel values a patch takes in (channels x temporal frames x
	// patch size squared), which the tower's caller holds through its run.
	PixelValuesPerPatch int `json:"pixel_values_per_patch,omitempty"`
	// GatedMLP marks a tower whose MLP is gated (Pixtral's SiLU gate and up projections),
	// three intermediate-size tensors at its peak where a GELU MLP has two.
	GatedMLP bool `json:"gated_mlp,omitempty"`
	// InterpolatedPositions marks a tower that interpolates its position embeddings over the
	// image's grid before the first block (Qwen3-VL and the Qwen3.5 family), and keeps them.
	InterpolatedPositions bool   `json:"interpolated_positions,omitempty"`
	Source                string `json:"source,omitempty"`
}

// v0EncoderPatchFactor is V0's tower peak over its MLP's input and normed hidden states, the up
// projection's output and its activation, fitted on the fit-split Llama-3.2-11B-Vision log of
// 0.7.0 (36.63 GiB for 128 images of 6,432 patches).
const v0EncoderPatchFactor = 1.87

// positionInterpolationHidden is the hidden-size values a patch holds while the tower
// interpolates its position embeddings: four embedding lookups, their weighted copies, their sum
// and its reordered copy (fast_pos_embed_interpolate, twelve by the code of late 2025), and the
// patch embeddings beside them; fitted as 10 on the fit-split Qwen3.8-27B TP 2 log of 0.26 (1.59
// GiB for one 65,536-patch image).
const positionInterpolationHidden = 10

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
	h, inter := float64(v.HiddenSize), float64(v.IntermediateSize)/tp
	patches := float64(items) * float64(v.PatchesPerItem)
	outputs = float64(items) * float64(v.TokensPerItem) * float64(s.ModelProfile.HiddenSize) * b
	if !s.Version.V1Engine() {
		return v0EncoderPatchFactor * patches * (2*inter + 2*h) * b, outputs
	}
	return patches * towerPeakPerPatch(v, h, inter) * b, outputs
}

// towerPeakPerPatch is the values a patch holds at the V1 vision tower's peak, read from the
// towers' code (siglip.py, pixtral.py, qwen3_vl.py in vllm/model_executor/models): in a block's
// MLP, the block's input (still the caller's), its output after attention and the MLP's normed
// input, three of the hidden size h and whole on every rank, beside the up projection's output and
// its activation (and the gate's, for a gated MLP), of the intermediate size a rank holds. The
// pixel values, and the interpolated position embeddings where a tower has them, stay alive
// through every block, and the interpolation itself may be the larger peak.
func towerPeakPerPatch(v *VisionTower, h, inter float64) float64 {
	held := float64(v.PixelValuesPerPatch)
	mlp := 2.0
	if v.GatedMLP {
		mlp = 3
	}
	block := 3*h + mlp*inter
	if !v.InterpolatedPositions {
		return held + block
	}
	return held + max(block+h, positionInterpolationHidden*h)
}

// textOnlyRelease is the first release that neither loads nor profiles a multimodal model's
// encoders when every modality's limit is 0, which --language-model-only sets (vllm#22299,
// August 2025: "All limits of multimodal modalities supported by the model are set to 0,
// running in text-only mode.").
const textOnlyRelease = "0.10.1"

// dropEncoders makes s's model its language model alone: no encoder weights, no encoder
// profile, no image inputs. Before textOnlyRelease vLLM loaded them all the same.
func dropEncoders(s *Setup) {
	if !s.Version.AtLeast(textOnlyRelease) {
		return
	}
	m := &s.ModelProfile
	m.Params -= m.EncoderParams
	m.EncoderParams, m.Vision, m.Multimodal = 0, nil, false
}
