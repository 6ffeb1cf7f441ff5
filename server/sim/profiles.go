package sim

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

//go:embed profiles/*.json
var builtinProfiles embed.FS

// GPU describes one accelerator: what the roofline and KV sizing need (docs/calibration.md#gpu-profiles).
type GPU struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
	// MemoryGiB is the total device memory as torch reports it (a little less than nvidia-smi).
	MemoryGiB     float64 `json:"memory_gib"`
	BandwidthTBps float64 `json:"bandwidth_tbps"`
	// BF16TFLOPS is the dense 16-bit tensor peak (FP16 on cards without BF16); FP8TFLOPS the
	// dense FP8 peak where the card has one.
	BF16TFLOPS float64 `json:"bf16_tflops"`
	FP8TFLOPS  float64 `json:"fp8_tflops,omitempty"`
	// Efficiencies: the fraction of peak bandwidth, GEMM and attention FLOP/s reached in practice.
	EtaBandwidth float64 `json:"eta_bandwidth"`
	EtaGEMM      float64 `json:"eta_gemm"`
	EtaAttention float64 `json:"eta_attention"`
	// ComputeCapability is the device's CUDA compute capability as torch reports it (7.5 for a
	// T4; AMD's gfx942 is 9.4): vLLM's dtype and quantization checks read it. 0: unknown, and
	// nothing is checked. DeviceName is torch's name for the card, for the messages that
	// print it ("Tesla T4"); empty: the profile's name.
	ComputeCapability float64 `json:"compute_capability,omitempty"`
	DeviceName        string  `json:"device_name,omitempty"`
	// LayerFloorUS is the per-layer kernel-launch floor of a CUDA-graph step, in microseconds.
	LayerFloorUS float64 `json:"layer_floor_us"`
	// InterconnectGBps is the per-direction bandwidth between two GPUs of a tensor-parallel
	// group (NVLink, or PCIe without it), GB/s; AllReduceUS the fixed cost of one all-reduce
	// in a CUDA-graph step. Zero: tensor-parallel communication is not modelled.
	InterconnectGBps float64 `json:"interconnect_gbps,omitempty"`
	AllReduceUS      float64 `json:"allreduce_us,omitempty"`
	// Scheduler defaults as vLLM picks them for this device (EngineArgs.get_batch_defaults).
	DefaultMaxNumBatchedTokens int    `json:"default_max_num_batched_tokens"`
	DefaultMaxNumSeqs          int    `json:"default_max_num_seqs"`
	Source                     string `json:"source,omitempty"`
}

// Model describes a model by the config.json values that size its weights and KV cache (docs/calibration.md#model-profiles).
type Model struct {
	Name                  string   `json:"name"`
	Aliases               []string `json:"aliases,omitempty"`
	NumLayers             int      `json:"num_layers"`
	HiddenSize            int      `json:"hidden_size"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	IntermediateSize      int      `json:"intermediate_size"`
	VocabSize             int      `json:"vocab_size"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	// PartialRotaryFactor is the share of a head that RoPE rotates (config's
	// partial_rotary_factor, rotary_pct or rotary_dim / head_dim); 0 means all of it.
	PartialRotaryFactor float64 `json:"partial_rotary_factor,omitempty"`
	// RopeTables are the rotary embedding's cos/sin tables where the model builds more than
	// one, or one longer than its context (Gemma 3: a local table and a global one stretched
	// by its linear factor). Empty: one table of max_position_embeddings rows.
	RopeTables []RopeTable `json:"rope_tables,omitempty"`
	DType      string      `json:"dtype"`
	// Quantization is the checkpoint's quantization_config method ("mxfp4" for gpt-oss), if any.
	Quantization string `json:"quantization,omitempty"`
	// QuantizationBits is a GPTQ checkpoint's quantization_config.bits where it is 8 (Qwen's
	// GPTQ-Int8 releases); 0 is the 4 bits of every other AWQ and GPTQ checkpoint.
	QuantizationBits int `json:"quantization_bits,omitempty"`
	// CheckpointFormat is the quant_method of a quantized checkpoint's config where it is not
	// Quantization ("compressed-tensors", "fbgemm_fp8", "modelopt"): vLLM loads KV-cache
	// scales for some formats and not others. KVCacheScheme is a compressed-tensors
	// checkpoint's kv_cache_scheme, set when the checkpoint stores KV-cache scales.
	// DeclaredKVFP8 is set where the checkpoint declares an 8-bit float KV cache, the one vLLM
	// takes for an automatic --kv-cache-dtype: a compressed-tensors kv_cache_scheme of 8-bit
	// floats, or ModelOpt's kv_cache_quant_algo FP8 (or its static 8-bit float kv_cache_scheme).
	CheckpointFormat string `json:"checkpoint_format,omitempty"`
	KVCacheScheme    bool   `json:"kv_cache_scheme,omitempty"`
	DeclaredKVFP8    bool   `json:"declared_kv_fp8,omitempty"`
	// WeightBlockSize is a block-scaled FP8 checkpoint's quantization_config.weight_block_size
	// ([128, 128] for DeepSeek-V3 and the Qwen3 FP8 releases): one scale per block of weights,
	// which vLLM multiplies with other kernels than per-tensor or per-channel FP8
	// (docs/calibration.md#fp8-gemms).
	WeightBlockSize []int `json:"weight_block_size,omitempty"`
	// Params is the total parameter count, embeddings included.
	Params float64 `json:"params"`
	// LoadedWeightsGiB, when known from a real vLLM log, replaces the computed weight size.
	LoadedWeightsGiB float64 `json:"loaded_weights_gib,omitempty"`
	// EncoderParams are the parameters of a vision or audio encoder: loaded with the weights,
	// not read by a text decode step.
	EncoderParams float64 `json:"encoder_params,omitempty"`
	// Vision is the vision tower's shape, which sets the encoder's profiling peak (encoder.go).
	Vision *VisionTower `json:"vision,omitempty"`
	// Multimodal marks a model that takes images although the entry sizes no encoder apart
	// (its parameters are in Params): vLLM serves its image parts.
	Multimodal bool `json:"multimodal,omitempty"`

	// Layer types, as config.json's layer_types counts them. The remaining layers
	// (num_layers minus these) are full attention.
	NumSlidingWindowLayers int `json:"num_sliding_window_layers,omitempty"`
	SlidingWindow          int `json:"sliding_window,omitempty"` // tokens
	// Full-attention layers with their own KV shape (Gemma-4's global_head_dim and
	// num_global_key_value_heads); 0 means the model's head_dim and num_key_value_heads.
	FullAttentionHeadDim int `json:"full_attention_head_dim,omitempty"`
	FullAttentionKVHeads int `json:"full_attention_kv_heads,omitempty"`
	// AttentionSinks: each attention head has a learned sink logit (gpt-oss), which limits the
	// attention backends that can run the model.
	AttentionSinks bool `json:"attention_sinks,omitempty"`
	// Gated-DeltaNet ("linear_attention") layers keep a fixed-size state per request instead
	// of a growing KV cache: a conv state in the model dtype and a temporal state in
	// mamba_ssm_dtype.
	NumLinearAttentionLayers int    `json:"num_linear_attention_layers,omitempty"`
	LinearNumKeyHeads        int    `json:"linear_num_key_heads,omitempty"`
	LinearNumValueHeads      int    `json:"linear_num_value_heads,omitempty"`
	LinearKeyHeadDim         int    `json:"linear_key_head_dim,omitempty"`
	LinearValueHeadDim       int    `json:"linear_value_head_dim,omitempty"`
	LinearConvKernelDim      int    `json:"linear_conv_kernel_dim,omitempty"`
	MambaSSMDType            string `json:"mamba_ssm_dtype,omitempty"`
	// Multi-head latent attention (DeepSeek-V2/V3): from vLLM 0.7.1 one latent of
	// kv_lora_rank plus a rotary key of qk_rope_head_dim per token and layer, the same on every
	// tensor-parallel rank; before, full keys and values per head (docs/catalogue.md#mla).
	KVLoraRank    int `json:"kv_lora_rank,omitempty"`
	QKRopeHeadDim int `json:"qk_rope_head_dim,omitempty"`
	QKNopeHeadDim int `json:"qk_nope_head_dim,omitempty"`
	VHeadDim      int `json:"v_head_dim,omitempty"`
	// MTPLayers is mtp_num_hidden_layers: the model's own draft layers for speculative
	// decoding with method "mtp".
	MTPLayers int `json:"mtp_num_hidden_layers,omitempty"`

	// Mixture of experts: NumExperts experts per layer, ExpertsPerToken of them active.
	// ActiveParams are the parameters one token touches (attention, the active experts and the
	// LM head), which set a step's FLOPs; Params sets the weight memory.
	NumExperts      int     `json:"num_experts,omitempty"`
	ExpertsPerToken int     `json:"num_experts_per_tok,omitempty"`
	ActiveParams    float64 `json:"active_params,omitempty"`
	// ExpertBytesPerParam is the checkpoint's storage of the expert weights (0.53125 for
	// MXFP4: 4 bits and an 8-bit scale per 32); 0 means the model dtype.
	ExpertBytesPerParam float64 `json:"expert_bytes_per_param,omitempty"`
	// DenseIntermediateSize is the MLP width of a MoE model's layers that do not route
	// (DeepSeek's first_k_dense_replace layers, Llama-4 Maverick's interleaved ones); 0 when
	// every layer routes. SharedExpertIntermediateSize is the width of the shared experts every
	// MoE layer runs on all its tokens besides the routed ones (0: none). Both shape the
	// profile's activation peak (docs/calibration.md#moe-activation).
	DenseIntermediateSize        int `json:"dense_intermediate_size,omitempty"`
	SharedExpertIntermediateSize int `json:"shared_expert_intermediate_size,omitempty"`
	// MoELayers is the number of layers that route to experts when not all of them do
	// (DeepSeek-V3's 58 of 61); 0 means every layer (RoutedLayers).
	MoELayers int `json:"moe_layers,omitempty"`
	// FirstDenseLayers is how many layers at the start keep a dense MLP before the routed
	// ones (first_k_dense_replace: DeepSeek-V3's 3, GLM-4.5's 3); 0 where the dense layers,
	// if any, are interleaved. Pipeline stages hold their experts by it.
	FirstDenseLayers int `json:"first_dense_layers,omitempty"`

	Source string `json:"source,omitempty"`
}

// NumFullAttentionLayers is the number of layers with a full (growing) KV cache.
func (m Model) NumFullAttentionLayers() int {
	return m.NumLayers - m.NumSlidingWindowLayers - m.NumLinearAttentionLayers
}

// IsHybrid reports whether the model mixes attention with state-space (Gated-DeltaNet)
// layers, which vLLM calls a hybrid model (prefix caching is then off by default).
func (m Model) IsHybrid() bool { return m.NumLinearAttentionLayers > 0 }

// RoutedLayers is the number of layers with routed experts: MoELayers, or every layer of a
// mixture-of-experts model that does not say.
func (m Model) RoutedLayers() int {
	switch {
	case !m.IsMoE():
		return 0
	case m.MoELayers > 0:
		return m.MoELayers
	}
	return m.NumLayers
}

// IsMLA reports whether the model uses multi-head latent attention.
func (m Model) IsMLA() bool { return m.KVLoraRank > 0 }

// IsMultimodal reports whether the model has an encoder for images (or other media): a vision
// tower whose profile run is modelled, or only the encoder's parameters.
func (m Model) IsMultimodal() bool { return m.Vision != nil || m.EncoderParams > 0 || m.Multimodal }

// IsMoE reports whether the model has mixture-of-experts layers.
func (m Model) IsMoE() bool { return m.NumExperts > 0 && m.ExpertsPerToken > 0 && m.ActiveParams > 0 }

// ExpertParams is the size of one expert across all layers, from the totals: the parameters
// a token does not touch are the embedding table, a vision or audio encoder and the inactive
// experts.
func (m Model) ExpertParams() float64 {
	if !m.IsMoE() {
		return 0
	}
	inactive := m.Params - m.ActiveParams - m.EmbeddingParams() - m.EncoderParams
	if m.TieWordEmbeddings {
		inactive += m.EmbeddingParams() // the tied table is the LM head, counted as active
	}
	return inactive / float64(m.NumExperts-m.ExpertsPerToken)
}

// EmbeddingParams is the size of the token embedding (and of the LM head, which has the same shape).
func (m Model) EmbeddingParams() float64 { return float64(m.VocabSize) * float64(m.HiddenSize) }

// LayerParams is the parameter count of the transformer layers: everything but embedding,
// LM head and encoder.
func (m Model) LayerParams() float64 {
	p := m.Params - m.EmbeddingParams() - m.EncoderParams
	if !m.TieWordEmbeddings {
		p -= m.EmbeddingParams()
	}
	return p
}

// RopeTable is one cos/sin table of the rotary embedding: a row of rotary_dim values for
// each position.
type RopeTable struct {
	Positions int `json:"positions"`
	RotaryDim int `json:"rotary_dim"`
}

// validateLayers checks the layer-type and expert fields against each other.
func (m Model) validateLayers() error {
	switch {
	case m.NumSlidingWindowLayers < 0 || m.NumLinearAttentionLayers < 0 || m.NumFullAttentionLayers() < 0:
		return fmt.Errorf("num_sliding_window_layers and num_linear_attention_layers must be between 0 and num_layers")
	case m.NumFullAttentionLayers()+m.NumSlidingWindowLayers == 0:
		return fmt.Errorf("at least one attention layer is needed")
	case m.NumSlidingWindowLayers > 0 && m.SlidingWindow <= 0:
		return fmt.Errorf("sliding-window layers need a positive sliding_window")
	case m.NumLinearAttentionLayers > 0 && (m.LinearNumKeyHeads <= 0 || m.LinearNumValueHeads <= 0 ||
		m.LinearKeyHeadDim <= 0 || m.LinearValueHeadDim <= 0 || m.LinearConvKernelDim <= 1):
		return fmt.Errorf("linear-attention layers need linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, linear_value_head_dim and linear_conv_kernel_dim (> 1)")
	case m.EncoderParams < 0 || m.EncoderParams >= m.Params:
		return fmt.Errorf("encoder_params must be between 0 and params")
	case m.FullAttentionHeadDim < 0 || m.FullAttentionKVHeads < 0:
		return fmt.Errorf("full_attention_head_dim and full_attention_kv_heads must not be negative")
	case m.ExpertBytesPerParam < 0 || m.MTPLayers < 0:
		return fmt.Errorf("expert_bytes_per_param and mtp_num_hidden_layers must not be negative")
	case m.PartialRotaryFactor < 0 || m.PartialRotaryFactor > 1:
		return fmt.Errorf("partial_rotary_factor must be between 0 and 1")
	case !validRopeTables(m.RopeTables):
		return fmt.Errorf("rope_tables need positions from 1 to 2^28 and rotary_dim from 1 to 2^14")
	case m.MoELayers < 0 || m.MoELayers > m.NumLayers:
		return fmt.Errorf("moe_layers must be between 0 and num_layers")
	case m.FirstDenseLayers < 0 || m.FirstDenseLayers+m.RoutedLayers() > m.NumLayers:
		return fmt.Errorf("first_dense_layers must be between 0 and num_layers less the routed layers")
	case m.KVLoraRank < 0 || (m.KVLoraRank > 0 && (m.QKRopeHeadDim <= 0 || m.QKNopeHeadDim <= 0 || m.VHeadDim <= 0)):
		return fmt.Errorf("multi-head latent attention needs kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim and v_head_dim (all positive)")
	}
	if m.MambaSSMDType != "" {
		if _, err := dtypeBytes(m.MambaSSMDType); err != nil {
			return fmt.Errorf("mamba_ssm_dtype: %w", err)
		}
	}
	if m.NumExperts > 0 || m.ExpertsPerToken > 0 || m.ActiveParams > 0 {
		if m.NumExperts <= m.ExpertsPerToken || m.ExpertsPerToken <= 0 || m.ActiveParams <= 0 || m.ActiveParams >= m.Params {
			return fmt.Errorf("a mixture of experts needs num_experts > num_experts_per_tok > 0 and 0 < active_params < params")
		}
		if m.ExpertParams() <= 0 {
			return fmt.Errorf("active_params leaves no room for inactive experts")
		}
	}
	return nil
}

// Host describes the CPU-side costs of the API server and scheduler (docs/calibration.md#host-profiles).
type Host struct {
	Name     string  `json:"name"`
	InputMS  float64 `json:"input_ms"`   // request parsing and tokenization before the engine sees it
	OutputMS float64 `json:"output_ms"`  // detokenization and streaming of the first token
	StepMS   float64 `json:"step_ms"`    // fixed scheduler cost per engine step
	PerSeqUS float64 `json:"per_seq_us"` // scheduler and sampler cost per scheduled sequence
	// InputMSPerActiveRequest delays a new request's input processing for each request already
	// in flight: the single-threaded API server also detokenizes and streams their tokens.
	InputMSPerActiveRequest float64 `json:"input_ms_per_active_request"`
	// InputLoopMS is the API server's event-loop time a request's input processing takes:
	// requests that arrive while the loop is busy wait their turn (docs/calibration.md#the-api-servers-event-loop).
	InputLoopMS float64 `json:"input_loop_ms,omitempty"`
	// InputLoopUSPerToken is the loop time tokenizing one prompt token takes.
	InputLoopUSPerToken float64 `json:"input_loop_us_per_token,omitempty"`
	// OutputLoopUS is the event-loop time streaming one output of one request takes; a step's
	// outputs keep the loop busy after the step ends.
	OutputLoopUS float64 `json:"output_loop_us,omitempty"`
	// EagerLayerUS is the CPU time to launch one decoder layer's kernels one by one, as
	// --enforce-eager runs them without CUDA graphs; the GPU cannot run ahead of it.
	EagerLayerUS float64 `json:"eager_layer_us,omitempty"`
	// SerialSteps: the host has no core to spare for async scheduling, so the scheduler's
	// per-step work adds to the GPU's time even where the release overlaps the two
	// (docs/calibration.md#async-scheduling).
	SerialSteps bool   `json:"serial_steps,omitempty"`
	Source      string `json:"source,omitempty"`

	// Memory the vLLM runtime holds besides weights and KV cache (docs/vllm-behaviour.md#kv-cache-memory, docs/calibration.md#activation-memory): the transient
	// activation peak of the profiling forward pass (the larger of the forward over
	// max_num_batched_tokens and the sampler over max_num_seqs), non-torch allocations
	// (CUDA context, cuBLAS workspaces, NCCL) and, with the V1 model runner, CUDA graphs.
	//
	// A dense model's forward peak is ActivationBytesPerTokenHidden per batched token and unit
	// of hidden size (tensors every tensor-parallel rank holds whole) plus
	// ActivationBytesPerTokenIntermediate per batched token and unit of intermediate size
	// (split across the ranks), both for a 16-bit model and scaled by the model's dtype.
	// A mixture-of-experts model's forward is its fused-MoE term instead.
	ActivationBytesPerTokenHidden       float64 `json:"activation_bytes_per_token_hidden"`
	ActivationBytesPerTokenIntermediate float64 `json:"activation_bytes_per_token_intermediate,omitempty"`
	// SamplerBytesPerSeqVocab, when set, replaces the V1 dummy sampler's peak per sequence and
	// vocabulary entry that the release's code gives (an install without FlashInfer runs the
	// sort-based path, 38 B); the built-in hosts leave it unset.
	SamplerBytesPerSeqVocab float64 `json:"sampler_bytes_per_seq_vocab,omitempty"`
	// MoEActivationBytes is the fused-MoE buffers of the profiling forward, in bytes per token,
	// active expert and expert intermediate size (split across tensor-parallel ranks).
	MoEActivationBytes float64 `json:"moe_activation_bytes_per_token_expert_intermediate,omitempty"`
	NonTorchGiB        float64 `json:"non_torch_gib"`
	// NonTorchTPGiB is what a tensor-parallel rank holds besides: NCCL and custom all-reduce
	// buffers.
	NonTorchTPGiB float64 `json:"non_torch_tp_gib,omitempty"`
	CUDAGraphGiB  float64 `json:"cudagraph_gib"`
	MemorySource  string  `json:"memory_source,omitempty"`
}

// Profiles is a set of GPU, model and host profiles.
type Profiles struct {
	GPUs   []GPU   `json:"gpus,omitempty"`
	Models []Model `json:"models,omitempty"`
	Hosts  []Host  `json:"hosts,omitempty"`
}

// BuiltinProfiles returns the profiles embedded in the binary: a copy of them, decoded once,
// that the caller may extend.
func BuiltinProfiles() *Profiles {
	builtinOnce.Do(func() { builtin = decodeBuiltin() })
	return &Profiles{GPUs: slices.Clone(builtin.GPUs), Models: slices.Clone(builtin.Models), Hosts: slices.Clone(builtin.Hosts)}
}

var (
	builtinOnce sync.Once
	builtin     *Profiles
)

func decodeBuiltin() *Profiles {
	p := &Profiles{}
	entries, err := builtinProfiles.ReadDir("profiles")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	for _, e := range entries {
		data, err := builtinProfiles.ReadFile("profiles/" + e.Name())
		if err != nil {
			panic(err)
		}
		var add Profiles
		if err := decodeStrict(data, &add); err != nil {
			panic(fmt.Sprintf("embedded profile %s: %v", e.Name(), err))
		}
		p.merge(add)
	}
	return p
}

// LoadProfiles returns the built-in profiles extended (or overridden, by name) with those in
// the JSON file at path, which has the shape {"gpus": [...], "models": [...], "hosts": [...]}.
func LoadProfiles(path string) (*Profiles, error) {
	p := BuiltinProfiles()
	if path == "" {
		return p, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim profiles: %w", err)
	}
	var add Profiles
	if err := decodeStrict(data, &add); err != nil {
		return nil, fmt.Errorf("sim profiles %s: %w", path, err)
	}
	if err := add.validate(); err != nil {
		return nil, fmt.Errorf("sim profiles %s: %w", path, err)
	}
	p.merge(add)
	return p, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (p *Profiles) validate() error {
	for _, g := range p.GPUs {
		if g.Name == "" || g.MemoryGiB <= 0 || g.BandwidthTBps <= 0 || g.BF16TFLOPS <= 0 ||
			g.EtaBandwidth <= 0 || g.EtaGEMM <= 0 || g.EtaAttention <= 0 ||
			g.DefaultMaxNumBatchedTokens <= 0 || g.DefaultMaxNumSeqs <= 0 {
			return fmt.Errorf("gpu %q: name, memory_gib, bandwidth_tbps, bf16_tflops, eta_* and default_max_* must all be set and positive", g.Name)
		}
		if cc := g.ComputeCapability; cc != 0 && (cc < 1 || cc >= 20) {
			return fmt.Errorf("gpu %q: compute_capability is major.minor, 8.6 for (8, 6); got %g", g.Name, cc)
		}
	}
	for _, m := range p.Models {
		if m.Name == "" || m.NumLayers <= 0 || m.HiddenSize <= 0 || m.NumAttentionHeads <= 0 ||
			m.NumKeyValueHeads <= 0 || m.HeadDim <= 0 || m.VocabSize <= 0 || m.MaxPositionEmbeddings <= 0 || m.Params <= 0 {
			return fmt.Errorf("model %q: name, num_layers, hidden_size, num_attention_heads, num_key_value_heads, head_dim, vocab_size, max_position_embeddings and params must all be set and positive", m.Name)
		}
		if _, err := dtypeBytes(m.DType); err != nil {
			return fmt.Errorf("model %q: %w", m.Name, err)
		}
		if m.LayerParams() <= 0 {
			return fmt.Errorf("model %q: params must exceed the embedding size (vocab_size x hidden_size)", m.Name)
		}
		if err := m.validateLayers(); err != nil {
			return fmt.Errorf("model %q: %w", m.Name, err)
		}
	}
	for _, h := range p.Hosts {
		if h.Name == "" || h.InputMS < 0 || h.OutputMS < 0 || h.StepMS < 0 || h.PerSeqUS < 0 || h.InputMSPerActiveRequest < 0 || h.InputLoopMS < 0 || h.InputLoopUSPerToken < 0 || h.OutputLoopUS < 0 || h.EagerLayerUS < 0 || h.EagerLayerUS > 1e5 ||
			h.ActivationBytesPerTokenHidden < 0 || h.ActivationBytesPerTokenIntermediate < 0 || h.SamplerBytesPerSeqVocab < 0 || h.MoEActivationBytes < 0 || h.NonTorchGiB < 0 || h.NonTorchTPGiB < 0 || h.CUDAGraphGiB < 0 {
			return fmt.Errorf("host %q: name must be set and costs must not be negative", h.Name)
		}
	}
	return nil
}

// merge adds the entries of add, replacing entries of the same name.
func (p *Profiles) merge(add Profiles) {
	for _, g := range add.GPUs {
		if i := indexByName(len(p.GPUs), func(i int) string { return p.GPUs[i].Name }, g.Name); i >= 0 {
			p.GPUs[i] = g
		} else {
			p.GPUs = append(p.GPUs, g)
		}
	}
	for _, m := range add.Models {
		if i := indexByName(len(p.Models), func(i int) string { return p.Models[i].Name }, m.Name); i >= 0 {
			p.Models[i] = m
		} else {
			p.Models = append(p.Models, m)
		}
	}
	for _, h := range add.Hosts {
		if i := indexByName(len(p.Hosts), func(i int) string { return p.Hosts[i].Name }, h.Name); i >= 0 {
			p.Hosts[i] = h
		} else {
			p.Hosts = append(p.Hosts, h)
		}
	}
}

func indexByName(n int, name func(int) string, want string) int {
	for i := 0; i < n; i++ {
		if strings.EqualFold(name(i), want) {
			return i
		}
	}
	return -1
}

// normalize folds case and drops separators so "a100_80gb", "A100-80GB" and "a100 80gb" match.
func normalize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch r {
		case '-', '_', ' ', '.':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// GPU finds a GPU profile by name or alias, ignoring case, separators and the vendor words of
// torch's device names ("NVIDIA GeForce RTX 4090", "Tesla T4", "AMD Instinct MI300X").
func (p *Profiles) GPU(name string) (GPU, error) {
	for _, want := range gpuKeys(name) {
		for _, g := range p.GPUs {
			for _, n := range append([]string{g.Name}, g.Aliases...) {
				if normalize(n) == want {
					return g, nil
				}
			}
		}
	}
	names := make([]string, len(p.GPUs))
	var cands []nameCandidate
	for i, g := range p.GPUs {
		names[i] = g.Name
		for _, n := range append([]string{g.Name}, g.Aliases...) {
			keys := gpuKeys(n)
			cands = append(cands, nameCandidate{keys[len(keys)-1], g.Name})
		}
	}
	keys := gpuKeys(name)
	return GPU{}, fmt.Errorf("unknown GPU %q%s; known GPUs: %s. To add one, pass --sim-profiles FILE with "+
		`{"gpus": [{"name": ..., "memory_gib": ..., "bandwidth_tbps": ..., "bf16_tflops": ..., ...}]} (docs/catalogue.md#adding-a-gpu)`,
		name, didYouMean(keys[len(keys)-1], cands), strings.Join(names, ", "))
}

// gpuVendorWords are dropped from the front of a device name, in this order.
var gpuVendorWords = []string{"nvidia", "amd", "tesla", "geforce", "quadro", "instinct", "radeon"}

// gpuKeys is the normalized name, then the same without leading vendor words.
func gpuKeys(name string) []string {
	key := normalize(name)
	keys := []string{key}
	for _, w := range gpuVendorWords {
		if rest, ok := strings.CutPrefix(key, w); ok && rest != "" {
			key = rest
			keys = append(keys, key)
		}
	}
	return keys
}

// Model finds a model profile by its Hugging Face name, ignoring case; the organisation part
// ("meta-llama/") is optional. A local path ending in a known name matches too.
func (p *Profiles) Model(name string) (Model, error) {
	want := strings.ToLower(strings.TrimRight(name, "/"))
	base := want[strings.LastIndex(want, "/")+1:]
	for _, m := range p.Models {
		for _, n := range append([]string{m.Name}, m.Aliases...) {
			n = strings.ToLower(n)
			if n == want || n[strings.LastIndex(n, "/")+1:] == base {
				return m, nil
			}
		}
	}
	var cands []nameCandidate
	for _, m := range p.Models {
		for _, n := range append([]string{m.Name}, m.Aliases...) {
			cands = append(cands, nameCandidate{modelKey(n), m.Name})
		}
	}
	names := p.ModelNames()
	hint := didYouMean(modelKey(name), cands)
	if base, method := quantizedBuildOf(name, p); base != "" {
		hint = fmt.Sprintf(" (a build of %s quantized with %s? --model %s --sim-checkpoint-quantization %s)", base, method, base, method)
		switch {
		case method == gptqInt8:
			// The flag's gptq is 4-bit; the checkpoint's config gives the bits.
			hint = fmt.Sprintf(" (an 8-bit GPTQ build of %s? give its config.json with --sim-model-config; --sim-checkpoint-quantization gptq sizes 4-bit weights)", base)
		case method == "fp8" && !strings.HasSuffix(strings.ToLower(name), "-dynamic"):
			// Qwen's, DeepSeek's and MiniMax's own FP8 releases scale by block, which the
			// flag does not say (docs/calibration.md#fp8-gemms).
			hint = fmt.Sprintf(" (a build of %s quantized with fp8? --model %s --sim-checkpoint-quantization fp8 for per-channel scales; for block-scaled weights give its config.json with --sim-model-config)", base, base)
		}
	}
	return Model{}, fmt.Errorf("unknown model %q%s; the %d known models are listed by vllmtop help sim (size one from its Hugging Face config.json with --sim-model-config FILE, or add one with --sim-profiles FILE)", name, hint, len(names))
}

// quantizedBuildOf reads a name the catalogue lacks as a quantized build of one it has, by the
// suffix such checkpoints carry ("Qwen/Qwen3-8B-AWQ"): the catalogue's name and the method
// (gptqInt8 for an 8-bit GPTQ build, which the flag cannot say), or "".
func quantizedBuildOf(name string, p *Profiles) (base, method string) {
	for _, suffix := range []struct{ s, method string }{
		{"-awq", "awq"}, {"-gptq-int4", "gptq"}, {"-gptq-int8", gptqInt8}, {"-gptq", "gptq"},
		{"-fp8-dynamic", "fp8"}, {"-fp8", "fp8"}, {"-nvfp4", "nvfp4"}, {"-bnb-4bit", "bitsandbytes"},
	} {
		// The suffixes are ASCII: compare the name's last bytes, not a lower-cased copy whose
		// length may differ.
		n := len(name) - len(suffix.s)
		if n <= 0 || !strings.EqualFold(name[n:], suffix.s) {
			continue
		}
		for _, m := range p.Models {
			if m.Quantization == "" && strings.EqualFold(m.Name, name[:n]) {
				return m.Name, suffix.method
			}
		}
	}
	return "", ""
}

// modelKey is the part of a model name after its organisation, in lower case.
func modelKey(name string) string {
	return strings.ToLower(name[strings.LastIndex(name, "/")+1:])
}

// nameCandidate is a known name under the key an unknown one is compared with.
type nameCandidate struct{ key, name string }

// didYouMean is " (did you mean X?)" for the known name closest to the key of an unknown one,
// or "" when none is close: the longest key that begins the other ("qwen3-8b" for
// "qwen3-8b-instruct"), else the shortest the key begins, else the least edit distance, up to a third of the key.
func didYouMean(want string, cands []nameCandidate) string {
	best, bestLen := "", 2
	for _, c := range cands {
		if len(c.key) > bestLen && strings.HasPrefix(want, c.key) {
			best, bestLen = c.name, len(c.key)
		}
	}
	if best == "" && len(want) > 2 {
		bestLen = math.MaxInt
		for _, c := range cands {
			if len(c.key) < bestLen && strings.HasPrefix(c.key, want) {
				best, bestLen = c.name, len(c.key)
			}
		}
	}
	if best == "" {
		bestDist := len(want)/3 + 1
		for _, c := range cands {
			if d := textfmt.EditDistance(want, c.key); d < bestDist {
				best, bestDist = c.name, d
			}
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// ModelNames lists the known model names, sorted.
func (p *Profiles) ModelNames() []string {
	names := make([]string, len(p.Models))
	for i, m := range p.Models {
		names[i] = m.Name
	}
	sort.Strings(names)
	return names
}

// Host finds a host profile by name.
func (p *Profiles) Host(name string) (Host, error) {
	for _, h := range p.Hosts {
		if strings.EqualFold(h.Name, name) {
			return h, nil
		}
	}
	names := make([]string, len(p.Hosts))
	for i, h := range p.Hosts {
		names[i] = h.Name
	}
	return Host{}, fmt.Errorf("unknown host profile %q; known: %s", name, strings.Join(names, ", "))
}

// dtypeBytes returns the size of one element of a model or KV-cache dtype.
func dtypeBytes(dtype string) (float64, error) {
	switch strings.ToLower(dtype) {
	case "bfloat16", "bf16", "float16", "half", "fp16":
		return 2, nil
	case "float32", "float", "fp32":
		return 4, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "int8_per_token_head", "fp8_per_token_head":
		return 1, nil
	case "int4_per_token_head", "nvfp4", "nvfp4_4over6":
		return 0.5, nil // the data alone; kvHeadBytes adds the scales
	}
	return 0, fmt.Errorf("unknown dtype %q", dtype)
}

func validRopeTables(ts []RopeTable) bool {
	for _, t := range ts {
		if t.Positions < 1 || t.Positions > 1<<28 || t.RotaryDim < 1 || t.RotaryDim > 1<<14 {
			return false
		}
	}
	return len(ts) <= 16
}

// ropeTables are the model's rotary tables: RopeTables, else one of max_position_embeddings
// rows of the rotated part of a head (qk_rope_head_dim for multi-head latent attention).
func (m Model) ropeTables() []RopeTable {
	if len(m.RopeTables) > 0 {
		return m.RopeTables
	}
	rotary := m.HeadDim
	if f := m.PartialRotaryFactor; f > 0 {
		rotary = max(1, int(float64(m.HeadDim)*f))
	}
	if m.IsMLA() {
		rotary = m.QKRopeHeadDim
	}
	return []RopeTable{{Positions: m.MaxPositionEmbeddings, RotaryDim: rotary}}
}
