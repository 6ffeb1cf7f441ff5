package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxHFConfigBytes caps a config.json (real ones are a few KiB; a long layer_types list a
// few tens).
const MaxHFConfigBytes = 1 << 20

// hfConfig is the part of a Hugging Face config.json that sizes a model
// (docs/catalogue.md#model-config-files). Numbers are float64 so that 4096.0 and null both
// decode; they are checked into ints by hfInt. Several names for one figure are the spellings
// of different model families.
type hfConfig struct {
	ModelType     string   `json:"model_type"`
	Architectures []string `json:"architectures"`
	TorchDType    string   `json:"torch_dtype"`
	DType         string   `json:"dtype"`
	NameOrPath    string   `json:"_name_or_path"`

	Layers      *float64 `json:"num_hidden_layers"`
	NLayer      *float64 `json:"n_layer"`
	NumLayers   *float64 `json:"num_layers"`
	Hidden      *float64 `json:"hidden_size"`
	DModel      *float64 `json:"d_model"`
	NEmbd       *float64 `json:"n_embd"`
	Heads       *float64 `json:"num_attention_heads"`
	NHead       *float64 `json:"n_head"`
	KVHeads     *float64 `json:"num_key_value_heads"`
	MQGroups    *float64 `json:"multi_query_group_num"`
	HeadDim     *float64 `json:"head_dim"`
	Inter       *float64 `json:"intermediate_size"`
	FFNDim      *float64 `json:"ffn_dim"`
	NInner      *float64 `json:"n_inner"`
	InterMLP    *float64 `json:"intermediate_size_mlp"`
	Vocab       *float64 `json:"vocab_size"`
	PaddedVocab *float64 `json:"padded_vocab_size"`
	Tied        *bool    `json:"tie_word_embeddings"`

	MaxPos       *float64       `json:"max_position_embeddings"`
	NPositions   *float64       `json:"n_positions"`
	MaxSeqLen    *float64       `json:"max_seq_len"`
	SeqLength    *float64       `json:"seq_length"`
	MaxSeqLength *float64       `json:"max_sequence_length"`
	RopeScaling  map[string]any `json:"rope_scaling"`
	RopeParams   map[string]any `json:"rope_parameters"`
	RopeLocal    *float64       `json:"rope_local_base_freq"`
	PartialRope  *float64       `json:"partial_rotary_factor"`
	RotaryPct    *float64       `json:"rotary_pct"`
	RotaryDim    *float64       `json:"rotary_dim"`

	SlidingWindow    *float64 `json:"sliding_window"`
	UseSlidingWindow *bool    `json:"use_sliding_window"`
	SlidingPattern   *float64 `json:"sliding_window_pattern"`
	LayerTypes       []string `json:"layer_types"`
	HybridPattern    string   `json:"hybrid_override_pattern"`
	FullAttnInterval *float64 `json:"full_attention_interval"`

	hfMoE
	hfMLA
	hfLinear
	hfGemma4

	Quant        *hfQuant  `json:"quantization_config"`
	TextConfig   *hfConfig `json:"text_config"`
	LLMConfig    *hfConfig `json:"llm_config"`
	VisionConfig *hfVision `json:"vision_config"`
	// The image's tokens for the language model, at the top level of a multimodal config.
	MMTokensPerImage *float64 `json:"mm_tokens_per_image"`
	SpatialMerge     *float64 `json:"spatial_merge_size"`
}

type hfMoE struct {
	NumExperts        *float64 `json:"num_experts"`
	NumLocalExperts   *float64 `json:"num_local_experts"`
	NRoutedExperts    *float64 `json:"n_routed_experts"`
	ExpertsPerTok     *float64 `json:"num_experts_per_tok"`
	MoETopK           *float64 `json:"moe_top_k"`
	MoEInter          *float64 `json:"moe_intermediate_size"`
	SharedExperts     *float64 `json:"n_shared_experts"`
	SharedExpertInter *float64 `json:"shared_expert_intermediate_size"`
	FirstKDense       *float64 `json:"first_k_dense_replace"`
	SparseStep        *float64 `json:"decoder_sparse_step"`
	InterleaveMoE     *float64 `json:"interleave_moe_layer_step"`
	MLPOnlyLayers     []int    `json:"mlp_only_layers"`
}

type hfMLA struct {
	KVLoraRank *float64 `json:"kv_lora_rank"`
	QLoraRank  *float64 `json:"q_lora_rank"`
	QKRope     *float64 `json:"qk_rope_head_dim"`
	QKNope     *float64 `json:"qk_nope_head_dim"`
	VHead      *float64 `json:"v_head_dim"`
	NextN      *float64 `json:"num_nextn_predict_layers"`
	MTPLayers  *float64 `json:"mtp_num_hidden_layers"`
}

// hfLinear holds the state-space layers: Gated-DeltaNet (Qwen3-Next, Qwen3.5) and Mamba2
// (Nemotron-H, Granite-4.0-H), whose states have the same two-part shape.
type hfLinear struct {
	LinKeyHeads   *float64 `json:"linear_num_key_heads"`
	LinValueHeads *float64 `json:"linear_num_value_heads"`
	LinKeyDim     *float64 `json:"linear_key_head_dim"`
	LinValueDim   *float64 `json:"linear_value_head_dim"`
	LinConv       *float64 `json:"linear_conv_kernel_dim"`
	SSMDType      string   `json:"mamba_ssm_dtype"`

	MambaHeads   *float64 `json:"mamba_num_heads"`
	MambaNHeads  *float64 `json:"mamba_n_heads"`
	MambaHeadDim *float64 `json:"mamba_head_dim"`
	MambaDHead   *float64 `json:"mamba_d_head"`
	SSMState     *float64 `json:"ssm_state_size"`
	MambaDState  *float64 `json:"mamba_d_state"`
	NGroups      *float64 `json:"n_groups"`
	MambaNGroups *float64 `json:"mamba_n_groups"`
	ConvKernel   *float64 `json:"conv_kernel"`
	MambaDConv   *float64 `json:"mamba_d_conv"`
}

type hfQuant struct {
	Method        string         `json:"quant_method"`
	KVCacheScheme map[string]any `json:"kv_cache_scheme"`
	KVQuantAlgo   any            `json:"kv_cache_quant_algo"`
	Bits          *float64       `json:"bits"`
	QuantAlgo     string         `json:"quant_algo"`
	ConfigGroups  map[string]any `json:"config_groups"`
	BlockSize     any            `json:"weight_block_size"`
}

type hfVision struct {
	ModelType string   `json:"model_type"`
	Hidden    *float64 `json:"hidden_size"`
	Inter     *float64 `json:"intermediate_size"`
	Layers    *float64 `json:"num_hidden_layers"`
	Depth     *float64 `json:"depth"`
	ImageSize *float64 `json:"image_size"`
	PatchSize *float64 `json:"patch_size"`
	Channels  *float64 `json:"num_channels"`
}

// ReadHFConfig reads a config.json of at most MaxHFConfigBytes.
func ReadHFConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxHFConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxHFConfigBytes {
		return nil, fmt.Errorf("larger than %d KiB; not a config.json", MaxHFConfigBytes>>10)
	}
	return data, nil
}

// ModelFromHFConfig sizes a model from the bytes of its config.json, named name. The error is
// one line.
func ModelFromHFConfig(name string, data []byte) (Model, error) {
	var top hfConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&top); err != nil {
		return Model{}, jsonConfigError(err)
	}
	c := &top
	for _, sub := range []*hfConfig{top.TextConfig, top.LLMConfig} {
		if sub != nil && (sub.Heads != nil || sub.Layers != nil) {
			c = sub // a multimodal checkpoint: the language model's figures
			break
		}
	}
	c.classDefaults()
	m, err := c.model(name, top)
	if err != nil {
		return Model{}, err
	}
	p := Profiles{Models: []Model{m}}
	if err := p.validate(); err != nil {
		return Model{}, err
	}
	return m, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// jsonConfigError words a decoding error of a config.json for its user: a value of the wrong
// JSON type names the field and both types, not the decoder's Go types.
func jsonConfigError(err error) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		if typ.Field == "" {
			return fmt.Errorf("not a config.json: it holds a JSON %s, not an object", typ.Value)
		}
		return fmt.Errorf("not a config.json: %q is a JSON %s, not a %s", typ.Field, typ.Value, jsonKind(typ.Type.Kind().String()))
	}
	return fmt.Errorf("not a JSON config: %s", oneLine(err.Error()))
}

// jsonKind is the JSON name of a Go kind the config's fields use.
func jsonKind(goKind string) string {
	switch goKind {
	case "float64", "int", "int64", "ptr":
		return "number"
	case "struct", "map":
		return "object"
	case "slice":
		return "list"
	case "bool":
		return "boolean"
	}
	return goKind
}

// hfInt is the first of vals that is set, as an int in [lo, hi]; def when none is set.
func hfInt(field string, lo, hi, def int, vals ...*float64) (int, error) {
	for _, v := range vals {
		if v == nil {
			continue
		}
		if math.IsNaN(*v) || *v != math.Trunc(*v) || *v < float64(lo) || *v > float64(hi) {
			return 0, fmt.Errorf("%s is %s; it must be a whole number from %d to %d", field, strconv.FormatFloat(*v, 'f', -1, 64), lo, hi)
		}
		return int(*v), nil
	}
	if def < 0 {
		return 0, fmt.Errorf("%s is missing", field)
	}
	return def, nil
}

var errNoAttention = errors.New("no attention layers: this model cannot be sized")

// Prefer puts m first among the models, replacing one of the same name, so that a lookup of
// its name finds it before a catalogue entry with the same base name.
func (p *Profiles) Prefer(m Model) {
	kept := []Model{m}
	for _, o := range p.Models {
		if !strings.EqualFold(o.Name, m.Name) {
			kept = append(kept, o)
		}
	}
	p.Models = kept
}

// LoadHFModel sizes the model name from the config.json at path. A safetensors index beside
// it (model.safetensors.index.json) gives the weights' total size, and so the parameter count
// of an unquantized checkpoint; without one the count is the config's shapes'.
func LoadHFModel(name, path string) (Model, error) {
	data, err := ReadHFConfig(path)
	if err != nil {
		return Model{}, err
	}
	m, err := ModelFromHFConfig(name, data)
	if err != nil {
		return Model{}, err
	}
	m.Source = "config.json at " + path + "; " + strings.TrimPrefix(m.Source, "config.json; ")
	if total := safetensorsTotal(filepath.Join(filepath.Dir(path), "model.safetensors.index.json")); total > 0 && m.Quantization == "" {
		b, _ := dtypeBytes(m.DType)
		if p := total / b; p > m.EmbeddingParams() && p > m.ActiveParams {
			m.Params = p
			m.Source += "; total parameters from the safetensors index"
		}
	}
	return m, nil
}

// safetensorsTotal is the metadata.total_size of a safetensors index, 0 when there is none.
func safetensorsTotal(path string) float64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var idx struct {
		Metadata struct {
			TotalSize float64 `json:"total_size"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&idx); err != nil {
		return 0
	}
	if t := idx.Metadata.TotalSize; t > 0 && t < 1<<50 {
		return t
	}
	return 0
}

// partialRotary is the share of a head that RoPE rotates, from partial_rotary_factor (at the
// top or in rope_parameters, as newer configs put it), rotary_pct (GPT-NeoX) or rotary_dim;
// 0 for the whole head.
func (c *hfConfig) partialRotary(headDim int) float64 {
	f := c.PartialRope
	if f == nil {
		if v, ok := c.RopeParams["partial_rotary_factor"].(float64); ok {
			f = &v
		}
	}
	if f == nil {
		f = c.RotaryPct
	}
	if f == nil && c.RotaryDim != nil && headDim > 0 {
		v := *c.RotaryDim / float64(headDim)
		f = &v
	}
	if f == nil || math.IsNaN(*f) || *f <= 0 || *f >= 1 {
		return 0
	}
	return *f
}
