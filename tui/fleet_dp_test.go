package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// startDPSim runs `vllmtop sim --data-parallel-size 2` on a free loopback port.
func startDPSim(t *testing.T) string {
	t.Helper()
	inst, err := serve.Start(context.Background(), []string{"-dp", "2", "--port", "0", "--sim-startup-seconds", "0"},
		func(string) string { return "" }, serve.WithGrace(time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Stop() })
	require.Eventually(t, inst.Ready, 10*time.Second, time.Millisecond)
	return inst.URL()
}

// TestFleetShowsTheEnginesOfADataParallelSim: one endpoint, two engine rows.
func TestFleetShowsTheEnginesOfADataParallelSim(t *testing.T) {
	url := startDPSim(t)
	src, err := fleet.NewDirect(fleet.DirectConfig{Endpoints: []fleet.Endpoint{{Name: "dp-sim", URL: url}}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, src.Refresh(ctx))
	f := src.Fleet(diagnose.Facts{})
	require.Len(t, f.Rows, 2)
	for i, r := range f.Rows {
		assert.Equal(t, 2, r.Engines)
		assert.Equal(t, []string{"0", "1"}[i], r.Engine)
	}
	d := newDriver(t, 140, 40, func(dp *Deps) {
		dp.Mode, dp.Supervisor, dp.Load, dp.Scraper, dp.Fleet = ModeAttach, nil, nil, nil, src
	})
	d.send(fleetMsg{f: f})
	p := panelOf[*fleetPanel](d)
	require.Len(t, p.shown, 2)
	out := d.view()
	assert.Contains(t, out, "dp-sim e0")
	assert.Contains(t, out, "dp-sim e1")
	assert.Contains(t, out, "2 rows")
}

// TestHeaderSaysADataParallelServerHasEngines: attached to the one server, the header counts
// its engines.
func TestHeaderSaysADataParallelServerHasEngines(t *testing.T) {
	scr, err := scrape.NewClient(startDPSim(t))
	require.NoError(t, err)
	d := newDriver(t, 200, 60, func(dp *Deps) { dp.Mode, dp.Scraper = ModeAttach, scr })
	d.second()
	d.second()
	header := strings.SplitN(d.view(), "\n", 2)[0]
	assert.Contains(t, header, "2 engines")
}
