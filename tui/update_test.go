package tui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/server"
)

func press(t *testing.T, m Model, keys ...string) (Model, tea.Cmd) {
	t.Helper()
	var cmd tea.Cmd
	for _, k := range keys {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		case "space":
			msg = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
		case "ctrl+c":
			msg = tea.KeyMsg{Type: tea.KeyCtrlC}
		case "ctrl+u":
			msg = tea.KeyMsg{Type: tea.KeyCtrlU}
		case "ctrl+y":
			msg = tea.KeyMsg{Type: tea.KeyCtrlY}
		case "up":
			msg = tea.KeyMsg{Type: tea.KeyUp}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		var next tea.Model
		next, cmd = m.Update(msg)
		m = next.(Model)
	}
	return m, cmd
}

func sized(t *testing.T) (Model, testDeps) {
	td := newTestDeps(t)
	m := New(td.deps)
	next, _ := m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	return next.(Model), td
}

func TestLoadKeys(t *testing.T) {
	m, td := sized(t)
	m, _ = press(t, m, "+", "+")
	assert.Equal(t, 6, m.concurrency)
	assert.Equal(t, 6, td.load.concurrency)
	m, _ = press(t, m, "-")
	assert.Equal(t, 5, td.load.concurrency)
	m, _ = press(t, m, "]")
	assert.Equal(t, 10, td.load.concurrency)
	m, _ = press(t, m, "[", "[", "[", "[", "[")
	assert.Equal(t, 0, td.load.concurrency, "halving stops at zero")
	m, _ = press(t, m, "-")
	assert.Equal(t, 0, td.load.concurrency, "never negative")
	epochsBefore := len(m.runs)
	m, _ = press(t, m, "r")
	assert.True(t, m.rateMode)
	assert.Equal(t, 1.0, td.load.rate, "rate mode starts at 1 req/s")
	m, _ = press(t, m, "+", "]")
	assert.Equal(t, 4.0, td.load.rate)
	m, _ = press(t, m, "[", "-")
	assert.Equal(t, 1.0, td.load.rate)
	assert.Equal(t, epochsBefore+5, len(m.runs), "every load change is an epoch")
	m, _ = press(t, m, "r")
	assert.False(t, m.rateMode)
	assert.Equal(t, 0, td.load.concurrency)

	m, _ = press(t, m, "space")
	assert.True(t, td.load.paused)
	assert.True(t, m.paused)
	m, _ = press(t, m, "space")
	assert.False(t, td.load.paused)
}

func TestViewKeys(t *testing.T) {
	m, _ := sized(t)
	for i, k := range []string{"2", "3", "4", "5", "1"} {
		m, _ = press(t, m, k)
		assert.Equal(t, (i+1)%numViews, m.view, k)
	}
	m, _ = press(t, m, "tab", "tab")
	assert.Equal(t, viewLog, m.view)
	m, _ = press(t, m, "?")
	assert.True(t, m.showHelp)
	m, _ = press(t, m, "esc")
	assert.False(t, m.showHelp)
	before := m.theme.Name
	m, _ = press(t, m, "t")
	assert.NotEqual(t, before, m.theme.Name)
}

func TestRestartNeedsConfirmation(t *testing.T) {
	m, td := sized(t)
	m, _ = press(t, m, "u", "u", "U")
	assert.InDelta(t, 0.91, m.pendingUtil, 1e-9)
	m, _ = press(t, m, "ctrl+u")
	assert.InDelta(t, 0.86, m.pendingUtil, 1e-9)
	m, _ = press(t, m, "ctrl+y", "ctrl+y", "ctrl+y")
	assert.InDelta(t, 1.0, m.pendingUtil, 1e-9, "capped at 1")
	m, _ = press(t, m, "ctrl+u", "ctrl+u")
	assert.InDelta(t, 0.90, m.pendingUtil, 1e-9)

	m, cmd := press(t, m, "enter")
	assert.True(t, m.confirming)
	assert.Nil(t, cmd, "nothing happens before the confirmation")
	assert.Contains(t, m.View(), "restart the server with --gpu-memory-utilization 0.90 (now 0.92)?")
	m, _ = press(t, m, "esc")
	assert.False(t, m.confirming)
	assert.InDelta(t, 0.92, m.pendingUtil, 1e-9, "cancel drops the pending value")
	assert.Empty(t, td.sup.restarts)

	m, _ = press(t, m, "u", "enter")
	epochs := len(m.runs)
	m, cmd = press(t, m, "enter")
	require.NotNil(t, cmd)
	assert.True(t, m.restarting)
	assert.True(t, td.load.paused, "the load pauses during a restart")
	assert.Equal(t, epochs+1, len(m.runs), "a restart is an epoch")
	msg := cmd()
	done, ok := msg.(restartDoneMsg)
	require.True(t, ok)
	require.Len(t, td.sup.restarts, 1)
	assert.Equal(t, server.Set("--gpu-memory-utilization", "0.91"), td.sup.restarts[0][0])
	next, _ := m.Update(done)
	m = next.(Model)
	assert.False(t, m.restarting)
	assert.InDelta(t, 0.91, m.util, 1e-9)
	assert.False(t, td.load.paused, "the load resumes")
}

func TestAttachModeCannotRestart(t *testing.T) {
	td := newTestDeps(t)
	td.deps.Mode, td.deps.RestartDisabled, td.deps.StartPaused = ModeAttach, true, true
	m := New(td.deps)
	m.Init()
	assert.True(t, td.load.paused, "attach mode starts with the load paused")
	next, _ := m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m = next.(Model)
	m, cmd := press(t, m, "u", "enter")
	assert.Nil(t, cmd)
	assert.False(t, m.confirming)
	assert.Contains(t, m.status, "attached")
	m, _ = press(t, m, "3")
	assert.Contains(t, m.View(), "log is not available")
	m, _ = press(t, m, "space")
	assert.False(t, td.load.paused, "space starts the load")
	_, cmd = press(t, m, "q")
	require.NotNil(t, cmd)
	assert.Equal(t, tea.Quit(), cmd(), "attached: q quits at once, nothing to stop")
	assert.False(t, td.sup.stopped)
}

func TestQuitStopsThenForces(t *testing.T) {
	m, td := sized(t)
	m, cmd := press(t, m, "q")
	require.NotNil(t, cmd)
	assert.Equal(t, 1, m.quitting)
	assert.True(t, td.load.paused, "the load stops first")
	assert.Contains(t, m.View(), "stopping the server")
	msg := cmd()
	_, ok := msg.(stopDoneMsg)
	require.True(t, ok)
	assert.True(t, td.sup.stopped)
	_, cmd = m.Update(msg)
	assert.Equal(t, tea.Quit(), cmd())

	m, td = sized(t)
	m, _ = press(t, m, "q")
	_, cmd = press(t, m, "q")
	assert.Equal(t, tea.Quit(), cmd(), "a second q forces")
	assert.True(t, td.sup.killed)

	m, td = sized(t)
	_, cmd = press(t, m, "ctrl+c")
	assert.Equal(t, tea.Quit(), cmd())
	assert.True(t, td.sup.killed)
}

func TestWatchAndPromptLengthKeys(t *testing.T) {
	m, td := sized(t)
	m, _ = press(t, m, "w")
	assert.Equal(t, 1, td.load.watches)
	assert.NotNil(t, m.watched)
	m, _ = press(t, m, "p")
	assert.True(t, m.longPrompts)
	require.NotNil(t, td.load.workload)
	assert.Equal(t, 4096, td.load.workload.Prompt(0).InputTokens)
	assert.Equal(t, 2, td.load.watches, "switching prompts watches the next request")
	m, _ = press(t, m, "p")
	assert.Equal(t, 256, td.load.workload.Prompt(0).InputTokens)
	assert.False(t, m.longPrompts)
}

func TestLogKeys(t *testing.T) {
	m, _ := sized(t)
	lines := []server.Line{{Seq: 1, Text: "INFO first", Raw: "INFO first"}, {Seq: 2, Text: "ERROR boom", Raw: "ERROR boom"}}
	next, cmd := m.Update(serverEventsMsg{events: []server.Event{server.LogBatch{Lines: lines, Dropped: 3}}})
	m = next.(Model)
	assert.NotNil(t, cmd, "the event reader is re-armed")
	m, _ = press(t, m, "3")
	assert.Contains(t, m.View(), "ERROR boom")
	assert.Contains(t, m.View(), "3 lines not shown live")
	m, _ = press(t, m, "f")
	assert.False(t, m.follow)
	m, _ = press(t, m, "/")
	assert.True(t, m.filtering)
	m, _ = press(t, m, "b", "o", "o", "m", "enter")
	assert.False(t, m.filtering)
	assert.Equal(t, "boom", m.filter.Value())
	v := m.View()
	assert.Contains(t, v, "ERROR boom")
	assert.NotContains(t, v, "INFO first")

	next, cmd = m.Update(serverEventsMsg{closed: true})
	assert.Nil(t, cmd, "a closed channel is not waited on again")
	assert.True(t, next.(Model).eventsClosed)
}

func TestRunsPickAndCompare(t *testing.T) {
	m, _ := sized(t)
	m, _ = press(t, m, "+", "+", "4", "down", "x", "down", "x")
	assert.Equal(t, []int{1, 2}, m.picked)
	assert.Contains(t, m.View(), "run 1 vs run 2")
	m, _ = press(t, m, "up", "up", "x")
	assert.Equal(t, []int{2, 0}, m.picked, "a third pick drops the oldest")
	m, _ = press(t, m, "x")
	assert.Equal(t, []int{2}, m.picked, "picking again unpicks")
}

func TestStaleTicksAreIgnored(t *testing.T) {
	m, _ := sized(t)
	_, cmd := m.Update(uiTickMsg{gen: 99, at: t0})
	assert.Nil(t, cmd, "a tick of an old chain does not re-arm")
	_, cmd = m.Update(uiTickMsg{gen: 0, at: t0})
	assert.NotNil(t, cmd)
	_, cmd = m.Update(scrapeTickMsg{gen: 5})
	assert.Nil(t, cmd)
}

func TestServerExitPausesTheLoad(t *testing.T) {
	m, td := sized(t)
	next, _ := m.Update(serverEventsMsg{events: []server.Event{server.StateChanged{State: server.Exited, Exit: server.ExitStatus{Code: 1, Cause: "ValueError: boom"}}}})
	m = next.(Model)
	assert.True(t, td.load.paused)
	assert.Contains(t, m.View(), "server exited: exit status 1: ValueError: boom (load paused)")
}

func TestQuitDuringRestartStopsAfterIt(t *testing.T) {
	m, td := sized(t)
	m, cmd := press(t, m, "u", "enter", "enter")
	require.NotNil(t, cmd)
	m, stop := press(t, m, "q")
	assert.Nil(t, stop, "nothing is stopped while the restart runs")
	assert.Equal(t, 1, m.quitting)
	next, stop := m.Update(cmd())
	require.NotNil(t, stop, "the stop follows the restart")
	_, ok := stop().(stopDoneMsg)
	assert.True(t, ok)
	assert.True(t, td.sup.stopped)
	_ = next
}

func TestFailedRestartKeepsTheLoadPaused(t *testing.T) {
	m, td := sized(t)
	m, cmd := press(t, m, "u", "enter", "enter")
	require.NotNil(t, cmd)
	next, _ := m.Update(restartDoneMsg{util: 0.91, err: assertErr("server exited before it was ready")})
	m = next.(Model)
	assert.True(t, td.load.paused)
	assert.True(t, m.paused)
	assert.Contains(t, m.status, "restart failed")
	assert.InDelta(t, 0.92, m.util, 1e-9, "the utilisation did not change")
}

type assertErr string

func (e assertErr) Error() string { return string(e) }

func TestOldRunsDropWithTheirPicks(t *testing.T) {
	m, _ := sized(t)
	for i := 0; i < 120; i++ {
		m, _ = press(t, m, "+")
		if i == 5 {
			m.pick(len(m.runs) - 1)
		}
	}
	m.pick(len(m.runs) - 1)
	assert.Len(t, m.runs, 100)
	require.Len(t, m.picked, 1, "the pick of a dropped run goes with it")
	assert.Equal(t, m.runs[99].Epoch, m.picked[0])
	assert.Equal(t, "C=124", m.runs[99].Settings)
	assert.Len(t, m.notes, 100, "the notes of dropped runs go too")
}

func TestPrintableDropsControls(t *testing.T) {
	assert.Equal(t, "a[31mred\nb]52;c;x", printable("a\x1b[31mred\nb\x1b]52;c;x\x07\u009b"))
}
