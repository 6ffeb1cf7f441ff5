package tui

import (
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
)

// driver runs a dashboard on fakes and a fake clock, as the program would: it sends messages
// to Update and runs the commands a scrape needs, so views are the same on every run.
type driver struct {
	t  *testing.T
	m  *Model
	td testDeps
}

func newDriver(t *testing.T, w, h int, edit ...func(*Deps)) *driver {
	t.Helper()
	td := newTestDeps(t)
	for _, e := range edit {
		e(&td.deps)
	}
	d := &driver{t: t, m: New(td.deps), td: td}
	d.m.Init()
	d.send(tea.WindowSizeMsg{Width: w, Height: h})
	return d
}

func (d *driver) send(msg tea.Msg) tea.Cmd {
	d.t.Helper()
	next, cmd := d.m.Update(msg)
	require.Same(d.t, d.m, next, "the root model is one value, changed in place")
	return cmd
}

// key is a key message as the terminal sends it.
func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "space":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "ctrl+u":
		return tea.KeyMsg{Type: tea.KeyCtrlU}
	case "ctrl+y":
		return tea.KeyMsg{Type: tea.KeyCtrlY}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "home":
		return tea.KeyMsg{Type: tea.KeyHome}
	case "end":
		return tea.KeyMsg{Type: tea.KeyEnd}
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// press sends each key on its own and returns the last command.
func (d *driver) press(keys ...string) tea.Cmd {
	d.t.Helper()
	var cmd tea.Cmd
	for _, k := range keys {
		cmd = d.send(keyMsg(k))
	}
	return cmd
}

// second advances the clock by one second in UI ticks (four, or one in fleet mode), with a
// scrape at its end run as the program runs it (its command, then its result).
func (d *driver) second() {
	d.t.Helper()
	every := uiIntervalFor(d.m.c.deps)
	for i := 0; i < int(time.Second/every); i++ {
		*d.td.clock = d.td.clock.Add(every)
		d.send(uiTickMsg{gen: d.m.tickGen, at: *d.td.clock})
	}
	d.scrape()
}

func (d *driver) scrape() {
	d.t.Helper()
	cmd := d.send(scrapeTickMsg{gen: d.m.scrapeGen})
	require.NotNil(d.t, cmd)
	d.send(cmd())
}

// requests finishes n requests at the fake clock with the given TTFT.
func (d *driver) requests(n int, ttft time.Duration) {
	for i := 0; i < n; i++ {
		d.td.load.result(loadgen.Result{Start: d.td.clock.Add(-1200 * time.Millisecond), TTFT: ttft + time.Duration(i)*time.Millisecond,
			E2EL: 1200 * time.Millisecond, OutputTokens: 128, PromptTokens: 256, ITLs: []time.Duration{9 * time.Millisecond, 9 * time.Millisecond, 10 * time.Millisecond}})
	}
}

// logs hands the dashboard log lines as the supervisor batches them; they show at the next
// tick.
func (d *driver) logs(lines ...string) {
	var batch server.LogBatch
	for i, l := range lines {
		batch.Lines = append(batch.Lines, server.Line{Seq: uint64(i + 1), Run: 1, Time: *d.td.clock, Raw: l, Text: l})
	}
	d.send(serverEventsMsg{events: []server.Event{batch}})
}

func (d *driver) view() string { return d.m.View() }

// showView presses the key of the view named name, as a user would.
func (d *driver) showView(name string) {
	d.t.Helper()
	k := d.m.viewKey(name)
	require.NotEmpty(d.t, k, "the dashboard has a %s view", name)
	d.press(k)
	require.Equal(d.t, name, d.activeView())
}

// activeView is the name of the view shown.
func (d *driver) activeView() string { return d.m.tabs[d.m.active].name }

// panel is the dashboard's panel of type T.
func panelOf[T panel](d *driver) T {
	for _, p := range d.m.panels {
		if x, ok := p.(T); ok {
			return x
		}
	}
	var zero T
	d.t.Fatalf("no panel of type %T", zero)
	return zero
}

// scriptedWatch is a watched request whose view the test writes.
type scriptedWatch struct{ v loadgen.WatchedView }

func (s *scriptedWatch) View(from int) loadgen.WatchedView {
	v := s.v
	if from < len(v.Tokens) {
		v.Tokens = append([]loadgen.WatchedToken(nil), v.Tokens[from:]...)
	} else {
		v.Tokens = nil
	}
	return v
}
