package serve

import (
	"fmt"
	"math"
	"strconv"

	"github.com/vllmtop/vllmtop/server/sim"
)

// samplingParams are the sampling fields of a completions or chat request. The simulator's
// text does not depend on them, but vLLM checks their ranges before it queues the request
// (SamplingParams._verify_args, docs/vllm-behaviour.md#sampling-parameters), so a request
// vLLM would refuse is refused here too, with vLLM's message.
type samplingParams struct {
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	PresencePenalty   *float64 `json:"presence_penalty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	Seed              *int64   `json:"seed"`
	Stop              any      `json:"stop"`
	Priority          int      `json:"priority"`
}

// paramError is one of vLLM's VLLMValidationError refusals: the message, and the parameter
// it names (empty for the checks that name none).
type paramError struct {
	msg, param string
}

// validationMessage renders a VLLMValidationError as vLLM's str() does: the message, then
// "(parameter=..., value=...)" for the parts that are set.
func validationMessage(msg, param, value string) string {
	if param == "" {
		return msg
	}
	return fmt.Sprintf("%s (parameter=%s, value=%s)", msg, param, value)
}

// check returns the first range vLLM refuses, in _verify_args's order.
func (p *samplingParams) check() *paramError {
	val := func(f *float64, def float64) float64 {
		if f == nil {
			return def
		}
		return *f
	}
	presence, frequency := val(p.PresencePenalty, 0), val(p.FrequencyPenalty, 0)
	repetition, temp := val(p.RepetitionPenalty, 1), val(p.Temperature, 1)
	topP, minP := val(p.TopP, 1), val(p.MinP, 0)
	py := sim.PyFloat
	switch {
	case !(presence >= -2 && presence <= 2):
		return &paramError{msg: fmt.Sprintf("presence_penalty must be in [-2, 2], got %s.", py(presence))}
	case !(frequency >= -2 && frequency <= 2):
		return &paramError{msg: fmt.Sprintf("frequency_penalty must be in [-2, 2], got %s.", py(frequency))}
	case math.IsNaN(repetition) || math.IsInf(repetition, 0):
		return &paramError{msg: fmt.Sprintf("repetition_penalty must be a finite number, got %s.", py(repetition))}
	case repetition <= 0:
		return &paramError{msg: fmt.Sprintf("repetition_penalty must be greater than zero, got %s.", py(repetition))}
	case math.IsNaN(temp) || math.IsInf(temp, 0):
		return p.named("temperature", fmt.Sprintf("temperature must be a finite number, got %s.", py(temp)), py(temp))
	case temp < 0:
		return p.named("temperature", fmt.Sprintf("temperature must be non-negative, got %s.", py(temp)), py(temp))
	case temp > 2:
		return p.named("temperature", fmt.Sprintf("temperature must be in [0, 2], got %s.", py(temp)), py(temp))
	case !(topP > 0 && topP <= 1):
		return p.named("top_p", fmt.Sprintf("top_p must be in (0, 1], got %s.", py(topP)), py(topP))
	case p.TopK != nil && *p.TopK < -1:
		return &paramError{msg: fmt.Sprintf("top_k must be 0 (disable), or at least 1, got %d.", *p.TopK)}
	case !(minP >= 0 && minP <= 1):
		return &paramError{msg: fmt.Sprintf("min_p must be in [0, 1], got %s.", py(minP))}
	}
	return p.checkStop()
}

func (p *samplingParams) named(param, msg, value string) *paramError {
	return &paramError{msg: validationMessage(msg, param, value), param: param}
}

// checkStop refuses an empty stop string, as vLLM does.
func (p *samplingParams) checkStop() *paramError {
	var stops []string
	switch s := p.Stop.(type) {
	case string:
		stops = []string{s}
	case []any:
		for _, x := range s {
			if str, ok := x.(string); ok {
				stops = append(stops, str)
			}
		}
	}
	for _, s := range stops {
		if s == "" {
			return &paramError{msg: "stop cannot contain an empty string."}
		}
	}
	return nil
}

// greedy reports whether the request samples greedily (temperature below vLLM's epsilon),
// for which vLLM allows only n=1.
func (p *samplingParams) greedy() bool { return p.Temperature != nil && *p.Temperature < 1e-5 }

// checkN is _verify_num_sequences: n at least 1 and at most the simulator's maxN (vLLM's
// VLLM_MAX_N_SEQUENCES is 16384; every choice is an engine request here).
func checkN(n int) *paramError {
	switch {
	case n < 1:
		return &paramError{msg: fmt.Sprintf("n must be at least 1, got %d.", n)}
	case n > maxN:
		return &paramError{msg: fmt.Sprintf("n must be at most %d, got %d. This server (vllmtop sim) serves at most %d choices a request.", maxN, n, maxN)}
	}
	return nil
}

// checkGreedy is _verify_greedy_sampling, which vLLM runs after the ranges: greedy sampling
// allows only n=1.
func (p *samplingParams) checkGreedy(n int) *paramError {
	if n > 1 && p.greedy() {
		return &paramError{msg: fmt.Sprintf("n must be 1 when using greedy sampling, got %d.", n)}
	}
	return nil
}

// checkPriority is the engine's check: a priority other than 0 needs --scheduling-policy
// priority (vLLM raises ValueError, answered 400).
func checkPriority(priority int, policy string) *paramError {
	if priority != 0 && policy != "priority" {
		return &paramError{msg: "Got priority " + strconv.Itoa(priority) + " but Priority scheduling is not enabled."}
	}
	return nil
}
