package tui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// Attached, the fit is scaled from vllm:cache_config_info and says it is an estimate.
func TestCapacityViewEstimatesWhenAttached(t *testing.T) {
	d := newDriver(t, 120, 40, func(dp *Deps) {
		dp.Mode, dp.RestartDisabled, dp.Supervisor, dp.Capacity, dp.CapacityReport = ModeAttach, true, nil, nil, nil
	})
	d.second()
	d.m.show("Capacity")
	out := sgr.ReplaceAllString(d.view(), "")
	// 29,045 blocks of 16; 256 + 128 tokens are 24 blocks: 1,210 requests.
	assert.Contains(t, out, "384 tok (24 blocks) a request · 1,210 fit in KV · max running 1,210")
	assert.Contains(t, out, "limits first: KV blocks")
	assert.Contains(t, out, "estimate (scaled from vllm:cache_config_info")
	assert.NotContains(t, out, "what-if      ", "no what-if columns without a capacity model")
}

// A setting vLLM would refuse is marked in its column and said in a line.
func TestCapacityViewMarksRefusedSettings(t *testing.T) {
	d := newDriver(t, 200, 60, func(dp *Deps) {
		dp.CapacityReport = simCapacity("meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--max-model-len", "131072")
	})
	d.second()
	d.m.show("Capacity")
	out := sgr.ReplaceAllString(d.view(), "")
	r, err := d.m.c.deps.CapacityReport(0.92, capacity.Workload{PromptTokens: 256, OutputTokens: 128})
	require.NoError(t, err)
	refused := 0
	for _, c := range r.Columns {
		if c.Refused != "" {
			refused++
			assert.Contains(t, out, "REFUSED "+c.Name+": ")
		}
	}
	require.Positive(t, refused, "131,072 tokens do not fit an L4's KV cache as given")
	assert.GreaterOrEqual(t, strings.Count(out, "REFUSED"), 2*refused, "the column and the line")
}
