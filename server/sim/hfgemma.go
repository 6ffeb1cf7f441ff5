package sim

// hfGemma4 holds Gemma-4's fields: full-attention layers of their own head dimension (and,
// with attention_k_eq_v, their own KV heads, whose values are the keys), and experts that run
// beside the dense MLP of every layer (docs/catalogue.md#model-config-files).
type hfGemma4 struct {
	GlobalHeadDim  *float64 `json:"global_head_dim"`
	GlobalKVHeads  *float64 `json:"num_global_key_value_heads"`
	KEqV           *bool    `json:"attention_k_eq_v"`
	TopKExperts    *float64 `json:"top_k_experts"`
	EnableMoEBlock *bool    `json:"enable_moe_block"`
}

// kEqV reports whether the full-attention layers reuse their keys as values.
func (g hfGemma4) kEqV() bool { return g.KEqV != nil && *g.KEqV }

// fullAttention sets the full-attention layers' KV shape where it differs from the sliding
// layers', as vLLM's Gemma-4 builds them: global_head_dim, and num_global_key_value_heads
// only with attention_k_eq_v.
func (c *hfConfig) fullAttention(m *Model) error {
	dim, err := hfInt("global_head_dim", 1, 1<<14, m.HeadDim, c.GlobalHeadDim)
	if err != nil {
		return err
	}
	heads := m.NumKeyValueHeads
	if c.kEqV() {
		if heads, err = hfInt("num_global_key_value_heads", 1, m.NumAttentionHeads, heads, c.GlobalKVHeads); err != nil {
			return err
		}
	}
	if dim != m.HeadDim {
		m.FullAttentionHeadDim = dim
	}
	if heads != m.NumKeyValueHeads {
		m.FullAttentionKVHeads = heads
	}
	return nil
}

// fullAttentionParamsDelta is what a full-attention layer of its own shape has more than the
// layer attentionParams counts: its query and output at global_head_dim, and one projection
// for keys and values when they are the same.
func fullAttentionParamsDelta(m Model, kEqV bool) float64 {
	if m.FullAttentionHeadDim == 0 && m.FullAttentionKVHeads == 0 {
		return 0
	}
	h, heads := float64(m.HiddenSize), float64(m.NumAttentionHeads)
	dim, kv := float64(m.HeadDim), float64(m.NumKeyValueHeads)
	if m.FullAttentionHeadDim > 0 {
		dim = float64(m.FullAttentionHeadDim)
	}
	if m.FullAttentionKVHeads > 0 {
		kv = float64(m.FullAttentionKVHeads)
	}
	kvMats := 2.0
	if kEqV {
		kvMats = 1
	}
	return h*heads*dim*2 + h*kv*dim*kvMats - attentionParams(m)
}
