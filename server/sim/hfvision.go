package sim

import (
	"fmt"
	"strings"
)

// tower is the vision tower's shape for the profile run, where config.json fixes the largest
// image: a SigLIP tower of one image size (Gemma 3: vision_config's image_size and patch_size,
// and the top level's mm_tokens_per_image) or Pixtral (its image_size and patch_size, merged
// spatial_merge_size x spatial_merge_size into one token, with a break token a row). Towers whose
// largest image is set by preprocessor_config.json (Qwen-VL), or which cross-attend (Llama 3.2
// Vision), get none: their encoder's profile peak is not counted. The catalogue's towers say
// the same figures with their sources (docs/calibration.md#the-encoder-profile-run).
func (v *hfVision) tower(top *hfConfig) (*VisionTower, error) {
	kind := strings.ToLower(v.ModelType)
	if v.ImageSize == nil || v.PatchSize == nil || (kind != "pixtral" && top.MMTokensPerImage == nil) {
		return nil, nil
	}
	var err error
	get := func(field string, lo, hi, def int, vals ...*float64) int {
		n := 0
		if err == nil {
			n, err = hfInt(field, lo, hi, def, vals...)
		}
		return n
	}
	h := get("vision_config.hidden_size", 1, 1<<16, -1, v.Hidden)
	t := &VisionTower{HiddenSize: h, IntermediateSize: get("vision_config.intermediate_size", 1, 1<<18, 4*h, v.Inter)}
	image := get("vision_config.image_size", 1, 1<<16, -1, v.ImageSize)
	patch := get("vision_config.patch_size", 1, 1<<10, -1, v.PatchSize)
	channels := get("vision_config.num_channels", 1, 16, 3, v.Channels)
	if err != nil {
		return nil, err
	}
	side := image / patch
	if side < 1 {
		return nil, fmt.Errorf("vision_config.image_size %d is smaller than its patch_size %d", image, patch)
	}
	t.PatchesPerItem, t.PixelValuesPerPatch = side*side, channels*patch*patch
	if kind == "pixtral" {
		merge := get("spatial_merge_size", 1, 64, 1, top.SpatialMerge)
		if err != nil {
			return nil, err
		}
		rows := max(1, side/merge)
		t.TokensPerItem, t.GatedMLP = rows*(rows+1), true
	} else if t.TokensPerItem = get("mm_tokens_per_image", 1, 1<<20, -1, top.MMTokensPerImage); err != nil {
		return nil, err
	}
	t.Source = "config.json's vision_config (docs/catalogue.md#parameter-count-from-the-config)"
	return t, nil
}

// configClassDefaults are what transformers' config class of a model type fills in for fields a
// published config.json leaves out, where the catalogue's models rely on them:
// google/gemma-3-27b-it's text_config names neither its vocabulary, its context length nor its
// layer pattern, which Gemma3TextConfig defaults to 262,208 entries, 131,072 tokens and five
// sliding-window layers to each full one, the local layers with their own RoPE base (and so
// their own RoPE table; transformers' configuration_gemma3.py).
var configClassDefaults = map[string]struct{ vocab, context, slidingPattern, headDim, ropeLocal float64 }{
	"gemma3_text": {vocab: 262208, context: 131072, slidingPattern: 6, headDim: 256, ropeLocal: 10000},
}

// classDefaults fills the fields c leaves out with its config class's defaults.
func (c *hfConfig) classDefaults() {
	d, ok := configClassDefaults[strings.ToLower(c.ModelType)]
	if !ok {
		return
	}
	set := func(dst **float64, v float64) {
		if *dst == nil {
			*dst = &v
		}
	}
	if c.PaddedVocab == nil {
		set(&c.Vocab, d.vocab)
	}
	if c.NPositions == nil && c.MaxSeqLen == nil && c.SeqLength == nil && c.MaxSeqLength == nil {
		set(&c.MaxPos, d.context)
	}
	if c.LayerTypes == nil {
		set(&c.SlidingPattern, d.slidingPattern)
	}
	set(&c.HeadDim, d.headDim)
	set(&c.RopeLocal, d.ropeLocal)
}
