package sim

import (
	"fmt"
	"math"
)

// loadAdvice is what vLLM's V1 model runner logs, with torch's message after it, when loading
// the weights runs out of memory (GPUModelRunner.load_model); the V2 runner and V0 let torch's
// error through alone.
const loadAdvice = "Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips."

// loadTensors are the parameter tensors one rank allocates as the model is built, in
// construction order, in bytes: the vision or audio encoder, the embedding table (first
// pipeline stage), each layer's fused QKV, output projection and MLP (gate and up fused, then
// down; a MoE layer's experts as two fused tensors), and an untied LM head (last stage). The
// layer tensors are their shapes in the model dtype, or, for a quantized checkpoint, their
// shares of the rank's loaded weight bytes.
func loadTensors(s *Setup, weights int64) []int64 {
	m := s.ModelProfile
	tp := float64(s.TensorParallelSize)
	db, err := dtypeBytes(s.ModelDType)
	if err != nil {
		db = 2
	}
	rest := float64(weights)
	var head []float64
	if m.EncoderParams > 0 {
		head = append(head, m.EncoderParams*db/tp) // every pipeline stage builds the encoder
	}
	table := m.EmbeddingParams() * db / tp
	if s.firstStage() {
		head = append(head, table)
	}
	var tail []float64
	if s.lastStage() && (!m.TieWordEmbeddings || s.stage != nil) {
		tail = append(tail, table)
	}
	for _, b := range append(append([]float64{}, head...), tail...) {
		rest -= b
	}

	h, hd := float64(m.HiddenSize), float64(m.HeadDim)
	if hd == 0 && m.NumAttentionHeads > 0 {
		hd = h / float64(m.NumAttentionHeads)
	}
	inter := float64(m.IntermediateSize)
	experts := 1.0
	if m.IsMoE() {
		experts = float64(m.NumExperts)
	}
	layer := []float64{
		h * float64(m.NumAttentionHeads+2*m.NumKeyValueHeads) * hd / tp, // qkv_proj
		float64(m.NumAttentionHeads) * hd * h / tp,                      // o_proj
		experts * 2 * h * inter / tp,                                    // gate_up_proj (w13)
		experts * inter * h / tp,                                        // down_proj (w2)
	}
	var shape float64
	for _, p := range layer {
		shape += p
	}
	layers := max(1, m.NumLayers) // a pipeline stage's own layers
	// In the model's dtype the shapes are the tensors (norms and biases are small beside
	// them); a quantized checkpoint's are scaled to its layer bytes.
	scale := db
	if perLayer := rest / float64(layers); shape > 0 && math.Abs(perLayer/shape-db) > 0.1*db {
		scale = max(0, perLayer/shape)
	}

	out := make([]int64, 0, len(head)+layers*len(layer)+len(tail))
	for _, b := range head {
		out = append(out, int64(b))
	}
	for range layers {
		for _, p := range layer {
			out = append(out, int64(p*scale))
		}
	}
	for _, b := range tail {
		out = append(out, int64(b))
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
	free := c.FreeBytes - nonTorch
	for _, t := range loadTensors(s, c.WeightsBytes) {
		alloc := torchAllocationSize(t)
		if alloc <= free {
			free -= alloc
			continue
		}
		free = max(free, 0)
		torchMsg := fmt.Sprintf("CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacity of %s of which %s is free. Including non-PyTorch memory, this process has %s memory in use.",
			torchSize(alloc), torchSize(c.TotalBytes), torchSize(free), torchSize(c.FreeBytes-free))
		e := &StartupError{Kind: LoadOOM, Exception: "torch.OutOfMemoryError", Capacity: c, Message: torchMsg}
		if s.Version.V1Engine() && !s.V2ModelRunner() {
			e.LoggedError = loadAdvice + " (original error: " + torchMsg + ")"
		}
		return e
	}
	return nil
}
