package sim

// The step time with pipeline stages (docs/vllm-behaviour.md#pipeline-parallelism): vLLM's
// scheduler keeps up to pp batches in flight (max_concurrent_batches = pp), so the running
// requests move as pp micro-batches, one per stage at a time. In the steady state a request
// gets its next token once its micro-batch has passed every stage: a whole-model pass of the
// micro-batch (each stage runs its layers, streaming its share of the weights) plus a
// hand-off of the hidden states at each of the pp-1 stage boundaries. The engine's one step
// is that period for the largest micro-batch: with one sequence pipeline stages gain
// nothing; with enough in flight the compute of a step is divided by pp.

// Stage hand-off constants, physics rather than fits: a small NCCL send/recv costs tens of
// microseconds, and hidden states cross PCIe-class links at about 25 GB/s.
const (
	ppHopSeconds  = 20e-6
	ppLinkBytesPS = 25e9
)

// pipeline is the step model's view of the stages.
type pipeline struct {
	size     int
	hopBytes float64 // bytes a token hands to the next stage: hidden states and residual
}

func newPipeline(s *Setup) pipeline {
	db, _ := dtypeBytes(s.ModelDType)
	return pipeline{size: max(1, s.PipelineParallelSize), hopBytes: 2 * float64(s.ModelProfile.HiddenSize) * db}
}

// pipelineSeconds is the pipeline's period for batch split round-robin into micro-batches.
func (sm *StepModel) pipelineSeconds(batch []Work) float64 {
	p := sm.pipe.size
	micro := make([][]Work, p)
	for i, w := range batch {
		micro[i%p] = append(micro[i%p], w)
	}
	var longest float64
	tokens := 0
	for _, mb := range micro {
		if t := sm.modelSeconds(mb); t > longest {
			longest, tokens = t, 0
			for _, w := range mb {
				tokens += w.Q
			}
		}
	}
	if longest == 0 {
		return 0
	}
	hop := ppHopSeconds + float64(tokens)*sm.pipe.hopBytes/ppLinkBytesPS
	return longest + float64(p-1)*hop
}

// wholeModelKV is the KV bytes per token of all full-attention and sliding-window layers and
// the linear-attention state per request, across the stages (Capacity has one stage's).
func wholeModelKV(s *Setup) (full, sliding, state float64) {
	m := s.ModelProfile
	per := float64(attentionBytesPerToken(s))
	full, sliding = per*float64(m.NumFullAttentionLayers()), per*float64(m.NumSlidingWindowLayers)
	if m.NumLinearAttentionLayers > 0 {
		state = 2 * float64(gdnStateBytes(s)*int64(m.NumLinearAttentionLayers))
	}
	return full, sliding, state
}
