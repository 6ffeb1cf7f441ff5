package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

// fakeFleet is a FleetSource of fixed rows, judged by the real rules.
type fakeFleet struct {
	rows    []fleet.Row
	updated chan struct{}
	history *fleet.History
	now     func() time.Time // the read's time (t0 when nil)
}

func (f *fakeFleet) Fleet(facts diagnose.Facts) fleet.Fleet {
	th := diagnose.DefaultThresholds()
	at := t0
	if f.now != nil {
		at = f.now()
	}
	out := fleet.Fleet{Time: at, Source: "direct", Rows: append([]fleet.Row(nil), f.rows...)}
	var members []diagnose.Signals
	up := 0
	for i := range out.Rows {
		r := &out.Rows[i]
		r.Subject = r.Name
		r.Verdicts = diagnose.Evaluate(&r.Signals, facts, th)
		members = append(members, r.Signals)
		if r.State == fleet.StateUp || r.State == fleet.StateRestarted {
			up++
		}
	}
	for _, v := range diagnose.Imbalance(diagnose.GroupName(len(members), "replicas", "Qwen/Qwen2.5-7B-Instruct"), members, th) {
		for i := range out.Rows {
			if out.Rows[i].Name == v.Subject {
				out.Rows[i].Verdicts = append(out.Rows[i].Verdicts, v)
				diagnose.Sort(out.Rows[i].Verdicts)
			}
		}
	}
	for _, r := range out.Rows {
		out.Verdicts = append(out.Verdicts, r.Verdicts...)
	}
	diagnose.Sort(out.Verdicts)
	out.Up, out.Endpoints = up, len(out.Rows)
	return out
}
func (f *fakeFleet) History() *fleet.History  { return f.history }
func (f *fakeFleet) Updated() <-chan struct{} { return f.updated }

func v(x float64) scrape.Value { return scrape.Value{V: x, OK: true} }

// fakeRows are n endpoints of one model: mostly healthy, one KV-bound with a queue, one
// DOWN, one STALE, one RESTARTED, one SGLang without preemptions and errors.
func fakeRows(n int) []fleet.Row {
	var rows []fleet.Row
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("gpu-%02d:8000", i+1)
		r := fleet.Row{Key: fleet.Key{Endpoint: name, Model: "Qwen/Qwen2.5-7B-Instruct"}, Name: name, URL: "http://" + name + "/metrics", Engines: 1}
		r.Model, r.Backend, r.State = "Qwen/Qwen2.5-7B-Instruct", scrape.BackendVLLM, fleet.StateUp
		r.WindowSeconds, r.Util = 60, v(0.9)
		r.Running, r.Waiting, r.KVCacheUsage = v(float64(8+i%5)), v(0), v(0.30+0.01*float64(i%7))
		r.GenerationTokensPerSec, r.PromptTokensPerSec = v(410+float64(i*7%50)), v(900)
		r.RequestsPerSec, r.PreemptionsPerSec, r.ErrorsPerSec = v(2.1), v(0), v(0)
		r.TTFTP99 = diagnose.Quantile{V: v(0.180 + 0.01*float64(i%4))}
		r.ITLP99 = diagnose.Quantile{V: v(0.021)}
		r.TTFTMean, r.QueueMean, r.PrefillMean, r.PromptTokensMean = v(0.09), v(0.01), v(0.07), v(512)
		switch i {
		case 1: // KV-bound: the cache full, a queue, preemptions
			r.Running, r.Waiting, r.KVCacheUsage = v(31), v(42), v(0.97)
			r.PreemptionsPerSec = v(0.8)
			r.TTFTP99 = diagnose.Quantile{V: v(2.5), Bound: diagnose.AtLeast}
			r.QueueMean, r.TTFTMean = v(1.6), v(1.7)
			r.Util = v(0.5)
		case 2:
			r.State, r.StateDetail, r.Frozen = fleet.StateDown, "connection refused", true
		case 3:
			r.State, r.StateDetail, r.Frozen = fleet.StateStale, "last good scrape 12s ago", true
		case 4:
			r.State, r.StateDetail = fleet.StateRestarted, "process_start_time_seconds moved"
			r.GenerationTokensPerSec, r.PreemptionsPerSec, r.ErrorsPerSec = scrape.Value{}, scrape.Value{}, scrape.Value{}
			r.TTFTP99, r.ITLP99 = diagnose.Quantile{}, diagnose.Quantile{}
		case 5:
			r.Backend = scrape.BackendSGLang
			r.PreemptionsPerSec, r.ErrorsPerSec, r.PrefixCacheHitRate, r.PrefillMean = scrape.Value{}, scrape.Value{}, scrape.Value{}, scrape.Value{}
			r.NotExported = fleet.NotExported(scrape.BackendSGLang)
		}
		rows = append(rows, r)
	}
	return rows
}

func fleetDriver(t *testing.T, w, h, n int) (*driver, *fakeFleet) {
	t.Helper()
	ff := &fakeFleet{rows: fakeRows(n), updated: make(chan struct{}, 1), history: fleet.NewHistory(0, 0)}
	d := newDriver(t, w, h, func(dp *Deps) {
		dp.Mode, dp.Supervisor, dp.Load, dp.Scraper, dp.Capacity = ModeAttach, nil, nil, nil, nil
		dp.Fleet = ff
		dp.DrillScraper = func(fleet.Row) (Scraper, error) { return &fakeScraper{now: dp.Now, start: float64(t0.Unix())}, nil }
		ff.now = dp.Now
	})
	// Reads a second apart until the verdicts have held for their hold time and show.
	d.send(fleetMsg{f: ff.Fleet(diagnose.Facts{})})
	for i := time.Duration(0); i < diagnose.DefaultHold; i += time.Second {
		*d.td.clock = d.td.clock.Add(time.Second)
		d.send(fleetMsg{f: ff.Fleet(diagnose.Facts{})})
	}
	return d, ff
}

func TestFleetGoldenViews(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		for _, n := range []int{3, 40} {
			t.Run(fmt.Sprintf("%dx%d/%d", sz[0], sz[1], n), func(t *testing.T) {
				d, _ := fleetDriver(t, sz[0], sz[1], n)
				if n == 3 {
					// Three endpoints: the sick one, a healthy one, a DOWN one.
					d.press("j")
				} else {
					d.press("G") // scrolled to the end: the first rows are off the screen
				}
				out := d.view()
				lines := strings.Split(out, "\n")
				assert.Len(t, lines, sz[1])
				assert.LessOrEqual(t, maxLineWidth(out), sz[0])
				assert.Contains(t, lines[2], "1 Fleet", "the Fleet view comes first")
				if n == 3 {
					for _, s := range []string{"DOWN", "kv-bound", "gpu-02:8000"} {
						assert.Contains(t, out, s)
					}
				} else {
					if sz[1] < 60 {
						assert.NotContains(t, out, "gpu-01:8000", "scrolled past the first row")
					}
					assert.Contains(t, out, "gpu-40:8000")
				}
				golden.RequireEqual(t, []byte(out))
			})
		}
	}
	// The first rows of 40, with every state.
	d, _ := fleetDriver(t, 120, 40, 40)
	out := d.view()
	for _, s := range []string{"DOWN", "STALE", "RESTARTED", "up", "--", "SGLang does not export"} {
		if s == "SGLang does not export" {
			for i := 0; i < 5; i++ {
				d.press("j")
			}
			out = d.view()
		}
		assert.Contains(t, out, s)
	}
}

// A fleet has no load of the dashboard's own: its tabs leave out the views of that load.
func TestFleetTabsLeaveOutTheOwnLoadViews(t *testing.T) {
	d, _ := fleetDriver(t, 120, 40, 3)
	var names []string
	for _, tb := range d.m.tabs {
		names = append(names, tb.name)
	}
	assert.Equal(t, []string{"Fleet", "Overview", "Log", "Runs", "Capacity"}, names)
}

func TestFleetSortFilterAndScroll(t *testing.T) {
	d, _ := fleetDriver(t, 120, 40, 40)
	p := panelOf[*fleetPanel](d)
	// By state, worst first: the DOWN row on top.
	assert.Equal(t, fleet.StateDown, p.shown[0].State)
	for p.sortIdx != 3 { // waiting
		d.press("s")
	}
	assert.Equal(t, "gpu-02:8000", p.shown[0].Name, "the longest queue first")
	d.press("S")
	assert.NotEqual(t, "gpu-02:8000", p.shown[0].Name, "S reverses")
	d.press("/")
	require.True(t, p.Capturing())
	for _, r := range "gpu-1" {
		d.press(string(r))
	}
	d.press("enter")
	assert.False(t, p.Capturing())
	for _, r := range p.shown {
		assert.Contains(t, r.Name, "gpu-1")
	}
	assert.Len(t, p.shown, 10, "gpu-10 to gpu-19")
	d.press("/")
	for _, r := range "nothing-like-it" {
		d.press(string(r))
	}
	d.press("enter")
	assert.Contains(t, d.view(), "no row matches the filter (esc clears it)")
	d.press("esc")
	assert.Len(t, p.shown, 40, "esc clears the filter")
	d.press("G")
	assert.Equal(t, 39, p.cursor)
	d.press("g")
	assert.Equal(t, 0, p.cursor)
	d.press("pgdown")
	assert.Equal(t, p.page(), p.cursor)
}

func TestFleetDrillDownAndBack(t *testing.T) {
	d, ff := fleetDriver(t, 120, 40, 3)
	now := t0.Add(-10 * time.Minute)
	for i := 0; i < 60; i++ {
		r := ff.rows[1]
		r.KVCacheUsage = v(0.5 + float64(i)/200)
		ff.history.Record(now.Add(time.Duration(i)*10*time.Second), []fleet.Row{r})
	}
	p := panelOf[*fleetPanel](d)
	for p.shown[p.cursor].Name != "gpu-02:8000" {
		d.press("j")
	}
	cmd := d.press("enter")
	require.NotNil(t, cmd)
	d.send(d.send(cmd())) // the drill, then its first scrape's tick
	require.NotNil(t, d.m.c.s.fleet.drill, "enter drills down")
	assert.Equal(t, overviewTab, d.activeView(), "into the Overview")
	assert.Contains(t, d.view(), "› gpu-02:8000")
	filled := 0
	for _, b := range d.m.c.s.hist.bins(serKV, timeWindow{End: t0, Span: 15 * time.Minute}, 90) {
		if b.Kind == valueKind {
			filled++
		}
	}
	assert.GreaterOrEqual(t, filled, 50, "the fleet's ten minutes of KV are on the drill-down's chart")
	d.second()
	d.second()
	assert.NotNil(t, d.m.c.s.snap, "the drill-down scrapes the endpoint")
	d.showView("Log")
	assert.Contains(t, d.view(), "attached to http://gpu-02:8000/metrics: the server's log is not available", "the endpoint's, not the fleet's source")
	d.press("esc")
	assert.Nil(t, d.m.c.s.fleet.drill)
	assert.Equal(t, fleetTab.name, d.activeView(), "esc comes back to the fleet")
	assert.Nil(t, d.m.c.deps.Scraper, "and stops scraping it")
}

func TestFleetBackfillFillsTheCharts(t *testing.T) {
	h := newHistory(seriesAggregates())
	fh := fleet.NewHistory(0, 0)
	r := fakeRows(1)[0]
	for i := 0; i < 30; i++ {
		r.KVCacheUsage = v(0.5)
		fh.Record(t0.Add(time.Duration(i-30)*time.Minute), []fleet.Row{r})
	}
	backfill(h, fh, r.Key)
	bins := h.bins(serKV, timeWindow{End: t0, Span: time.Hour}, 60)
	n := 0
	for _, b := range bins {
		if b.Kind == valueKind {
			assert.InDelta(t, 50, b.V, 0.01, "KV in percent")
			n++
		}
	}
	assert.GreaterOrEqual(t, n, 25, "the last half hour is on the chart at once")
}

func TestFleetTableShowsUtilAndNamesItsWindow(t *testing.T) {
	d, _ := fleetDriver(t, 120, 40, 3)
	lines := strings.Split(d.view(), "\n")
	var hdr, sick string
	for _, l := range lines {
		if strings.HasPrefix(l, "name ") {
			hdr = l
		}
		if strings.HasPrefix(l, "gpu-02:8000") {
			sick = l
		}
	}
	assert.Contains(t, hdr, "util")
	assert.Contains(t, hdr, "TTFT99 1m", "the p99 column says the window it covers")
	assert.Contains(t, sick, " 0.50 ", "the replica started with half the memory shows it")
}

// A fleet with no row yet (a selector that names nothing, a Prometheus that never answered)
// says so, not that a filter no one set matches nothing.
func TestFleetWithoutRowsBlamesNoFilter(t *testing.T) {
	d, _ := fleetDriver(t, 120, 40, 0)
	out := d.view()
	assert.Contains(t, out, "no server to show yet")
	assert.NotContains(t, out, "no row matches the filter")
}

// A fleet's help offers none of the keys a fleet turns off: it has no load and no server of
// its own, in the table or drilled into a row.
func TestFleetHelpOffersOnlyItsKeys(t *testing.T) {
	f, _ := fleetDriver(t, 120, 40, 3)
	for _, drilled := range []bool{false, true} {
		if drilled {
			f.press("enter")
		}
		f.press("?")
		out := f.view()
		for _, gone := range []string{"load +1", "pause / resume", "util −0.01", "restart with it", "SLO search", "canary"} {
			assert.NotContains(t, out, gone, "drilled %v", drilled)
		}
		assert.NotContains(t, out, "bundle", "this fleet has no flight recorder: B only says so")
		assert.Contains(t, out, "next theme")
		f.press("esc")
	}
}
