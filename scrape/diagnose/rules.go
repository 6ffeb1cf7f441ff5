package diagnose

import (
	"fmt"
	"time"

	"github.com/vllmtop/vllmtop/scrape"
)

// Rule names, as verdicts carry them.
const (
	RuleDown            = "down"
	RuleStale           = "stale"
	RuleRestarted       = "restarted"
	RulePreemptionStorm = "preemption-storm"
	RuleKVBound         = "kv-bound"
	RuleStalled         = "stalled"
	RuleAdmissionBound  = "admission-bound"
	RulePrefillBound    = "prefill-bound"
	RuleQueueBound      = "queue-bound"
	RuleErrors          = "errors"
	RuleSLOTTFT         = "slo-ttft"
	RuleSLOITL          = "slo-itl"
	RuleImbalance       = "imbalance"
	RuleKVSkew          = "kv-skew"
	RuleClientBound     = "client-bound"
)

// ruleOrder ranks rules of equal severity: causes before symptoms.
var ruleOrder = []string{RuleDown, RuleStale, RuleRestarted, RulePreemptionStorm, RuleKVBound, RuleStalled,
	RuleAdmissionBound, RulePrefillBound, RuleQueueBound, RuleImbalance, RuleErrors, RuleSLOTTFT, RuleSLOITL,
	RuleKVSkew, RuleClientBound}

func ruleRank(name string) int {
	for i, r := range ruleOrder {
		if r == name {
			return i
		}
	}
	return len(ruleOrder)
}

// Thresholds are the limits the rules hold the signals against.
type Thresholds struct {
	// KVBound is the KV-cache use (0..1) at or above which waiting requests are waiting for
	// KV memory (kv-bound); below it they wait for a batch slot (admission-bound).
	KVBound float64
	// MinWaiting is the smallest queue that counts as requests waiting.
	MinWaiting float64
	// MinQueueSeconds is the mean queue time over the window below which a queue is only
	// requests arriving between two engine steps, not admission holding them back.
	MinQueueSeconds float64
	// MinWaitingUnknownQueue is the queue that counts as held back by admission when the
	// queue time is unknown (no window yet, or a backend without the histogram).
	MinWaitingUnknownQueue float64
	// PreemptionStorm is the preemption rate (per second) of a storm.
	PreemptionStorm float64
	// PrefillShare and QueueShare are the shares of the mean TTFT spent in prefill or in
	// the queue that make a server prefill-bound or queue-bound.
	PrefillShare float64
	QueueShare   float64
	// LongPrompt is the mean prompt length (tokens) from which prefill time is expected to
	// dominate TTFT.
	LongPrompt float64
	// MinTTFTSeconds is the mean TTFT below which its composition is not worth a verdict.
	MinTTFTSeconds float64
	// ErrorsPerSec is the error-or-abort finish rate that earns a verdict.
	ErrorsPerSec float64
	// ClientLag is how far behind its schedule the load generator may fall; RateShortfall
	// the share of the target rate it must reach.
	ClientLag     time.Duration
	RateShortfall float64
	// WaitingShare is the share of a group's waiting requests on one member that is an
	// imbalance (at least 1.5 times the fair share); GroupMinWaiting the group total below
	// which nobody is counted.
	WaitingShare    float64
	GroupMinWaiting float64
	// KVSkew is the spread of KV use (max − min, 0..1) across a group that is flagged.
	KVSkew float64
	// SLOs: a p99 over these is a verdict (0: no SLO).
	TTFTP99 time.Duration
	ITLP99  time.Duration
}

// DefaultThresholds are the limits used when none are configured; docs/monitoring.md#verdict-thresholds gives their reasons.
func DefaultThresholds() Thresholds {
	return Thresholds{
		KVBound:                0.90,
		MinWaiting:             1,
		MinQueueSeconds:        0.05,
		MinWaitingUnknownQueue: 2,
		PreemptionStorm:        1,
		PrefillShare:           0.5,
		QueueShare:             0.5,
		LongPrompt:             2048,
		MinTTFTSeconds:         0.2,
		ErrorsPerSec:           0.01,
		ClientLag:              250 * time.Millisecond,
		RateShortfall:          0.9,
		WaitingShare:           0.6,
		GroupMinWaiting:        4,
		KVSkew:                 0.25,
	}
}

// Evaluate applies every per-server rule to s. A server that is DOWN or STALE gets only that
// verdict: its numbers are missing or frozen and say nothing about now. The verdicts are
// sorted worst first.
func Evaluate(s *Signals, f Facts, th Thresholds) []Verdict {
	var out []Verdict
	switch s.State {
	case StateDown:
		return []Verdict{down(s)}
	case StateStale:
		return []Verdict{stale(s)}
	case StateRestarted:
		out = append(out, restarted(s))
	case StateInit, StateUp:
	}
	for _, r := range serverRules {
		if v, ok := r(s, f, th); ok {
			out = append(out, v)
		}
	}
	Sort(out)
	return out
}

type serverRule func(s *Signals, f Facts, th Thresholds) (Verdict, bool)

var serverRules = []serverRule{preemptionStorm, kvBound, stalled, admissionBound, prefillBound, queueBound, errorsRule, sloTTFT, sloITL}

func down(s *Signals) Verdict {
	text := s.Subject + " is DOWN"
	if s.StateDetail != "" {
		text += ": " + s.StateDetail
	}
	v := Verdict{Rule: RuleDown, Severity: Critical, Subject: s.Subject, Text: text}
	if s.Age > 0 {
		v.Evidence = []Evidence{{Name: "last_good_age", Value: s.Age.Seconds(), Unit: "s"}}
	}
	return v
}

func stale(s *Signals) Verdict {
	text := fmt.Sprintf("%s has sent no fresh metrics for %s; the numbers shown are frozen", s.Subject, formatSeconds(s.Age.Seconds()))
	if s.StateDetail != "" {
		text += " (" + s.StateDetail + ")"
	}
	return Verdict{Rule: RuleStale, Severity: Warning, Subject: s.Subject, Text: text,
		Evidence: []Evidence{{Name: "last_good_age", Value: s.Age.Seconds(), Unit: "s"}}}
}

func restarted(s *Signals) Verdict {
	text := s.Subject + " restarted"
	if s.StateDetail != "" {
		text += " (" + s.StateDetail + ")"
	}
	text += "; its rates start again from the next scrapes"
	return Verdict{Rule: RuleRestarted, Severity: Warning, Subject: s.Subject, Text: text}
}

func preemptionStorm(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	p := s.PreemptionsPerSec
	if !p.OK || p.V < th.PreemptionStorm {
		return Verdict{}, false
	}
	ev := []Evidence{{Name: "preemptions", Value: p.V, Unit: "/s", Threshold: "≥ " + formatValue(th.PreemptionStorm, "/s")}}
	if s.KVCacheUsage.OK {
		ev = append(ev, Evidence{Name: "kv_cache_usage", Value: s.KVCacheUsage.V, Unit: "%"})
	}
	return Verdict{Rule: RulePreemptionStorm, Severity: Critical, Subject: s.Subject,
		Text: fmt.Sprintf("%s has %s preemptions/s: the KV cache is thrashing and work is recomputed; lower --max-num-seqs or raise --gpu-memory-utilization",
			s.Subject, short(p.V)),
		Flags: []string{"--max-num-seqs", "--gpu-memory-utilization"}, Evidence: ev}, true
}

func kvBound(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	kv := s.KVCacheUsage
	if !kv.OK || kv.V < th.KVBound {
		return Verdict{}, false
	}
	waiting := s.Waiting.OK && s.Waiting.V >= th.MinWaiting
	preempting := s.PreemptionsPerSec.OK && s.PreemptionsPerSec.V > 0
	if !waiting && !preempting {
		return Verdict{}, false
	}
	ev := []Evidence{{Name: "kv_cache_usage", Value: kv.V, Unit: "%", Threshold: "≥ " + formatValue(th.KVBound, "%")}}
	why := ""
	if waiting {
		ev = append(ev, Evidence{Name: "waiting", Value: s.Waiting.V, Threshold: "≥ " + short(th.MinWaiting)})
		why = fmt.Sprintf(" with %s waiting", short(s.Waiting.V))
	}
	if preempting {
		ev = append(ev, Evidence{Name: "preemptions", Value: s.PreemptionsPerSec.V, Unit: "/s", Threshold: "> 0"})
		why += fmt.Sprintf(" and %s preemptions/s", short(s.PreemptionsPerSec.V))
	}
	return Verdict{Rule: RuleKVBound, Severity: Warning, Subject: s.Subject,
		Text: fmt.Sprintf("%s's KV cache is %s full%s: requests wait for KV memory; raise --gpu-memory-utilization, lower --max-num-seqs, or try --kv-cache-dtype fp8",
			s.Subject, formatValue(kv.V, "%"), why),
		Flags: []string{"--gpu-memory-utilization", "--max-num-seqs", "--kv-cache-dtype fp8"}, Evidence: ev}, true
}

// stalled: requests wait, nothing runs and nothing is generated: the engine is asleep or hung.
func stalled(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	if !s.Waiting.OK || s.Waiting.V < th.MinWaiting || !s.Running.OK || s.Running.V != 0 {
		return Verdict{}, false
	}
	if g := s.GenerationTokensPerSec; !g.OK || g.V > 0 {
		return Verdict{}, false
	}
	return Verdict{Rule: RuleStalled, Severity: Critical, Subject: s.Subject,
		Text: fmt.Sprintf("%s has %s requests waiting and none running or generating: the engine is asleep or hung; check its log", s.Subject, short(s.Waiting.V)),
		Evidence: []Evidence{
			{Name: "waiting", Value: s.Waiting.V, Threshold: "≥ " + short(th.MinWaiting)},
			{Name: "running", Value: 0, Threshold: "= 0"},
			{Name: "generation_tokens", Value: 0, Unit: "/s", Threshold: "= 0"},
		}}, true
}

func admissionBound(s *Signals, f Facts, th Thresholds) (Verdict, bool) {
	kv := s.KVCacheUsage
	if !s.Waiting.OK || s.Waiting.V < th.MinWaiting || !kv.OK || kv.V >= th.KVBound {
		return Verdict{}, false
	}
	if !s.Running.OK || s.Running.V == 0 {
		return Verdict{}, false // stalled, not admission
	}
	switch q := s.QueueMean; {
	case q.OK && q.V < th.MinQueueSeconds:
		return Verdict{}, false // arrivals between two steps, admitted at the next
	case !q.OK && s.Waiting.V < th.MinWaitingUnknownQueue:
		return Verdict{}, false
	}
	ev := []Evidence{
		{Name: "waiting", Value: s.Waiting.V, Threshold: "≥ " + short(th.MinWaiting)},
		{Name: "kv_cache_usage", Value: kv.V, Unit: "%", Threshold: "< " + formatValue(th.KVBound, "%")},
		{Name: "running", Value: s.Running.V},
	}
	limit := fmt.Sprintf("running %s", short(s.Running.V))
	if f.MaxNumSeqs > 0 {
		ev = append(ev, Evidence{Name: "max_num_seqs", Value: float64(f.MaxNumSeqs)})
		if s.Running.V >= float64(f.MaxNumSeqs) {
			limit = fmt.Sprintf("running %s = --max-num-seqs %d", short(s.Running.V), f.MaxNumSeqs)
		}
	}
	if s.QueueMean.OK {
		ev = append(ev, Evidence{Name: "queue_time_mean", Value: s.QueueMean.V, Unit: "s", Threshold: "≥ " + formatSeconds(th.MinQueueSeconds)})
	}
	return Verdict{Rule: RuleAdmissionBound, Severity: Warning, Subject: s.Subject,
		Text: fmt.Sprintf("%s has %s requests waiting while its KV cache is only %s full: the batch is capped (%s); raise --max-num-seqs",
			s.Subject, short(s.Waiting.V), formatValue(kv.V, "%"), limit),
		Flags: []string{"--max-num-seqs"}, Evidence: ev}, true
}

// ttftShare is part's share of the mean TTFT t, ok when both are known, t is long enough to
// matter and the share reaches atLeast.
func ttftShare(t, part scrape.Value, th Thresholds, atLeast float64) (share float64, ok bool) {
	if !t.OK || !part.OK || t.V < th.MinTTFTSeconds {
		return 0, false
	}
	share = part.V / t.V
	return share, share >= atLeast
}

func prefillBound(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	t, n := s.TTFTMean, s.PromptTokensMean
	if !n.OK || n.V < th.LongPrompt {
		return Verdict{}, false
	}
	share, ok := ttftShare(t, s.PrefillMean, th, th.PrefillShare)
	if !ok {
		return Verdict{}, false
	}
	return Verdict{Rule: RulePrefillBound, Severity: Warning, Subject: s.Subject,
		Text: fmt.Sprintf("%s spends %s of its TTFT (mean %s) in prefill of long prompts (mean %s): tune --max-num-batched-tokens and keep chunked prefill on",
			s.Subject, formatValue(min(share, 1), "%"), formatSeconds(t.V), formatValue(n.V, "tokens")),
		Flags: []string{"--max-num-batched-tokens", "--enable-chunked-prefill"},
		Evidence: []Evidence{
			{Name: "prefill_share_of_ttft", Value: share, Unit: "%", Threshold: "≥ " + formatValue(th.PrefillShare, "%")},
			{Name: "prompt_tokens_mean", Value: n.V, Unit: "tokens", Threshold: "≥ " + short(th.LongPrompt)},
			{Name: "ttft_mean", Value: t.V, Unit: "s", Threshold: "≥ " + formatSeconds(th.MinTTFTSeconds)},
		}}, true
}

func queueBound(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	t, q := s.TTFTMean, s.QueueMean
	share, ok := ttftShare(t, q, th, th.QueueShare)
	if !ok {
		return Verdict{}, false
	}
	return Verdict{Rule: RuleQueueBound, Severity: Warning, Subject: s.Subject,
		Text: fmt.Sprintf("%s's requests spend %s of their TTFT queued (mean %s of %s): the server is at capacity; raise --max-num-seqs if KV allows, or add a replica",
			s.Subject, formatValue(min(share, 1), "%"), formatSeconds(q.V), formatSeconds(t.V)),
		Flags: []string{"--max-num-seqs"},
		Evidence: []Evidence{
			{Name: "queue_share_of_ttft", Value: share, Unit: "%", Threshold: "≥ " + formatValue(th.QueueShare, "%")},
			{Name: "queue_time_mean", Value: q.V, Unit: "s"},
			{Name: "ttft_mean", Value: t.V, Unit: "s", Threshold: "≥ " + formatSeconds(th.MinTTFTSeconds)},
		}}, true
}

func errorsRule(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	e := s.ErrorsPerSec
	if !e.OK || e.V < th.ErrorsPerSec || e.V == 0 {
		return Verdict{}, false
	}
	return Verdict{Rule: RuleErrors, Severity: Warning, Subject: s.Subject,
		Text:     fmt.Sprintf("%s ends %s requests/s in error or abort; check its log", s.Subject, short(e.V)),
		Evidence: []Evidence{{Name: "errors", Value: e.V, Unit: "/s", Threshold: "≥ " + formatValue(th.ErrorsPerSec, "/s")}}}, true
}

func sloTTFT(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	return slo(s, RuleSLOTTFT, "TTFT", s.TTFTP99, th.TTFTP99)
}

func sloITL(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	return slo(s, RuleSLOITL, "inter-token latency", s.ITLP99, th.ITLP99)
}

func slo(s *Signals, rule, what string, q Quantile, limit time.Duration) (Verdict, bool) {
	// An "at most" estimate is not known to be over anything.
	if limit <= 0 || !q.V.OK || q.Bound == AtMost || q.V.V <= limit.Seconds() {
		return Verdict{}, false
	}
	return Verdict{Rule: rule, Severity: Warning, Subject: s.Subject,
		Text:     fmt.Sprintf("%s's %s p99 %s%s is over its %s SLO", s.Subject, what, q.Prefix(), formatSeconds(q.V.V), formatSeconds(limit.Seconds())),
		Evidence: []Evidence{{Name: rule[len("slo-"):] + "_p99", Value: q.V.V, Unit: "s", Threshold: "≤ " + formatSeconds(limit.Seconds())}}}, true
}

// Client applies the load generator's own rules: it is behind its schedule, or sends less
// than it was asked to. Either way the latencies it measures include its own delay.
func Client(f Facts, th Thresholds) []Verdict {
	var out []Verdict
	if f.Lag > th.ClientLag && th.ClientLag > 0 {
		out = append(out, Verdict{Rule: RuleClientBound, Severity: Warning, Subject: "client",
			Text:     fmt.Sprintf("the load generator is %s behind its schedule: latencies include its own delay; lower --request-rate or give vllmtop more CPU", formatSeconds(f.Lag.Seconds())),
			Flags:    []string{"--request-rate"},
			Evidence: []Evidence{{Name: "client_lag", Value: f.Lag.Seconds(), Unit: "s", Threshold: "≤ " + formatSeconds(th.ClientLag.Seconds())}}})
	}
	if f.TargetRate > 0 && f.AchievedRate < th.RateShortfall*f.TargetRate {
		out = append(out, Verdict{Rule: RuleClientBound, Severity: Warning, Subject: "client",
			Text: fmt.Sprintf("the load generator sent %s req/s of the %s asked: the server sees less load than intended; raise --max-concurrency or lower --request-rate",
				short(f.AchievedRate), short(f.TargetRate)),
			Flags: []string{"--max-concurrency", "--request-rate"},
			Evidence: []Evidence{
				{Name: "achieved_rate", Value: f.AchievedRate, Unit: "/s", Threshold: "≥ " + formatValue(th.RateShortfall, "%") + " of target"},
				{Name: "target_rate", Value: f.TargetRate, Unit: "/s"},
			}})
	}
	return out
}
