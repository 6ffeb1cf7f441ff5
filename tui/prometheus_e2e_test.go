package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/simtest"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

// TestPrometheusFleetThroughTheDashboard runs Debian's prometheus scraping three simulated
// servers, reads them as the dashboard does (a Prometheus source running in its own
// goroutine, its rows reaching the model as messages), kills one and restarts another, and
// checks what the Fleet view shows: the rows, their states and verdicts, and a drill-down.
func TestPrometheusFleetThroughTheDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("starts prometheus and three simulators; skipped with -short")
	}
	simtest.Need(t, "prometheus")
	gap := fleetMinGap
	fleetMinGap = 0
	t.Cleanup(func() { fleetMinGap = gap })
	const scrapeEvery = 250 * time.Millisecond
	sim := []string{"Qwen/Qwen3-0.6B", "--sim-speed", "10", "--max-model-len", "4096"}
	a := simtest.Start(t, append(sim, "--max-num-seqs", "2")...) // admission-bound under load
	b := simtest.Start(t, sim...)
	c := simtest.Start(t, sim...)
	promURL, _ := simtest.Prometheus(t, scrapeEvery, a.Addr, b.Addr, c.Addr)
	// Sixteen clients on a's two slots keep its queue long even when a slow host (-race)
	// spaces the clients' requests out.
	simtest.Load(t, a.URL, 16, 64, 256)
	for _, s := range []*simtest.Instance{b, c} {
		simtest.Load(t, s.URL, 8, 64, 32)
	}
	src, err := fleet.NewPrometheus(fleet.PrometheusConfig{URL: promURL, Interval: 100 * time.Millisecond, Window: 2 * time.Second,
		RestartHold: 5 * time.Second, Lookback: time.Hour})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = src.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	m := New(Deps{Mode: ModeAttach, Theme: "dark", FleetDeps: FleetDeps{Fleet: src,
		DrillScraper: func(r fleet.Row) (Scraper, error) { return nil, assert.AnError }}})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	p := m.panels[m.view(fleetTab.name)].(*fleetPanel)
	// next runs the view's command as the program would: wait for news, read the rows.
	next := func() string {
		m.Update(waitFleet(src, diagnose.Facts{})())
		return m.View()
	}
	row := func(addr string) *fleet.Row {
		for i := range p.shown {
			if p.shown[i].Name == addr {
				return &p.shown[i]
			}
		}
		return nil
	}
	var out string
	require.Eventually(t, func() bool {
		out = next()
		ra := row(a.Addr)
		if len(p.shown) != 3 || ra == nil {
			return false
		}
		top, ok := ra.Top()
		// The sick row sorts on top (other rows may have a passing verdict of their own).
		return ok && top.Rule == diagnose.RuleAdmissionBound && p.shown[0].Name == a.Addr && strings.Contains(out, "3/3 up")
	}, 45*time.Second, 50*time.Millisecond, "three rows, a admission-bound and on top")
	assert.Contains(t, out, "3/3 up")
	assert.Contains(t, out, "admission-bound")
	assert.Equal(t, a.Addr, p.shown[0].Name, "the sick row on top")
	assert.Contains(t, out, "raise --max-num-seqs", "its verdict, in full for the selected row")
	for _, s := range []*simtest.Instance{a, b, c} {
		assert.Contains(t, out, s.Addr)
	}
	assert.Contains(t, out, "~ p99 estimated", "latencies are labelled estimates")

	b.Stop()
	c.Restart(t)
	require.Eventually(t, func() bool {
		out = next()
		rb, rc := row(b.Addr), row(c.Addr)
		return rb != nil && rc != nil && rb.State == fleet.StateDown && rc.State == fleet.StateRestarted && p.shown[0].Name == b.Addr
	}, 30*time.Second, 50*time.Millisecond, "b DOWN and c RESTARTED")
	assert.Contains(t, out, "DOWN")
	assert.Contains(t, out, "RESTARTED")
	lines := strings.Split(out, "\n")
	assert.Contains(t, lines[1], "CRITICAL", "the header says the fleet is failing")
	assert.Contains(t, lines[1], b.Addr+" is DOWN")
	assert.Equal(t, b.Addr, p.shown[0].Name, "the DOWN row on top")

	// A drill-down that cannot reach its endpoint says so and stays on the fleet.
	m.Update(drillMsg{row: p.shown[0]})
	assert.Nil(t, m.c.s.fleet.drill)
	assert.Contains(t, m.View(), "drill-down:")
}
