package loadgen_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// startSim serves the simulator on a loopback port on the wall clock, sped up.
func startSim(t *testing.T, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	inst, err := serve.Start(context.Background(), append(args, "--sim-startup-seconds", "0"), func(string) string { return "" }, serve.WithListener(ln))
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Stop() })
	require.Eventually(t, inst.Ready, 5*time.Second, time.Millisecond)
	return inst.URL()
}

// The HTTP side of a sweep against the simulator: exact prompt lengths from /tokenize, usage,
// one chunk per token. How throughput grows with concurrency is checked on the virtual clock
// (predict's TestVirtualSweepOnTheSimulator), where the machine's load cannot move it.
func TestSweepAgainstTheSimulator(t *testing.T) {
	url := startSim(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--sim-speed", "20")
	for _, endpoint := range []string{loadgen.EndpointCompletions, loadgen.EndpointChat} {
		t.Run(endpoint, func(t *testing.T) {
			c, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: url, Endpoint: endpoint})
			require.NoError(t, err)
			vocab, err := loadgen.CalibrateVocab(context.Background(), c)
			require.NoError(t, err)
			assert.True(t, vocab.Checked, "the simulator has /tokenize")
			w, err := loadgen.NewRandom(loadgen.RandomConfig{InputLen: 128, OutputLen: 32, RangeRatio: 0.25, IgnoreEOS: true, Seed: 1}, vocab)
			require.NoError(t, err)
			for _, conc := range []int{1, 8} {
				var rec loadgen.Recorder
				r := loadgen.NewRunner(c, loadgen.RunnerConfig{Workload: w, Concurrency: conc, NumRequests: 2*conc + 8, Sinks: []func(loadgen.Result){rec.Add}})
				start := time.Now()
				require.NoError(t, r.Run(context.Background()))
				results := rec.Results()
				s := loadgen.Summarize(results, time.Since(start), []float64{50, 99}, loadgen.Goodput{})
				assert.Zero(t, s.Failed, "C=%d: %v", conc, s.FailuresByClass)
				assert.Equal(t, 2*conc+8, s.Completed)
				for _, res := range results {
					p := w.Prompt(res.Index)
					assert.True(t, res.OutputFromUsage)
					assert.Equal(t, p.OutputTokens, res.OutputTokens, "ignore_eos: the server generates max_tokens")
					assert.Equal(t, p.InputTokens, res.PromptTokens, "prompts have the exact length the server counts")
					roles := 0
					if endpoint == loadgen.EndpointChat {
						roles = 1 // the role chunk, timed as vLLM's client times it
					}
					assert.Equal(t, res.OutputTokens+roles, res.Chunks, "one token per chunk")
				}
			}
		})
	}
}
