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

// verdictOn scrapes url until a verdict of rule that accept takes is among the verdicts over
// the window between two scrapes (the load ramps up first), and returns it.
func verdictOn(t *testing.T, url, rule string, facts diagnose.Facts, accept func(diagnose.Verdict) bool) diagnose.Verdict {
	t.Helper()
	c, err := scrape.NewClient(url)
	require.NoError(t, err)
	ctx := context.Background()
	prev, err := c.Scrape(ctx)
	require.NoError(t, err)
	var found diagnose.Verdict
	var last []diagnose.Verdict
	require.Eventually(t, func() bool {
		cur, err := c.Scrape(ctx)
		if err != nil {
			return false
		}
		w := scrape.Compare(&prev, &cur)
		prev = cur
		last = diagnose.Server("sim", &cur, &w, facts, diagnose.DefaultThresholds())
		for _, v := range last {
			if v.Rule == rule && accept(v) {
				found = v
				return true
			}
		}
		return false
	}, 60*time.Second, 20*time.Millisecond, "no %s verdict; last: %v", rule, last)
	return found
}

// TestKVBoundOnL4: Llama-3.1-8B on an L4 has room for a few tens of thousands of KV tokens;
// 64 requests of 2,000 tokens each do not fit, so they wait for KV blocks (and the engine
// preempts). The simulator runs on a virtual clock, its steps back to back.
func TestKVBoundOnL4(t *testing.T) {
	url := simtest.StartVirtual(t, "meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--max-model-len", "4096")
	simtest.Load(t, url, 64, 1024, 1024)
	v := verdictOn(t, url, diagnose.RuleKVBound, diagnose.Facts{}, func(diagnose.Verdict) bool { return true })
	assert.Contains(t, v.Text, "--gpu-memory-utilization")
	assert.Contains(t, v.Text, "--kv-cache-dtype fp8")
	// vLLM's V1 engine sizes the cache from memory alone: a shorter context frees none.
	assert.NotContains(t, v.Text, "--max-model-len")
	require.NotEmpty(t, v.Evidence)
	assert.Equal(t, "kv_cache_usage", v.Evidence[0].Name)
	if v.Evidence[0].Value < diagnose.DefaultThresholds().KVBound {
		// Below the full mark the rule's other grounds hold: a preemption storm (critical), or
		// requests waiting whose next prompt the free blocks cannot hold.
		names := map[string]bool{}
		for _, e := range v.Evidence {
			names[e.Name] = true
		}
		assert.True(t, v.Severity == diagnose.Critical || names["waiting"], "kv-bound at %.2f usage without a storm or waiting requests: %v", v.Evidence[0].Value, v.Evidence)
	}
}

// TestSeqBoundMaxNumSeqs: with --max-num-seqs 4 and 16 clients, 12 wait while the KV
// cache is nearly empty.
func TestSeqBoundMaxNumSeqs(t *testing.T) {
	url := simtest.StartVirtual(t, "Qwen/Qwen3-0.6B", "--max-num-seqs", "4", "--max-model-len", "4096")
	simtest.Load(t, url, 16, 128, 64)
	v := verdictOn(t, url, diagnose.RuleSeqBound, diagnose.Facts{MaxNumSeqs: 4}, func(v diagnose.Verdict) bool {
		return strings.Contains(v.Text, "running 4 = --max-num-seqs 4") // every slot taken, once the load has ramped up
	})
	assert.Contains(t, v.Text, "KV cache is only")
	assert.Contains(t, v.Text, "raise --max-num-seqs")
	assert.Equal(t, []string{"--max-num-seqs"}, v.Flags)
}
