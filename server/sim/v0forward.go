package sim

// v0ReservedForward is what the caching allocator holds after the profile forward of a V0
// release: the embedding, then each decoder layer's attention and MLP (or routed experts) as
// the V0 model code allocates and frees them, on one tensor-parallel rank
// (docs/calibration.md#v0-reserved-memory).
func v0ReservedForward(s *Setup) float64 {
	return float64(v0ReplayForward(s, false).alloc.reserved)
}

// v0ReplayForward replays the profile forward of s through the allocator model, recording the
// requests where record is set.
func v0ReplayForward(s *Setup, record bool) *forwardTape {
	m := s.ModelProfile
	t := &forwardTape{tokens: float64(s.MaxNumBatchedTokens), bytes: s.activationBytes(), record: record}
	h := float64(m.HiddenSize)
	residual := t.tensor(h) // the embedding's output, then the residual added to in place
	input := t.tensor(h)    // the first layer's RMSNorm output; later layers normalise in place
	dense := m.NumLayers
	if m.IsMoE() {
		dense = m.NumLayers - m.RoutedLayers()
	}
	for layer := range m.NumLayers {
		attn := v0Attention(t, s)
		if layer == 0 {
			t.drop(input) // the layer's own normalised copy, rebound to the attention's output
		}
		var out *allocBlock
		if layer < dense {
			out = v0DenseMLP(t, s, denseWidth(m))
		} else {
			out = v0RoutedMLP(t, s)
		}
		if out == nil {
			out = attn // the experts wrote their output in place
		} else {
			t.drop(attn)
		}
		if layer > 0 {
			t.drop(input) // the model's loop held the layer's input until the layer returned
		}
		input = out
	}
	t.drop(input, residual)
	return t
}

// denseWidth is the MLP width of a layer that does not route.
func denseWidth(m Model) int {
	if m.IsMoE() && m.DenseIntermediateSize > 0 {
		return m.DenseIntermediateSize
	}
	return m.IntermediateSize
}

// v0Attention replays one attention block and returns its output projection's output.
func v0Attention(t *forwardTape, s *Setup) *allocBlock {
	m := s.ModelProfile
	tp := s.TensorParallelSize
	heads := float64(max(1, m.NumAttentionHeads/tp))
	if m.IsMLA() {
		return v0ExpandedMLA(t, s, heads)
	}
	q := heads * float64(m.HeadDim)
	kv := float64(max(1, m.NumKeyValueHeads/tp) * m.HeadDim)
	qkv := t.tensor(q + 2*kv) // rotary embedding runs in place on its q and k
	out := t.tensor(q)        // the attention's output
	if s.Version.AtLeast("0.4.0") {
		// From 0.4.0 the backends allocate their output (torch.empty_like) and copy the
		// kernel's own into it; before, the kernel's output was returned as it was.
		t.drop(t.tensor(q))
	}
	o := t.tensor(float64(m.HiddenSize)) // all-reduced in place
	t.drop(qkv, out)
	return o
}

// v0ExpandedMLA replays DeepSeek-V2's attention as vLLM ran it before it cached the latent
// (DeepseekV2Attention.forward at 0.5.1): queries, the compressed latent, its normalised copy of
// a contiguous copy, its expansion to every head's keys and values, the rotary embedding in
// PyTorch operations, keys assembled from both, queries, keys and values padded to the
// FlashAttention head size, and the output cut back to the value width.
func v0ExpandedMLA(t *forwardTape, s *Setup, heads float64) *allocBlock {
	m := s.ModelProfile
	qk := float64(m.QKNopeHeadDim + m.QKRopeHeadDim)
	rope, lora := float64(m.QKRopeHeadDim), float64(m.KVLoraRank)
	q := t.tensor(heads * qk) // kept to the end by its q_nope view
	latent := t.tensor(lora + rope)
	contiguous := t.tensor(lora)
	normed := t.tensor(lora)
	t.drop(contiguous)
	kv := t.tensor(heads * float64(m.QKNopeHeadDim+m.VHeadDim))
	table, cos, sin := t.tensor(rope), t.tensor(rope), t.tensor(rope) // cos_sin_cache[positions], repeated
	qPE, kPE := v0Rotate(t, heads*rope), v0Rotate(t, rope)
	t.drop(table, cos, sin)
	k := t.tensor(heads * qk)
	pad := heads * mlaPaddedHeadSize
	qp := t.tensor(pad)
	kp := t.tensor(pad)
	t.drop(k) // rebound to its padded copy
	vp := t.tensor(pad)
	out := t.tensor(pad)
	t.drop(t.tensor(pad)) // FlashAttention's own output, copied into the backend's
	cut := t.tensor(heads * float64(m.VHeadDim))
	t.drop(out)
	o := t.tensor(float64(m.HiddenSize))
	t.drop(q, latent, normed, kv, qPE, kPE, qp, kp, vp, cut)
	return o
}

// v0Rotate replays x*cos + rotate(x)*sin over width elements a token, the GPT-J rotation
// built with a negated half and a stack: it returns the sum, its temporaries freed.
func v0Rotate(t *forwardTape, width float64) *allocBlock {
	a := t.tensor(width)
	neg := t.tensor(width / 2)
	stacked := t.tensor(width)
	t.drop(neg)
	b := t.tensor(width)
	t.drop(stacked)
	sum := t.tensor(width)
	t.drop(a, b)
	return sum
}

// v0DenseMLP replays a gated MLP: the gate/up projection, the activation's new tensor of half
// its width, and the down projection, all-reduced in place.
func v0DenseMLP(t *forwardTape, s *Setup, width int) *allocBlock {
	i := float64(width) / float64(s.TensorParallelSize)
	gateUp := t.tensor(2 * i)
	act := t.tensor(i)
	down := t.tensor(float64(s.ModelProfile.HiddenSize))
	t.drop(gateUp, act)
	return down
}

// v0RoutedMLP replays a routed layer: the shared experts' MLP first, the router's logits, the
// fused-MoE kernel's three buffers for its chunk of tokens (it writes its output in place), and
// with shared experts the scaled routed output and its sum with theirs. It returns nil where the
// layer's output is its input.
func v0RoutedMLP(t *forwardTape, s *Setup) *allocBlock {
	m := s.ModelProfile
	h := float64(m.HiddenSize)
	var shared *allocBlock
	if m.SharedExpertIntermediateSize > 0 {
		shared = v0DenseMLP(t, s, m.SharedExpertIntermediateSize)
	}
	logits := t.tensor(float64(m.NumExperts))
	n := float64(m.IntermediateSize) / float64(s.expertSlices())
	per := fusedMoEChunkTokens(s) * float64(m.ExpertsPerToken) * t.bytes
	c1, c2, c3 := t.fixed(per*2*n), t.fixed(per*n), t.fixed(per*h)
	t.drop(c1, c2, c3, logits)
	if shared == nil {
		return nil
	}
	scaled := t.tensor(h)
	sum := t.tensor(h)
	t.drop(scaled, shared)
	return sum
}
