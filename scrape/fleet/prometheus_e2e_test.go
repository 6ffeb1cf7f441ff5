package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/simtest"
	"github.com/vllmtop/vllmtop/internal/base/exposition"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

// TestPrometheusFleet runs Debian's prometheus scraping three simulated servers under load,
// reads the fleet through the Prometheus source, kills one server and restarts another,
// and checks the rows and the verdicts: values present, DOWN, RESTARTED, admission-bound.
func TestPrometheusFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts prometheus and three simulators; skipped with -short")
	}
	const scrapeEvery = 250 * time.Millisecond
	sim := []string{"Qwen/Qwen3-0.6B", "--sim-speed", "10", "--max-model-len", "4096"}
	// a admits at most two sequences, so most of its load waits with the KV cache nearly empty.
	a := simtest.Start(t, append(sim, "--max-num-seqs", "2")...)
	b := simtest.Start(t, sim...)
	c := simtest.Start(t, sim...)
	// Real captures behind plain servers: two data-parallel engines, SGLang, TGI, and a V0
	// server that names KV use by its old name.
	addr := func(f *fakeServer) string { return strings.TrimPrefix(f.URL, "http://") }
	dp := serve(t, exposition.Set(capture(t, "vllm-metrics-synthetic-multiprocess-dp2.txt"), "vllm:num_requests_waiting", 9, `engine="1"`))
	sgl := serve(t, capture(t, "sglang-v0.4-metrics-llama-3.1-8b-loaded-docs.prom"))
	tgi := serve(t, capture(t, "tgi-metrics-payload.prom"))
	v0 := serve(t, exposition.Set(capture(t, "vllm-v0-0.5-metrics-opt-125m.prom"), "vllm:gpu_cache_usage_perc", 0.37))
	promURL, stopProm := simtest.Prometheus(t, scrapeEvery, a.Addr, b.Addr, c.Addr, addr(dp), addr(sgl), addr(tgi), addr(v0))
	// Sixteen clients on a's two slots keep its queue long even when a slow host (-race)
	// spaces the clients' requests out.
	simtest.Load(t, a.URL, 16, 64, 256)
	for _, s := range []*simtest.Instance{b, c} {
		simtest.Load(t, s.URL, 8, 64, 32)
	}

	p, err := fleet.NewPrometheus(fleet.PrometheusConfig{URL: promURL, Interval: 100 * time.Millisecond, Window: 2 * time.Second,
		RestartHold: 5 * time.Second})
	require.NoError(t, err)
	ctx := context.Background()

	// Until the window holds a few scrapes of all three under load.
	var f fleet.Fleet
	byName := func(addr string) fleet.Row {
		for _, r := range f.Rows {
			if r.Name == addr {
				return r
			}
		}
		return fleet.Row{}
	}
	require.Eventually(t, func() bool {
		if p.Refresh(ctx) != nil {
			return false // prometheus has not scraped the targets yet
		}
		f = p.Fleet(diagnose.Facts{})
		if f.Up != 7 || len(f.Rows) != 8 {
			return false
		}
		for _, s := range []*simtest.Instance{a, b, c} {
			r := byName(s.Addr)
			if r.State != fleet.StateUp || !r.GenerationTokensPerSec.OK || r.GenerationTokensPerSec.V == 0 || !r.TTFTP99.V.OK || !r.ITLP99.V.OK ||
				!r.PromptTokensPerSec.OK || r.PromptTokensPerSec.V == 0 || !r.ProcessStart.OK ||
				!r.QueueMean.OK || !r.PrefillMean.OK || !r.TTFTMean.OK {
				// Each figure is its own query; on a loaded machine one may lag the others.
				return false
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "seven servers up, the simulators with rates: %v", p.Err())
	assert.Equal(t, 7, f.Up)
	ra := byName(a.Addr)
	assert.Equal(t, "Qwen/Qwen3-0.6B", ra.Model)
	assert.Equal(t, "0", ra.Engine)
	assert.Equal(t, a.URL+"/metrics", ra.URL)
	assert.True(t, ra.KVCacheUsage.OK && ra.KVCacheUsage.V < 0.5)
	assert.True(t, ra.PromptTokensPerSec.OK && ra.PromptTokensPerSec.V > 0)
	assert.True(t, ra.PreemptionsPerSec.OK, "a present zero")
	assert.True(t, ra.ErrorsPerSec.OK)
	assert.True(t, ra.QueueMean.OK && ra.PrefillMean.OK && ra.TTFTMean.OK)
	assert.Equal(t, "~2s est", ra.EstimateLabel())
	assert.True(t, ra.ProcessStart.OK && ra.ProcessStart.V > 1e9, "process_start_time_seconds")
	assert.Equal(t, scrape.Some(0.92), ra.Util, "cache_config_info's gpu_memory_utilization, as a direct scrape reads it")

	// The captures: one row per engine, each backend's own metrics, the old V0 name.
	e1 := byName(addr(dp) + " e1")
	assert.Equal(t, 2, e1.Engines)
	assert.Equal(t, scrape.Some(9), e1.Waiting)
	assert.Equal(t, scrape.BackendVLLM, e1.Backend)
	assert.Equal(t, "0", byName(addr(dp)+" e0").Engine)
	rs := byName(addr(sgl))
	assert.Equal(t, scrape.BackendSGLang, rs.Backend)
	assert.Equal(t, scrape.Some(0.28), rs.KVCacheUsage, "sglang:token_usage")
	assert.Equal(t, scrape.Some(2826), rs.Waiting, "sglang:num_queue_reqs")
	assert.Contains(t, rs.NotExported, fleet.FieldPreemptions)
	rt := byName(addr(tgi))
	assert.Equal(t, scrape.BackendTGI, rt.Backend)
	assert.True(t, rt.Waiting.OK, "tgi_queue_size")
	assert.False(t, rt.KVCacheUsage.OK)
	assert.Contains(t, rt.NotExported, fleet.FieldKVCacheUsage)
	assert.Equal(t, scrape.Some(0.37), byName(addr(v0)).KVCacheUsage, "vllm:gpu_cache_usage_perc, the old name")

	// a is admission-bound: two running, the rest waiting, the KV cache nearly empty.
	require.Eventually(t, func() bool {
		if p.Refresh(ctx) != nil {
			return false
		}
		f = p.Fleet(diagnose.Facts{})
		r := byName(a.Addr)
		top, ok := r.Top()
		return ok && top.Rule == diagnose.RuleAdmissionBound
	}, 30*time.Second, 100*time.Millisecond, "a admission-bound")
	top, _ := func() (diagnose.Verdict, bool) { r := byName(a.Addr); return r.Top() }()
	assert.Contains(t, top.Text, "raise --max-num-seqs")

	// A source opened now shows the history Prometheus holds at once, from query_range:
	// a fresh one that never refreshed has seconds of points after one Backfill.
	fresh := fleet.NewHistory(scrapeEvery, 720)
	p2, err := fleet.NewPrometheus(fleet.PrometheusConfig{URL: promURL, History: fresh})
	require.NoError(t, err)
	keyA := fleet.Key{Endpoint: a.Addr, Model: "Qwen/Qwen3-0.6B", Engine: "0"}
	require.Eventually(t, func() bool {
		if p2.Backfill(ctx) != nil {
			return false
		}
		pts := fresh.Series(keyA, fleet.MetricRunning)
		return len(pts) >= 8 && pts[len(pts)-1].T.Sub(pts[0].T) >= 7*scrapeEvery
	}, 30*time.Second, 100*time.Millisecond, "history backfilled from query_range")
	for _, m := range fleet.Metrics {
		assert.NotEmpty(t, fresh.Series(keyA, m), "%s backfilled", m)
	}

	// b is killed, c restarted.
	require.NoError(t, p.Refresh(ctx))
	f = p.Fleet(diagnose.Facts{})
	require.Equal(t, fleet.StateUp, byName(b.Addr).State)
	lastUp := byName(b.Addr).LastGood
	b.Stop()
	c.Restart(t)
	require.Eventually(t, func() bool {
		if p.Refresh(ctx) != nil {
			return false
		}
		f = p.Fleet(diagnose.Facts{})
		if r := byName(b.Addr); r.State == fleet.StateUp {
			lastUp = r.LastGood // Prometheus has not tried it since it stopped
		}
		return byName(b.Addr).State == fleet.StateDown && byName(c.Addr).State == fleet.StateRestarted
	}, 30*time.Second, 100*time.Millisecond, "b DOWN and c RESTARTED: %v", f.Rows)
	rb := byName(b.Addr)
	assert.NotEmpty(t, rb.StateDetail)
	// Its last good read is the last refresh that saw it up, not Prometheus's last try.
	assert.Equal(t, lastUp, rb.LastGood)
	vb, _ := rb.Top()
	assert.Equal(t, diagnose.RuleDown, vb.Rule)
	rc := byName(c.Addr)
	assert.Equal(t, "counters went back", rc.StateDetail)
	vc, _ := rc.Top()
	assert.Equal(t, diagnose.RuleRestarted, vc.Rule)
	o, line := f.Summary()
	assert.Equal(t, diagnose.Failing, o)
	assert.Contains(t, line, b.Addr+" is DOWN")
	assert.Equal(t, 6, f.Up)

	// Prometheus itself goes away: the rows stay, frozen, and turn STALE.
	stopProm()
	require.Eventually(t, func() bool {
		_ = p.Refresh(ctx)
		f = p.Fleet(diagnose.Facts{})
		for _, r := range f.Rows {
			if r.State != fleet.StateStale || !r.Frozen {
				return false
			}
		}
		return len(f.Rows) == 8
	}, 30*time.Second, 50*time.Millisecond)
	assert.Contains(t, f.Rows[0].StateDetail, "no answer from Prometheus")
	assert.Error(t, p.Err())
}
