package sim

import (
	"fmt"
	"math"
	"strings"
)

// hfShape is a config's figures as ints, before they become a Model.
type hfShape struct {
	layers, hidden, heads, kvHeads, headDim, inter, vocab int
	// Layers by kind: attention (full or sliding), state-space, and MLP-only (Nemotron-H).
	sliding, linear, mlpOnly int
	mamba                    bool // the state-space layers are Mamba2, not Gated-DeltaNet
	experts, topK, moeInter  int
	moeLayers, denseInter    int
	firstDense               int // first_k_dense_replace where the routed layers follow it without gaps
	hybridMoE                int // Nemotron-H's E layers
	sharedInter              int // shared experts' total intermediate size per MoE layer
	nonGated                 bool
	// parallelMLP: every layer runs its dense MLP beside the experts (Gemma-4's
	// enable_moe_block); kEqV: full layers' values are their keys.
	parallelMLP, kEqV bool
}

// nonGatedMLP are the families whose MLP has two matrices (up and down), not three.
var nonGatedMLP = map[string]bool{"opt": true, "gpt2": true, "gpt_neox": true, "phi": true, "falcon": true,
	"bloom": true, "gpt_bigcode": true, "starcoder2": true, "nemotron_h": true, "mpt": true, "gptj": true}

// model turns the config into a Model named name; top is the outer config of a multimodal
// checkpoint (or c itself).
func (c *hfConfig) model(name string, top hfConfig) (Model, error) {
	var s hfShape
	var err error
	for _, step := range []func(*hfShape) error{c.shape, c.layerKinds, c.moe} {
		if err = step(&s); err != nil {
			return Model{}, err
		}
	}
	m := Model{
		Name: name, NumLayers: s.layers - s.mlpOnly, HiddenSize: s.hidden, NumAttentionHeads: s.heads,
		NumKeyValueHeads: s.kvHeads, HeadDim: s.headDim, IntermediateSize: s.denseInter, VocabSize: s.vocab,
		TieWordEmbeddings: c.tied(top), NumSlidingWindowLayers: s.sliding, NumLinearAttentionLayers: s.linear,
		Source: "config.json; parameters counted from the shapes (docs/catalogue.md#parameter-count-from-the-config)",
	}
	if m.MaxPositionEmbeddings, err = c.context(); err != nil {
		return Model{}, err
	}
	m.PartialRotaryFactor = c.partialRotary(m.HeadDim)
	m.AttentionSinks = c.ModelType == "gpt_oss" // vLLM's GptOss attention always carries sinks
	if s.sliding > 0 {
		m.SlidingWindow, _ = hfInt("sliding_window", 1, 1<<28, 0, c.SlidingWindow)
	}
	m.MTPLayers, _ = hfInt("num_nextn_predict_layers", 0, 64, 0, c.NextN, c.MTPLayers)
	if err = c.mla(&m); err != nil {
		return Model{}, err
	}
	if err = c.linearState(&m, s); err != nil {
		return Model{}, err
	}
	if err = c.fullAttention(&m); err != nil {
		return Model{}, err
	}
	m.RopeTables = c.ropeTables(m)
	s.kEqV = c.kEqV()
	if m.DType = strings.ToLower(firstNonEmpty(c.TorchDType, c.DType, top.TorchDType, top.DType, "float32")); m.DType == "float" {
		m.DType = "float32"
	}
	if _, err := dtypeBytes(m.DType); err != nil {
		return Model{}, fmt.Errorf("torch_dtype: %w", err)
	}
	if s.experts > 0 {
		m.NumExperts, m.ExpertsPerToken = s.experts, s.topK
		if !s.parallelMLP {
			m.IntermediateSize = s.moeInter
			if s.moeLayers < s.layers-s.mlpOnly {
				m.DenseIntermediateSize = s.denseInter
			}
		}
		m.SharedExpertIntermediateSize = s.sharedInter
		if s.moeLayers < m.NumLayers {
			m.MoELayers = s.moeLayers // else every layer routes, RoutedLayers' default
		}
		if s.firstDense > 0 && s.firstDense+s.moeLayers == m.NumLayers {
			m.FirstDenseLayers = s.firstDense
		}
	}
	m.Params, m.ActiveParams = hfParams(s, m)
	if top.VisionConfig != nil {
		m.EncoderParams = top.VisionConfig.params()
		m.Params += m.EncoderParams
		if m.Vision, err = top.VisionConfig.tower(&top); err != nil {
			return Model{}, err
		}
	}
	if err := quantize(&m, firstQuant(c.Quant, top.Quant)); err != nil {
		return Model{}, err
	}
	return m, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstQuant(q ...*hfQuant) *hfQuant {
	for _, v := range q {
		if v != nil {
			return v
		}
	}
	return nil
}

// shape reads the dense figures.
func (c *hfConfig) shape(s *hfShape) error {
	var err error
	set := func(dst *int, field string, lo, hi, def int, vals ...*float64) {
		if err == nil {
			*dst, err = hfInt(field, lo, hi, def, vals...)
		}
	}
	set(&s.layers, "num_hidden_layers", 1, 1024, -1, c.Layers, c.NLayer, c.NumLayers)
	set(&s.hidden, "hidden_size", 1, 1<<20, -1, c.Hidden, c.DModel, c.NEmbd)
	set(&s.heads, "num_attention_heads", 1, 1<<14, -1, c.Heads, c.NHead)
	if err != nil {
		return err
	}
	set(&s.kvHeads, "num_key_value_heads", 1, s.heads, s.heads, c.KVHeads, c.MQGroups)
	set(&s.headDim, "head_dim", 1, 1<<14, max(1, s.hidden/s.heads), c.HeadDim)
	set(&s.inter, "intermediate_size", 0, 1<<22, 4*s.hidden, c.Inter, c.FFNDim, c.NInner)
	set(&s.vocab, "vocab_size", 1, 1<<24, -1, c.Vocab, c.PaddedVocab)
	s.denseInter = s.inter
	s.nonGated = nonGatedMLP[c.ModelType]
	return err
}

// untiedByDefault are the model types whose config class defaults tie_word_embeddings to
// false; transformers' base class defaults it to true.
var untiedByDefault = map[string]bool{"llama": true, "mistral": true, "mixtral": true, "qwen2": true,
	"qwen2_moe": true, "qwen3": true, "qwen3_moe": true, "deepseek_v2": true, "deepseek_v3": true,
	"phi3": true, "granite": true, "olmo2": true, "llama4_text": true}

func (c *hfConfig) tied(top hfConfig) bool {
	switch {
	case c.Tied != nil:
		return *c.Tied
	case top.Tied != nil:
		return *top.Tied
	}
	return !untiedByDefault[c.ModelType]
}

// context is vLLM's derived max_model_len: the smallest of the length keys present, scaled
// by the RoPE factor unless the scaling type keeps the length (su, longrope, llama3), from
// the original length for yarn; 2048 when no key is there.
func (c *hfConfig) context() (int, error) {
	n := 0
	for _, v := range []*float64{c.MaxPos, c.NPositions, c.MaxSeqLen, c.SeqLength, c.MaxSeqLength} {
		if v == nil {
			continue
		}
		k, err := hfInt("max_position_embeddings", 1, 1<<28, 0, v)
		if err != nil {
			return 0, err
		}
		if n == 0 || k < n {
			n = k
		}
	}
	if n == 0 {
		n = 2048
	}
	r, kind, factor := c.ropeScaling()
	// Gemma 3's max_position_embeddings is already the scaled length: vLLM does not scale it.
	if r == nil || kind == "su" || kind == "longrope" || kind == "llama3" || strings.Contains(c.ModelType, "gemma3") {
		return n, nil
	}
	if orig, ok := r["original_max_position_embeddings"].(float64); kind == "yarn" && ok && orig >= 1 && orig <= 1<<24 {
		n = int(orig)
	}
	return int(float64(n) * factor), nil
}

// ropeScaling is the RoPE scaling setting: rope_scaling, or a flat rope_parameters as newer
// configs write it; its type and its factor (1 when unset or out of range).
func (c *hfConfig) ropeScaling() (r map[string]any, kind string, factor float64) {
	r = c.RopeScaling
	if r == nil {
		if _, flat := c.RopeParams["rope_type"]; flat {
			r = c.RopeParams
		}
	}
	kind, _ = r["rope_type"].(string)
	if t, ok := r["type"].(string); ok && kind == "" {
		kind = t
	}
	factor, ok := r["factor"].(float64)
	if !ok || factor < 1 || factor > 1024 {
		factor = 1
	}
	return r, kind, factor
}

// ropeTables are Gemma 3's two rotary tables (rope_local_base_freq set): the sliding layers'
// of the context's length, and the global layers', which linear scaling stretches by its
// factor (vLLM's LinearScalingRotaryEmbedding keeps length x factor rows). Nil otherwise: one
// table of the context's length.
func (c *hfConfig) ropeTables(m Model) []RopeTable {
	if c.RopeLocal == nil || m.IsMLA() {
		return nil
	}
	rotary := m.ropeTables()[0].RotaryDim
	_, kind, factor := c.ropeScaling()
	if kind != "linear" {
		factor = 1
	}
	global := int(math.Min(float64(m.MaxPositionEmbeddings)*factor, 1<<28))
	return []RopeTable{{Positions: m.MaxPositionEmbeddings, RotaryDim: rotary}, {Positions: global, RotaryDim: rotary}}
}
