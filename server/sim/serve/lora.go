package serve

import (
	"sort"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/metrics"
)

// loraModule is the --lora-modules adapter a request's "model" names, or nil for the base
// model.
func (s *Server) loraModule(name string) *LoRAModule {
	for i := range s.opts.LoRAModules {
		if s.opts.LoRAModules[i].Name == name {
			return &s.opts.LoRAModules[i]
		}
	}
	return nil
}

// loraObserver reports, after every step, which adapters the running and the waiting
// requests use, for vllm:lora_requests_info. It runs on the driver goroutine with the
// driver's lock held, so it may read the live requests.
type loraObserver struct {
	d *driver
	m *metrics.Metrics
}

func (o loraObserver) ObserveStep(*sim.StepResult) {
	inRunning, inWaiting := map[string]bool{}, map[string]bool{}
	for seq, st := range o.d.live {
		if st.lora == "" || seq.Finished() {
			continue
		}
		if seq.Running() {
			inRunning[st.lora] = true
		} else {
			inWaiting[st.lora] = true
		}
	}
	o.m.ObserveLoRA(sortedKeys(inRunning), sortedKeys(inWaiting))
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (loraObserver) ObserveEnded(*sim.Sequence) {}
