package dashcli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

func TestTuningFlags(t *testing.T) {
	o, err := parseDashboard("--sla", "p99_ttft_ms<=500,p99_tpot_ms<=50", "--sweep-utils", "0.80,0.85", "--export-dir", "out", "--probe-requests", "20")
	require.NoError(t, err)
	assert.Equal(t, "p99_ttft_ms<=500.00, p99_tpot_ms<=50.00", o.deps.SLO.Text(", "))
	assert.Equal(t, []float64{0.80, 0.85}, o.deps.SweepUtils)
	assert.Equal(t, "out", o.deps.ExportDir)
	assert.Equal(t, 20, o.deps.Tune.ProbeRequests)
	for _, bad := range [][]string{{"--sla", "p99_ttft_ms=500"}, {"--sla", "ttft"}, {"--sla", "p99_ttft<=500"}, {"--sla", "p95_ttft_ms<=500"}, {"--sweep-utils", "0.8,1.5"}, {"--sweep-utils", "0"}, {"--probe-requests", "0"}} {
		_, err := parseDashboard(bad...)
		assert.Error(t, err, "%v", bad)
	}
	_, err = parseDashboard("--sla", "p99_ttft<=500")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"p99_ttft" is not a result key`)
	assert.Contains(t, err.Error(), "p99_ttft_ms", "the valid names are listed")
}

// A supervised vllmtop sim gets the simulator's capacity model at any utilisation; vllm serve
// (whose GPU the dashboard does not know) gets none, and the view estimates instead.
func TestCapacityModelForSimulatorCommands(t *testing.T) {
	d, err := parseDashboard("--random-input-len", "384", "--", "vllmtop", "sim", "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4")
	require.NoError(t, err)
	require.NoError(t, d.server(nil, func(string, ...any) {}))
	defer d.sup.Close()
	d.wireCapacity()
	assert.Equal(t, capacity.Workload{PromptTokens: 384, OutputTokens: 128}, d.deps.Workloads[0])
	require.NotNil(t, d.deps.Capacity)
	assert.Equal(t, 256, d.deps.MaxNumSeqs, "the simulator's default on an L4: the verdicts know the limit")
	assert.Equal(t, 2048, d.deps.MaxNumBatchedTokens)
	lo, err := d.deps.Capacity.Plan(0.5, d.deps.Workloads[0])
	require.NoError(t, err)
	hi, err := d.deps.Capacity.Plan(0.9, d.deps.Workloads[0])
	require.NoError(t, err)
	assert.Equal(t, "L4", hi.GPU)
	assert.Greater(t, hi.Columns[0].KVTokens, lo.Columns[0].KVTokens, "more memory, more KV cache")
	assert.Equal(t, 0.9, hi.Util)
	tok, conc, err := d.deps.Capacity.At(0.9)
	require.NoError(t, err)
	assert.Equal(t, hi.Columns[0].KVTokens, tok, "the what-if by utilisation agrees with the plan")
	assert.Equal(t, hi.Columns[0].MaxConcAtML, conc)

	// Behind env, the simulator's flags are read where they begin.
	d, err = parseDashboard("--", "env", "A=1", "vllmtop", "sim", "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4")
	require.NoError(t, err)
	require.NoError(t, d.server(nil, func(string, ...any) {}))
	defer d.sup.Close()
	d.wireCapacity()
	require.NotNil(t, d.deps.Capacity)
	wrapped, err := d.deps.Capacity.Plan(0.9, d.deps.Workloads[0])
	require.NoError(t, err)
	assert.Equal(t, hi.Columns[0].KVTokens, wrapped.Columns[0].KVTokens)

	d, err = parseDashboard("--", "vllm", "serve", "m")
	require.NoError(t, err)
	require.NoError(t, d.server(nil, func(string, ...any) {}))
	defer d.sup.Close()
	d.wireCapacity()
	assert.Nil(t, d.deps.Capacity)
}
