package sim

import (
	"fmt"
	"math"
	"strings"
)

// SpeculativeConfig is vLLM's --speculative-config (a JSON object), with the fields the
// simulator uses, and the simulated acceptance.
type SpeculativeConfig struct {
	// Method is "ngram", "eagle", "eagle3", "mtp" or "draft_model" (vLLM also names MTP per
	// model, e.g. "qwen3_next_mtp"; those resolve to "mtp").
	Method               string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	// Model is the draft model or EAGLE head (required for eagle, eagle3 and draft_model).
	Model string `json:"model,omitempty"`
	// AcceptanceRate is the mean draft acceptance rate to simulate (accepted ÷ drafted tokens,
	// vLLM's "Avg Draft acceptance rate"); 0 takes the method's default.
	AcceptanceRate float64 `json:"-"`
}

// Default mean acceptance rates by method: assumptions in the range published for chat
// workloads (n-gram lookup well below learned drafters; MTP heads trained with the model
// highest), to be overridden with --sim-spec-acceptance for a given workload.
var defaultAcceptance = map[string]float64{
	"ngram":       0.35,
	"eagle":       0.55,
	"eagle3":      0.65,
	"draft_model": 0.6,
	"mtp":         0.75,
}

// resolveSpeculative checks a speculative config against the model and fills its defaults.
func resolveSpeculative(sp *SpeculativeConfig, m Model) (*SpeculativeConfig, error) {
	if sp == nil {
		return nil, nil
	}
	out := *sp
	out.Method = strings.ToLower(strings.TrimSpace(out.Method))
	if strings.HasSuffix(out.Method, "_mtp") {
		out.Method = "mtp"
	}
	switch out.Method {
	case "":
		if out.Model == "" {
			return nil, &ConfigError{"--speculative-config: method or model must be given (method: ngram, eagle, eagle3, mtp or draft_model)"}
		}
		out.Method = "draft_model"
	case "ngram", "mtp":
	case "eagle", "eagle3", "draft_model":
		if out.Model == "" {
			return nil, &ConfigError{fmt.Sprintf("--speculative-config: method %q needs the draft model in \"model\"", out.Method)}
		}
	default:
		return nil, &ConfigError{fmt.Sprintf("--speculative-config: method %q is not simulated; choose ngram, eagle, eagle3, mtp or draft_model", sp.Method)}
	}
	if out.Method == "mtp" {
		if m.MTPLayers == 0 {
			return nil, &ConfigError{fmt.Sprintf("--speculative-config: method \"mtp\" needs a model with MTP layers; %s has none", m.Name)}
		}
		if out.NumSpeculativeTokens == 0 {
			out.NumSpeculativeTokens = m.MTPLayers
		}
	}
	if out.NumSpeculativeTokens == 0 && out.Method != "mtp" {
		return nil, &ConfigError{"--speculative-config: num_speculative_tokens must be provided with speculative model unless the draft model config contains an n_predict parameter."}
	}
	if out.NumSpeculativeTokens < 1 || out.NumSpeculativeTokens > 16 {
		return nil, &ConfigError{fmt.Sprintf("--speculative-config: num_speculative_tokens must be between 1 and 16, got %d", out.NumSpeculativeTokens)}
	}
	if out.AcceptanceRate == 0 {
		out.AcceptanceRate = defaultAcceptance[out.Method]
	}
	if !(out.AcceptanceRate > 0 && out.AcceptanceRate < 1) {
		return nil, &ConfigError{fmt.Sprintf("--sim-spec-acceptance must be between 0 and 1 (exclusive), got %g", out.AcceptanceRate)}
	}
	return &out, nil
}

// Acceptance is the simulated verifier: each draft position is accepted with the same
// conditional probability, and drafting stops at the first rejection, so the acceptance
// rate of position i (counting from 0) is c^(i+1), falling with position. c is chosen so
// that the mean over the k positions equals the configured acceptance rate.
type Acceptance struct {
	K           int
	Conditional float64
}

// NewAcceptance solves for the conditional acceptance that gives mean over k positions.
func NewAcceptance(k int, mean float64) Acceptance {
	lo, hi := 0.0, 1.0
	for range 100 {
		c := (lo + hi) / 2
		if meanAcceptance(k, c) < mean {
			lo = c
		} else {
			hi = c
		}
	}
	return Acceptance{K: k, Conditional: (lo + hi) / 2}
}

func meanAcceptance(k int, c float64) float64 {
	sum, p := 0.0, 1.0
	for range k {
		p *= c
		sum += p
	}
	return sum / float64(k)
}

// PositionRate is the expected acceptance rate of draft position i (0-based).
func (a Acceptance) PositionRate(i int) float64 { return math.Pow(a.Conditional, float64(i+1)) }

// MeanRate is the expected accepted ÷ drafted tokens.
func (a Acceptance) MeanRate() float64 { return meanAcceptance(a.K, a.Conditional) }

// Draw returns how many leading draft tokens the verifier accepts, using rng.
func (a Acceptance) Draw(rng *uint64) int {
	n := 0
	for n < a.K {
		u := float64(next(rng)>>11) / (1 << 53)
		if u >= a.Conditional {
			break
		}
		n++
	}
	return n
}

// draftLayers is how many draft layers speculative decoding adds to this GPU, on the last
// pipeline stage, which runs the drafter: the model's own MTP layers (mtp_num_hidden_layers), or
// the one decoder layer of an EAGLE head drafting for a dense model of one kind of layer (the
// head has the target's shape; for other targets its shape is not known, and it counts for
// nothing). vLLM's drafter shares the target's embedding and LM head and gives each draft
// attention layer its KV cache beside the target's
// (docs/vllm-behaviour.md#speculative-decoding-memory).
func draftLayers(s *Setup) int {
	sp, m := s.Speculative, s.ModelProfile
	if sp == nil || !s.lastStage() {
		return 0
	}
	switch sp.Method {
	case "mtp":
		return m.MTPLayers
	case "eagle", "eagle3":
		if !m.IsMoE() && !m.IsMLA() && !hybridLayers(m) {
			return 1
		}
	}
	return 0
}

// hybridLayers reports a model of more than one kind of layer: Gated-DeltaNet or sliding-window
// layers beside full attention.
func hybridLayers(m Model) bool {
	return m.NumLinearAttentionLayers > 0 || m.NumSlidingWindowLayers > 0
}

// draftKVLayers are the draft layers the KV layout adds: none beside Gated-DeltaNet or
// sliding-window layers, whose grouping with a draft layer is not established
// (docs/vllm-behaviour.md#speculative-decoding-memory).
func draftKVLayers(s *Setup) int {
	if hybridLayers(s.ModelProfile) {
		return 0
	}
	return draftLayers(s)
}

// draftWeightBytes is what the draft layers take on one rank: each an average decoder layer of
// the rank's, and the projection that feeds it: of the embedding and the hidden state (2h x h)
// for MTP and EAGLE, of three layers' hidden states (3h x h) for EAGLE-3, whose own LM head over
// its draft vocabulary is not counted.
func draftWeightBytes(s *Setup, rankWeights float64) float64 {
	n := draftLayers(s)
	if n == 0 {
		return 0
	}
	m := s.ModelProfile
	layers := m.NumLayers
	if s.stage != nil {
		layers = s.stage.layers
	}
	db, _ := dtypeBytes(s.ModelDType)
	decoder := rankWeights - nonDecoderBytes(s, db)
	inputs := 2.0
	if s.Speculative.Method == "eagle3" {
		inputs = 3
	}
	proj := inputs * float64(m.HiddenSize) * float64(m.HiddenSize) * linearWeightBytes(s.weightQuantization(), db)
	return float64(n) * (max(0, decoder)/float64(max(1, layers)) + proj/float64(s.TensorParallelSize))
}
