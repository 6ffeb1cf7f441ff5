package loadgen_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/loadgen"
)

func TestSharedPrefixNamesAndEpochs(t *testing.T) {
	s, err := loadgen.NewSession(sessionConfig("http://127.0.0.1:1"))
	require.NoError(t, err)
	assert.Equal(t, "random 64 in / 8 out", s.WorkloadName(), "no prefix until asked")
	name, n := s.SharedPrefix(true)
	assert.Equal(t, 1, n)
	assert.Equal(t, "random 64 in / 8 out, prefix on", name)
	name, _ = s.UseLongPrompts(true)
	assert.Equal(t, "random 512 in / 8 out, prefix on", name, "the prefix stays on the other workload")
	name, n = s.SharedPrefix(false)
	assert.Equal(t, 3, n)
	assert.Equal(t, "random 512 in / 8 out, prefix off", name)
	base, p := loadgen.SplitPrefixName(name)
	assert.Equal(t, "random 512 in / 8 out", base)
	assert.Equal(t, "prefix off", p)
	base, p = loadgen.SplitPrefixName("random 1 in / 2 out")
	assert.Equal(t, "random 1 in / 2 out", base)
	assert.Empty(t, p)
}

// The prefix-caching demo on the simulator: a 1,024-token system prompt shared by every
// request cuts TTFT p50 by more than 30% against the same workload with 1,024 tokens of each
// request's own (the same lengths). Qwen2.5-7B on an L4 with 256-token prompts: prefill of
// 1,280 tokens is nearly all of a TTFT there, and one request at a time keeps decode out of it.
func TestSharedPrefixCutsTTFTOnTheSimulator(t *testing.T) {
	url := startSim(t, "Qwen/Qwen2.5-7B-Instruct", "--sim-gpu", "L4", "--max-model-len", "4096", "--sim-speed", "10")
	cfg := sessionConfig(url)
	cfg.Concurrency = 1
	cfg.Short = loadgen.RandomConfig{InputLen: 256, OutputLen: 2}
	s, err := loadgen.NewSession(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, nil) }()
	defer func() {
		cancel()
		<-done
	}()
	const want = 12
	// epoch waits until epoch n has want requests and returns its statistics.
	epoch := func(n int) loadgen.EpochStats {
		var got loadgen.EpochStats
		require.Eventually(t, func() bool {
			for _, e := range s.Epochs() {
				if e.Epoch == n && e.Requests >= want {
					got = e
					return true
				}
			}
			return false
		}, 60*time.Second, 5*time.Millisecond)
		return got
	}
	_, off := s.SharedPrefix(false)
	without := epoch(off)
	_, on := s.SharedPrefix(true)
	with := epoch(on)
	assert.Zero(t, without.Failures)
	assert.Zero(t, with.Failures)
	// The same lengths: only what the cache can share differs.
	assert.InDelta(t, float64(without.PromptTokens)/float64(without.Requests), float64(with.PromptTokens)/float64(with.Requests), 2)
	assert.Greater(t, float64(without.PromptTokens)/float64(without.Requests), 1024.0)
	cut := 1 - float64(with.TTFT.P50)/float64(without.TTFT.P50)
	t.Logf("TTFT p50 prefix off %v, on %v: %.0f%% less", without.TTFT.P50, with.TTFT.P50, 100*cut)
	assert.Greater(t, cut, 0.30, "a shared 1,024-token prefix cuts TTFT p50 by more than 30%%")
	assert.True(t, strings.HasSuffix(s.WorkloadName(), "prefix on"))
}

// A session given a trace replays it, looped: the dashboard's load runs past the trace's end.
func TestSessionReplaysATraceLooped(t *testing.T) {
	url := startSim(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-speed", "20", "--max-model-len", "4096")
	d, err := loadgen.OpenDataset(loadgen.DatasetConfig{Name: loadgen.DatasetMooncake, Path: "../testdata/mooncake-sample.jsonl",
		Trace: loadgen.TraceDatasetConfig{Speedup: 50}})
	require.NoError(t, err)
	cfg := sessionConfig(url)
	cfg.Dataset = d
	s, err := loadgen.NewSession(cfg)
	require.NoError(t, err)
	assert.Equal(t, "mooncake trace", s.WorkloadName())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, nil) }()
	require.Eventually(t, func() bool { return s.Stats().Finished >= 25 }, 30*time.Second, 5*time.Millisecond, "two passes and more of a 10-request trace")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Zero(t, s.Epochs()[0].Failures)
}

// A session given conversations plays them with its concurrency as the conversations under way.
func TestSessionPlaysConversations(t *testing.T) {
	url := startSim(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-speed", "20")
	d, err := loadgen.OpenDataset(loadgen.DatasetConfig{Name: loadgen.DatasetRandom, Random: loadgen.RandomConfig{InputLen: 32, OutputLen: 4},
		MultiTurn: loadgen.MultiTurnConfig{On: true, Turns: 3, InputLen: 32, OutputLen: 4, Count: 4}})
	require.NoError(t, err)
	cfg := sessionConfig(url)
	cfg.Concurrency, cfg.Dataset = 2, d
	s, err := loadgen.NewSession(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Run(context.Background(), nil), "four conversations, then the load ends")
	e := s.Epochs()[0]
	assert.Equal(t, 12, e.Requests)
	assert.Zero(t, e.Failures)
}
