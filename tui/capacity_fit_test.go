package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// Attached, the fit is scaled from vllm:cache_config_info and says it is an estimate.
func TestCapacityViewEstimatesWhenAttached(t *testing.T) {
	d := newDriver(t, 120, 40, func(dp *Deps) {
		dp.Mode, dp.RestartDisabled, dp.Supervisor, dp.Capacity = ModeAttach, true, nil, nil
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
		dp.Capacity = &capacity.Model{At: dp.Capacity.At, Plan: simCapacity("meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--max-model-len", "131072")}
	})
	d.second()
	d.m.show("Capacity")
	out := sgr.ReplaceAllString(d.view(), "")
	r, err := d.m.c.deps.Capacity.Plan(0.92, capacity.Workload{PromptTokens: 256, OutputTokens: 128})
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

// After a restart at another utilisation, until the new run logs its KV cache, the view shows
// the last logged figures scaled and says so; the header shows only what the server reports.
func TestCapacityViewScalesTheLogAfterARestart(t *testing.T) {
	d := newDriver(t, 120, 40, func(dp *Deps) { dp.Capacity = nil })
	d.second()
	logged := server.LoggedCapacity(d.td.sup.Status())
	d.td.sup.setStatus(func(st *server.Status) {
		*st = server.Status{State: server.Starting, Run: 2, GPUMemoryUtilization: 0.85, URL: st.URL}
	})
	d.second()
	d.m.setView(tabIndex(t, "Capacity"))
	out := sgr.ReplaceAllString(d.view(), "")
	tok, conc, err := capacity.Scaled(logged, 0.92)(0.85)
	require.NoError(t, err)
	require.Less(t, tok, logged.KVTokens)
	assert.Contains(t, out, "KV cache  (scaled from what the server's log reported; block size from cache_config_info; max-model-len from the log)")
	assert.Contains(t, out, fmt.Sprintf("util 0.85 · %s tokens", commas(tok)))
	assert.Contains(t, out, fmt.Sprintf("max conc %.2fx", conc))
	assert.Contains(t, out, "what-if by --gpu-memory-utilization  (scaled from what the server's log reported)")
	assert.NotContains(t, out, "tok · ", "nothing observed: the server has not reported")
	assert.NotContains(t, strings.Split(out, "\n")[0], "KV ", "the header shows only reported figures")

	d.td.sup.setStatus(func(st *server.Status) {
		st.KVCacheTokens, st.KVCacheGiB, st.ModelGiB, st.MaxConcurrency, st.MaxModelLen = 430000, 50, 14.99, 3.28, 131072
	})
	d.second()
	out = sgr.ReplaceAllString(d.view(), "")
	assert.Contains(t, out, "KV cache  (from the server's log; block size from cache_config_info)")
	assert.Contains(t, out, "util 0.85 · 430,000 tokens")
}

func tabIndex(t *testing.T, name string) int {
	t.Helper()
	for i, tb := range tabs {
		if tb.name == name {
			return i
		}
	}
	t.Fatalf("no %s view", name)
	return -1
}
