package sim

import (
	"fmt"
	"math"
)

// KVLayout is how vLLM V1 lays the KV cache out for a model (docs/hybrid-kv.md#page-size-and-groups): one
// page size for every layer, the layers grouped by kind, and a pool of blocks the groups
// share. A dense model is one group of full-attention layers; gpt-oss adds a sliding-window
// group; a Qwen3.5 hybrid adds Gated-DeltaNet ("mamba") groups with a fixed-size state.
type KVLayout struct {
	BlockSize int   // tokens per block, after the hybrid alignment
	PageBytes int64 // one layer's share of one block

	AttentionBytesPerToken int64 // one full-attention layer, one token: 2 x KV heads x head dim x dtype
	// SlidingBytesPerToken is one sliding-window layer's; it differs from the full layers'
	// when those have their own KV shape (Gemma-4), and then SlidingBlockSize differs from
	// BlockSize so that both kinds fill the same page (docs/hybrid-kv.md#layers-of-two-shapes).
	SlidingBytesPerToken int64
	SlidingBlockSize     int
	// MambaStateBytes is one linear-attention layer's state (conv and temporal), unpadded.
	MambaStateBytes int64
	// BlockSizeRaised is set when the hybrid alignment raised the block size ("Setting
	// attention block size to N tokens"); MambaPaddingPercent is how much the mamba page was
	// padded to the attention page ("Padding mamba page size by P%").
	BlockSizeRaised     bool
	MambaPaddingPercent float64
	// BlockSizeForcedBy is the MLA backend that raised the block size ("Forcing kv cache block
	// size to N for B backend."), "" when none did (docs/hybrid-kv.md#mla-by-version).
	BlockSizeForcedBy string

	// Layers per kind, and the grouping: GroupSize tensors are shared by one layer of each
	// group, and each kind is split into ceil(layers / GroupSize) groups.
	FullLayers, SlidingLayers, MambaLayers int
	GroupSize                              int
	FullGroups, SlidingGroups, MambaGroups int
	// Uniform is a model with a single layer kind: then a block spans every layer.
	Uniform bool

	SlidingWindow int
	// SlidingReserveTokens is what a sliding-window group reserves beyond the window: the
	// tokens one request can have scheduled at once.
	SlidingReserveTokens int
	// MambaCacheMode is "none" (no prefix caching: one state block per request) or "align"
	// (prefix caching: a second block for the cached state); "" without mamba layers.
	MambaCacheMode string
	// MambaBlocks is blocks per request per mamba group: 1 or 2, plus the speculative tokens.
	MambaBlocks int
}

// NumGroups is the number of KV-cache groups.
func (l KVLayout) NumGroups() int { return l.FullGroups + l.SlidingGroups + l.MambaGroups }

// BlockBytes is one block of the pool: a page for every layer of a uniform model, a page
// for each of the GroupSize shared tensors otherwise.
func (l KVLayout) BlockBytes() int64 {
	if l.Uniform {
		return l.PageBytes * int64(l.FullLayers+l.SlidingLayers+l.MambaLayers)
	}
	return l.PageBytes * int64(l.GroupSize)
}

// NumBlocks is get_num_blocks: the pool size for availableBytes of KV memory.
func (l KVLayout) NumBlocks(availableBytes int64) int {
	if availableBytes <= 0 || l.BlockBytes() <= 0 {
		return 0
	}
	return int(availableBytes / l.BlockBytes())
}

// FullBlockPositions is how many blocks a request of tokens tokens holds in one
// full-attention group.
func (l KVLayout) FullBlockPositions(tokens int) int { return ceilDiv(tokens, l.BlockSize) }

// slidingBlocks is what one sliding-window group holds for a request of tokens tokens with
// scheduled of them being computed in this step: the window plus the step's tokens, as the
// blocks that slide out of the window are freed (SlidingWindowSpec).
func (l KVLayout) slidingBlocks(tokens, scheduled int) int {
	if l.SlidingGroups == 0 {
		return 0
	}
	bs := l.slidingBlockSize()
	return min(ceilDiv(tokens, bs), ceilDiv(l.SlidingWindow-1+scheduled, bs)+1)
}

// slidingBlockSize is the block size of the sliding-window groups.
func (l KVLayout) slidingBlockSize() int {
	if l.SlidingBlockSize > 0 {
		return l.SlidingBlockSize
	}
	return l.BlockSize
}

// MinBlockSize is the smallest block size of any group, which the old token line counts in.
func (l KVLayout) MinBlockSize() int {
	if l.SlidingGroups > 0 {
		return min(l.BlockSize, l.slidingBlockSize())
	}
	return l.BlockSize
}

// slidingCapBlocks is what one sliding-window layer holds for a maxModelLen request at most.
func (l KVLayout) slidingCapBlocks(maxModelLen int) int {
	return ceilDiv(min(l.SlidingWindow-1+l.SlidingReserveTokens, maxModelLen), l.slidingBlockSize()) + 1
}

// ExtraBlocks is what a request holds outside the full-attention groups: sliding-window
// and mamba groups.
func (l KVLayout) ExtraBlocks(tokens, scheduled int) int {
	return l.SlidingGroups*l.slidingBlocks(tokens, scheduled) + l.MambaGroups*l.MambaBlocks
}

// BlocksPerRequest is what one request of maxModelLen tokens needs in every group: the sum
// of cdiv(max_memory_usage_bytes, page) that get_max_concurrency_for_kv_cache_config takes.
func (l KVLayout) BlocksPerRequest(maxModelLen int) int {
	n := l.FullGroups * ceilDiv(maxModelLen, l.BlockSize)
	if l.SlidingGroups > 0 {
		n += l.SlidingGroups * l.slidingCapBlocks(maxModelLen)
	}
	return n + l.MambaGroups*l.MambaBlocks
}

// neededBytes is what _check_enough_kv_cache_memory asks for one request of maxModelLen
// tokens: every layer's max_memory_usage_bytes.
func (l KVLayout) neededBytes(maxModelLen int) int64 {
	perLayer := int64(l.FullLayers) * int64(ceilDiv(maxModelLen, l.BlockSize))
	if l.SlidingLayers > 0 {
		perLayer += int64(l.SlidingLayers) * int64(l.slidingCapBlocks(maxModelLen))
	}
	perLayer += int64(l.MambaLayers) * int64(l.MambaBlocks)
	return perLayer * l.PageBytes
}

// estimateMaxModelLen is vLLM's estimate_max_model_len: the longest request that fits,
// found by bisection over the needed memory.
func (l KVLayout) estimateMaxModelLen(availableBytes int64, maxModelLen int) int {
	lo, hi := 0, maxModelLen
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if l.neededBytes(mid) <= availableBytes {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// hybridAlignment is the kernel block size the hybrid block size is a multiple of (docs/hybrid-kv.md#block-size-alignment).
const hybridAlignment = 16

// kvLayout builds the layout for a resolved setup (everything but Capacity set).
func kvLayout(s *Setup) (KVLayout, error) {
	m := s.ModelProfile
	tp := s.TensorParallelSize
	l := KVLayout{
		BlockSize:              s.BlockSize,
		AttentionBytesPerToken: attentionBytesPerToken(s),
		SlidingBytesPerToken:   attentionBytesPerToken(s),
		FullLayers:             m.NumFullAttentionLayers() + draftKVLayers(s),
		SlidingLayers:          m.NumSlidingWindowLayers,
		MambaLayers:            m.NumLinearAttentionLayers,
		SlidingWindow:          m.SlidingWindow,
		SlidingReserveTokens:   s.MaxNumBatchedTokens,
	}
	// Newer builds reserve the in-flight tokens of both batches that async scheduling
	// keeps going (docs/hybrid-kv.md#sliding-window; the exact release is uncertain).
	if s.Version.AtLeast("0.26.0") && s.Speculative == nil {
		l.SlidingReserveTokens = 2 * s.MaxNumBatchedTokens
	}
	spec := s.NumSpeculativeTokens()
	l.BlockSize, l.BlockSizeForcedBy = mlaBlockSize(s, l.BlockSize)
	l.PageBytes = int64(l.BlockSize) * l.AttentionBytesPerToken
	if err := l.unifyPages(s); err != nil {
		return l, err
	}
	if l.MambaLayers > 0 {
		if m.LinearNumValueHeads%tp != 0 || m.LinearNumKeyHeads%tp != 0 {
			return l, &EngineConfigError{fmt.Sprintf("linear attention heads (%d key, %d value) must be divisible by tensor parallel size (%d).", m.LinearNumKeyHeads, m.LinearNumValueHeads, tp)}
		}
		l.MambaStateBytes = gdnStateBytes(s)
		l.MambaCacheMode, l.MambaBlocks = "none", 1+spec
		if s.PrefixCachingEnabled() {
			l.MambaCacheMode, l.MambaBlocks = "align", 2+spec
		}
		attnBlock := hybridAlignment * int(ceilDiv64(l.MambaStateBytes, hybridAlignment*l.AttentionBytesPerToken))
		if l.BlockSize < attnBlock {
			l.BlockSize, l.BlockSizeRaised = attnBlock, true
		}
		l.PageBytes = int64(l.BlockSize) * l.AttentionBytesPerToken
		if pad := l.PageBytes - l.MambaStateBytes; pad > 0 {
			l.MambaPaddingPercent = 100 * float64(pad) / float64(l.MambaStateBytes)
		}
	}

	var kinds []*int
	for _, n := range []*int{&l.FullLayers, &l.SlidingLayers, &l.MambaLayers} {
		if *n > 0 {
			kinds = append(kinds, n)
		}
	}
	if len(kinds) == 1 {
		l.Uniform = true
		l.GroupSize = *kinds[0]
	} else {
		l.GroupSize = math.MaxInt
		for _, n := range kinds {
			l.GroupSize = min(l.GroupSize, *n)
		}
	}
	l.FullGroups = ceilDiv(l.FullLayers, l.GroupSize)
	l.SlidingGroups = ceilDiv(l.SlidingLayers, l.GroupSize)
	l.MambaGroups = ceilDiv(l.MambaLayers, l.GroupSize)
	return l, nil
}

// attentionBytesPerToken is one attention layer's cache for one token on one GPU: keys and
// values of the rank's KV heads; multi-head latent attention as vLLM of that release kept it
// (mlaBytesPerToken, docs/hybrid-kv.md#mla-by-version).
func attentionBytesPerToken(s *Setup) int64 {
	m := s.ModelProfile
	if m.IsMLA() {
		return mlaBytesPerToken(s)
	}
	kvHeads := max(1, m.NumKeyValueHeads/s.TensorParallelSize)
	return int64(math.Round(float64(kvHeads) * kvHeadBytes(s.KVDType, m.HeadDim)))
}

// gdnStateBytes is one Gated-DeltaNet layer's state on one GPU (mamba_utils.py
// gated_delta_net_state_shape): a conv state of (kernel - 1 + speculative tokens) x conv_dim
// in the model dtype, and a temporal state of value heads x value dim x key dim in
// mamba_ssm_dtype (float32 for Qwen3.5; docs/hybrid-kv.md#gated-deltanet-state).
func gdnStateBytes(s *Setup) int64 {
	m := s.ModelProfile
	tp := s.TensorParallelSize
	modelBytes, _ := dtypeBytes(s.ModelDType)
	ssmBytes := modelBytes
	if m.MambaSSMDType != "" {
		ssmBytes, _ = dtypeBytes(m.MambaSSMDType)
	}
	convDim := (m.LinearKeyHeadDim*m.LinearNumKeyHeads*2 + m.LinearValueHeadDim*m.LinearNumValueHeads) / tp
	conv := float64((m.LinearConvKernelDim-1+s.NumSpeculativeTokens())*convDim) * modelBytes
	temporal := float64(m.LinearNumValueHeads/tp*m.LinearValueHeadDim*m.LinearKeyHeadDim) * ssmBytes
	return int64(conv + temporal)
}

// unifyPages gives the full-attention layers their own KV shape when the model has one, and
// scales the block size of the kind with the smaller page until both pages are equal, as
// vLLM's unify_kv_cache_spec_page_size does (docs/hybrid-kv.md#layers-of-two-shapes).
func (l *KVLayout) unifyPages(s *Setup) error {
	m := s.ModelProfile
	if m.FullAttentionHeadDim == 0 && m.FullAttentionKVHeads == 0 {
		return nil
	}
	if l.MambaLayers > 0 || m.IsMLA() {
		return &ConfigError{"full-attention layers of their own KV shape are simulated beside sliding-window layers only"}
	}
	full := fullAttentionBytesPerToken(s)
	l.AttentionBytesPerToken = full
	if l.SlidingLayers == 0 {
		l.PageBytes = int64(l.BlockSize) * full
		return nil
	}
	sliding := l.SlidingBytesPerToken
	small, large := min(full, sliding), max(full, sliding)
	if large%small != 0 {
		return &ConfigError{fmt.Sprintf("KV page sizes of %d and %d bytes per token are not multiples of each other; vLLM cannot unify them.", full, sliding)}
	}
	ratio := int(large / small)
	l.SlidingBlockSize = l.BlockSize
	if full < sliding {
		l.BlockSize *= ratio
	} else {
		l.SlidingBlockSize *= ratio
	}
	l.PageBytes = int64(l.BlockSize) * full
	return nil
}

// fullAttentionBytesPerToken is a full-attention layer's cache for one token on one GPU when
// those layers have their own head dimension or KV head count.
func fullAttentionBytesPerToken(s *Setup) int64 {
	m := s.ModelProfile
	heads, dim := m.NumKeyValueHeads, m.HeadDim
	if m.FullAttentionKVHeads > 0 {
		heads = m.FullAttentionKVHeads
	}
	if m.FullAttentionHeadDim > 0 {
		dim = m.FullAttentionHeadDim
	}
	kvHeads := max(1, heads/s.TensorParallelSize)
	return int64(math.Round(float64(kvHeads) * kvHeadBytes(s.KVDType, dim)))
}

func ceilDiv64(a, b int64) int64 { return (a + b - 1) / b }
