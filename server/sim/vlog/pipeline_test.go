package vlog

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
)

// TestPipelineStartupLines: three stages of a 28-layer model split 9,10,9, which every stage
// notes; each stage reports its own KV budget; the cache lines come once, and before 0.27 once
// per worker.
func TestPipelineStartupLines(t *testing.T) {
	ls := startupLines(t, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", PipelineParallelSize: 3, TensorParallelSize: 2})
	uneven := grep(ls, "Hidden layers were unevenly partitioned: [9,10,9]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment variable")
	require.Len(t, uneven, 3)
	assert.Contains(t, uneven[2], "(Worker_PP2_TP0 pid=")
	avail := grep(ls, "Available KV cache memory: ")
	require.Len(t, avail, 3)
	for i, w := range []string{"(Worker_PP0_TP0 pid=", "(Worker_PP1_TP0 pid=", "(Worker_PP2_TP0 pid="} {
		assert.Contains(t, avail[i], w)
	}
	assert.Len(t, grep(ls, "GPU KV cache size: "), 1, "one line once the scheduler's configuration is resolved")
	old := startupLines(t, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", PipelineParallelSize: 3, TensorParallelSize: 2, VLLMVersion: "0.26.0"})
	assert.Len(t, grep(old, "GPU KV cache size: "), 6, "before 0.27, once per worker: world size 2 x 3")
	assert.Len(t, grep(ls, "pipeline_parallel_size=3, "), 1)
	s, err := sim.Resolve(sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", PipelineParallelSize: 3, TensorParallelSize: 2}, nil)
	require.NoError(t, err)
	loading := grep(ls, "Model loading took ")
	require.Len(t, loading, 1)
	assert.Contains(t, loading[0], "(Worker_PP0_TP0 pid=")
	assert.Contains(t, loading[0], "took "+sim.FormatGiB(s.Capacity.Stages[0].WeightsBytes)+" GiB", "the first stage's own weights")

	even := startupLines(t, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", PipelineParallelSize: 3, PPLayerPartition: "10,9,9"})
	assert.Empty(t, grep(even, "unevenly"), "a split the user set is not noted")
}
