package diagnose_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/simtest"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// scenario is one simulator setup and load, and the one verdict it must come to.
type scenario struct {
	name  string
	args  []string // vllm serve's, for the simulator on a virtual clock
	load  [3]int   // concurrency, prompt and output tokens (no load: zero)
	facts diagnose.Facts
	th    func(*diagnose.Thresholds)
	// judge gives the verdicts (nil: scrape url and diagnose.Server over each window).
	judge func(t *testing.T, url string, sc scenario) []diagnose.Verdict
	// The verdict expected first, its limit and a piece of its advice ("" rule: HEALTHY).
	rule, limit, advice string
	overall             diagnose.Overall
}

// windows scrapes url and returns the verdicts of the first window between two scrapes that
// ok accepts, or fails with the last.
func windows(t *testing.T, url string, f diagnose.Facts, th diagnose.Thresholds, ok func([]diagnose.Verdict) bool) []diagnose.Verdict {
	t.Helper()
	c, err := scrape.NewClient(url)
	require.NoError(t, err)
	ctx := context.Background()
	prev, err := c.Scrape(ctx)
	require.NoError(t, err)
	var last []diagnose.Verdict
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		cur, err := c.Scrape(ctx)
		require.NoError(t, err)
		w := scrape.Compare(&prev, &cur)
		prev = cur
		if len(w.Models) == 0 || w.Models[0].Total.TTFTSeconds == nil {
			continue
		}
		last = diagnose.Server("sim", &cur, &w, f, th)
		if ok(last) {
			return last
		}
	}
	t.Fatalf("no window came to the verdict; last: %v", last)
	return nil
}

// firstIs accepts verdicts whose first (worst) one is of rule.
func firstIs(rule string) func([]diagnose.Verdict) bool {
	return func(vs []diagnose.Verdict) bool { return len(vs) > 0 && vs[0].Rule == rule }
}

func thresholds(sc scenario) diagnose.Thresholds {
	th := diagnose.DefaultThresholds()
	if sc.th != nil {
		sc.th(&th)
	}
	return th
}

const llama = "meta-llama/Llama-3.1-8B-Instruct"

// scenarios are the setups the verdicts must tell apart. The first three are the cases a user
// met: a step budget mistaken for --max-num-seqs, a starved KV cache given contradictory
// advice, and the prefill demo called DEGRADED.
var scenarios = []scenario{
	{name: "batch-token bound: C=22 of 4,096-token prompts on an H100 with --max-num-seqs 1024 and an 8,192-token step",
		args: []string{llama, "--sim-gpu", "H100-SXM-80GB", "--max-num-seqs", "1024", "--max-num-batched-tokens", "8192"}, load: [3]int{22, 4096, 128},
		facts: diagnose.Facts{MaxNumSeqs: 1024, MaxNumBatchedTokens: 8192},
		rule:  diagnose.RuleBatchTokenBound, limit: diagnose.LimitBatched, advice: "raise --max-num-batched-tokens (now 8192)", overall: diagnose.Degraded},
	{name: "KV bound with preemptions: 64 blocks, C=16 of 384-token requests",
		args: []string{llama, "--num-gpu-blocks-override", "64", "--max-model-len", "1024"}, load: [3]int{16, 256, 128},
		judge: func(t *testing.T, url string, sc scenario) []diagnose.Verdict {
			return windows(t, url, sc.facts, thresholds(sc), func(vs []diagnose.Verdict) bool {
				return firstIs(diagnose.RuleKVBound)(vs) && vs[0].Severity == diagnose.Critical // a preemption storm
			})
		},
		rule: diagnose.RuleKVBound, limit: diagnose.LimitKV, advice: "drop --num-gpu-blocks-override 64", overall: diagnose.Failing},
	{name: "healthy demo: one long prompt at a time on an L4",
		args: []string{llama, "--sim-gpu", "L4", "--max-model-len", "8192"}, load: [3]int{1, 4096, 64},
		judge: func(t *testing.T, url string, sc scenario) []diagnose.Verdict {
			return windows(t, url, sc.facts, thresholds(sc), firstIs(diagnose.RulePrefillBound))
		},
		rule: diagnose.RulePrefillBound, limit: diagnose.LimitPrefill, overall: diagnose.Healthy},
	{name: "seq bound: --max-num-seqs 4 under 16 clients",
		args: []string{"Qwen/Qwen3-0.6B", "--max-num-seqs", "4", "--max-model-len", "4096"}, load: [3]int{16, 128, 64},
		facts: diagnose.Facts{MaxNumSeqs: 4},
		rule:  diagnose.RuleSeqBound, limit: diagnose.LimitSeqs, advice: "raise --max-num-seqs", overall: diagnose.Degraded},
	{name: "admission queueing: a cap of 2 that vllmtop was not told",
		args: []string{"Qwen/Qwen3-0.6B", "--max-num-seqs", "2", "--max-model-len", "4096"}, load: [3]int{16, 128, 64},
		rule: diagnose.RuleAdmissionBound, limit: diagnose.LimitSeqs + " (not known)", advice: "raise --max-num-seqs if running stops at it", overall: diagnose.Degraded},
	{name: "prefill-heavy: long prompts on an L4 over a 1 s TTFT SLO",
		args: []string{llama, "--sim-gpu", "L4", "--max-model-len", "8192"}, load: [3]int{2, 6000, 16},
		th:   func(th *diagnose.Thresholds) { th.TTFTP99 = time.Second },
		rule: diagnose.RulePrefillBound, limit: diagnose.LimitPrefill, advice: "raise --max-num-batched-tokens", overall: diagnose.Degraded},
	{name: "slow decode: 64 requests on an L4 over a 40 ms ITL SLO",
		args: []string{llama, "--sim-gpu", "L4", "--max-model-len", "2048"}, load: [3]int{64, 64, 256},
		th:   func(th *diagnose.Thresholds) { th.ITLP99 = 40 * time.Millisecond },
		rule: diagnose.RuleSLOITL, limit: diagnose.LimitDecode, advice: "lower --max-num-seqs", overall: diagnose.Degraded},
	{name: "frontend-bound: 512 clients of a 0.6B model on an H100 outrun the API server",
		args: []string{"Qwen/Qwen3-0.6B", "--sim-gpu", "H100-SXM-80GB"}, load: [3]int{512, 128, 128},
		rule: diagnose.RuleFrontendBound, limit: diagnose.LimitAPI, advice: "raise --api-server-count", overall: diagnose.Degraded},
	{name: "client-bound: the load generator 2 s behind its schedule",
		args: []string{"Qwen/Qwen3-0.6B"}, load: [3]int{1, 64, 16}, facts: diagnose.Facts{Lag: 2 * time.Second},
		rule: diagnose.RuleClientBound, limit: diagnose.LimitClient, advice: "lower --request-rate", overall: diagnose.Degraded},
	{name: "idle: no load, nothing to say",
		args: []string{"Qwen/Qwen3-0.6B"},
		judge: func(t *testing.T, url string, sc scenario) []diagnose.Verdict {
			return idleWindow(t, url, sc)
		},
		overall: diagnose.Healthy},
	{name: "down: the server stopped", args: []string{"Qwen/Qwen3-0.6B"}, judge: downJudge,
		rule: diagnose.RuleDown, limit: "server", advice: "check that it runs", overall: diagnose.Failing},
	{name: "restarted: counters start again", args: []string{"Qwen/Qwen3-0.6B"}, judge: restartJudge,
		rule: diagnose.RuleRestarted, limit: "server", advice: "restarted: its rates start again", overall: diagnose.Degraded},
	{name: "imbalance: one replica holds the queue", args: []string{"Qwen/Qwen3-0.6B", "--max-num-seqs", "2", "--max-model-len", "4096"},
		load: [3]int{16, 128, 64}, judge: imbalanceJudge,
		rule: diagnose.RuleImbalance, limit: "load balance", advice: "check the load balancer", overall: diagnose.Degraded},
}

// idleWindow is one window of a server with no load.
func idleWindow(t *testing.T, url string, sc scenario) []diagnose.Verdict {
	c, err := scrape.NewClient(url)
	require.NoError(t, err)
	prev, err := c.Scrape(context.Background())
	require.NoError(t, err)
	cur, err := c.Scrape(context.Background())
	require.NoError(t, err)
	w := scrape.Compare(&prev, &cur)
	return diagnose.Server("sim", &cur, &w, sc.facts, thresholds(sc))
}

// downJudge stops a fresh server and judges the failed scrape as the dashboard does.
func downJudge(t *testing.T, _ string, sc scenario) []diagnose.Verdict {
	in := simtest.Start(t, sc.args...)
	c, err := scrape.NewClient(in.URL)
	require.NoError(t, err)
	in.Stop()
	_, err = c.Scrape(context.Background())
	require.Error(t, err)
	s := diagnose.Signals{Subject: "sim", State: diagnose.StateDown, StateDetail: "connection refused"}
	return diagnose.Evaluate(&s, sc.facts, thresholds(sc))
}

// restartJudge scrapes a server, restarts it and scrapes again.
func restartJudge(t *testing.T, _ string, sc scenario) []diagnose.Verdict {
	in := simtest.Start(t, sc.args...)
	simtest.Load(t, in.URL, 2, 32, 8)
	c, err := scrape.NewClient(in.URL)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		s, err := c.Scrape(context.Background())
		return err == nil && len(s.Models) > 0 && s.Models[0].Total.GenerationTokens.Or(0) > 0
	}, 30*time.Second, 10*time.Millisecond)
	prev, err := c.Scrape(context.Background())
	require.NoError(t, err)
	in.Restart(t)
	cur, err := c.Scrape(context.Background())
	require.NoError(t, err)
	w := scrape.Compare(&prev, &cur)
	return diagnose.Server("sim", &cur, &w, sc.facts, thresholds(sc))
}

// imbalanceJudge compares the loaded server with an idle replica of the same model.
func imbalanceJudge(t *testing.T, url string, sc scenario) []diagnose.Verdict {
	idle := simtest.StartVirtual(t, sc.args...)
	th := thresholds(sc)
	a := signalsOf(t, url, "gpu-a", func(s diagnose.Signals) bool { return s.Waiting.Or(0) >= 8 })
	b := signalsOf(t, idle, "gpu-b", func(diagnose.Signals) bool { return true })
	return diagnose.Imbalance(diagnose.GroupName(2, "replicas", "Qwen/Qwen3-0.6B"), []diagnose.Signals{a, b}, th)
}

// signalsOf is the first window of url that ok accepts.
func signalsOf(t *testing.T, url, subject string, ok func(diagnose.Signals) bool) diagnose.Signals {
	c, err := scrape.NewClient(url)
	require.NoError(t, err)
	prev, err := c.Scrape(context.Background())
	require.NoError(t, err)
	var s diagnose.Signals
	require.Eventually(t, func() bool {
		cur, err := c.Scrape(context.Background())
		require.NoError(t, err)
		w := scrape.Compare(&prev, &cur)
		prev = cur
		s = diagnose.FromWindow(subject, &cur, &w)[0]
		s.State = diagnose.StateUp
		return ok(s)
	}, 60*time.Second, 5*time.Millisecond)
	return s
}

// TestScenarios runs each setup on the simulator and checks the one verdict it comes to: its
// rule, the limit it names, its advice and the overall state; and that no other capacity
// verdict contradicts it.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("a dozen simulators under load; skipped with -short")
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			url := simtest.StartVirtual(t, sc.args...)
			if sc.load[0] > 0 {
				simtest.Load(t, url, sc.load[0], sc.load[1], sc.load[2])
			}
			var vs []diagnose.Verdict
			switch {
			case sc.judge != nil:
				vs = sc.judge(t, url, sc)
			default:
				vs = windows(t, url, sc.facts, thresholds(sc), firstIs(sc.rule))
			}
			checkScenario(t, sc, vs)
		})
	}
}

func checkScenario(t *testing.T, sc scenario, vs []diagnose.Verdict) {
	t.Helper()
	o, _ := diagnose.Summary(vs)
	assert.Equal(t, sc.overall, o, "%v", vs)
	if sc.rule == "" {
		assert.Empty(t, vs)
		return
	}
	require.NotEmpty(t, vs)
	v := vs[0]
	assert.Equal(t, sc.rule, v.Rule, "%v", vs)
	assert.Equal(t, sc.limit, v.Limit)
	assert.Contains(t, v.Advice, sc.advice)
	capacity := 0
	for _, x := range vs {
		switch x.Rule {
		case diagnose.RuleKVBound, diagnose.RuleSeqBound, diagnose.RuleBatchTokenBound, diagnose.RuleAdmissionBound,
			diagnose.RuleFrontendBound, diagnose.RulePrefillBound, diagnose.RuleQueueBound:
			capacity++
		}
		assert.NotContains(t, x.Text, "lower --max-num-seqs or raise", "no advice both ways")
	}
	assert.LessOrEqual(t, capacity, 1, "one limit: %v", vs)
	if sc.advice != "" {
		assert.True(t, strings.HasSuffix(v.Line(), v.Advice), "the header line ends with the advice: %s", v.Line())
	}
}
