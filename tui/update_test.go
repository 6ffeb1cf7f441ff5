package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/capacity"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

func sized(t *testing.T) *driver { return newDriver(t, 120, 40) }

func TestBatchedKeysAreEveryKey(t *testing.T) {
	d := sized(t)
	// Keys typed faster than the terminal is read arrive as one message of several runes.
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("+++")})
	assert.Equal(t, 7, d.m.c.s.concurrency, "+++ is three presses")
	assert.Equal(t, 7, d.td.load.concurrency)
	assert.Len(t, d.m.c.s.marks, 3, "each press is an epoch")

	// j j j in the Runs view moves the cursor three rows.
	for i := 0; i < 6; i++ {
		for j := 0; j < 4; j++ { // long enough not to be folded away
			d.requests(3, 40*time.Millisecond)
			d.second()
		}
		d.press("-")
	}
	d.second()
	d.showView("Runs")
	runs := panelOf[*runsPanel](d)
	rows, _ := runs.rows()
	require.GreaterOrEqual(t, len(rows), 5)
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("kkk")})
	assert.Equal(t, len(rows)-4, runs.cursorIndex(rows), "kkk moves up three rows")
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj")})
	assert.Equal(t, len(rows)-2, runs.cursorIndex(rows))

	// A batched " " is a space: pause.
	d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("  ")})
	assert.False(t, d.td.load.isPaused(), "two spaces pause and resume")
	assert.Equal(t, 1, d.td.load.pauses)
}

func TestSplitKeys(t *testing.T) {
	one := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("+")}
	assert.Equal(t, []tea.KeyMsg{one}, splitKeys(one))
	enter := tea.KeyMsg{Type: tea.KeyEnter}
	assert.Equal(t, []tea.KeyMsg{enter}, splitKeys(enter))
	got := splitKeys(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("a b")})
	require.Len(t, got, 3)
	assert.Equal(t, "a", got[0].String())
	assert.Equal(t, tea.KeySpace, got[1].Type)
	assert.Equal(t, " ", got[1].String())
}

func TestLoadKeys(t *testing.T) {
	d := sized(t)
	s := &d.m.c.s
	d.press("+", "+")
	assert.Equal(t, 6, td(d).concurrency)
	d.press("-")
	assert.Equal(t, 5, td(d).concurrency)
	d.press("]")
	assert.Equal(t, 10, td(d).concurrency)
	d.press("[", "[", "[", "[", "[")
	assert.Equal(t, 0, td(d).concurrency, "halving stops at zero")
	d.press("-")
	assert.Equal(t, 0, td(d).concurrency, "never negative")
	epochs := len(s.runs)
	d.press("r")
	assert.True(t, s.rateMode)
	assert.Equal(t, 1.0, td(d).rate, "rate mode starts at 1 req/s")
	d.press("+", "]")
	assert.Equal(t, 4.0, td(d).rate)
	d.press("[", "-")
	assert.Equal(t, 1.0, td(d).rate)
	assert.Equal(t, epochs+5, len(s.runs), "every load change is an epoch")
	d.press("r")
	assert.False(t, s.rateMode)
	d.press("space")
	assert.True(t, td(d).paused)
	assert.Contains(t, d.view(), "paused")
	d.press("space")
	assert.False(t, td(d).paused)
}

func td(d *driver) *fakeLoad { return d.td.load }

func TestViewKeysComeFromTheTabList(t *testing.T) {
	d := sized(t)
	for i, tb := range tabs {
		d.press(string(rune('1' + i)))
		assert.Equal(t, tb.name, d.activeView())
		assert.Contains(t, d.m.tabLine(), string(rune('1'+i))+" "+tb.name)
	}
	d.press("1", "tab", "tab")
	assert.Equal(t, tabs[2].name, d.activeView(), "tab goes to the next view in the table")
	d.press("shift+tab", "shift+tab", "shift+tab")
	assert.Equal(t, tabs[len(tabs)-1].name, d.activeView(), "shift+tab goes back, round the end")
	d.press("?")
	assert.True(t, d.m.showHelp)
	d.press("esc")
	assert.False(t, d.m.showHelp)
}

func TestThemeKeyNamesTheTheme(t *testing.T) {
	d := sized(t)
	before := d.m.c.theme.Name
	d.press("t")
	assert.NotEqual(t, before, d.m.c.theme.Name)
	assert.Contains(t, d.view(), "theme "+d.m.c.theme.Name)
}

func TestWindowKeyCyclesTheChartSpan(t *testing.T) {
	d := sized(t)
	assert.Contains(t, d.m.tabLine(), "window 5m")
	for _, want := range []string{"15m", "1h", "1m", "5m"} {
		d.press("z")
		assert.Contains(t, d.m.tabLine(), "window "+want)
	}
	d.showView(streamTab)
	d.press("z")
	assert.Contains(t, d.m.tabLine(), "window 5m", "z belongs to the Overview")
}

func TestRestartNeedsConfirmation(t *testing.T) {
	d := sized(t)
	s := &d.m.c.s
	d.press("u", "u", "U")
	assert.InDelta(t, 0.91, s.pendingUtil, 1e-9)
	d.press("ctrl+u")
	assert.InDelta(t, 0.86, s.pendingUtil, 1e-9)
	d.press("ctrl+y", "ctrl+y", "ctrl+y")
	assert.InDelta(t, 1.0, s.pendingUtil, 1e-9, "capped at 1")
	d.press("ctrl+u", "ctrl+u")
	assert.InDelta(t, 0.90, s.pendingUtil, 1e-9)

	cmd := d.press("enter")
	assert.Equal(t, phaseConfirming, s.phase)
	assert.Nil(t, cmd, "nothing happens before the confirmation")
	assert.Contains(t, d.view(), "restart the server with --gpu-memory-utilization 0.90 (now 0.92)?")
	d.press("esc")
	assert.Equal(t, phaseIdle, s.phase)
	assert.InDelta(t, 0.92, s.pendingUtil, 1e-9, "cancel drops the pending value")
	assert.Empty(t, d.td.sup.restarts)

	d.press("u", "enter")
	epochs := len(s.runs)
	cmd = d.press("y")
	require.NotNil(t, cmd)
	assert.Equal(t, phaseRestarting, s.phase)
	assert.True(t, d.td.load.isPaused(), "the load pauses during a restart")
	assert.Equal(t, 1, d.td.load.cancels, "the requests in flight are cut as cancelled, not counted as failures")
	assert.Equal(t, epochs+1, len(s.runs), "a restart is an epoch")
	// The server goes down and up; the header says "restarting", never a failure.
	d.td.sup.setStatus(func(st *server.Status) { st.State = server.Exited })
	d.send(serverEventsMsg{events: []server.Event{server.StateChanged{State: server.Exited}}})
	d.td.scr.err = errors.New("connection refused")
	d.second()
	head := strings.SplitN(d.view(), "\n", 3)
	assert.Contains(t, head[0], "restarting")
	assert.NotContains(t, d.view(), "metrics failing")
	assert.NotContains(t, d.view(), "exited")
	done, ok := cmd().(restartDoneMsg)
	require.True(t, ok)
	require.Len(t, d.td.sup.restarts, 1)
	assert.Equal(t, server.Set("--gpu-memory-utilization", "0.91"), d.td.sup.restarts[0][0])
	d.td.sup.setStatus(func(st *server.Status) { st.State = server.Ready })
	d.td.scr.err = nil
	d.send(done)
	assert.Equal(t, phaseIdle, s.phase)
	assert.InDelta(t, 0.91, s.util, 1e-9)
	assert.False(t, d.td.load.isPaused(), "the load resumes")
	// The restarted run's span starts when the load resumed: the server's downtime (a second
	// here) is not in its rates.
	d.second()
	d.second()
	i := s.runIndex(s.epoch)
	assert.Equal(t, 2*time.Second, s.active(i, d.m.c.now()))
}

func TestAttachModeCannotRestart(t *testing.T) {
	d := newDriver(t, 120, 40, func(dp *Deps) {
		dp.Mode, dp.RestartDisabled, dp.StartPaused, dp.Target = ModeAttach, true, true, "http://gpu-7:8000"
	})
	assert.True(t, d.td.load.isPaused(), "attach mode starts with the load paused")
	cmd := d.press("u", "enter")
	assert.Nil(t, cmd)
	assert.Equal(t, phaseIdle, d.m.c.s.phase)
	assert.Contains(t, d.m.c.s.status, "attached")
	d.m.c.s.status = ""
	footer := d.view()[strings.LastIndex(d.view(), "\n")+1:]
	assert.NotContains(t, footer, "gpu util", "the footer does not offer keys that cannot work here")
	assert.NotContains(t, footer, "restart")
	assert.Contains(t, footer, "space pause / resume load")
	d.showView(logTab)
	assert.Contains(t, d.view(), "log is not available")
	d.press("space")
	assert.False(t, d.td.load.isPaused(), "space starts the load")
	cmd = d.press("q")
	require.NotNil(t, cmd)
	assert.Equal(t, tea.Quit(), cmd(), "attached: q quits at once, nothing to stop")
	assert.False(t, d.td.sup.stopped)
}

func TestAttachModeReadsCapacityFromMetrics(t *testing.T) {
	d := newDriver(t, 120, 40, func(dp *Deps) {
		dp.Mode, dp.RestartDisabled, dp.Capacity, dp.InitialUtil = ModeAttach, true, nil, 0
	})
	d.td.sup.setStatus(func(st *server.Status) { *st = server.Status{State: server.Ready, URL: "http://gpu-7:8000"} })
	d.second()
	d.second()
	d.showView("Capacity")
	out := d.view()
	assert.Contains(t, out, "464,720 tokens", "KV tokens from vllm:cache_config_info")
	assert.Contains(t, out, "29,045 blocks of 16")
	assert.Contains(t, out, "max conc 3.55x")
	assert.Contains(t, out, "util 0.92")
	assert.Contains(t, out, "vllm:cache_config_info")
	assert.Contains(t, out, "an attached server reports only its current capacity")
	assert.NotContains(t, out, "waiting for the server")
}

// TestUtilFromTheServerWhenNotGiven: a supervised server started without
// --gpu-memory-utilization runs its release's default, which only the server knows (0.90 before
// vLLM 0.21): the header and the next restart start from what it reports, not from 0.92.
func TestUtilFromTheServerWhenNotGiven(t *testing.T) {
	d := newDriver(t, 120, 40, func(dp *Deps) { dp.InitialUtil = 0 })
	d.td.scr.util = "0.9"
	d.td.sup.setStatus(func(st *server.Status) {
		st.Args = []string{"vllmtop", "sim", "meta-llama/Llama-3.1-8B-Instruct", "--sim-vllm-version", "0.17.0"}
		st.GPUMemoryUtilization = server.GPUMemoryUtilization(st.Args)
	})
	d.second()
	d.second()
	header := strings.SplitN(d.view(), "\n", 2)[0]
	assert.Contains(t, header, "util 0.90")
	d.press("U")
	assert.Equal(t, 0.91, d.m.c.s.pendingUtil, "one step up from the server's own figure")

	// A figure outside (0, 1] is not a utilisation vLLM would run with: it is not taken.
	d = newDriver(t, 120, 40, func(dp *Deps) { dp.InitialUtil = 0 })
	d.td.scr.util = "7"
	d.td.sup.setStatus(func(st *server.Status) { st.GPUMemoryUtilization = 0 })
	d.second()
	d.second()
	assert.Zero(t, d.m.c.s.util)
	assert.NotContains(t, strings.SplitN(d.view(), "\n", 2)[0], "util 7")
}

func TestDeadServerPausesTheLoadAndSaysWhy(t *testing.T) {
	d := newDriver(t, 120, 40, func(dp *Deps) { dp.Mode, dp.RestartDisabled, dp.StartPaused = ModeAttach, true, true })
	d.press("space") // attach mode starts paused; the user starts the load
	require.False(t, d.td.load.isPaused())
	d.td.sup.setStatus(func(st *server.Status) { st.Unreachable = "connection refused"; st.State = server.Unhealthy })
	d.second()
	assert.True(t, d.td.load.isPaused(), "no load against a server that does not answer")
	out := d.view()
	assert.Contains(t, strings.SplitN(out, "\n", 2)[0], "unreachable: connection refused")
	assert.Contains(t, out, "server unreachable: connection refused (load paused)")
	d.td.sup.setStatus(func(st *server.Status) { st.Unreachable = ""; st.State = server.Ready })
	d.second()
	assert.False(t, d.td.load.isPaused(), "the load resumes when the server answers")

	// A supervised server that exits pauses the load too, and stays paused.
	d = sized(t)
	d.send(serverEventsMsg{events: []server.Event{server.StateChanged{State: server.Exited, Exit: server.ExitStatus{Code: 1, Cause: "ValueError: boom"}}}})
	assert.True(t, d.td.load.isPaused())
	assert.Contains(t, d.view(), "server exited: exit status 1: ValueError: boom (load paused)")
	d.press("space")
	assert.Contains(t, d.m.c.s.status, "load paused; server exited", "pausing a load the dead server holds says so")
	assert.NotContains(t, d.m.c.s.status, "space resumes", "nothing can resume it while the server is down")

	// A cause longer than the line is cut to the room left, never left out.
	long := "vllmtop sim: error: cannot listen on 127.0.0.1:8000: listen tcp 127.0.0.1:8000: bind: address already in use"
	for _, w := range []int{80, 120, 200} {
		d = newDriver(t, w, 40)
		d.send(serverEventsMsg{events: []server.Event{server.StateChanged{State: server.Exited, Exit: server.ExitStatus{Code: 1, Cause: long}}}})
		d.m.header.Update(refreshMsg{})
		top := strings.SplitN(d.view(), "\n", 2)[0]
		assert.Contains(t, top, "exited (exit status 1", "%d columns", w)
		assert.LessOrEqual(t, lipgloss.Width(top), w)
		if w == 200 {
			assert.Contains(t, top, "address already in use", "the whole cause where there is room")
		}
	}
}

func TestQuitStopsThenForces(t *testing.T) {
	d := sized(t)
	cmd := d.press("q")
	require.NotNil(t, cmd)
	assert.Equal(t, phaseStopping, d.m.c.s.phase)
	assert.True(t, d.td.load.isPaused(), "the load stops first")
	assert.Contains(t, d.view(), "stopping the load and the server")
	msg := cmd()
	_, ok := msg.(stopDoneMsg)
	require.True(t, ok)
	assert.True(t, d.td.sup.stopped)
	assert.Equal(t, tea.Quit(), d.send(msg)())

	d = sized(t)
	d.press("q")
	cmd = d.press("q")
	assert.Equal(t, tea.Quit(), cmd(), "a second q forces")
	assert.Equal(t, phaseForced, d.m.c.s.phase)
	assert.True(t, d.td.sup.killed)

	d = sized(t)
	cmd = d.press("ctrl+c")
	assert.Equal(t, tea.Quit(), cmd())
	assert.True(t, d.td.sup.killed)
}

func TestQuitDuringRestartStopsAfterIt(t *testing.T) {
	d := sized(t)
	restart := d.press("u", "enter", "enter")
	require.NotNil(t, restart)
	stop := d.press("q")
	assert.Nil(t, stop, "nothing is stopped while the restart runs")
	assert.Equal(t, phaseStopping, d.m.c.s.phase)
	stop = d.send(restart())
	require.NotNil(t, stop, "the stop follows the restart")
	_, ok := stop().(stopDoneMsg)
	assert.True(t, ok)
	assert.True(t, d.td.sup.stopped)
}

func TestFailedRestartKeepsTheLoadPaused(t *testing.T) {
	d := sized(t)
	require.NotNil(t, d.press("u", "enter", "enter"))
	d.send(restartDoneMsg{util: 0.91, err: errors.New("server exited before it was ready")})
	assert.True(t, d.td.load.isPaused())
	assert.Contains(t, d.m.c.s.status, "restart failed")
	assert.InDelta(t, 0.92, d.m.c.s.util, 1e-9, "the utilisation did not change")
}

func TestStaleTicksAreIgnored(t *testing.T) {
	d := sized(t)
	assert.Nil(t, d.send(uiTickMsg{gen: 99, at: t0}), "a tick of an old chain does not re-arm")
	assert.NotNil(t, d.send(uiTickMsg{gen: 0, at: t0}))
	assert.Nil(t, d.send(scrapeTickMsg{gen: 5}))
}

func TestScrapesAreComparedOffTheUIGoroutine(t *testing.T) {
	d := sized(t)
	cmd := d.send(scrapeTickMsg{gen: 0})
	require.NotNil(t, cmd)
	first, ok := cmd().(scrapeResultMsg)
	require.True(t, ok)
	assert.NotNil(t, first.snap)
	assert.Nil(t, first.fast, "one scrape is no window")
	d.send(first)
	*d.td.clock = d.td.clock.Add(time.Second)
	second := d.send(scrapeTickMsg{gen: 0})().(scrapeResultMsg)
	require.NotNil(t, second.fast, "the command compares with the previous scrape")
	assert.InDelta(t, 384, second.fast.Models[0].Total.GenerationTokensPerSec.V, 1e-6)
	assert.Nil(t, second.snap.Unmapped, "unmapped families are not kept")
	d.send(second)
	for i := 0; i < 12; i++ {
		d.second()
	}
	require.NotNil(t, d.m.c.s.slow)
	assert.InDelta(t, 10, d.m.c.s.slow.ElapsedSeconds, 1e-6, "quantiles over the live window")
}

func TestSpecDecodingShowsOnlyWhenTheServerDrafts(t *testing.T) {
	d := sized(t)
	d.second()
	d.second()
	assert.NotContains(t, d.view(), "spec accept")
	d.td.scr.spec = true
	d.second()
	d.second()
	d.second() // the header reads the window at the next tick
	assert.Contains(t, d.view(), "spec accept 70% len 3.10")
}

func TestHeaderNamesTheCommandNotItsBuildPath(t *testing.T) {
	d := sized(t)
	d.second()
	d.second()
	head := strings.SplitN(d.view(), "\n", 2)[0]
	assert.NotContains(t, head, "go-build")
	assert.Contains(t, head, "up 2m02s", "the server's uptime from process_start_time_seconds")
	assert.Equal(t, "vllmtop sim --gpu-memory-utilization 0.92", commandSummary(d.td.sup.status.Args))
	assert.Equal(t, "vllm serve --max-num-seqs 8 --tensor-parallel-size=2",
		commandSummary([]string{"/opt/venv/bin/vllm", "serve", "m", "--max-num-seqs", "8", "--tensor-parallel-size=2", "--api-key", "s3cret"}))
	assert.Equal(t, "vllm serve --api-server-count 4 -dp 2", commandSummary([]string{"vllm", "serve", "m", "--api-server-count", "4", "-dp", "2"}),
		"the API servers and engines a run had, which its throughput depends on")
}

func TestClientLagIsShownOnlyWhenThereIsSome(t *testing.T) {
	d := sized(t)
	d.second()
	assert.NotContains(t, d.view(), "lag")
	d.m.c.s.loader.Lag = 80 * time.Millisecond
	d.m.header.Update(refreshMsg{})
	assert.NotContains(t, d.view(), "lag", "a closed loop has no schedule to lag behind")
	d.press("r")
	d.m.c.s.loader.Lag = 80 * time.Millisecond
	d.m.header.Update(refreshMsg{})
	assert.Contains(t, d.view(), "client lag 80ms")
	d.press("r")
	assert.NotContains(t, d.view(), "lag", "the runner keeps its last lag after leaving rate mode; the header does not")
}

func TestHeaderRatesAreTheCurrentEpochs(t *testing.T) {
	d := sized(t)
	for i := 0; i < 10; i++ {
		d.requests(3, 40*time.Millisecond)
		d.second()
	}
	assert.Contains(t, d.view(), "3.0 req/s")
	d.press("+")
	for i := 0; i < 2; i++ {
		d.requests(1, 40*time.Millisecond)
		d.second()
	}
	assert.Contains(t, d.view(), "epoch 1 2s")
	assert.Contains(t, d.view(), "1.0 req/s", "a new epoch's rate is its own, not the last minute's")

	// Long outputs: tokens stream for minutes before a request ends; the rate is of the tokens
	// received, not of the requests finished.
	d.press("+")
	for i := 0; i < 2; i++ {
		d.td.load.mu.Lock()
		d.td.load.tokens += 5000
		d.td.load.mu.Unlock()
		d.second()
	}
	assert.Contains(t, d.view(), "0 done")
	assert.Contains(t, d.view(), "5.0k tok/s", "10,000 tokens in the epoch's two seconds")
}

func TestRunsPickAndCompare(t *testing.T) {
	d := sized(t)
	for _, k := range []string{"+", "+"} {
		for i := 0; i < 5; i++ {
			d.requests(3, 40*time.Millisecond)
			d.second()
		}
		d.press(k)
	}
	d.second()
	d.showView("Runs")
	d.press("up", "up", "x", "down", "x")
	runs := panelOf[*runsPanel](d)
	assert.Equal(t, []int{0, 1}, runs.picked)
	out := d.view()
	assert.Contains(t, out, "A (run 0) -> B (run 1)")
	assert.Contains(t, out, "A · run 0")
	for _, row := range []string{"req/s", "TTFT p99", "ITL p99", "E2E p50"} {
		assert.Contains(t, out, row)
	}
	d.press("down", "x")
	assert.Equal(t, []int{1, 2}, runs.picked, "a third pick drops the oldest")
	d.press("x")
	assert.Equal(t, []int{1}, runs.picked, "picking again unpicks")
	d.press("esc")
	assert.Empty(t, runs.picked)
}

func TestRunsFoldBriefEpochsAndSkipPausedTime(t *testing.T) {
	d := sized(t)
	for i := 0; i < 5; i++ {
		d.requests(3, 40*time.Millisecond)
		d.second()
	}
	d.press("+", "+", "+") // two epochs of no time at all, then one that lasts
	d.press("space")
	for i := 0; i < 20; i++ {
		d.second() // paused: not counted
	}
	d.press("space")
	for i := 0; i < 5; i++ {
		d.requests(3, 40*time.Millisecond)
		d.second()
	}
	d.showView("Runs")
	runs := panelOf[*runsPanel](d)
	rows, folded := runs.rows()
	assert.Equal(t, 2, folded)
	require.Len(t, rows, 2)
	assert.Equal(t, 3, rows[1].e.Epoch)
	assert.Equal(t, 5*time.Second, rows[1].active, "the 20 paused seconds are not the run's")
	out := d.view()
	assert.Contains(t, out, "2 runs shorter than 3s folded away")
	assert.Contains(t, out, "C=7 ·live")
}

func TestWatchAndPromptLengthKeys(t *testing.T) {
	d := sized(t)
	d.showView(streamTab)
	require.Len(t, d.td.load.watches, 1, "the Stream view watches a request of the workload")
	d.press("w")
	assert.Len(t, d.td.load.watches, 2)
	d.press("p")
	assert.True(t, d.m.c.s.longPrompts)
	require.NotNil(t, d.td.load.workload)
	assert.Equal(t, 4096, d.td.load.workload.Prompt(0).InputTokens)
	assert.Len(t, d.td.load.watches, 3, "switching prompts watches a request of the new workload")
	d.press("p")
	assert.Equal(t, 256, d.td.load.workload.Prompt(0).InputTokens)
}

// TestLoggedCapacityKeepsTheReportedUtil: a run started without --gpu-memory-utilization logs
// its KV cache at the utilisation the server reported; after a restart at another, the old
// log's figures are scaled to the new one, not shown as the new run's.
func TestLoggedCapacityKeepsTheReportedUtil(t *testing.T) {
	s := &state{util: 0.9}
	s.server = server.Status{KVCacheTokens: 500000, KVCacheBlocks: 31250, MaxModelLen: 131072}
	s.knownCapacity()
	assert.Equal(t, 0.9, s.logged.Util, "the run's utilisation, as the server reported it")

	// The restart at 0.5: the new run has logged nothing yet.
	s.util = 0.5
	s.server = server.Status{GPUMemoryUtilization: 0.5}
	r := capacity.Build(s.knownCapacity())
	assert.NotEqual(t, capacity.FromLog, r.KVTokens.Source, "the 0.9 run's log is not this run's")
	assert.Less(t, r.KVTokens.V, 500000)
}

// A restart the user asked for is no verdict while the scrape windows span it; one that
// happens on its own is.
func TestOwnRestartIsNoVerdict(t *testing.T) {
	d := sized(t)
	first := d.send(scrapeTickMsg{gen: 0})().(scrapeResultMsg)
	d.send(first)
	s := &d.m.c.s
	s.fast = &scrape.Window{Restarted: true}
	d.m.judge()
	assert.True(t, hasRule(s.verdicts, diagnose.RuleRestarted), "a restart nobody asked for")

	require.NotNil(t, d.press("u", "enter", "enter"))
	d.send(restartDoneMsg{util: 0.91})
	s.fast = &scrape.Window{Restarted: true}
	s.held = nil
	d.m.judge()
	assert.False(t, hasRule(s.verdicts, diagnose.RuleRestarted), "the restart asked for")

	s.fast = &scrape.Window{}
	d.m.judge()
	s.fast = &scrape.Window{Restarted: true}
	s.held = nil
	d.m.judge()
	assert.True(t, hasRule(s.verdicts, diagnose.RuleRestarted), "a later restart is the server's own again")
}

func hasRule(vs []diagnose.Verdict, rule string) bool {
	for _, v := range vs {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

// A supervised server that exited is called so, though its port refuses connections too.
func TestExitedServerIsNotJustUnreachable(t *testing.T) {
	d := sized(t)
	d.td.sup.setStatus(func(st *server.Status) {
		st.State, st.Exit, st.Unreachable = server.Exited, server.ExitStatus{Code: 0}, "connection refused"
	})
	d.send(serverEventsMsg{events: []server.Event{server.StateChanged{State: server.Exited}}})
	d.td.scr.err = errors.New("connection refused")
	d.second()
	head := strings.SplitN(d.view(), "\n", 2)[0]
	assert.Contains(t, head, "exited (exit status 0)")
	assert.NotContains(t, head, "unreachable")
}

// The restart question holds the keyboard: a dashboard key waits for its answer rather than
// act under it. With no utilisation pending it asks to restart the server as it is, and the
// footer does not offer enter as if one were pending.
func TestRestartQuestionHoldsTheKeys(t *testing.T) {
	d := sized(t)
	d.m.c.s.util, d.m.c.s.pendingUtil = 0.90, 0.90
	assert.NotContains(t, d.view(), "enter restart with pending util", "nothing is pending")
	d.press("enter")
	require.Equal(t, phaseConfirming, d.m.c.s.phase)
	assert.Contains(t, d.view(), "restart the server as it is (--gpu-memory-utilization 0.90)?")
	conc := d.m.c.s.concurrency
	d.press(" ")
	d.press("+")
	assert.False(t, d.td.load.isPaused(), "space did not pause the load under the question")
	assert.Equal(t, conc, d.m.c.s.concurrency, "+ did not change the load under the question")
	assert.Equal(t, phaseConfirming, d.m.c.s.phase, "the question is still up")
	d.press("5")
	assert.Equal(t, "Capacity", d.activeView(), "a view can be looked at before answering")
	d.press("?")
	assert.True(t, d.m.showHelp, "and the help")
	d.press("esc")
	assert.False(t, d.m.showHelp)
	assert.Equal(t, phaseConfirming, d.m.c.s.phase, "esc closed the help, not the question")
	d.press("esc")
	assert.Equal(t, phaseIdle, d.m.c.s.phase)

	d.press("u")
	assert.Contains(t, d.view(), "pending --gpu-memory-utilization 0.89 (enter restarts)")
	d.press("enter")
	assert.Contains(t, d.view(), "restart the server with --gpu-memory-utilization 0.89 (now 0.90)?")
}

// A dashboard started with no load says so, and which key starts one.
func TestNoLoadAtStartIsSaid(t *testing.T) {
	d := newDriver(t, 120, 40, func(dp *Deps) { dp.InitialConc = 0 })
	assert.Contains(t, d.view(), "no load: --max-concurrency 0 sends nothing until + or ] starts it")
	d = newDriver(t, 120, 40, func(dp *Deps) { dp.InitialConc = 4 })
	assert.NotContains(t, d.view(), "no load")
}

// The help lists only keys that act: attached, the utilisation, restart and sweep keys and
// (without one) the canary's only say they cannot, and a trace replay's load keys likewise.
func TestHelpLeavesOutKeysThatOnlyRefuse(t *testing.T) {
	d := newDriver(t, 200, 60, func(dp *Deps) { dp.Mode, dp.RestartDisabled = ModeAttach, true })
	d.press("?")
	out := d.view()
	for _, gone := range []string{"util −/+ 0.01", "restart with it", "util sweep", "canary"} {
		assert.NotContains(t, out, gone)
	}
	assert.Contains(t, out, "SLO search", "the search runs on an attached server's load")
	d.press("esc")
	d.press("u")
	assert.Contains(t, d.m.c.s.status, "cannot be changed from here", "the key still says why")
}
