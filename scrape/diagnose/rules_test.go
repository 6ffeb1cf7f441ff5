package diagnose

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/scrape"
)

func v(x float64) scrape.Value { return scrape.Some(x) }

// busy is a healthy server under load: nothing any rule objects to.
func busy() Signals {
	return Signals{Subject: "gpu-a", Model: "m", Engine: "0", Backend: scrape.BackendVLLM, State: StateUp,
		Running: v(24), Waiting: v(0), KVCacheUsage: v(0.41), WindowSeconds: 60,
		GenerationTokensPerSec: v(1800), PromptTokensPerSec: v(9000), RequestsPerSec: v(6),
		PreemptionsPerSec: v(0), ErrorsPerSec: v(0), PrefixCacheHitRate: v(0.3),
		TTFTP99: Quantile{V: v(0.31)}, ITLP99: Quantile{V: v(0.028)},
		TTFTMean: v(0.12), QueueMean: v(0.004), PrefillMean: v(0.09), PromptTokensMean: v(1500)}
}

func TestRules(t *testing.T) {
	th := DefaultThresholds()
	th.TTFTP99 = 500 * time.Millisecond
	th.ITLP99 = 50 * time.Millisecond
	cases := []struct {
		name  string
		edit  func(*Signals)
		facts Facts
		rules []string // the verdicts expected, worst first
		text  string   // a piece of the first verdict's text
	}{
		{name: "healthy", edit: func(*Signals) {}, rules: nil},
		{name: "down", edit: func(s *Signals) { s.State, s.StateDetail, s.KVCacheUsage = StateDown, "connection refused", v(0.99) },
			rules: []string{RuleDown}, text: "gpu-a is DOWN: connection refused"},
		{name: "stale: frozen numbers judge nothing", edit: func(s *Signals) {
			s.State, s.Age, s.Waiting, s.KVCacheUsage = StateStale, 14*time.Second, v(30), v(0.99)
		},
			rules: []string{RuleStale}, text: "no fresh metrics for 14s"},
		{name: "restarted", edit: func(s *Signals) { s.State, s.StateDetail = StateRestarted, "process start time moved" },
			rules: []string{RuleRestarted}, text: "restarted (process start time moved)"},
		{name: "kv-bound by waiting", edit: func(s *Signals) { s.KVCacheUsage, s.Waiting = v(0.94), v(12) },
			rules: []string{RuleKVBound}, text: "KV cache is 94% full with 12 waiting"},
		{name: "kv-bound by preemptions", edit: func(s *Signals) { s.KVCacheUsage, s.PreemptionsPerSec = v(0.97), v(0.2) },
			rules: []string{RuleKVBound}, text: "--kv-cache-dtype fp8"},
		{name: "kv full but nothing waits: fine", edit: func(s *Signals) { s.KVCacheUsage = v(0.95) }, rules: nil},
		{name: "kv at exactly the threshold is bound", edit: func(s *Signals) { s.KVCacheUsage, s.Waiting = v(0.90), v(1) },
			rules: []string{RuleKVBound}},
		{name: "preemption storm", edit: func(s *Signals) { s.KVCacheUsage, s.PreemptionsPerSec, s.Waiting = v(0.99), v(4.2), v(9) },
			rules: []string{RuleKVBound}, text: "4.20 preemptions/s (recomputing evicted work)"},
		{name: "admission-bound", edit: func(s *Signals) { s.Running, s.Waiting, s.KVCacheUsage, s.QueueMean = v(4), v(12), v(0.23), v(1.5) },
			facts: Facts{MaxNumSeqs: 4}, rules: []string{RuleSeqBound}, text: "running 4 = --max-num-seqs 4"},
		{name: "batch-token-bound: 14 prompts of 1,365 tokens do not fit a step of 8192", edit: func(s *Signals) {
			s.Running, s.Waiting, s.KVCacheUsage, s.QueueMean, s.PromptTokensMean, s.TTFTMean = v(8), v(14), v(0.02), v(0.22), v(1365), v(0.29)
		}, facts: Facts{MaxNumSeqs: 1024, MaxNumBatchedTokens: 8192}, rules: []string{RuleBatchTokenBound},
			text: "need 19118 tokens, more than --max-num-batched-tokens gives a step; raise --max-num-batched-tokens (now 8192)"},
		{name: "budget unknown: 19118 pending tokens are over every default (16384 from 0.28): bound", edit: func(s *Signals) {
			s.Running, s.Waiting, s.KVCacheUsage, s.QueueMean, s.PromptTokensMean, s.TTFTMean = v(8), v(14), v(0.02), v(0.22), v(1365), v(0.29)
		}, facts: Facts{MaxNumSeqs: 1024}, rules: []string{RuleBatchTokenBound}, text: "(not known; vLLM's default is 2048, or 16384 on an 80 GB GPU from 0.28, 8192 before)"},
		{name: "budget unknown: 12,008 pending tokens need not fill the largest default (16384): only queued", edit: func(s *Signals) {
			s.Running, s.Waiting, s.KVCacheUsage, s.QueueMean, s.PromptTokensMean, s.TTFTMean = v(8), v(8), v(0.02), v(0.22), v(1500), v(0.29)
		}, facts: Facts{MaxNumSeqs: 1024}, rules: []string{RuleQueueBound}},
		{name: "running below --max-num-seqs with the budget to spare: no admission verdict", edit: func(s *Signals) {
			s.Running, s.Waiting, s.KVCacheUsage, s.QueueMean, s.PromptTokensMean = v(8), v(2), v(0.02), v(0.22), v(300)
		}, facts: Facts{MaxNumSeqs: 1024, MaxNumBatchedTokens: 8192}, rules: nil},
		{name: "kv-bound when the free blocks cannot hold a prompt", edit: func(s *Signals) {
			s.Running, s.Waiting, s.KVCacheUsage, s.KVCacheTokens, s.PromptTokensMean, s.NumGPUBlocksOverride = v(2), v(14), v(0.75), v(1024), v(384), 64
		}, rules: []string{RuleKVBound}, text: "drop --num-gpu-blocks-override 64"},
		{name: "prefill of long prompts at one request at a time is informational", edit: func(s *Signals) {
			s.Running, s.TTFTMean, s.PrefillMean, s.PromptTokensMean = v(1), v(1.2), v(1.19), v(4096)
		}, rules: []string{RulePrefillBound}, text: "nothing to change while TTFT meets its SLO"},
		{name: "a request between two steps is not admission", edit: func(s *Signals) { s.Waiting = v(1) }, rules: nil},
		{name: "admission-bound without queue histogram", edit: func(s *Signals) { s.Waiting, s.QueueMean = v(3), scrape.Value{} },
			rules: []string{RuleAdmissionBound}, text: "3 requests waiting while its KV cache is only 41% full"},
		{name: "stalled", edit: func(s *Signals) { s.Running, s.Waiting, s.GenerationTokensPerSec = v(0), v(5), v(0) },
			rules: []string{RuleStalled}, text: "asleep or hung"},
		{name: "waiting with no window: not stalled", edit: func(s *Signals) { s.Running, s.Waiting, s.GenerationTokensPerSec = v(0), v(5), scrape.Value{} }, rules: nil},
		{name: "prefill-bound over the SLO", edit: func(s *Signals) {
			s.TTFTMean, s.PrefillMean, s.PromptTokensMean, s.TTFTP99 = v(1.2), v(0.9), v(6000), Quantile{V: v(1.9)}
		}, rules: []string{RulePrefillBound, RuleSLOTTFT}, text: "75% of its TTFT (mean 1.2s) in prefill"},
		{name: "short prompts are not prefill-bound", edit: func(s *Signals) { s.TTFTMean, s.PrefillMean, s.PromptTokensMean = v(1.2), v(0.9), v(300) }, rules: nil},
		{name: "queue-bound", edit: func(s *Signals) { s.TTFTMean, s.QueueMean = v(2.5), v(2.1) },
			rules: []string{RuleQueueBound}, text: "84% of their TTFT queued (mean 2.1s of 2.5s)"},
		{name: "frontend-bound: the TTFT is neither queue nor prefill", edit: func(s *Signals) { s.TTFTMean, s.QueueMean, s.PrefillMean = v(2.5), v(0.01), v(0.04) },
			rules: []string{RuleFrontendBound}, text: "98% of their TTFT (mean 2.5s) outside the engine's queue and prefill"},
		{name: "first tokens of requests that have not ended say nothing of the TTFT's parts", edit: func(s *Signals) {
			s.TTFTMean, s.QueueMean, s.PrefillMean, s.TTFTCount, s.QueueCount = v(2.5), v(0.01), v(0.04), v(36), v(2)
		}, rules: nil},
		{name: "counts within a fifth agree", edit: func(s *Signals) {
			s.TTFTMean, s.QueueMean, s.PrefillMean, s.TTFTCount, s.QueueCount = v(2.5), v(0.01), v(0.04), v(100), v(82)
		}, rules: []string{RuleFrontendBound}},
		{name: "a fast TTFT's composition says nothing", edit: func(s *Signals) { s.TTFTMean, s.QueueMean, s.PrefillMean = v(0.15), v(0.01), v(0.04) },
			rules: nil},
		{name: "errors", edit: func(s *Signals) { s.ErrorsPerSec = v(0.5) }, rules: []string{RuleErrors}, text: "0.50 requests/s in error"},
		{name: "ttft slo", edit: func(s *Signals) { s.TTFTP99 = Quantile{V: v(2.1)} }, rules: []string{RuleSLOTTFT}, text: "TTFT p99 2.1s is over its 500ms SLO"},
		{name: "a saturated ttft says at least", edit: func(s *Signals) { s.TTFTP99 = Quantile{V: v(2560), Bound: AtLeast} }, rules: []string{RuleSLOTTFT}, text: "≥42m40s"},
		{name: "an at-most estimate breaks no slo", edit: func(s *Signals) { s.TTFTP99 = Quantile{V: v(1), Bound: AtMost} }, rules: nil},
		{name: "itl slo", edit: func(s *Signals) { s.ITLP99 = Quantile{V: v(0.08)} }, rules: []string{RuleSLOITL}, text: "inter-token latency p99 80ms"},
		{name: "absent numbers fire nothing", edit: func(s *Signals) {
			*s = Signals{Subject: "tgi", State: StateUp, Running: v(3), Waiting: v(7)}
		}, rules: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := busy()
			c.edit(&s)
			got := Evaluate(&s, c.facts, th)
			var names []string
			for _, v := range got {
				names = append(names, v.Rule)
				assert.Equal(t, s.Subject, v.Subject)
				assert.NotEmpty(t, v.Text)
				assert.NotContains(t, v.Text, "\n")
			}
			assert.Equal(t, c.rules, names)
			if c.text != "" {
				require.NotEmpty(t, got)
				assert.Contains(t, got[0].Text, c.text)
			}
		})
	}
}

func TestOneLimitOneAdvice(t *testing.T) {
	s := busy()
	s.Running, s.Waiting, s.KVCacheUsage, s.QueueMean, s.TTFTMean, s.PromptTokensMean = v(4), v(12), v(0.2), v(1.5), v(1.6), v(300)
	vs := Evaluate(&s, Facts{MaxNumSeqs: 4}, DefaultThresholds())
	require.Len(t, vs, 1, "%v", vs)
	assert.Equal(t, RuleSeqBound, vs[0].Rule, "the cap, not its symptom the queue")
	assert.Equal(t, LimitSeqs, vs[0].Limit)
	assert.Equal(t, "raise --max-num-seqs", vs[0].Advice)
	names := make([]string, len(vs[0].Evidence))
	for i, e := range vs[0].Evidence {
		names[i] = e.Name
	}
	assert.Contains(t, names, "queue_share_of_ttft", "the queue-bound's evidence joins it")
	assert.Equal(t, "--max-num-seqs · waiting 12 (≥ 1), kv_cache_usage 20% (< 90%) · raise --max-num-seqs", vs[0].Line())
	o, _ := Summary(vs)
	assert.Equal(t, Degraded, o)

	s = busy()
	s.Running, s.TTFTMean, s.PrefillMean, s.PromptTokensMean = v(1), v(1.2), v(1.19), v(4096)
	o, line := Summary(Evaluate(&s, Facts{}, DefaultThresholds()))
	assert.Equal(t, Healthy, o, "the prefill demo")
	assert.Equal(t, "HEALTHY", line)
}

func TestEvidenceNamesThresholds(t *testing.T) {
	s := busy()
	s.KVCacheUsage, s.Waiting = v(0.94), v(12)
	vs := Evaluate(&s, Facts{}, DefaultThresholds())
	require.Len(t, vs, 1)
	assert.Equal(t, []Evidence{
		{Name: "kv_cache_usage", Value: 0.94, Unit: "%", Threshold: "≥ 90%"},
		{Name: "waiting", Value: 12, Threshold: "≥ 1"},
	}, vs[0].Evidence)
	assert.Equal(t, []string{"--gpu-memory-utilization"}, vs[0].Flags, "one lever")
	assert.NotContains(t, vs[0].Text, "--max-num-seqs", "fewer sequences is not more KV memory")
	assert.Contains(t, vs[0].String(), "[kv_cache_usage 94% (≥ 90%); waiting 12 (≥ 1)]")
}

func TestClient(t *testing.T) {
	th := DefaultThresholds()
	assert.Empty(t, Client(Facts{}, th), "nothing known, nothing said")
	assert.Empty(t, Client(Facts{Lag: 100 * time.Millisecond, TargetRate: 10, AchievedRate: 9.5}, th))
	vs := Client(Facts{Lag: 1200 * time.Millisecond}, th)
	require.Len(t, vs, 1)
	assert.Equal(t, RuleClientBound, vs[0].Rule)
	assert.Contains(t, vs[0].Text, "1.2s behind its schedule")
	vs = Client(Facts{TargetRate: 10, AchievedRate: 7.1}, th)
	require.Len(t, vs, 1)
	assert.Contains(t, vs[0].Text, "sent 7.10 req/s of the 10 asked")
	// A Poisson load of 2/s sends 17 in 10 s by chance (20 expected, give or take 4.5), but
	// not 1,020 in 600 s (1,200 expected, give or take 35).
	assert.Empty(t, Client(Facts{TargetRate: 2, AchievedRate: 1.7, RateSeconds: 10}, th), "chance")
	assert.Len(t, Client(Facts{TargetRate: 2, AchievedRate: 1.7, RateSeconds: 600}, th), 1, "a shortfall")
}

func TestImbalance(t *testing.T) {
	th := DefaultThresholds()
	member := func(name string, waiting, kv float64) Signals {
		s := busy()
		s.Subject, s.Waiting, s.KVCacheUsage = name, v(waiting), v(kv)
		return s
	}
	vs := Imbalance("3 replicas of m", []Signals{member("a", 18, 0.92), member("b", 1, 0.40), member("c", 1, 0.45)}, th)
	require.Len(t, vs, 2)
	assert.Equal(t, RuleImbalance, vs[0].Rule)
	assert.Equal(t, "a", vs[0].Subject)
	assert.Contains(t, vs[0].Text, "a holds 18 of the 20 requests waiting across 3 replicas of m")
	assert.Equal(t, RuleKVSkew, vs[1].Rule)
	assert.Contains(t, vs[1].Text, "differs by 52 points")

	assert.Empty(t, Imbalance("g", []Signals{member("a", 3, 0.5), member("b", 2, 0.5), member("c", 3, 0.5)}, th), "even")
	assert.Empty(t, Imbalance("g", []Signals{member("a", 3, 0.5), member("b", 0, 0.5)}, th), "too few waiting to judge")
	assert.Len(t, Imbalance("g", []Signals{member("a", 4, 0.5), member("b", 0, 0.5)}, th), 1, "two members: 100% > 75%")
	assert.Empty(t, Imbalance("g", []Signals{member("a", 4, 0.5), member("b", 2, 0.5)}, th), "two members: 67% < 75%")
	down := member("b", 0, 0.1)
	down.State = StateDown
	assert.Empty(t, Imbalance("g", []Signals{member("a", 9, 0.9), down}, th), "a DOWN member is not compared")
	unknown := member("b", 0, 0.4)
	unknown.Waiting = scrape.Value{}
	assert.Empty(t, Imbalance("g", []Signals{member("a", 9, 0.4), unknown}, th), "an unknown queue makes the share unknown")
}

func TestSummary(t *testing.T) {
	o, line := Summary(nil)
	assert.Equal(t, Healthy, o)
	assert.Equal(t, "HEALTHY", line)
	vs := []Verdict{
		{Rule: RuleKVSkew, Severity: Info, Text: "skew"},
		{Rule: RuleKVBound, Severity: Warning, Text: "a's KV cache is full"},
		{Rule: RuleDown, Severity: Critical, Text: "b is DOWN: connection refused"},
	}
	o, line = Summary(vs)
	assert.Equal(t, Failing, o)
	assert.Equal(t, "CRITICAL: b is DOWN: connection refused (+1 more)", line)
	o, line = Summary(vs[:2])
	assert.Equal(t, Degraded, o)
	assert.True(t, strings.HasPrefix(line, "DEGRADED: a's KV"))
}

func TestFormat(t *testing.T) {
	assert.Equal(t, "94%", formatValue(0.94, "%"))
	assert.Equal(t, "12.5%", formatValue(0.125, "%"))
	assert.Equal(t, "12ms", formatValue(0.0123, "s"))
	assert.Equal(t, "1.2s", formatValue(1.2, "s"))
	assert.Equal(t, "350µs", formatValue(0.00035, "s"))
	assert.Equal(t, "12", formatValue(12, ""))
	assert.Equal(t, "0.33/s", formatValue(0.333, "/s"))
}

func TestWriteTextNamesRuleEvidenceAndFlags(t *testing.T) {
	var b strings.Builder
	WriteText(&b, nil)
	assert.Contains(t, b.String(), "HEALTHY")
	b.Reset()
	WriteText(&b, []Verdict{{Rule: RuleKVBound, Severity: Warning, Subject: "s", Text: "KV cache full",
		Flags:    []string{"--gpu-memory-utilization"},
		Evidence: []Evidence{{Name: "kv_cache_usage", Value: 0.95, Unit: "%", Threshold: "≥ 90%"}}}})
	out := b.String()
	for _, want := range []string{"Verdicts", "kv-bound: KV cache full", "saw: kv_cache_usage 95% (≥ 90%)", "change: --gpu-memory-utilization"} {
		assert.Contains(t, out, want)
	}
	b.Reset()
	long := Verdict{Rule: RuleErrors, Severity: Critical, Text: strings.Repeat("word ", 60) + "http://" + strings.Repeat("x", 200)}
	var many []Verdict
	for i := 0; i < 30; i++ {
		long.Subject = strconv.Itoa(i)
		many = append(many, long)
	}
	WriteText(&b, many)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for _, l := range lines {
		assert.LessOrEqual(t, len([]rune(l)), TextWidth, "%q", l)
	}
	assert.Contains(t, b.String(), "(+10 more)", "at most 20 verdicts")
}
