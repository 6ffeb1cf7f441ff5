package scrape

import (
	"fmt"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// EngineImbalance is how unevenly one scrape finds a model's requests spread over its
// data-parallel engines: the busiest engine by requests (running + waiting) and its share of
// them against the fair 1/N, and the spread of KV use between the fullest and emptiest engine.
type EngineImbalance struct {
	Busiest   string  `json:"busiest_engine"`
	Requests  float64 `json:"busiest_requests"`
	Total     float64 `json:"total_requests"`
	Share     float64 `json:"share"`      // Requests / Total, NaN-free: 0 without requests
	FairShare float64 `json:"fair_share"` // 1 / engines
	KVSpread  Value   `json:"kv_spread"`  // max - min KV usage, a fraction
}

// Imbalanced reports whether the busiest engine holds at least 1.5 times its fair share of at
// least 4 requests, the point where a balanced router should have sent work elsewhere.
func (e EngineImbalance) Imbalanced() bool {
	return e.Total >= 4 && e.Share >= 1.5*e.FairShare
}

// Imbalance computes m's EngineImbalance; ok is false with fewer than two engines or an
// engine whose queue is unknown.
func (m *Model) Imbalance() (EngineImbalance, bool) {
	if len(m.Engines) < 2 {
		return EngineImbalance{}, false
	}
	out := EngineImbalance{FairShare: 1 / float64(len(m.Engines))}
	lo, hi := Value{}, Value{}
	for i, e := range m.Engines {
		if !e.Running.OK || !e.Waiting.OK {
			return EngineImbalance{}, false
		}
		n := e.Running.V + e.Waiting.V
		out.Total += n
		if i == 0 || n > out.Requests {
			out.Busiest, out.Requests = e.Engine, n
		}
		if kv := e.KVCacheUsage; kv.OK {
			if !lo.OK || kv.V < lo.V {
				lo = kv
			}
			if !hi.OK || kv.V > hi.V {
				hi = kv
			}
		}
	}
	if out.Total > 0 {
		out.Share = out.Requests / out.Total
	}
	if hi.OK {
		out.KVSpread = Value{V: hi.V - lo.V, OK: true}
	}
	return out, true
}

// printImbalance writes the engine-imbalance line under the engine rows.
func printImbalance(t *table, m *Model) {
	im, ok := m.Imbalance()
	if !ok {
		return
	}
	parts := []string{"no requests on any engine"}
	if im.Total > 0 {
		parts[0] = fmt.Sprintf("engine %s holds %s of %s requests (%s %%, fair share %s %%)", clip(im.Busiest, 8),
			textfmt.Thousands(int64(im.Requests)), textfmt.Thousands(int64(im.Total)),
			textfmt.Fixed(im.Share*100, 0), textfmt.Fixed(im.FairShare*100, 0))
	}
	if im.KVSpread.OK {
		parts = append(parts, "KV use spread "+textfmt.Fixed(im.KVSpread.V*100, 1)+" points")
	}
	if im.Imbalanced() {
		parts[len(parts)-1] += ": imbalanced"
	}
	t.wrapped("imbalance", "", parts)
}
