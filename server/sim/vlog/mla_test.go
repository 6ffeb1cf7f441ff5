package vlog

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
)

// TestMLAForcedBlockSizeLine: an MLA model on a Hopper card prints the API server's "Forcing
// kv cache block size" line of the FlashMLA backend; on an A100 (Triton MLA) it does not.
func TestMLAForcedBlockSizeLine(t *testing.T) {
	ls := startupLines(t, sim.Config{Model: "deepseek-ai/DeepSeek-V2-Lite", GPU: "H100", MaxModelLen: 32768, VLLMVersion: "0.10.0"})
	forced := grep(ls, "Forcing kv cache block size")
	require.Len(t, forced, 1)
	assert.True(t, strings.HasSuffix(forced[0], "[cuda.py:210] Forcing kv cache block size to 64 for FlashMLA backend."), forced[0])
	assert.Contains(t, forced[0], "(APIServer pid=")

	ls = startupLines(t, sim.Config{Model: "deepseek-ai/DeepSeek-V2-Lite", GPU: "A100-SXM-80GB", MaxModelLen: 32768, VLLMVersion: "0.10.0"})
	assert.Empty(t, grep(ls, "Forcing kv cache block size"))
}
