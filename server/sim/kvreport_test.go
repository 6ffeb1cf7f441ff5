package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQwen35TokensLineV019: vLLM 0.19.0's two KV lines for the catalogue's Qwen3.5-27B with the
// settings of vllm#40691 (max-model-len 32768, 16 sequences, 16384 batched tokens). The log gives
// "GPU KV cache size: 290,864 tokens" and "Maximum concurrency ... 33.04x". With the layout's block
// of 784 tokens, 4 groups (1 full, 3 Gated-DeltaNet) and 42 + 3 blocks a request, one pool size,
// 1487 blocks, gives both: 1487 // 4 x 784 and 1487 / 45. The layout and the 0.19 token rule
// are vLLM's; what the simulator can miss on that case is the available memory alone.
func TestQwen35TokensLineV019(t *testing.T) {
	s, err := Resolve(Config{Model: "Qwen/Qwen3.5-27B", GPU: "H20-141GB", VLLMVersion: "0.19.0",
		MaxModelLen: 32768, MaxNumSeqs: 16, MaxNumBatchedTokens: 16384}, nil)
	require.NoError(t, err)
	l := s.Capacity.Layout
	require.Equal(t, 784, l.BlockSize)
	require.Equal(t, 4, l.NumGroups())
	require.Equal(t, 45, l.BlocksPerRequest(32768))

	const poolBlocks = 1487
	v := MustVersion("0.19.0")
	blocks, conc, tokens := KVCapacity(l, poolBlocks*l.BlockBytes(), 32768, v)
	assert.Equal(t, poolBlocks, blocks)
	assert.Equal(t, 290864, tokens, "blocks // groups x block size, as 0.19 logs it")
	assert.Equal(t, "33.04", fmtFloat2(conc))
	// Neither neighbour of the pool reproduces both lines.
	for _, n := range []int64{poolBlocks - 1, poolBlocks + 1} {
		_, c, tok := KVCapacity(l, n*l.BlockBytes(), 32768, v)
		assert.False(t, tok == 290864 && fmtFloat2(c) == "33.04", "pool of %d blocks", n)
	}
	// From 0.21 the same pool logs int(concurrency x max_model_len) instead.
	_, conc21, tokens21 := KVCapacity(l, poolBlocks*l.BlockBytes(), 32768, MustVersion("0.21.0"))
	assert.Equal(t, int(conc21*32768), tokens21)
	assert.Equal(t, 1082800, tokens21, "int(1487 / 45 x 32768)")
}
