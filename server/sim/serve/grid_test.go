package serve

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

// TestCatalogueGrid runs --print-capacity's report for every catalogue model on every
// catalogue GPU: with the defaults (a start has KV tokens, a refusal says why, in one line)
// and at a 4096-token context, where the KV cache must grow with --gpu-memory-utilization and
// tensor parallelism must not shrink a GPU's KV memory. -short takes every fifth pair.
func TestCatalogueGrid(t *testing.T) {
	p := sim.BuiltinProfiles()
	w := capacity.Workload{PromptTokens: 1024, OutputTokens: 128}
	pairs, started, refused := 0, 0, 0
	for i, m := range p.Models {
		for j, g := range p.GPUs {
			if testing.Short() && (i+j)%5 != 0 {
				continue
			}
			pairs++
			name := m.Name + " on " + g.Name
			r, err := CapacityReport([]string{m.Name, "--sim-gpu", g.Name}, noEnv, w)
			var invalid *sim.ValidationError
			if errors.As(err, &invalid) {
				// vLLM's config check refuses the pair (a quantization the card cannot run):
				// a refusal with its reason, in one line.
				refused++
				assert.NotContains(t, invalid.Short(), "\n", name)
				assert.NotEmpty(t, invalid.Short(), name)
				continue
			}
			require.NoError(t, err, name)
			checkColumns(t, name, r)
			maxLen := strconv.Itoa(min(4096, m.MaxPositionEmbeddings))
			args := []string{m.Name, "--sim-gpu", g.Name, "--max-model-len", maxLen}
			if checkUtilisation(t, name, args) {
				started++
				checkTensorParallel(t, name, args, m)
			}
		}
	}
	t.Logf("%d models x %d GPUs: %d pairs checked, %d refused by the config check, %d start at a 4096-token context with util 0.9",
		len(p.Models), len(p.GPUs), pairs, refused, started)
	assert.Greater(t, started, pairs/2, "most of the catalogue starts somewhere")
}

// checkColumns: every column starts with KV tokens and a fitting request, or refuses with a
// one-line reason.
func checkColumns(t *testing.T, name string, r capacity.Report) {
	t.Helper()
	require.NotEmpty(t, r.Columns, name)
	for _, c := range r.Columns {
		where := name + ", " + c.Name
		if c.Refused != "" {
			assert.NotContains(t, c.Refused, "\n", where)
			continue
		}
		assert.Positive(t, c.KVTokens, where)
		assert.Positive(t, c.Limits.NumBlocks, where)
		assert.Positive(t, c.Memory.WeightsGiB, where)
		assert.LessOrEqual(t, c.Memory.WeightsGiB+c.Memory.KVGiB, c.Memory.RequestedGiB+1e-6, where)
	}
}

// checkUtilisation: the KV cache grows with the utilisation, and once the server starts it
// keeps starting; it reports whether it starts at 0.9.
func checkUtilisation(t *testing.T, name string, args []string) bool {
	t.Helper()
	cm, err := CapacityModel(args, noEnv)
	require.NoError(t, err, name)
	last, startedBefore := -1, false
	for _, util := range []float64{0.5, 0.7, 0.9, 0.95} {
		tokens, _, err := cm.At(util)
		where := fmt.Sprintf("%s at util %g", name, util)
		if err != nil {
			assert.False(t, startedBefore, "%s: started at a lower utilisation, now %v", where, err)
			assert.NotEmpty(t, strings.TrimSpace(err.Error()), where)
			continue
		}
		startedBefore = true
		assert.Positive(t, tokens, where)
		assert.GreaterOrEqual(t, tokens, last, where)
		last = tokens
		if util == 0.9 {
			return true
		}
	}
	return false
}

// checkTensorParallel: at TP 2 a GPU holds half the weights and at most the same KV per
// token, so its KV memory and the KV tokens do not drop.
func checkTensorParallel(t *testing.T, name string, args []string, m sim.Model) {
	t.Helper()
	if m.NumAttentionHeads%2 != 0 || (m.IsHybrid() && (m.LinearNumKeyHeads%2 != 0 || m.LinearNumValueHeads%2 != 0)) {
		return
	}
	w := capacity.Workload{PromptTokens: 1024, OutputTokens: 128}
	tp1, err := CapacityReport(append(args, "--gpu-memory-utilization", "0.9"), noEnv, w)
	require.NoError(t, err, name)
	tp2, err := CapacityReport(append(args, "--gpu-memory-utilization", "0.9", "--tensor-parallel-size", "2"), noEnv, w)
	require.NoError(t, err, name)
	a, b := tp1.Columns[0], tp2.Columns[0]
	if a.Refused != "" {
		return
	}
	require.Empty(t, b.Refused, "%s starts at TP 1, so at TP 2", name)
	// A TP rank also holds NCCL buffers (more non-torch memory), which a tiny model's halved
	// weights do not pay back.
	nccl := b.Memory.NonTorchGiB - a.Memory.NonTorchGiB
	assert.GreaterOrEqual(t, b.Memory.KVGiB+nccl+1e-9, a.Memory.KVGiB, "%s: KV GiB a GPU at TP 2, less the rank's NCCL buffers", name)
	// Where the KV heads are replicated (one KV head), those buffers can cost more tokens than
	// the weights give back: compare with them returned to the cache.
	tokens := float64(b.KVTokens) * (b.Memory.KVGiB + nccl) / b.Memory.KVGiB
	assert.GreaterOrEqual(t, tokens+1, float64(a.KVTokens), "%s: KV tokens at TP 2, less the rank's NCCL buffers", name)
}
