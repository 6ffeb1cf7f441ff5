package sim

import (
	"fmt"
	"strings"
)

// layerKinds counts sliding-window, state-space and MLP-only layers: from layer_types where
// the config lists them, Nemotron-H's hybrid_override_pattern, Qwen3-Next's
// full_attention_interval, or the sliding-window fields (docs/catalogue.md#model-config-files).
func (c *hfConfig) layerKinds(s *hfShape) error {
	switch {
	case len(c.LayerTypes) > 0:
		if len(c.LayerTypes) != s.layers {
			return fmt.Errorf("layer_types has %d entries for %d layers", len(c.LayerTypes), s.layers)
		}
		for _, t := range c.LayerTypes {
			switch t {
			case "full_attention", "attention":
			case "sliding_attention":
				s.sliding++
			case "linear_attention":
				s.linear++
			case "mamba":
				s.linear, s.mamba = s.linear+1, true
			default:
				return fmt.Errorf("layer type %q is not simulated", oneLine(t))
			}
		}
	case c.HybridPattern != "":
		return c.hybridPattern(s)
	case c.FullAttnInterval != nil:
		k, err := hfInt("full_attention_interval", 1, s.layers, 0, c.FullAttnInterval)
		if err != nil {
			return err
		}
		s.linear = s.layers - s.layers/k
	default:
		s.sliding = c.slidingLayers(s.layers)
	}
	if s.layers-s.mlpOnly-s.linear <= 0 {
		return errNoAttention
	}
	return nil
}

// hybridPattern reads Nemotron-H's one character a layer: M Mamba2, * attention, - MLP, E MoE.
func (c *hfConfig) hybridPattern(s *hfShape) error {
	if len(c.HybridPattern) != s.layers {
		return fmt.Errorf("hybrid_override_pattern has %d layers, num_hidden_layers %d", len(c.HybridPattern), s.layers)
	}
	for _, r := range c.HybridPattern {
		switch r {
		case 'M':
			s.linear++
		case '*':
		case '-':
			s.mlpOnly++
		case 'E':
			s.mlpOnly++
			s.hybridMoE++
		default:
			return fmt.Errorf("hybrid_override_pattern has %q, not one of M * - E", r)
		}
	}
	s.mamba = true
	return nil
}

// slidingLayers is how many layers use the sliding window: none when the window is unset,
// off (use_sliding_window false) or no shorter than the context; every other layer for
// Gemma-2; all but every sliding_window_pattern-th for Gemma-3; else all.
func (c *hfConfig) slidingLayers(layers int) int {
	w, err := hfInt("sliding_window", 1, 1<<28, 0, c.SlidingWindow)
	if err != nil || w == 0 || (c.UseSlidingWindow != nil && !*c.UseSlidingWindow) {
		return 0
	}
	if n, err := c.context(); err == nil && w >= n {
		return 0
	}
	if p, err := hfInt("sliding_window_pattern", 1, layers, 0, c.SlidingPattern); err == nil && p > 1 {
		return layers - layers/p
	}
	if strings.HasPrefix(c.ModelType, "gemma2") {
		return (layers + 1) / 2
	}
	return layers
}

// moe reads the experts and which layers have them.
func (c *hfConfig) moe(s *hfShape) error {
	var err error
	if s.experts, err = hfInt("num_experts", 0, 1<<12, 0, c.NumExperts, c.NumLocalExperts, c.NRoutedExperts); err != nil {
		return err
	}
	if s.topK, err = hfInt("num_experts_per_tok", 0, max(s.experts, 1), 0, c.ExpertsPerTok, c.MoETopK, c.TopKExperts); err != nil {
		return err
	}
	if s.experts == 0 || s.topK == 0 {
		s.experts, s.topK = 0, 0
		return nil
	}
	if s.moeInter, err = hfInt("moe_intermediate_size", 1, 1<<22, s.inter, c.MoEInter); err != nil {
		return err
	}
	first, _ := hfInt("first_k_dense_replace", 0, s.layers, 0, c.FirstKDense)
	step, _ := hfInt("decoder_sparse_step", 1, s.layers, 1, c.SparseStep, c.InterleaveMoE)
	dense := map[int]bool{}
	for _, i := range c.MLPOnlyLayers {
		dense[i] = true
	}
	for i := first; i < s.layers; i++ {
		if (i+1)%step == 0 && !dense[i] {
			s.moeLayers++
		}
	}
	if c.HybridPattern != "" {
		s.moeLayers = s.hybridMoE // Nemotron-H: the E layers of the pattern
	} else if step == 1 && len(dense) == 0 {
		s.firstDense = first
	}
	s.parallelMLP = c.EnableMoEBlock != nil && *c.EnableMoEBlock
	if c.InterMLP != nil {
		s.denseInter, _ = hfInt("intermediate_size_mlp", 1, 1<<22, s.inter, c.InterMLP)
	}
	shared, _ := hfInt("n_shared_experts", 0, 1<<10, 0, c.SharedExperts)
	s.sharedInter = shared * s.moeInter
	if c.SharedExpertInter != nil {
		s.sharedInter, _ = hfInt("shared_expert_intermediate_size", 0, 1<<22, 0, c.SharedExpertInter)
	}
	if c.ModelType == "llama4_text" || c.ModelType == "llama4" {
		s.sharedInter = s.moeInter // one shared expert on every MoE layer
	}
	return nil
}

// mla reads multi-head latent attention; the head dimension is then the query's, nope plus rope.
func (c *hfConfig) mla(m *Model) error {
	if c.KVLoraRank == nil {
		return nil
	}
	var err error
	get := func(dst *int, field string, v *float64) {
		if err == nil {
			*dst, err = hfInt(field, 1, 1<<16, -1, v)
		}
	}
	get(&m.KVLoraRank, "kv_lora_rank", c.KVLoraRank)
	get(&m.QKRopeHeadDim, "qk_rope_head_dim", c.QKRope)
	get(&m.QKNopeHeadDim, "qk_nope_head_dim", c.QKNope)
	get(&m.VHeadDim, "v_head_dim", c.VHead)
	m.HeadDim = m.QKNopeHeadDim + m.QKRopeHeadDim
	m.NumKeyValueHeads = m.NumAttentionHeads
	return err
}

// linearState reads the state-space layers' shapes. Mamba2's state is Gated-DeltaNet's with
// groups for key heads, the SSM state size for the key dimension and its heads for the value
// heads: a conv state of (kernel - 1) x (2 x groups x state + heads x head_dim) and a
// temporal state of heads x head_dim x state.
func (c *hfConfig) linearState(m *Model, s hfShape) error {
	if s.linear == 0 {
		return nil
	}
	var err error
	get := func(dst *int, field string, vals ...*float64) {
		if err == nil {
			*dst, err = hfInt(field, 1, 1<<16, -1, vals...)
		}
	}
	if s.mamba {
		get(&m.LinearNumKeyHeads, "n_groups", c.NGroups, c.MambaNGroups)
		get(&m.LinearNumValueHeads, "mamba_num_heads", c.MambaHeads, c.MambaNHeads)
		get(&m.LinearKeyHeadDim, "ssm_state_size", c.SSMState, c.MambaDState)
		get(&m.LinearValueHeadDim, "mamba_head_dim", c.MambaHeadDim, c.MambaDHead)
		get(&m.LinearConvKernelDim, "conv_kernel", c.ConvKernel, c.MambaDConv)
	} else {
		get(&m.LinearNumKeyHeads, "linear_num_key_heads", c.LinKeyHeads)
		get(&m.LinearNumValueHeads, "linear_num_value_heads", c.LinValueHeads)
		get(&m.LinearKeyHeadDim, "linear_key_head_dim", c.LinKeyDim)
		get(&m.LinearValueHeadDim, "linear_value_head_dim", c.LinValueDim)
		get(&m.LinearConvKernelDim, "linear_conv_kernel_dim", c.LinConv)
	}
	m.MambaSSMDType = strings.ToLower(c.SSMDType)
	return err
}
