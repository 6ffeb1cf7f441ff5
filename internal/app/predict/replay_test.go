package predict_test

import (
	"context"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/predict"
	"github.com/vllmtop/vllmtop/loadgen"
)

// collect is a sink that keeps every result.
type collect struct {
	mu  sync.Mutex
	all []loadgen.Result
}

func (c *collect) add(r loadgen.Result) {
	c.mu.Lock()
	c.all = append(c.all, r)
	c.mu.Unlock()
}

func (c *collect) sorted() []loadgen.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]loadgen.Result(nil), c.all...)
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// readEntries is the trace's entries as the reader gives them.
func readEntries(t *testing.T, path string) []loadgen.TraceEntry {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := loadgen.NewMooncakeReader(f, path, loadgen.MooncakeOptions{})
	var out []loadgen.TraceEntry
	for {
		e, err := r.Next()
		if err != nil {
			break
		}
		out = append(out, e)
	}
	return out
}

// expectedHits is the prefix-cache hit, in tokens, each request of a trace sent one at a time
// must find, computed from the trace alone: the longest prefix it shares with an earlier
// prompt (equal leading hash ids give equal 512-token blocks; a shorter prompt's last block is
// the start of a longer one's), in whole engine blocks of the earlier prompt, less the last
// prompt token, which vLLM always computes. The simulator's completions prompts are the
// words, one token each, with nothing added.
func expectedHits(entries []loadgen.TraceEntry, traceBlock, engineBlock int) []int {
	hits := make([]int, len(entries))
	for i, e := range entries {
		best := 0
		for _, prev := range entries[:i] {
			shared := 0
			for k := 0; k < len(e.HashIDs) && k < len(prev.HashIDs) && e.HashIDs[k] == prev.HashIDs[k]; k++ {
				shared = k + 1
			}
			common := min(shared*traceBlock, e.InputLen, prev.InputLen)
			best = max(best, min(common, prev.InputLen/engineBlock*engineBlock))
		}
		hits[i] = min(best, e.InputLen-1) / engineBlock * engineBlock
	}
	return hits
}

// A Mooncake trace replayed on the virtual clock through the bench path: each request is sent
// at its timestamp exactly (the virtual clock has no lateness: the bound is 0), with the
// trace's lengths, and the prefix cache serves what the hash ids share.
func TestTraceReplayOnTheVirtualClock(t *testing.T) {
	const path = "../../../testdata/mooncake-sample.jsonl"
	entries := readEntries(t, path)
	require.Len(t, entries, 10)
	for _, speedup := range []float64{1, 0.01} {
		target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--max-model-len", "8192"), loadgen.EndpointCompletions)
		d, err := loadgen.OpenDataset(loadgen.DatasetConfig{Name: loadgen.DatasetMooncake, Path: path, Seed: 3,
			Trace: loadgen.TraceDatasetConfig{Speedup: speedup}})
		require.NoError(t, err)
		trace, conv, how, err := d.Replay(context.Background(), target)
		require.NoError(t, err)
		require.NotNil(t, trace)
		require.Nil(t, conv)
		assert.Contains(t, how, "10 requests at their timestamps")
		var got collect
		origin := target.Now()
		before := target.Counters()
		run, err := target.Bench(context.Background(), loadgen.BenchConfig{Trace: trace, Sinks: []func(loadgen.Result){got.add}})
		require.NoError(t, err)
		defer run.Tally.Close()
		results := got.sorted()
		require.Len(t, results, len(entries))
		for i, r := range results {
			e := entries[i]
			want := origin.Add(time.Duration(float64(e.Timestamp-entries[0].Timestamp) / speedup))
			assert.True(t, r.OK(), "%d: %s", i, r.ErrorMessage)
			assert.Equal(t, want, r.Intended, "request %d is due at its timestamp", i)
			assert.Equal(t, want, r.Start, "request %d is sent at its timestamp", i)
			assert.Equal(t, e.InputLen, r.PromptTokens, "request %d: the trace's input length", i)
			assert.Equal(t, e.OutputLen, r.OutputTokens, "request %d: the trace's output length (ignore_eos)", i)
		}
		after := target.Counters()
		if speedup < 1 {
			// 100 times slower: every request ends before the next, so the hits are exact.
			want := 0
			for _, h := range expectedHits(entries, loadgen.DefaultTraceBlockSize, 16) {
				want += h
			}
			assert.Positive(t, want)
			assert.Equal(t, int64(want), after.PrefixHits-before.PrefixHits, "prefix hits are the hash ids' sharing")
		}
	}
}

// With a cap of one request in flight, arrivals that find it full wait on the client, keep
// their intended time, and the wait counts in their TTFT.
func TestTraceReplayCapWaitsAndCounts(t *testing.T) {
	const path = "../../../testdata/mooncake-sample.jsonl"
	target := predict.New(plan(t, "Qwen/Qwen2.5-7B-Instruct", "--sim-gpu", "L4", "--max-model-len", "8192"), loadgen.EndpointCompletions)
	d, err := loadgen.OpenDataset(loadgen.DatasetConfig{Name: loadgen.DatasetMooncake, Path: path})
	require.NoError(t, err)
	trace, _, _, err := d.Replay(context.Background(), target)
	require.NoError(t, err)
	var got collect
	run, err := target.Bench(context.Background(), loadgen.BenchConfig{Trace: trace, MaxConcurrency: 1, Sinks: []func(loadgen.Result){got.add}})
	require.NoError(t, err)
	defer run.Tally.Close()
	results := got.sorted()
	require.Len(t, results, 10)
	second := results[1] // due at 0 with the first: it waits for it
	assert.Positive(t, second.QueueDelay())
	assert.Equal(t, results[0].Start.Add(results[0].E2EL), second.Start, "sent when the first ended")
	assert.Greater(t, second.TTFT, second.QueueDelay(), "TTFT counts from the intended time")
	s := run.Tally.Summary(run.Duration, []float64{99})
	assert.Positive(t, s.Queue.Mean)
	assert.GreaterOrEqual(t, s.Queue.Percentiles[99], float64(second.QueueDelay())/1e6, "the longest wait is in the run's queue statistics")
}
