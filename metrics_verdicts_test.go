package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/simtest"
)

// TestMetricsWindowVerdictsOnTheSimulator: `metrics --window` on the setups a user met comes
// to the verdicts the dashboard does (scrape/diagnose's scenario table): one limit, one
// advice, and no line printed twice.
func TestMetricsWindowVerdictsOnTheSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("simulators under load; skipped with -short")
	}
	const llama = "meta-llama/Llama-3.1-8B-Instruct"
	cases := []struct {
		name  string
		args  []string
		load  [3]int
		flags []string
		want  []string // in the Verdicts block
		not   []string
	}{
		// Closed-loop C requests of P prompt and O output tokens ask C*P/O prompt tokens a step
		// in the steady state: 64*4096/16 = 16,384, twice the budget, with the KV cache a quarter
		// full and --max-num-seqs far off. (22 requests of 1280/128 ask 220 a step: they wait for
		// the budget only in the first wave, and the steady state is rightly HEALTHY.)
		{"batch-token bound on an H100", []string{llama, "--sim-gpu", "H100-SXM-80GB", "--max-num-seqs", "1024"}, [3]int{64, 4096, 16},
			[]string{"--max-num-seqs", "1024", "--max-num-batched-tokens", "8192"},
			[]string{"warning batch-token-bound", "limit: --max-num-batched-tokens", "change: --max-num-batched-tokens"},
			[]string{"admission-bound", "raise --max-num-seqs"}},
		{"KV-starved: 64 blocks", []string{llama, "--num-gpu-blocks-override", "64", "--max-model-len", "1024"}, [3]int{16, 256, 128}, nil,
			[]string{"kv-bound", "drop --num-gpu-blocks-override 64", "limit: KV blocks"},
			[]string{"preemption-storm", "admission-bound", "queue-bound", "lower --max-num-seqs"}},
		{"the prefill demo on an L4", []string{llama, "--sim-gpu", "L4", "--max-model-len", "8192"}, [3]int{1, 4096, 64}, nil,
			[]string{"info prefill-bound", "nothing to change"},
			[]string{"warning", "critical"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := simtest.StartVirtual(t, c.args...)
			simtest.Load(t, url, c.load[0], c.load[1], c.load[2])
			old := waitWindow
			t.Cleanup(func() { waitWindow = old })
			waitWindow = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
			// A loop of its own rather than require.Eventually, whose last try may still run
			// when the cleanup restores waitWindow.
			var block string
			found := false
			for deadline := time.Now().Add(180 * time.Second); !found && time.Now().Before(deadline); {
				args := append(append([]string{"--window", "1s"}, c.flags...), url)
				code, out, stderr := metrics(t, args...)
				require.Equal(t, 0, code, stderr)
				_, block, _ = strings.Cut(out, "\nVerdicts\n")
				found = true
				for _, w := range c.want {
					found = found && strings.Contains(block, w)
				}
			}
			require.True(t, found, "verdicts %v in:\n%s", c.want, block)
			for _, n := range c.not {
				assert.NotContains(t, block, n)
			}
			seen := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
				if strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "    ") {
					assert.False(t, seen[l], "printed twice: %q", l)
					seen[l] = true
				}
			}
		})
	}
}
