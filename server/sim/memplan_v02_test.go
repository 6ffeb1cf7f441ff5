package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func resolveV02(t *testing.T, model string, tp int, version string) *Setup {
	t.Helper()
	s, err := Resolve(Config{Model: model, GPU: "A100-SXM-80GB", TensorParallelSize: tp, VLLMVersion: version}, nil)
	require.NoError(t, err)
	return s
}

// TestV02AllocatedPeakBeforeFreeMemory: before vllm#2031 (0.2.5) the cache was total x
// utilisation less torch's allocated peak, nothing else. The PR's thread gives the blocks of that
// rule on A100-80GB cards with benchmark_throughput.py's defaults: 7449 for Llama-2-7B at TP 1,
// 31615 for Llama-2-70B at TP 4.
func TestV02AllocatedPeakBeforeFreeMemory(t *testing.T) {
	for _, c := range []struct {
		model  string
		tp     int
		blocks int
	}{{"meta-llama/Llama-2-7b-hf", 1, 7449}, {"meta-llama/Llama-2-70b-hf", 4, 31615}} {
		s := resolveV02(t, c.model, c.tp, "0.2.4")
		assert.Zero(t, s.Capacity.NonTorchBytes, c.model)
		within(t, float64(c.blocks), float64(s.Capacity.NumGPUBlocks), 0.01, c.model+" blocks before vllm#2031")
	}
}

// TestV025HeldAllReduceBuffers: from 0.2.5 the free-memory reading counts what the allocator
// holds, and until 0.2.6 (vllm#2151) that includes every all-reduce output of the profile pass at
// tensor parallelism: for Llama-2-70B, 80 layers x 2 + the embedding's, each 4096 batched tokens x
// 8192 hidden in fp16, 10.06 GiB a rank.
func TestV025HeldAllReduceBuffers(t *testing.T) {
	s := resolveV02(t, "meta-llama/Llama-2-70b-hf", 4, "0.2.5")
	require.Equal(t, 4096, s.MaxNumBatchedTokens)
	want := float64(161 * 4096 * 8192 * 2)
	assert.Equal(t, want, heldAllReduceBytes(s))

	after := resolveV02(t, "meta-llama/Llama-2-70b-hf", 4, "0.2.6")
	assert.Zero(t, heldAllReduceBytes(after), "0.2.6 sets TORCH_NCCL_AVOID_RECORD_STREAMS=1")
	assert.InDelta(t, want, float64(s.Capacity.ActivationBytes-after.Capacity.ActivationBytes), 1,
		"the held buffers are the whole difference between the two releases")
	assert.Less(t, s.Capacity.NumGPUBlocks, after.Capacity.NumGPUBlocks)

	tp1 := resolveV02(t, "meta-llama/Llama-2-7b-hf", 1, "0.2.5")
	assert.Zero(t, heldAllReduceBytes(tp1), "no all-reduce on one GPU")
	assert.Positive(t, tp1.Capacity.NonTorchBytes, "the free-memory reading counts non-torch memory")
}
