package sweepcli

import (
	"fmt"

	"github.com/vllmtop/vllmtop/loadgen"
)

// kvFarBelowFull is the share of the KV cache under which the requests in flight at a knee
// leave memory to spare: more of it (--gpu-memory-utilization) cannot have moved the knee.
const kvFarBelowFull = 0.5

// kneeKV is the most of the KV cache the requests in flight at a search's knee can hold: the
// knee's concurrency (or, for a rate, its requests a second times their mean end-to-end
// latency) times the tokens of a request, prompt and output, over the cache's tokens. An upper
// bound: a request holds its whole length only at its end, and a shared prefix is held once.
func kneeKV(variable string, res loadgen.SLOResult, kvTokens int) (float64, bool) {
	if res.Knee <= 0 || kvTokens <= 0 {
		return 0, false
	}
	for _, p := range res.Probes {
		if p.Value != res.Knee || len(p.Docs) == 0 {
			continue
		}
		d := p.Docs[0]
		in, iok := number(d, "total_input_tokens")
		out, ook := number(d, "total_output_tokens")
		n, nok := number(d, "completed")
		if !iok || !ook || !nok || n <= 0 {
			return 0, false
		}
		flight := float64(res.Knee)
		if variable == loadgen.SLORate {
			rps, rok := number(d, "request_throughput")
			e2el, eok := number(d, "mean_e2el_ms")
			if !rok || !eok {
				return 0, false
			}
			flight = rps * e2el / 1000
		}
		return flight * (in + out) / n / float64(kvTokens), true
	}
	return 0, false
}

// kvNote is the sweep's line when every setting's knee left the KV cache far from full:
// utilisation is not what limits, the SLO's latency is. "" when some knee came near full, or
// no knee could be judged.
func (cfg *Config) kvNote(settings []Setting) string {
	most, judged := 0.0, 0
	for _, s := range settings {
		kv := 0
		for _, f := range s.Capacity {
			if f.Key == FieldKVTokens {
				kv = asInt(f.Value)
			}
		}
		for _, c := range s.Searches {
			share, ok := kneeKV(cfg.Search.Variable, c.Result, kv)
			if !ok {
				continue
			}
			if share >= kvFarBelowFull {
				return ""
			}
			most, judged = max(most, share), judged+1
		}
	}
	if judged == 0 {
		return ""
	}
	slo := ""
	if len(cfg.Search.SLOs) > 0 {
		slo = " (" + cfg.Search.SLOs[0].Text(", ") + ")"
	}
	share := fmt.Sprintf("at most %.0f%%", 100*most)
	if most < 0.01 {
		share = "under 1%"
	}
	return fmt.Sprintf("Utilisation is not the limit here: at each knee the requests in flight hold %s of the KV cache; "+
		"the knee is set by the SLO's latency%s, which more KV memory does not lower.", share, slo)
}
