package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// P toggles the shared prefix on the load, each press an epoch, and the Runs view shows the
// rows of both with "prefix on" and "prefix off" in the workload column; picked, they compare.
func TestPrefixKeyTogglesTheSharedPrefix(t *testing.T) {
	d := sized(t)
	s := &d.m.c.s
	for range 5 {
		d.requests(3, 40*time.Millisecond)
		d.second()
	}
	d.press("P")
	assert.Equal(t, []bool{true}, td(d).prefix)
	on := s.epoch
	assert.Equal(t, "random 256 in / 128 out, prefix on", s.note(on).workload)
	assert.Contains(t, d.view(), "workload: random 256 in / 128 out, prefix on")
	for range 5 {
		d.requests(3, 20*time.Millisecond)
		d.second()
	}
	d.press("P")
	assert.Equal(t, []bool{true, false}, td(d).prefix)
	off := s.epoch
	assert.Equal(t, on+1, off)
	for range 5 {
		d.requests(3, 60*time.Millisecond)
		d.second()
	}
	d.showView("Runs")
	out := d.view()
	assert.Regexp(t, `1 +C=4 +256→128 prefix on `, out)
	assert.Regexp(t, `2 +C=4 ·live +256→128 prefix off `, out)
	d.press("x", "k", "x") // A: the live run (prefix off), B: the one before (prefix on)
	out = d.view()
	i := strings.Index(out, "\nworkload ")
	require.Positive(t, i, "the comparison:\n%s", out)
	cmp := out[i:]
	assert.Regexp(t, `workload +256→128 prefix off +256→128 prefix on`, cmp)
	assert.Regexp(t, `TTFT p50 +61ms +21ms +-6\d\.\d%`, cmp, "A -> B: TTFT before and after")
}

func TestShortWorkloadNamesThePrefix(t *testing.T) {
	assert.Equal(t, "256→128 prefix on", shortWorkload("random 256 in / 128 out, prefix on"))
	assert.Equal(t, "256→128 prefix off", shortWorkload("random 256 in / 128 out, prefix off"))
	assert.Equal(t, "random 256→128", shortWorkload("random 256 in / 128 out"))
	assert.Equal(t, "1280→128 prefix off", workloadLabel("random 256 in / 128 out, prefix off", 1280, 1024),
		"the prefix demo's prompts carry the prefix: the label says the length they had")
	assert.Equal(t, "1280→128 prefix on", workloadLabel("random 256 in / 128 out, prefix on", 0, 1024),
		"before any request finished, the length they are sent with")
	assert.Equal(t, "random 256→128", workloadLabel("random 256 in / 128 out", 300, 1024), "other workloads keep their name")
}

// A server that does not count prefix-cache lookups has no prefix-hit line in the Overview's
// legend; one that does shows its hit rate over the window.
func TestOverviewPrefixHitRate(t *testing.T) {
	d := sized(t)
	for range 3 {
		d.requests(3, 40*time.Millisecond)
		d.second()
	}
	d.showView(overviewTab)
	assert.NotContains(t, d.view(), "prefix hit")
	d = sized(t)
	d.td.scr.prefix = true // from the second scrape on: once the window has passed the first
	for range 65 {
		d.requests(3, 40*time.Millisecond)
		d.second()
	}
	assert.Regexp(t, `prefix hit 25(\.0)?%`, d.view(), "64 of 256 prompt tokens hit")
}
