package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/scrape"
)

// Rule names, as verdicts carry them.
const (
	RuleDown            = "down"
	RuleStale           = "stale"
	RuleRestarted       = "restarted"
	RuleKVBound         = "kv-bound"
	RuleSeqBound        = "seq-bound"
	RuleBatchTokenBound = "batch-token-bound"
	RuleStalled         = "stalled"
	RuleAdmissionBound  = "admission-bound"
	RuleFrontendBound   = "frontend-bound"
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
var ruleOrder = []string{RuleDown, RuleStale, RuleRestarted, RuleStalled, RuleKVBound, RuleSeqBound,
	RuleBatchTokenBound, RuleAdmissionBound, RuleFrontendBound, RulePrefillBound, RuleQueueBound, RuleImbalance, RuleErrors,
	RuleSLOTTFT, RuleSLOITL, RuleKVSkew, RuleClientBound}

// capacityRules are the rules that name what limits a server's throughput, root causes first
// (docs/monitoring.md#one-limit-one-advice): one server has one binding limit, so only the
// first that fires is a verdict, and the others' evidence joins it.
var capacityRules = []string{RuleKVBound, RuleSeqBound, RuleBatchTokenBound, RuleAdmissionBound,
	RuleFrontendBound, RulePrefillBound, RuleQueueBound}

// The limits verdicts name, as a user changes them.
const (
	LimitKV      = "KV blocks"
	LimitSeqs    = "--max-num-seqs"
	LimitBatched = "--max-num-batched-tokens"
	LimitPrefill = "prefill compute"
	LimitCompute = "GPU throughput"
	LimitDecode  = "decode speed"
	LimitClient  = "load generator"
	LimitAPI     = "API server"
)

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
	// FrontendShare is the share of the mean TTFT spent outside the engine's queue and
	// prefill (in the API server: input processing, streaming) that makes it frontend-bound.
	FrontendShare float64
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
		FrontendShare:          0.5,
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
	out = Resolve(out)
	Sort(out)
	return out
}

// Resolve keeps, per subject, only the first capacity verdict in the order of capacityRules
// (the root cause) and adds to it the evidence of the others it replaces, so a server gets
// one limit and one piece of advice. The other verdicts stay as they are.
func Resolve(vs []Verdict) []Verdict {
	winner := map[string]int{} // subject -> index in out
	var out []Verdict
	for _, v := range sortedByCapacity(vs) {
		if !slices.Contains(capacityRules, v.Rule) {
			out = append(out, v)
			continue
		}
		i, ok := winner[v.Subject]
		if !ok {
			winner[v.Subject] = len(out)
			out = append(out, v)
			continue
		}
		w := &out[i]
		w.Severity = max(w.Severity, v.Severity)
		for _, e := range v.Evidence {
			if !slices.ContainsFunc(w.Evidence, func(x Evidence) bool { return x.Name == e.Name }) {
				w.Evidence = append(w.Evidence, e)
			}
		}
	}
	return out
}

// sortedByCapacity is a copy of vs with capacity verdicts in capacityRules order.
func sortedByCapacity(vs []Verdict) []Verdict {
	out := slices.Clone(vs)
	slices.SortStableFunc(out, func(a, b Verdict) int {
		return slices.Index(capacityRules, a.Rule) - slices.Index(capacityRules, b.Rule)
	})
	return out
}

type serverRule func(s *Signals, f Facts, th Thresholds) (Verdict, bool)

var serverRules = []serverRule{kvBound, stalled, seqBound, batchTokenBound, admissionBound, frontendBound, prefillBound,
	queueBound, errorsRule, sloTTFT, sloITL}

func down(s *Signals) Verdict {
	text := s.Subject + " is DOWN"
	if s.StateDetail != "" {
		text += ": " + s.StateDetail
	}
	v := Verdict{Rule: RuleDown, Severity: Critical, Subject: s.Subject, Limit: "server", Advice: "check that it runs and its port answers", Text: text}
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
	return Verdict{Rule: RuleRestarted, Severity: Warning, Subject: s.Subject, Limit: "server",
		Advice: "restarted: its rates start again from the next scrapes", Text: text}
}

// kvBound: requests wait for KV blocks (the cache is nearly full, or its free blocks cannot
// hold the next prompt), or the engine preempts with the cache nearly full (it preempts only
// when a block allocation fails). A preemption storm is kv-bound at any usage the gauge shows,
// and critical.
func kvBound(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	kv, p := s.KVCacheUsage, s.PreemptionsPerSec
	waiting := s.Waiting.OK && s.Waiting.V >= th.MinWaiting
	preempting := p.OK && p.V > 0
	full := kv.OK && kv.V >= th.KVBound
	storm := preempting && p.V >= th.PreemptionStorm
	if !(full && (waiting || preempting)) && !storm && !(waiting && noRoomFor(s)) {
		return Verdict{}, false
	}
	var ev []Evidence
	if kv.OK {
		ev = append(ev, Evidence{Name: "kv_cache_usage", Value: kv.V, Unit: "%", Threshold: "≥ " + formatValue(th.KVBound, "%")})
	}
	why := ""
	if waiting {
		ev = append(ev, Evidence{Name: "waiting", Value: s.Waiting.V, Threshold: "≥ " + short(th.MinWaiting)})
		why = fmt.Sprintf(" with %s waiting", short(s.Waiting.V))
	}
	sev := Warning
	if preempting {
		ev = append(ev, Evidence{Name: "preemptions", Value: p.V, Unit: "/s", Threshold: "> 0"})
		why += fmt.Sprintf(" and %s preemptions/s", short(p.V))
		if storm {
			sev = Critical
			why += " (recomputing evicted work)"
		}
	}
	if s.KVCacheTokens.OK {
		ev = append(ev, Evidence{Name: "kv_cache_tokens", Value: s.KVCacheTokens.V, Unit: "tokens"})
	}
	flag, advice := kvAdvice(s)
	usage := "full"
	if kv.OK {
		usage = formatValue(kv.V, "%") + " full"
	}
	return Verdict{Rule: RuleKVBound, Severity: sev, Subject: s.Subject, Limit: LimitKV, Advice: advice,
		Text: fmt.Sprintf("%s's KV cache is %s%s: requests wait for KV blocks; %s (or %s)",
			s.Subject, usage, why, advice, otherKVLevers(flag)),
		Flags: []string{flag}, Evidence: ev}, true
}

// noRoomFor: the free KV tokens cannot hold one more prompt of the mean length.
func noRoomFor(s *Signals) bool {
	if !s.KVCacheTokens.OK || !s.KVCacheUsage.OK || !s.PromptTokensMean.OK {
		return false
	}
	return (1-s.KVCacheUsage.V)*s.KVCacheTokens.V < s.PromptTokensMean.V
}

// kvAdvice is the one change that gives the KV cache the most room, from what the server's
// cache_config_info says it runs with.
func kvAdvice(s *Signals) (flag, advice string) {
	switch u := s.GPUMemoryUtilization; {
	case s.NumGPUBlocksOverride > 0:
		return "--num-gpu-blocks-override", fmt.Sprintf("drop --num-gpu-blocks-override %d, which caps the cache", s.NumGPUBlocksOverride)
	case u.OK && u.V < 0.95:
		return "--gpu-memory-utilization", fmt.Sprintf("raise --gpu-memory-utilization (now %s)", strconv.FormatFloat(u.V, 'f', -1, 64))
	case !u.OK:
		return "--gpu-memory-utilization", "raise --gpu-memory-utilization"
	case s.KVCacheDType == "" || s.KVCacheDType == "auto":
		return "--kv-cache-dtype fp8", "use --kv-cache-dtype fp8 (half the bytes per token)"
	}
	// The V1 engine sizes the cache from memory alone, so a shorter --max-model-len frees none.
	return "--tensor-parallel-size", "spread the model over more GPUs (--tensor-parallel-size), or admit fewer requests at once (--max-num-seqs)"
}

// otherKVLevers names the other ways to more KV memory than flag.
func otherKVLevers(flag string) string {
	var out []string
	for _, l := range []struct{ flag, text string }{
		{"--gpu-memory-utilization", "raise --gpu-memory-utilization"},
		{"--kv-cache-dtype fp8", "--kv-cache-dtype fp8"},
		{"--tensor-parallel-size", "more GPUs (--tensor-parallel-size)"},
	} {
		if l.flag != flag {
			out = append(out, l.text)
		}
	}
	return strings.Join(out, ", ")
}

// stalled: requests wait, nothing runs and nothing is generated: the engine is asleep or hung.
func stalled(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	if !s.Waiting.OK || s.Waiting.V < th.MinWaiting || !s.Running.OK || s.Running.V != 0 {
		return Verdict{}, false
	}
	if g := s.GenerationTokensPerSec; !g.OK || g.V > 0 {
		return Verdict{}, false
	}
	return Verdict{Rule: RuleStalled, Severity: Critical, Subject: s.Subject, Limit: "engine", Advice: "check its log",
		Text: fmt.Sprintf("%s has %s requests waiting and none running or generating: the engine is asleep or hung; check its log", s.Subject, short(s.Waiting.V)),
		Evidence: []Evidence{
			{Name: "waiting", Value: s.Waiting.V, Threshold: "≥ " + short(th.MinWaiting)},
			{Name: "running", Value: 0, Threshold: "= 0"},
			{Name: "generation_tokens", Value: 0, Unit: "/s", Threshold: "= 0"},
		}}, true
}

// queued: requests wait long enough to matter while the KV cache has room: something other
// than memory holds them back.
func queued(s *Signals, th Thresholds) bool {
	kv := s.KVCacheUsage
	if !s.Waiting.OK || s.Waiting.V < th.MinWaiting || !kv.OK || kv.V >= th.KVBound {
		return false
	}
	if !s.Running.OK || s.Running.V == 0 {
		return false // stalled, not admission
	}
	switch q := s.QueueMean; {
	case q.OK && q.V < th.MinQueueSeconds:
		return false // arrivals between two steps, admitted at the next
	case !q.OK && s.Waiting.V < th.MinWaitingUnknownQueue:
		return false
	}
	return true
}

func queueEvidence(s *Signals, th Thresholds) []Evidence {
	ev := []Evidence{
		{Name: "waiting", Value: s.Waiting.V, Threshold: "≥ " + short(th.MinWaiting)},
		{Name: "kv_cache_usage", Value: s.KVCacheUsage.V, Unit: "%", Threshold: "< " + formatValue(th.KVBound, "%")},
		{Name: "running", Value: s.Running.V},
	}
	if s.QueueMean.OK {
		ev = append(ev, Evidence{Name: "queue_time_mean", Value: s.QueueMean.V, Unit: "s", Threshold: "≥ " + formatSeconds(th.MinQueueSeconds)})
	}
	return ev
}

// seqBound: the batch is at --max-num-seqs and requests wait with KV to spare.
func seqBound(s *Signals, f Facts, th Thresholds) (Verdict, bool) {
	if f.MaxNumSeqs <= 0 || !queued(s, th) || s.Running.V < float64(f.MaxNumSeqs) {
		return Verdict{}, false
	}
	ev := append(queueEvidence(s, th), Evidence{Name: "max_num_seqs", Value: float64(f.MaxNumSeqs), Threshold: "= running"})
	return Verdict{Rule: RuleSeqBound, Severity: Warning, Subject: s.Subject, Limit: LimitSeqs, Advice: "raise --max-num-seqs",
		Text: fmt.Sprintf("%s has %s requests waiting while its KV cache is only %s full: the batch is capped (running %s = --max-num-seqs %d); raise --max-num-seqs",
			s.Subject, short(s.Waiting.V), formatValue(s.KVCacheUsage.V, "%"), short(s.Running.V), f.MaxNumSeqs),
		Flags: []string{"--max-num-seqs"}, Evidence: ev}, true
}

// largestDefaultBudget is the largest of vLLM's --max-num-batched-tokens defaults for its API
// server (2048; on 70 GiB devices other than the A100, 8192 before 0.28 and 16384 since): with
// the budget unknown, only a demand of it is known to fill it.
const largestDefaultBudget = 16384

// pendingTokens estimates the tokens the next step is asked for: each waiting request's
// prompt (mean length) and one decode token per running request.
func pendingTokens(s *Signals) (float64, bool) {
	if !s.PromptTokensMean.OK || !s.Waiting.OK || !s.Running.OK {
		return 0, false
	}
	return s.Waiting.V*s.PromptTokensMean.V + s.Running.V, true
}

// batchTokenBound: requests wait because the step's token budget is full: the prompts waiting
// (and the running decodes) need more tokens than --max-num-batched-tokens gives a step.
func batchTokenBound(s *Signals, f Facts, th Thresholds) (Verdict, bool) {
	if !queued(s, th) || (f.MaxNumSeqs > 0 && s.Running.V >= float64(f.MaxNumSeqs)) {
		return Verdict{}, false
	}
	pending, ok := pendingTokens(s)
	budget, known := f.MaxNumBatchedTokens, f.MaxNumBatchedTokens > 0
	if !known {
		budget = largestDefaultBudget
	}
	if !ok || pending < float64(budget) {
		return Verdict{}, false
	}
	now := fmt.Sprintf(" (now %d)", budget)
	if !known {
		now = " (not known; vLLM's default is 2048, or 16384 on an 80 GB GPU from 0.28, 8192 before)"
	}
	ev := append(queueEvidence(s, th),
		Evidence{Name: "pending_tokens", Value: pending, Unit: "tokens", Threshold: "≥ " + short(float64(budget))},
		Evidence{Name: "prompt_tokens_mean", Value: s.PromptTokensMean.V, Unit: "tokens"})
	return Verdict{Rule: RuleBatchTokenBound, Severity: Warning, Subject: s.Subject, Limit: LimitBatched,
		Advice: "raise --max-num-batched-tokens" + now,
		Text: fmt.Sprintf("%s has %s requests waiting for a step's token budget: their prompts (mean %s) and the %s running need %s tokens, more than --max-num-batched-tokens gives a step; raise --max-num-batched-tokens%s (decode steps get slower)",
			s.Subject, short(s.Waiting.V), formatValue(s.PromptTokensMean.V, "tokens"), short(s.Running.V), short(pending), now),
		Flags: []string{"--max-num-batched-tokens"}, Evidence: ev}, true
}

// admissionBound: requests wait with KV to spare, the token budget is not what holds them and
// --max-num-seqs is not known: the batch is capped, most likely by --max-num-seqs.
func admissionBound(s *Signals, f Facts, th Thresholds) (Verdict, bool) {
	if f.MaxNumSeqs > 0 || !queued(s, th) {
		return Verdict{}, false
	}
	return Verdict{Rule: RuleAdmissionBound, Severity: Warning, Subject: s.Subject, Limit: LimitSeqs + " (not known)",
		// The advice holds while the running count moves (1, 2, 1 at a cap of 2); the text
		// says the count.
		Advice: "raise --max-num-seqs if running stops at it",
		Text: fmt.Sprintf("%s has %s requests waiting while its KV cache is only %s full: the batch is capped (running %s); raise --max-num-seqs if it is %s",
			s.Subject, short(s.Waiting.V), formatValue(s.KVCacheUsage.V, "%"), short(s.Running.V), short(s.Running.V)),
		Flags: []string{"--max-num-seqs"}, Evidence: queueEvidence(s, th)}, true
}

// ttftShare is part's share of s's mean TTFT t, ok when both are known, t is long enough to
// matter, the means describe the same requests and the share reaches atLeast.
func ttftShare(s *Signals, t, part scrape.Value, th Thresholds, atLeast float64) (share float64, ok bool) {
	if !t.OK || !part.OK || t.V < th.MinTTFTSeconds || !sameRequests(s) {
		return 0, false
	}
	share = part.V / t.V
	return share, share >= atLeast
}

// sameRequests reports whether the window's TTFT and its queue and prefill times describe
// about the same requests, so that their means add up: vLLM observes a TTFT at a request's
// first token and its phase times at its end, and right after the load changes the window
// holds first tokens of requests that have not ended, or ends of requests that began before
// it. Counts not known are taken to agree.
func sameRequests(s *Signals) bool {
	t, q := s.TTFTCount, s.QueueCount
	if !t.OK || !q.OK {
		return true
	}
	hi, lo := max(t.V, q.V), min(t.V, q.V)
	return hi-lo <= max(2, 0.2*hi)
}

// prefillBound: TTFT is mostly the prefill of long prompts. That alone is what long prompts
// cost (the prefill demo at one request at a time is healthy): it is a warning only when the
// TTFT breaks its SLO or requests queue behind the prefills (it grows with load).
func prefillBound(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	t, n := s.TTFTMean, s.PromptTokensMean
	if !n.OK || n.V < th.LongPrompt {
		return Verdict{}, false
	}
	share, ok := ttftShare(s, t, s.PrefillMean, th, th.PrefillShare)
	if !ok {
		return Verdict{}, false
	}
	ev := []Evidence{
		{Name: "prefill_share_of_ttft", Value: share, Unit: "%", Threshold: "≥ " + formatValue(th.PrefillShare, "%")},
		{Name: "prompt_tokens_mean", Value: n.V, Unit: "tokens", Threshold: "≥ " + short(th.LongPrompt)},
		{Name: "ttft_mean", Value: t.V, Unit: "s", Threshold: "≥ " + formatSeconds(th.MinTTFTSeconds)},
	}
	head := fmt.Sprintf("%s spends %s of its TTFT (mean %s) in prefill of long prompts (mean %s)",
		s.Subject, formatValue(min(share, 1), "%"), formatSeconds(t.V), formatValue(n.V, "tokens"))
	q := s.TTFTP99
	overSLO := th.TTFTP99 > 0 && q.V.OK && q.Bound != AtMost && q.V.V > th.TTFTP99.Seconds()
	growing := s.Waiting.OK && s.Waiting.V >= th.MinWaiting && s.QueueMean.OK && s.QueueMean.V >= th.MinQueueSeconds
	if !overSLO && !growing {
		return Verdict{Rule: RulePrefillBound, Severity: Info, Subject: s.Subject, Limit: LimitPrefill,
			Text: head + ": what long prompts cost; nothing to change while TTFT meets its SLO", Evidence: ev}, true
	}
	if overSLO {
		ev = append(ev, Evidence{Name: "ttft_p99", Value: q.V.V, Unit: "s", Threshold: "≤ " + formatSeconds(th.TTFTP99.Seconds())})
	} else {
		ev = append(ev, Evidence{Name: "queue_time_mean", Value: s.QueueMean.V, Unit: "s", Threshold: "≥ " + formatSeconds(th.MinQueueSeconds)})
	}
	return Verdict{Rule: RulePrefillBound, Severity: Warning, Subject: s.Subject, Limit: LimitPrefill,
		Advice: "raise --max-num-batched-tokens, or shorten the prompts (prefix caching)",
		Text:   head + ", and TTFT grows with it: raise --max-num-batched-tokens and keep chunked prefill on",
		Flags:  []string{"--max-num-batched-tokens"}, Evidence: ev}, true
}

// frontendBound: most of the TTFT is spent neither queued in the engine nor in prefill. vLLM's
// TTFT runs from the request's arrival_time, stamped as the API server starts on it, to its
// output handler's pick-up of the first token; its queue and prefill times are the engine
// core's. What is left is the API server's own time (input processing, the hop to the engine
// core, streaming the outputs), a few milliseconds unless its one event loop cannot keep up.
func frontendBound(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	t, q, p := s.TTFTMean, s.QueueMean, s.PrefillMean
	if !q.OK || !p.OK {
		return Verdict{}, false
	}
	outside := scrape.Some(max(0, t.V-q.V-p.V))
	share, ok := ttftShare(s, t, outside, th, th.FrontendShare)
	if !ok {
		return Verdict{}, false
	}
	return Verdict{Rule: RuleFrontendBound, Severity: Warning, Subject: s.Subject, Limit: LimitAPI,
		Advice: "raise --api-server-count (where the release has it), or add a replica",
		Text: fmt.Sprintf("%s's requests spend %s of their TTFT (mean %s) outside the engine's queue and prefill: its API server cannot keep up with tokenising and streaming; raise --api-server-count (where the release has it), or add a replica",
			s.Subject, formatValue(min(share, 1), "%"), formatSeconds(t.V)),
		Flags: []string{"--api-server-count"},
		Evidence: []Evidence{
			{Name: "frontend_share_of_ttft", Value: share, Unit: "%", Threshold: "≥ " + formatValue(th.FrontendShare, "%")},
			{Name: "ttft_mean", Value: t.V, Unit: "s", Threshold: "≥ " + formatSeconds(th.MinTTFTSeconds)},
			{Name: "queue_time_mean", Value: q.V, Unit: "s"},
			{Name: "prefill_time_mean", Value: p.V, Unit: "s"},
		}}, true
}

// queueBound: requests spend most of their TTFT queued, and no engine limit named above
// holds them: the GPU is doing all it can.
func queueBound(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	t, q := s.TTFTMean, s.QueueMean
	share, ok := ttftShare(s, t, q, th, th.QueueShare)
	if !ok {
		return Verdict{}, false
	}
	return Verdict{Rule: RuleQueueBound, Severity: Warning, Subject: s.Subject, Limit: LimitCompute,
		Advice: "add a replica or lower the load",
		Text: fmt.Sprintf("%s's requests spend %s of their TTFT queued (mean %s of %s): the server is at capacity; add a replica or lower the load",
			s.Subject, formatValue(min(share, 1), "%"), formatSeconds(q.V), formatSeconds(t.V)),
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
	return Verdict{Rule: RuleErrors, Severity: Warning, Subject: s.Subject, Limit: "errors", Advice: "check its log",
		Text:     fmt.Sprintf("%s ends %s requests/s in error or abort; check its log", s.Subject, short(e.V)),
		Evidence: []Evidence{{Name: "errors", Value: e.V, Unit: "/s", Threshold: "≥ " + formatValue(th.ErrorsPerSec, "/s")}}}, true
}

func sloTTFT(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	v, ok := slo(s, RuleSLOTTFT, "TTFT", s.TTFTP99, th.TTFTP99)
	v.Limit = "TTFT"
	return v, ok
}

// sloITL: decode is slower than its SLO: a slow GPU, or a batch too large for it.
func sloITL(s *Signals, _ Facts, th Thresholds) (Verdict, bool) {
	v, ok := slo(s, RuleSLOITL, "inter-token latency", s.ITLP99, th.ITLP99)
	if ok {
		v.Limit = LimitDecode
		v.Advice = "lower --max-num-seqs (smaller batches decode faster) or use a faster GPU"
		v.Text += fmt.Sprintf(": decode is slow on this GPU at %s running; lower --max-num-seqs or use a faster GPU", short(s.Running.Or(0)))
		v.Flags = []string{"--max-num-seqs"}
		if s.Running.OK {
			v.Evidence = append(v.Evidence, Evidence{Name: "running", Value: s.Running.V})
		}
	}
	return v, ok
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

// chanceShortfall reports whether the requests sent fall short of the rate asked by no more
// than a Poisson load's chance: three standard deviations (the square root of the count
// expected) over the window.
func chanceShortfall(f Facts) bool {
	if f.RateSeconds <= 0 {
		return false
	}
	expected, sent := f.TargetRate*f.RateSeconds, f.AchievedRate*f.RateSeconds
	return expected-sent <= 3*math.Sqrt(expected)
}

// Client applies the load generator's own rules: it is behind its schedule, or sends less
// than it was asked to. Either way the latencies it measures include its own delay.
func Client(f Facts, th Thresholds) []Verdict {
	var out []Verdict
	if f.Lag > th.ClientLag && th.ClientLag > 0 {
		out = append(out, Verdict{Rule: RuleClientBound, Severity: Warning, Subject: "client", Limit: LimitClient,
			Advice:   "lower --request-rate or give vllmtop more CPU",
			Text:     fmt.Sprintf("the load generator is %s behind its schedule: latencies include its own delay; lower --request-rate or give vllmtop more CPU", formatSeconds(f.Lag.Seconds())),
			Flags:    []string{"--request-rate"},
			Evidence: []Evidence{{Name: "client_lag", Value: f.Lag.Seconds(), Unit: "s", Threshold: "≤ " + formatSeconds(th.ClientLag.Seconds())}}})
	}
	if f.TargetRate > 0 && f.AchievedRate < th.RateShortfall*f.TargetRate && !chanceShortfall(f) {
		out = append(out, Verdict{Rule: RuleClientBound, Severity: Warning, Subject: "client", Limit: LimitClient,
			Advice: "raise --max-concurrency or lower --request-rate",
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
