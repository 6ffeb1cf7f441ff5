package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// A W sweep whose knees all had the KV cache far from full says utilisation did not matter,
// and what set the knee; the Curves view says it under each setting.
func TestUtilSweepSaysWhenUtilisationIsNotTheLimit(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 65}}
		d.SweepUtils = []float64{0.85, 0.90}
	})
	r.press("W")
	r.press("y")
	r.runUntilIdle(300)
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 2)
	for _, cv := range tn.curves {
		require.Positive(t, cv.Knee)
		g, ok := cv.Seen[cv.Knee]
		require.True(t, ok, "%s: the knee's probe noted what the server showed", cv.Name)
		assert.True(t, g.KVSeen)
		assert.Less(t, g.KV, 0.5, "the fake server's KV cache is at most 39%% full")
	}
	assert.Contains(t, r.m.c.s.status, "utilisation is not the limit here; the knee is set by")
	r.m.show(curvesTab)
	r.m.Update(refreshMsg{second: true})
	out := strings.Join(strings.Fields(ansi.Strip(r.view())), " ")
	assert.Contains(t, out, "full at the knee: utilisation is not the limit here; the knee is set by")
}

func TestNotTheLimitNamesTheBindingLimitAndStaysQuietNearFull(t *testing.T) {
	slo := "p99_ttft_ms<=500"
	cv := tuneCurve{Name: "util 0.90", Knee: 16, Seen: map[int]probeSeen{16: {KV: 0.03, KVSeen: true, Limit: diagnose.LimitBatched}}}
	assert.Equal(t, "KV 3% full at the knee: utilisation is not the limit here; the knee is set by "+diagnose.LimitBatched, cv.notTheLimit(slo))
	cv.Seen[16] = probeSeen{KV: 0.03, KVSeen: true}
	assert.Contains(t, cv.notTheLimit(slo), "the knee is set by the SLO (p99_ttft_ms<=500)", "no verdict fired: the SLO set it")
	cv.Seen[16] = probeSeen{KV: 0.93, KVSeen: true, Limit: diagnose.LimitKV}
	assert.Empty(t, cv.notTheLimit(slo), "a full cache: utilisation may well matter")
	cv.Seen[16] = probeSeen{}
	assert.Empty(t, cv.notTheLimit(slo), "KV unknown: nothing said")
	tn := &tuneState{slo: loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}, touched: []int{0, 1},
		curves: []tuneCurve{
			{Knee: 8, Seen: map[int]probeSeen{8: {KV: 0.05, KVSeen: true, Limit: "prefill compute"}}},
			{Knee: 12, Seen: map[int]probeSeen{12: {KV: 0.9, KVSeen: true}}},
		}}
	assert.Empty(t, sweepNotTheLimit(tn), "one setting's knee was near full")
	tn.curves[1].Seen[12] = probeSeen{KV: 0.1, KVSeen: true, Limit: "prefill compute"}
	assert.Equal(t, "KV at most 10% full at the knees: utilisation is not the limit here; the knee is set by prefill compute", sweepNotTheLimit(tn))
}
