package diagnose_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/exposition"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

func capture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	require.NoError(t, err)
	return string(b)
}

// pair parses a real capture and the same capture edited, ten seconds apart.
func pair(t *testing.T, before, after string) (*scrape.Snapshot, scrape.Window) {
	t.Helper()
	prev, err := scrape.Parse(strings.NewReader(before))
	require.NoError(t, err)
	cur, err := scrape.Parse(strings.NewReader(after))
	require.NoError(t, err)
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	prev.Time, cur.Time = t0, t0.Add(10*time.Second)
	return &cur, scrape.Compare(&prev, &cur)
}

// TestRulesOnCaptures edits real vLLM captures into before/after pairs that provoke each
// rule, and checks the verdicts read from them through scrape's mapping and window.
func TestRulesOnCaptures(t *testing.T) {
	const model = `model_name="example-org/example-model-27B"`
	base := capture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	cases := []struct {
		name  string
		edit  func(string) string
		facts diagnose.Facts
		rules []string
		text  string
	}{
		{name: "the capture as it is: idle and healthy", edit: func(s string) string { return s }},
		{name: "kv-bound", rules: []string{diagnose.RuleKVBound}, text: "KV cache is 95% full with 6 waiting and 0.50 preemptions/s",
			edit: func(s string) string {
				s = exposition.Set(s, "vllm:kv_cache_usage_perc", 0.95, model)
				s = exposition.Set(s, "vllm:num_requests_running", 30, model)
				s = exposition.Set(s, "vllm:num_requests_waiting", 6, model)
				s = exposition.Add(s, "vllm:generation_tokens_total", 4000, model)
				return exposition.Add(s, "vllm:num_preemptions_total", 5, model)
			}},
		{name: "preemption storm", rules: []string{diagnose.RuleKVBound}, text: "and 4 preemptions/s (recomputing evicted work)",
			edit: func(s string) string {
				s = exposition.Set(s, "vllm:kv_cache_usage_perc", 0.99, model)
				s = exposition.Set(s, "vllm:num_requests_running", 30, model)
				return exposition.Add(s, "vllm:num_preemptions_total", 40, model)
			}},
		{name: "seq-bound, the queue its evidence", rules: []string{diagnose.RuleSeqBound}, facts: diagnose.Facts{MaxNumSeqs: 4},
			text: "12 requests waiting while its KV cache is only 20% full: the batch is capped (running 4 = --max-num-seqs 4)",
			edit: func(s string) string {
				s = exposition.Set(s, "vllm:kv_cache_usage_perc", 0.2, model)
				s = exposition.Set(s, "vllm:num_requests_running", 4, model)
				s = exposition.Set(s, "vllm:num_requests_waiting", 12, model)
				s = exposition.Add(s, "vllm:generation_tokens_total", 800, model)
				s = exposition.Observe(s, "vllm:request_queue_time_seconds", 1.5, 20, model)
				return exposition.Observe(s, "vllm:time_to_first_token_seconds", 1.6, 20, model)
			}},
		{name: "prefill-bound", rules: []string{diagnose.RulePrefillBound}, text: "in prefill of long prompts (mean 5000 tokens)",
			edit: func(s string) string {
				s = exposition.Observe(s, "vllm:time_to_first_token_seconds", 2.0, 20, model)
				s = exposition.Observe(s, "vllm:request_prefill_time_seconds", 1.6, 20, model)
				s = exposition.Observe(s, "vllm:request_queue_time_seconds", 0.1, 20, model)
				return exposition.Observe(s, "vllm:request_prompt_tokens", 5000, 20, model)
			}},
		{name: "queue-bound", rules: []string{diagnose.RuleQueueBound}, text: "80% of their TTFT queued (mean 2s of 2.5s)",
			edit: func(s string) string {
				s = exposition.Observe(s, "vllm:time_to_first_token_seconds", 2.5, 20, model)
				s = exposition.Observe(s, "vllm:request_queue_time_seconds", 2.0, 20, model)
				s = exposition.Observe(s, "vllm:request_prefill_time_seconds", 0.4, 20, model)
				return exposition.Observe(s, "vllm:request_prompt_tokens", 300, 20, model)
			}},
		{name: "errors", rules: []string{diagnose.RuleErrors}, text: "ends 1 requests/s in error or abort",
			edit: func(s string) string {
				s = exposition.Add(s, "vllm:request_success_total", 6, `finished_reason="error"`)
				return exposition.Add(s, "vllm:request_success_total", 4, `finished_reason="abort"`)
			}},
		{name: "restarted: the process start time moved", rules: []string{diagnose.RuleRestarted}, text: "restarted",
			edit: func(s string) string { return exposition.Add(s, "process_start_time_seconds", 600) }},
		{name: "restarted: counters went back", rules: []string{diagnose.RuleRestarted},
			edit: func(s string) string { return exposition.Set(s, "vllm:prompt_tokens_total", 10, model) }},
		{name: "stalled", rules: []string{diagnose.RuleStalled}, text: "5 requests waiting and none running",
			edit: func(s string) string { return exposition.Set(s, "vllm:num_requests_waiting", 5, model) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur, w := pair(t, base, c.edit(base))
			vs := diagnose.Server("gpu-a", cur, &w, c.facts, diagnose.DefaultThresholds())
			var names []string
			for _, v := range vs {
				names = append(names, v.Rule)
			}
			assert.Equal(t, c.rules, names, "%v", vs)
			if c.text != "" {
				require.NotEmpty(t, vs)
				assert.Contains(t, vs[0].Text, c.text)
			}
		})
	}
}

// TestImbalanceOnDataParallelCapture: of two engines of one server, one holds the queue.
func TestImbalanceOnDataParallelCapture(t *testing.T) {
	base := capture(t, "vllm-metrics-synthetic-multiprocess-dp2.txt")
	after := exposition.Set(base, "vllm:num_requests_waiting", 9, `engine="1"`)
	after = exposition.Set(after, "vllm:num_requests_waiting", 0, `engine="0"`)
	after = exposition.Set(after, "vllm:num_requests_running", 8)
	after = exposition.Set(after, "vllm:kv_cache_usage_perc", 0.5)
	after = exposition.Add(after, "vllm:generation_tokens_total", 500)
	cur, w := pair(t, base, after)
	sigs := diagnose.FromWindow("gpu-b", cur, &w)
	require.Len(t, sigs, 2)
	assert.Equal(t, "gpu-b engine 1", sigs[1].Subject)
	vs := diagnose.Server("gpu-b", cur, &w, diagnose.Facts{}, diagnose.DefaultThresholds())
	var imb *diagnose.Verdict
	for i := range vs {
		if vs[i].Rule == diagnose.RuleImbalance {
			imb = &vs[i]
		}
	}
	require.NotNil(t, imb, "%v", vs)
	assert.Equal(t, "gpu-b engine 1", imb.Subject)
	assert.Contains(t, imb.Text, "holds 9 of the 9 requests waiting across 2 engines of Qwen/Qwen3-0.6B")
}

// TestOtherBackends: SGLang and TGI captures get the rules their numbers allow.
func TestOtherBackends(t *testing.T) {
	sg := capture(t, "sglang-v0.4-metrics-llama-3.1-8b-loaded-docs.prom")
	after := exposition.Set(sg, "sglang:num_queue_reqs", 9)
	after = exposition.Set(after, "sglang:num_running_reqs", 16)
	after = exposition.Set(after, "sglang:token_usage", 0.97)
	cur, w := pair(t, sg, after)
	vs := diagnose.Server("sgl", cur, &w, diagnose.Facts{}, diagnose.DefaultThresholds())
	require.NotEmpty(t, vs)
	assert.Equal(t, diagnose.RuleKVBound, vs[0].Rule, "SGLang's token_usage is its KV use")

	tgi := capture(t, "tgi-metrics-payload.prom")
	cur, w = pair(t, tgi, exposition.Set(tgi, "tgi_queue_size", 9))
	for _, s := range diagnose.FromWindow("tgi", cur, &w) {
		assert.False(t, s.KVCacheUsage.OK, "TGI exports no KV use")
		for _, v := range diagnose.Evaluate(&s, diagnose.Facts{}, diagnose.DefaultThresholds()) {
			assert.NotEqual(t, diagnose.RuleAdmissionBound, v.Rule, "no KV number: admission cannot be told from KV")
			assert.NotEqual(t, diagnose.RuleKVBound, v.Rule)
		}
	}
}
