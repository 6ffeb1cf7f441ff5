package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

// sickLine is the table's line of the KV-bound replica.
func sickLine(d *driver) string {
	for _, l := range strings.Split(ansi.Strip(d.view()), "\n") {
		if strings.HasPrefix(l, "gpu-02:8000") {
			return l
		}
	}
	return ""
}

// A row's verdict shows once its condition has held for the hold time, as the single
// server's header does, and one read without it does not drop it.
func TestFleetRowVerdictsHoldBeforeTheyShowAndDoNotFlap(t *testing.T) {
	ff := &fakeFleet{rows: fakeRows(3), updated: make(chan struct{}, 1), history: fleet.NewHistory(0, 0)}
	d := newDriver(t, 120, 40, func(dp *Deps) {
		dp.Mode, dp.Supervisor, dp.Load, dp.Scraper, dp.Capacity = ModeAttach, nil, nil, nil, nil
		dp.Fleet = ff
	})
	read := func() {
		*d.td.clock = d.td.clock.Add(time.Second)
		d.send(fleetMsg{f: ff.Fleet(diagnose.Facts{})})
	}
	read()
	require.NotEmpty(t, sickLine(d))
	assert.NotContains(t, sickLine(d), "kv-bound", "one read is not yet a verdict")
	assert.Contains(t, d.view(), "DOWN", "a DOWN endpoint is a fact: it shows at once")
	for i := time.Duration(0); i < diagnose.DefaultHold; i += time.Second {
		read()
	}
	assert.Contains(t, sickLine(d), "kv-bound", "held for the hold time: shown")
	sick := ff.rows[1]
	healthy := fakeRows(1)[0]
	healthy.Key, healthy.Name, healthy.URL = sick.Key, sick.Name, sick.URL
	ff.rows[1] = healthy
	read()
	assert.Contains(t, sickLine(d), "kv-bound", "one read without it does not drop it")
	ff.rows[1] = sick
	read()
	assert.Contains(t, sickLine(d), "kv-bound")
	ff.rows[1] = healthy
	for i := time.Duration(0); i <= diagnose.DefaultHold; i += time.Second {
		read()
	}
	assert.NotContains(t, sickLine(d), "kv-bound", "cleared for the hold time: dropped")
	o, _ := d.m.c.s.fleet.f.Summary()
	assert.Equal(t, diagnose.Failing, o, "the fleet's summary is of the held verdicts (the DOWN row)")
}

func TestTabLineSaysTheFittedSpanWhileTheDataAreShorter(t *testing.T) {
	d := newDriver(t, 120, 40)
	d.m.c.s.window = defaultWindow
	for i := 0; i < 40; i++ {
		d.second()
	}
	tabs := strings.Split(ansi.Strip(d.view()), "\n")[2]
	assert.Regexp(t, `window (40|50)s of 5m \(z\)`, tabs)
	for i := 0; i < 300; i++ {
		d.scrape()
		*d.td.clock = d.td.clock.Add(time.Second)
	}
	d.second()
	tabs = strings.Split(ansi.Strip(d.view()), "\n")[2]
	assert.Contains(t, tabs, "window 5m (z)", "full: the window alone")
}

func TestServerQuantilesNameTheirWindow(t *testing.T) {
	d := newDriver(t, 200, 60)
	for i := 0; i < 15; i++ {
		d.requests(3, 40*time.Millisecond)
		d.second()
	}
	d.showView(overviewTab)
	out := ansi.Strip(d.view())
	assert.Regexp(t, `srv p99 \(\d+s\) `, out, "the server's p99 says the window of its histograms")
	assert.Regexp(t, `queue p99 \(\d+s\) `, out)
}

// A window that is not a whole minute ("39s") widens the p99 columns' titles; the columns
// widen with them, so the cells stay under their titles.
func TestFleetColumnsWidenForTheirWindow(t *testing.T) {
	d, ff := fleetDriver(t, 120, 40, 3)
	for i := range ff.rows {
		ff.rows[i].WindowSeconds = 39
	}
	d.send(fleetMsg{f: ff.Fleet(diagnose.Facts{})})
	var hdr, row string
	for _, l := range strings.Split(ansi.Strip(d.view()), "\n") {
		if strings.HasPrefix(l, "name ") {
			hdr = l
		}
		if strings.HasPrefix(l, "gpu-01:8000") {
			row = l
		}
	}
	require.Contains(t, hdr, "TTFT99 39s~ ITL99 39s~ pre/s")
	col := len([]rune(hdr[:strings.Index(hdr, "pre/s")]))
	assert.Equal(t, "0 ", string([]rune(row)[col:col+2]), "the preemptions cell under its title: %q / %q", hdr, row)
	itl := len([]rune(hdr[:strings.Index(hdr, "ITL99")]))
	assert.Equal(t, "21ms", string([]rune(row)[itl:itl+4]))
}
