package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

func TestFooterMessageBeforeKeys(t *testing.T) {
	msg := "search SLO: p99_ttft_ms<=500▏ enter starts · esc cancels"
	for _, w := range []int{80, 120} {
		d := newDriver(t, w, 24)
		d.m.c.setStatus(msg, false)
		out := d.view()
		footer := out[strings.LastIndex(out, "\n")+1:]
		assert.Contains(t, footer, msg, "%d columns: a message that fits is shown whole, keys give way", w)
		assert.Contains(t, footer, "? help")
		assert.Contains(t, footer, "q quit")
		assert.LessOrEqual(t, maxLineWidth(out), w)
	}
}

func TestHeaderGroupsTheRequestCount(t *testing.T) {
	d := newDriver(t, 120, 40)
	d.requests(1234, 40*time.Millisecond)
	d.second()
	assert.Contains(t, d.view(), "1,234 done", "the header groups digits as every other count on screen")
}

func TestCurvesListEveryProbeWhenThereIsRoom(t *testing.T) {
	d := newDriver(t, 120, 40)
	tune := demoTune()
	base := tune.curves[0].Probes[0]
	for v := 100; v <= 1100; v += 100 {
		p := base
		p.Value = v
		tune.curves[0].Probes = append(tune.curves[0].Probes, p)
	}
	d.m.c.s.tune = tune
	d.m.show(curvesTab)
	d.second()
	out := d.view()
	assert.Contains(t, out, "C=1100 ", "the largest probe is listed, not cut off the line")
	assert.LessOrEqual(t, maxLineWidth(out), 120)
}

func TestExportLeavesAnUnknownKVCacheEmpty(t *testing.T) {
	d := runDoc(loadgen.EpochStats{Epoch: 1}, &epochNote{util: 0.85}, time.Second)
	v, ok := d.Get("kv_cache_tokens")
	require.True(t, ok)
	assert.Nil(t, v, "the KV cache the server has not reported yet is unknown, not 0 tokens")
	d = runDoc(loadgen.EpochStats{Epoch: 2}, &epochNote{util: 0.85, kvTokens: 419264}, time.Second)
	v, _ = d.Get("kv_cache_tokens")
	assert.Equal(t, 419264, v)
}

func TestRestartQuestionKeepsItsKeysAt80Columns(t *testing.T) {
	for _, w := range []int{80, 120} {
		d := newDriver(t, w, 24)
		d.press("u", "u", "enter")
		out := d.view()
		footer := out[strings.LastIndex(out, "\n")+1:]
		assert.Contains(t, footer, "0.90 (now 0.92)?", "%d columns", w)
		assert.Contains(t, footer, "esc/n", "%d columns: the keys that answer the question are shown", w)
	}
}

func TestFooterOffersNoKeyATuningRunRefuses(t *testing.T) {
	d := newDriver(t, 200, 40)
	footer := func() string { out := d.view(); return out[strings.LastIndex(out, "\n")+1:] }
	assert.Contains(t, footer(), "+ load +1", "idle: the load keys are offered")
	d.m.c.s.tune.kind = tuneSearch
	for _, b := range append(d.m.keys.tuneRefused(), d.m.keys.Restart) {
		assert.NotContains(t, footer(), b.Help().Key+" "+b.Help().Desc, "a search under way refuses it")
	}
	assert.Contains(t, footer(), "? help")
}

func TestReplayRefusesKeysThatWouldOnlyRelabelTheRuns(t *testing.T) {
	d := newDriver(t, 120, 40)
	d.m.c.s.loader.Replay = loadgen.ReplayTrace
	epoch := d.m.c.s.epoch
	for _, k := range []string{"p", "P", "+", "]", "r", "S", "W"} {
		d.press(k)
		assert.Equal(t, epoch, d.m.c.s.epoch, "%s in a trace replay starts no epoch", k)
		assert.Equal(t, tuneIdle, d.m.c.s.tune.kind, "%s in a trace replay starts no search", k)
		assert.True(t, d.m.c.s.statusBad, "%s says why it does nothing: %q", k, d.m.c.s.status)
		assert.LessOrEqual(t, len([]rune(d.m.c.s.status)), 80-len([]rune("? help · q quit"))-3, "%s: whole at 80 columns", k)
	}
	d.m.c.s.loader.Replay = loadgen.ReplayConversations
	d.press("P")
	assert.Equal(t, epoch, d.m.c.s.epoch)
	assert.Contains(t, d.m.c.s.status, "conversations replay sends its own prompts")
	d.press("+")
	assert.NotEqual(t, epoch, d.m.c.s.epoch, "in conversations + counts conversations under way")
}

func TestHeaderKeepsAPendingUtilisationAt80Columns(t *testing.T) {
	d := newDriver(t, 80, 24)
	d.second()
	d.press("u", "u")
	out := d.view()
	assert.Contains(t, out[:strings.Index(out, "\n")], "util 0.92→0.90", "the value being changed stays in the header")
	assert.LessOrEqual(t, maxLineWidth(out), 80)
}

func TestRunsComparisonKeepsTwoTextsApart(t *testing.T) {
	d := newDriver(t, 120, 40)
	var epochs []int
	for range 2 {
		d.press("P")
		epochs = append(epochs, d.m.c.s.epoch)
		d.requests(20, 40*time.Millisecond)
		d.second()
	}
	runs := panelOf[*runsPanel](d)
	runs.pick(epochs[0])
	runs.pick(epochs[1])
	d.m.show("Runs")
	d.second()
	out := d.view()
	require.Contains(t, out, "A (run")
	assert.Regexp(t, `prefix on  +256→128 prefix off`, out, "the A and B texts are two cells apart at least, neither cut")
}

// A verdict in a single server's header is the state and its rules where the load's figures
// need the room, and the whole sentence where it fits beside them: from 120 columns it never
// pushes the failures, req/s or tok/s off the line; at 80 it is kept before them.
func TestHeaderVerdictLeavesTheLoadFigures(t *testing.T) {
	for _, w := range []int{80, 120, 200} {
		d := newDriver(t, w, 40)
		d.requests(30, 40*time.Millisecond)
		d.scrape()
		for i := 0; i < 4; i++ {
			d.second()
		}
		d.m.c.s.verdicts = []diagnose.Verdict{{Rule: "queue-bound", Severity: diagnose.Warning, Subject: "http://127.0.0.1:8000",
			Text: "http://127.0.0.1:8000 spends 62.8% of its TTFT queued"}}
		d.m.header.Update(refreshMsg{})
		load := strings.Split(d.m.header.View(), "\n")[1]
		assert.LessOrEqual(t, lipgloss.Width(load), w)
		if w >= 120 {
			assert.Contains(t, load, "req/s", "at %d columns", w)
			assert.Contains(t, load, "failed", "at %d columns", w)
			assert.Contains(t, load, "tok/s", "at %d columns", w)
		}
		if w == 200 {
			assert.Contains(t, load, "DEGRADED: http://127.0.0.1:8000 spends 62.8%", "the sentence where it fits")
		} else {
			assert.Contains(t, load, "DEGRADED queue-bound", "at %d columns", w)
		}
	}
}
