package diagnose

import (
	"fmt"
	"math"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// Imbalance compares the members of one group (replicas serving one model, or the
// data-parallel engines of one server) and flags a member that carries most of the group's
// waiting requests, and a spread of KV use. Members that are not up are left out: their
// numbers are missing or frozen. group names the group in the texts ("3 replicas of
// Qwen/Qwen3-8B").
func Imbalance(group string, members []Signals, th Thresholds) []Verdict {
	var live []*Signals
	for i := range members {
		if m := &members[i]; m.State == StateUp || m.State == StateRestarted {
			live = append(live, m)
		}
	}
	if len(live) < 2 {
		return nil
	}
	var out []Verdict
	if v, ok := waitingSkew(group, live, th); ok {
		out = append(out, v)
	}
	if v, ok := kvSkew(group, live, th); ok {
		out = append(out, v)
	}
	return out
}

func waitingSkew(group string, live []*Signals, th Thresholds) (Verdict, bool) {
	var total float64
	var top *Signals
	for _, m := range live {
		if !m.Waiting.OK {
			return Verdict{}, false // one unknown queue: the share is unknown
		}
		total += m.Waiting.V
		if top == nil || m.Waiting.V > top.Waiting.V {
			top = m
		}
	}
	if total < th.GroupMinWaiting || total == 0 {
		return Verdict{}, false
	}
	share := top.Waiting.V / total
	need := math.Max(th.WaitingShare, 1.5/float64(len(live)))
	if share < need {
		return Verdict{}, false
	}
	return Verdict{Rule: RuleImbalance, Severity: Warning, Subject: top.Subject, Limit: "load balance",
		Advice: "check the load balancer (sticky routing?) or the data-parallel engines",
		Text: fmt.Sprintf("%s holds %s of the %s requests waiting across %s: check the load balancer (sticky routing?) or the data-parallel engines",
			top.Subject, short(top.Waiting.V), short(total), group),
		Evidence: []Evidence{
			{Name: "waiting_share", Value: share, Unit: "%", Threshold: "≥ " + formatValue(need, "%")},
			{Name: "waiting", Value: top.Waiting.V},
			{Name: "group_waiting", Value: total, Threshold: "≥ " + short(th.GroupMinWaiting)},
			{Name: "members", Value: float64(len(live))},
		}}, true
}

func kvSkew(group string, live []*Signals, th Thresholds) (Verdict, bool) {
	var hi, lo *Signals
	for _, m := range live {
		if !m.KVCacheUsage.OK {
			continue
		}
		if hi == nil || m.KVCacheUsage.V > hi.KVCacheUsage.V {
			hi = m
		}
		if lo == nil || m.KVCacheUsage.V < lo.KVCacheUsage.V {
			lo = m
		}
	}
	if hi == nil || hi == lo {
		return Verdict{}, false
	}
	spread := hi.KVCacheUsage.V - lo.KVCacheUsage.V
	if spread < th.KVSkew {
		return Verdict{}, false
	}
	return Verdict{Rule: RuleKVSkew, Severity: Info, Subject: hi.Subject, Limit: "load balance",
		Text: fmt.Sprintf("KV use differs by %s points across %s: %s is at %s, %s at %s",
			textfmt.Fixed(spread*100, 0), group, hi.Subject, formatValue(hi.KVCacheUsage.V, "%"), lo.Subject, formatValue(lo.KVCacheUsage.V, "%")),
		Evidence: []Evidence{
			{Name: "kv_spread", Value: spread, Unit: "%", Threshold: "≥ " + formatValue(th.KVSkew, "%")},
			{Name: "kv_cache_usage_max", Value: hi.KVCacheUsage.V, Unit: "%"},
			{Name: "kv_cache_usage_min", Value: lo.KVCacheUsage.V, Unit: "%"},
		}}, true
}
