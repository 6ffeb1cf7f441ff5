package serve

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/vlog"
)

// --max-num-batched-tokens and --kv-cache-memory-bytes take vLLM's human-readable integers;
// --kv-cache-memory, the spelling of vLLM's own advice, is the same flag.
func TestHumanReadableIntFlags(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		batched        int
		kvBytes        int64
		err, nonDefVal string
	}{
		{args: []string{"--max-num-batched-tokens", "8k"}, batched: 8000},
		{args: []string{"--max-num-batched-tokens=8K"}, batched: 8192},
		{args: []string{"--max-num-batched-tokens", "16384"}, batched: 16384},
		{args: []string{"--kv-cache-memory-bytes", "20G"}, kvBytes: 20 << 30},
		{args: []string{"--kv-cache-memory-bytes", "25.6g"}, kvBytes: 25_600_000_000},
		{args: []string{"--kv-cache-memory=21474836480"}, kvBytes: 21474836480},
		{args: []string{"--kv-cache-memory", "1T", "--sim-gpu", "H200"}, err: "--kv-cache-memory-bytes must be between 0 and the GPU's"},
		{args: []string{"--kv-cache-memory-bytes", "1.5G"}, err: "argument --kv-cache-memory-bytes: Decimals are not allowed with binary suffixes like G. Did you mean to use 1.5g instead?"},
		{args: []string{"--max-num-batched-tokens", "lots"}, err: "argument --max-num-batched-tokens: invalid human_readable_int value: 'lots'"},
		{args: []string{"--kv-cache-memory-bytes", "-5"}, err: "--kv-cache-memory-bytes must be between 0"},
		{args: []string{"--kv-cache-memory-bytes="}, err: "argument --kv-cache-memory-bytes: invalid human_readable_int value: ''"},
	} {
		o, err := ParseArgs(tc.args, noEnv)
		if err == nil {
			_, err = sim.Resolve(o.Engine, nil)
		}
		if tc.err != "" {
			require.Error(t, err, tc.args)
			assert.Contains(t, err.Error(), tc.err, tc.args)
			continue
		}
		require.NoError(t, err, tc.args)
		if tc.batched > 0 {
			assert.Equal(t, tc.batched, o.Engine.MaxNumBatchedTokens, tc.args)
			assert.Contains(t, o.NonDefault, NamedValue{"max_num_batched_tokens", tc.batched}, "logged as the parsed int")
		}
		assert.Equal(t, tc.kvBytes, o.Engine.KVCacheMemoryBytes, tc.args)
	}
}

// A pinned cache is the bytes given, whatever the utilisation leaves, with no CUDA-graph
// estimate taken out; one that does not fit beside the weights is CUDA's out-of-memory error.
func TestPinnedKVCache(t *testing.T) {
	base := sim.Config{Model: "Qwen/Qwen3-8B", GPU: "H100-SXM-80GB", GPUMemoryUtilization: 0.5}
	profiled, err := sim.Resolve(base, nil)
	require.NoError(t, err)
	pinned := base
	pinned.KVCacheMemoryBytes = 50 << 30
	s, err := sim.Resolve(pinned, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(50<<30), s.Capacity.AvailableKVBytes)
	assert.True(t, s.Capacity.KVPinned)
	assert.Greater(t, s.Capacity.KVCacheTokens, 2*profiled.Capacity.KVCacheTokens, "50 GiB is more than twice what util 0.5 leaves")
	assert.False(t, s.CUDAGraphProfiled())
	assert.True(t, s.GraphsOutsideBudget())

	pinned.KVCacheMemoryBytes = 70 << 30 // with 15 GiB of weights on a 79 GiB card
	_, err = sim.Resolve(pinned, nil)
	var se *sim.StartupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, sim.KVCacheOOM, se.Kind)
	assert.Regexp(t, `^CUDA out of memory\. Tried to allocate [\d.]+ GiB\. GPU 0 has a total capacity of 79\.19 GiB of which [\d.]+ (?:GiB|MiB) is free\.`, se.Message)
}

// --num-gpu-blocks-override sizes the cache from the blocks alone, beyond the utilisation
// too; blocks that do not fit beside the weights fail as the model runner allocates them, and
// the log shows the profiled budget, the override and torch's error.
func TestBlocksOverrideBeyondTheCard(t *testing.T) {
	base := sim.Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", MaxModelLen: 4096}
	fits := base
	fits.NumGPUBlocksOverride = 2500 // above the 2,127 the profile leaves, within the card
	s, err := sim.Resolve(fits, nil)
	require.NoError(t, err)
	assert.Equal(t, 2500, s.Capacity.NumGPUBlocks)

	for _, blocks := range []int{10000, math.MaxInt} {
		over := base
		over.NumGPUBlocksOverride = blocks
		_, err = sim.Resolve(over, nil)
		var se *sim.StartupError
		require.ErrorAs(t, err, &se, blocks)
		assert.Equal(t, sim.KVCacheOOM, se.Kind)
		assert.Regexp(t, `^CUDA out of memory\. Tried to allocate [\d.]+ (?:GiB|MiB)\. GPU 0 has a total capacity of 22\.03 GiB`, se.Message)

		var out bytes.Buffer
		l := vlog.New(&out, &out, func() time.Time { return time.Unix(0, 0) }, 1, 2)
		l.FailedStartup(se, nil, 0)
		log := out.String()
		assert.Contains(t, log, "Available KV cache memory: 4.16 GiB")
		assert.Contains(t, log, fmt.Sprintf("Overriding num_gpu_blocks=2127 with num_gpu_blocks_override=%d", blocks))
		if blocks == 10000 {
			assert.Contains(t, log, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 625.00 MiB", "one layer's tensor")
		}
	}
}
