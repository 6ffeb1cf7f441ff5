package sim

import (
	"fmt"
	"math"
)

// loadAdvice is what vLLM's V1 model runner logs, with torch's message after it, when loading
// the weights runs out of memory (GPUModelRunner.load_model, from vllm#28051 in 0.11.1); the
// V2 runner and older releases let torch's error through alone.
const loadAdvice = "Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips."

// loadAdviceRelease is the first release whose V1 model runner logs loadAdvice.
const loadAdviceRelease = "0.11.1"

// loadTensors are the parameter tensors one rank allocates as the model is built, in
// construction order, in bytes, adding up to weights, the rank's loaded weight bytes: the
// vision or audio encoder layer by layer, the embedding table (first pipeline stage), each
// decoder layer's fused QKV, output projection and MLP (gate and up fused, then down; a MoE
// layer's experts as two fused tensors) and the rest of its weights (norms, biases, routers,
// shared experts: what the shapes do not name), and an untied LM head (last stage). The
// layer tensors are their shapes in the model dtype, or, for a quantized checkpoint, their
// shares of the layer's bytes.
func loadTensors(s *Setup, weights int64) []int64 {
	m := s.ModelProfile
	tp := float64(s.TensorParallelSize)
	db, err := dtypeBytes(s.ModelDType)
	if err != nil {
		db = 2
	}
	var head, tail []float64
	if m.EncoderParams > 0 {
		head = encoderTensors(m, db/tp) // every pipeline stage builds the encoder
	}
	table := m.EmbeddingParams() * db / tp
	if s.firstStage() {
		head = append(head, table)
	}
	if s.lastStage() && (!m.TieWordEmbeddings || s.stage != nil) {
		tail = append(tail, table)
	}
	rest := float64(weights)
	for _, b := range append(append([]float64{}, head...), tail...) {
		rest -= b
	}

	layers := max(1, m.NumLayers) // a pipeline stage's own layers
	perLayer := max(0, rest) / float64(layers)
	layer := layerTensors(m, tp)
	var shape float64
	for _, p := range layer {
		shape += p
	}
	// In the model's dtype the shapes are the tensors; a quantized checkpoint's, and shapes the
	// layer's bytes cannot hold (attention that is not multi-head, such as MLA), are scaled to
	// the layer's bytes.
	scale := db
	if shape > 0 && (shape*db > perLayer || math.Abs(perLayer/shape-db) > 0.1*db) {
		scale = perLayer / shape
	}
	for i := range layer {
		layer[i] *= scale
	}
	other := max(0, perLayer-shape*scale)

	out := make([]int64, 0, len(head)+layers*(len(layer)+1)+len(tail))
	for _, b := range head {
		out = append(out, int64(b))
	}
	for range layers {
		for _, b := range layer {
			out = append(out, int64(b))
		}
		if other > 0 {
			out = append(out, int64(other))
		}
	}
	for _, b := range tail {
		out = append(out, int64(b))
	}
	return out
}

// layerTensors are a decoder layer's four large tensors in parameters on one rank.
func layerTensors(m Model, tp float64) []float64 {
	h, hd := float64(m.HiddenSize), float64(m.HeadDim)
	if hd == 0 && m.NumAttentionHeads > 0 {
		hd = h / float64(m.NumAttentionHeads)
	}
	inter, experts := float64(m.IntermediateSize), 1.0
	if m.IsMoE() {
		experts = float64(m.NumExperts)
	}
	return []float64{
		h * float64(m.NumAttentionHeads+2*m.NumKeyValueHeads) * hd / tp, // qkv_proj
		float64(m.NumAttentionHeads) * hd * h / tp,                      // o_proj
		experts * 2 * h * inter / tp,                                    // gate_up_proj (w13)
		experts * inter * h / tp,                                        // down_proj (w2)
	}
}

// encoderTensors are the encoder's parameters as its layers allocate them, bytesPer a
// parameter on one rank: per layer its QKV, output projection and MLP (fc1, or gate and up,
// then fc2) at the tower's shape, as many layers as the encoder's size holds; without a shape,
// 24 equal layers.
func encoderTensors(m Model, bytesPer float64) []float64 {
	total := m.EncoderParams * bytesPer
	var layer []float64
	if v := m.Vision; v != nil && v.HiddenSize > 0 && v.IntermediateSize > 0 {
		h, i := float64(v.HiddenSize), float64(v.IntermediateSize)
		up := h * i
		if v.GatedMLP {
			up *= 2
		}
		layer = []float64{3 * h * h, h * h, up, i * h}
	} else {
		layer = []float64{1}
	}
	var sum float64
	for _, p := range layer {
		sum += p * bytesPer
	}
	n := 24
	if m.Vision != nil && sum > 0 {
		n = max(1, int(math.Round(total/sum)))
	}
	scale := total / float64(n) / sum
	out := make([]float64, 0, n*len(layer))
	for range n {
		for _, p := range layer {
			out = append(out, p*bytesPer*scale)
		}
	}
	return out
}

// torchAllocationSize is the block PyTorch's caching allocator asks the device for
// (CUDACachingAllocator's get_allocation_size): 2 MiB for a small tensor, 20 MiB up to
// 10 MiB, else the size rounded up to 2 MiB. The out-of-memory message reports it.
func torchAllocationSize(b int64) int64 {
	const mib = 1 << 20
	switch {
	case b <= mib:
		return 2 * mib
	case b < 10*mib:
		return 20 * mib
	default:
		return (b + 2*mib - 1) / (2 * mib) * (2 * mib)
	}
}

// loadOOMError is the error of building a model whose weights do not fit: the rank allocates
// its parameters one tensor at a time on the memory the CUDA context and the communicators
// (nonTorch) left free, and torch fails on the first that no longer fits, reporting what was
// free then and what the process held. Nil when every tensor fits.
func loadOOMError(s *Setup, c Capacity, nonTorch int64) *StartupError {
	c.ActivationBytes = 0 // no profile runs: the load fails first
	free := c.FreeBytes - nonTorch
	var tensors, blocks int64 // what torch allocated, and the blocks it reserved for them
	for _, t := range loadTensors(s, c.WeightsBytes) {
		alloc := torchAllocationSize(t)
		if alloc <= free {
			// A tensor under 10 MiB shares its segment with the next ones; a larger one
			// takes a block of its own, rounded up to 2 MiB.
			used := (t + 511) / 512 * 512 // the allocator's 512-byte rounding
			if t >= 10<<20 {
				used = alloc
			}
			free -= used
			tensors += (t + 511) / 512 * 512
			blocks += used
			continue
		}
		free = max(free, 0)
		torchMsg := torchOOMMessage(s.Version, alloc, c.TotalBytes, free, c.FreeBytes-free, tensors, blocks-tensors)
		e := &StartupError{Kind: LoadOOM, Exception: "torch.OutOfMemoryError", Capacity: c, Message: torchMsg}
		if s.Version.AtLeast(loadAdviceRelease) && !s.V2ModelRunner() {
			e.LoggedError = loadAdvice + " (original error: " + torchMsg + ")"
		}
		return e
	}
	return nil
}

// torchAllocConfRelease is the first vLLM release on a PyTorch (2.9) whose out-of-memory
// advice names PYTORCH_ALLOC_CONF rather than PYTORCH_CUDA_ALLOC_CONF.
const torchAllocConfRelease = "0.12.0"

// torchOOMMessage is PyTorch's CUDA out-of-memory message (CUDACachingAllocator.cpp) for an
// allocation of tried bytes: the card's capacity, what is free, what the process holds
// (non-PyTorch memory included), what PyTorch has allocated and what it reserved unallocated,
// and its advice on fragmentation, as the PyTorch of release v words it.
func torchOOMMessage(v Version, tried, total, free, inUse, allocated, reservedUnallocated int64) string {
	conf := "PYTORCH_CUDA_ALLOC_CONF"
	if v.AtLeast(torchAllocConfRelease) {
		conf = "PYTORCH_ALLOC_CONF"
	}
	return fmt.Sprintf("CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacity of %s of which %s is free. "+
		"Including non-PyTorch memory, this process has %s memory in use. Of the allocated memory %s is allocated by PyTorch, "+
		"and %s is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "+
		"%s=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  "+
		"(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		torchSize(tried), torchSize(total), torchSize(free), torchSize(inUse), torchSize(allocated), torchSize(max(0, reservedUnallocated)), conf)
}
