package sim

import (
	"fmt"
	"math"
	"strings"
)

// hfParams counts the parameters from the shapes (docs/catalogue.md#parameter-count-from-the-config):
// the embedding (and an untied LM head), each layer's mixer (attention, latent attention,
// Gated-DeltaNet or Mamba2) and MLP (gated: three matrices; two for the families without a
// gate; experts, shared experts and the router on MoE layers), and the norms. Biases are left
// out. active is what one token touches on a mixture of experts, as Model.ActiveParams counts
// it (0 otherwise).
func hfParams(s hfShape, m Model) (total, active float64) {
	h := float64(s.hidden)
	embed := float64(s.vocab) * h
	if !m.TieWordEmbeddings {
		embed *= 2
	}
	attn := attentionParams(m)
	full := s.layers - s.mlpOnly - s.linear
	total = embed + float64(full)*attn + float64(s.linear)*linearParams(m, s.mamba) + h*float64(2*s.layers+1)
	total += float64(full-s.sliding) * fullAttentionParamsDelta(m, s.kEqV)
	mats := 3.0
	if s.nonGated {
		mats = 2
	}
	mlpLayers := s.layers
	if s.mamba && s.mlpOnly > 0 {
		mlpLayers = s.mlpOnly // Nemotron-H: mixers and MLPs are layers of their own
	}
	denseLayers := mlpLayers - s.moeLayers
	if s.parallelMLP {
		denseLayers = mlpLayers
	}
	total += float64(denseLayers) * mats * h * float64(s.denseInter)
	if s.experts == 0 {
		return total, 0
	}
	expert := mats * h * float64(s.moeInter)
	perLayer := float64(s.experts)*expert + mats*h*float64(s.sharedInter) + h*float64(s.experts)
	total += float64(s.moeLayers) * perLayer
	active = total - float64(s.moeLayers*(s.experts-s.topK))*expert
	if !m.TieWordEmbeddings {
		active -= float64(s.vocab) * h // the input table is looked up, not multiplied (Model.ActiveParams)
	}
	return total, active
}

// attentionParams is one attention layer's projections.
func attentionParams(m Model) float64 {
	h, heads := float64(m.HiddenSize), float64(m.NumAttentionHeads)
	if m.IsMLA() {
		qk := float64(m.QKNopeHeadDim + m.QKRopeHeadDim)
		kv := h*float64(m.KVLoraRank+m.QKRopeHeadDim) + float64(m.KVLoraRank)*heads*float64(m.QKNopeHeadDim+m.VHeadDim)
		return h*heads*qk + kv + heads*float64(m.VHeadDim)*h // q without LoRA; q_lora_rank is close
	}
	d := float64(m.HeadDim)
	return h*heads*d*2 + h*float64(m.NumKeyValueHeads)*d*2
}

// linearParams is one state-space layer's projections: in (queries, keys, values and gates),
// the convolution and out.
func linearParams(m Model, mamba bool) float64 {
	h := float64(m.HiddenSize)
	keys := float64(m.LinearNumKeyHeads * m.LinearKeyHeadDim)
	values := float64(m.LinearNumValueHeads * m.LinearValueHeadDim)
	conv := (2*keys + values) * float64(m.LinearConvKernelDim)
	if mamba {
		return h*(2*values+2*keys+float64(m.LinearNumValueHeads)) + conv + values*h
	}
	return h*(2*keys+2*values+2*float64(m.LinearNumValueHeads)) + conv + values*h
}

// params estimates a vision tower: its blocks' attention (4 h^2) and MLP (2 h x intermediate,
// 3 for Pixtral's gated one).
func (v *hfVision) params() float64 {
	h, _ := hfInt("vision_config.hidden_size", 1, 1<<16, 0, v.Hidden)
	inter, _ := hfInt("vision_config.intermediate_size", 0, 1<<18, 4*h, v.Inter)
	layers, _ := hfInt("vision_config.num_hidden_layers", 0, 1024, 0, v.Layers, v.Depth)
	mlp := 2.0
	if strings.EqualFold(v.ModelType, "pixtral") {
		mlp = 3
	}
	return float64(layers) * (4*float64(h*h) + mlp*float64(h*inter))
}

// quantize applies the checkpoint's quantization_config.
func quantize(m *Model, q *hfQuant) error {
	if q == nil {
		return nil
	}
	method := strings.ToLower(q.Method)
	switch method {
	case "awq", "gptq", "fp8", "bitsandbytes":
	case "awq_marlin", "gptq_marlin", "auto-round", "autoround":
		method = "gptq"
	case "mxfp4":
		if m.IsMoE() {
			m.ExpertBytesPerParam = 0.53125
		}
	case "modelopt", "modelopt_fp4":
		if method == "modelopt_fp4" || strings.Contains(strings.ToLower(q.QuantAlgo), "fp4") {
			method = "nvfp4"
		} else {
			method = "fp8"
		}
		algo, _ := q.KVQuantAlgo.(string)
		m.DeclaredKVFP8 = strings.EqualFold(algo, "fp8") || floatScheme(q.KVCacheScheme, true)
	case "compressed-tensors":
		method = compressedTensorsMethod(q.ConfigGroups)
		m.KVCacheScheme = len(q.KVCacheScheme) > 0
		m.DeclaredKVFP8 = floatScheme(q.KVCacheScheme, false)
	case "fbgemm_fp8":
		method = "fp8"
	default:
		return fmt.Errorf("quantization %q is not simulated (awq, gptq, fp8, fbgemm_fp8, bitsandbytes, mxfp4, compressed-tensors, modelopt)", oneLine(q.Method))
	}
	m.Quantization = method
	if method == "gptq" && q.Bits != nil && *q.Bits == 8 {
		m.QuantizationBits = 8
	}
	if method == "fp8" {
		block := q.BlockSize
		if block == nil && strings.ToLower(q.Method) == "compressed-tensors" {
			block = compressedTensorsBlock(q.ConfigGroups)
		}
		m.WeightBlockSize = blockSize(block)
	}
	if format := strings.ToLower(q.Method); format != method {
		m.CheckpointFormat = strings.TrimSuffix(format, "_fp4") // modelopt_fp4 is modelopt's
	}
	return nil
}

// compressedTensorsBlock is the block_structure of a config group whose weights are quantized
// by block (strategy "block"), or nil.
func compressedTensorsBlock(groups map[string]any) any {
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		w, _ := gm["weights"].(map[string]any)
		if strategy, _ := w["strategy"].(string); strings.EqualFold(strategy, "block") {
			if b, ok := w["block_structure"].([]any); ok && len(b) > 0 {
				return b
			}
			return []any{128.0, 128.0}
		}
	}
	return nil
}

// blockSize reads a weight_block_size: any non-empty list marks the checkpoint block-scaled,
// its first two entries kept as whole numbers from 1 to 65,536 (a single entry is square);
// anything that is not a list is ignored.
func blockSize(v any) []int {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil
	}
	size := func(x any) int {
		f, _ := x.(float64)
		if math.IsNaN(f) {
			f = 1
		}
		return int(math.Round(math.Min(math.Max(f, 1), 1<<16)))
	}
	rows := size(list[0])
	cols := rows
	if len(list) > 1 {
		cols = size(list[1])
	}
	return []int{rows, cols}
}

// compressedTensorsMethod reads the weights' bits and type of the first config group.
func compressedTensorsMethod(groups map[string]any) string {
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		w, _ := gm["weights"].(map[string]any)
		bits, _ := w["num_bits"].(float64)
		kind, _ := w["type"].(string)
		switch {
		case bits == 8 && kind == "float":
			return "fp8"
		case bits == 8:
			return "w8a8"
		case bits == 4 && kind == "float":
			return "nvfp4"
		case bits == 4:
			return "gptq"
		}
	}
	return "fp8"
}

// floatScheme reports whether a kv_cache_scheme declares 8-bit floats (static ones where
// static, as ModelOpt's mapping asks: get_kv_cache_quant_algo_string in vllm/utils/torch_utils.py).
func floatScheme(scheme map[string]any, static bool) bool {
	bits, _ := scheme["num_bits"].(float64)
	typ, _ := scheme["type"].(string)
	dynamic, _ := scheme["dynamic"].(bool)
	return bits == 8 && strings.EqualFold(typ, "float") && (!static || !dynamic)
}
