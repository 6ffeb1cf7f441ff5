package vlog

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
)

// index is the position of the first line containing sub, or -1.
func index(ls []string, sub string) int {
	for i, l := range ls {
		if strings.Contains(l, sub) {
			return i
		}
	}
	return -1
}

// TestGraphLinesOnTheV2RunnerByVersion: from 0.29 the V2 runner's estimate comes out of the KV
// budget, so the worker notes it after "Available KV cache memory" and compares the captured
// pool with it; 0.25 to 0.28 reserve nothing and print neither.
func TestGraphLinesOnTheV2RunnerByVersion(t *testing.T) {
	ls := startupLines(t, sim.Config{Model: "Qwen/Qwen3-8B", GPU: "H100-SXM-80GB", MaxModelLen: 8192, VLLMVersion: "0.33.0"})
	require.Len(t, grep(ls, "Using V2 Model Runner"), 1)
	assert.Empty(t, grep(ls, "Estimated CUDA graph memory"), "the V1 runner's line")
	avail, note := index(ls, "Available KV cache memory: "), index(ls, "CUDA graph memory profiling is enabled (default since v0.21.0).")
	require.GreaterOrEqual(t, avail, 0)
	assert.Equal(t, avail+1, note, "the note follows the available memory, as determine_available_memory logs them")
	assert.Contains(t, ls[note], "The current --gpu-memory-utilization=0.9200 is equivalent to --gpu-memory-utilization=0.91")
	capture, pool := index(ls, "Graph capturing finished in "), index(ls, "CUDA graph pool memory: ")
	require.GreaterOrEqual(t, capture, 0)
	assert.Equal(t, capture+1, pool)
	assert.Regexp(t, `\[model_runner\.py:\d+\] Graph capturing finished in \d+ secs, took 0\.44 GiB$`, ls[capture])
	assert.Regexp(t, `\[gpu_worker\.py:\d+\] CUDA graph pool memory: 0\.44 GiB \(actual\), 0\.44 GiB \(estimated\), difference: 0\.0 GiB \(0\.0%\)\.$`, ls[pool])

	old := startupLines(t, sim.Config{Model: "Qwen/Qwen3-8B", GPU: "H100-SXM-80GB", MaxModelLen: 8192, VLLMVersion: "0.28.0"})
	require.Len(t, grep(old, "Using V2 Model Runner"), 1)
	assert.Empty(t, grep(old, "CUDA graph memory profiling"), "0.28's V2 runner estimates 0")
	assert.Empty(t, grep(old, "CUDA graph pool memory"))
	assert.Len(t, grep(old, "Graph capturing finished in "), 1, "the graphs are still captured, above the budget")
}

// TestGraphLinesOnTheV1Runner: the MoE model of 0.28 runs the V1 runner, which logs its own
// estimate, the note and the comparison; at 0.33 it runs the V2 runner.
func TestGraphLinesOnTheV1Runner(t *testing.T) {
	ls := startupLines(t, sim.Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H100-SXM-80GB", MaxModelLen: 8192, VLLMVersion: "0.28.0"})
	assert.Empty(t, grep(ls, "Using V2 Model Runner"))
	assert.Len(t, grep(ls, "Estimated CUDA graph memory: "), 1)
	assert.Len(t, grep(ls, "CUDA graph memory profiling is enabled"), 1)
	assert.Len(t, grep(ls, "CUDA graph pool memory: "), 1)
	assert.Regexp(t, `\[gpu_model_runner\.py:\d+\] Graph capturing finished`, grep(ls, "Graph capturing finished")[0])

	now := startupLines(t, sim.Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H100-SXM-80GB", MaxModelLen: 8192})
	assert.Len(t, grep(now, "Using V2 Model Runner"), 1, "every model runs the V2 runner from 0.29 (PR #53183)")
	assert.Len(t, grep(now, "CUDA graph pool memory: "), 1)
}

// TestEnforceEagerCapturesNoGraphs: --enforce-eager shows in the engine config and prints no
// graph lines at all.
func TestEnforceEagerCapturesNoGraphs(t *testing.T) {
	ls := startupLines(t, sim.Config{Model: "Qwen/Qwen3-8B", GPU: "H100-SXM-80GB", MaxModelLen: 8192, EnforceEager: true})
	assert.Len(t, grep(ls, "enforce_eager=True, "), 1)
	assert.Empty(t, grep(ls, "Graph capturing finished"))
	assert.Empty(t, grep(ls, "CUDA graph"))
	graphs := startupLines(t, sim.Config{Model: "Qwen/Qwen3-8B", GPU: "H100-SXM-80GB", MaxModelLen: 8192})
	assert.Len(t, grep(graphs, "enforce_eager=False, "), 1)
}
