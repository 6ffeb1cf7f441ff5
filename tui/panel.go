package tui

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// panel is one part of the screen, after soft-serve's component contract: it is sized by the
// root, takes messages (keys only while it is the active tab), draws itself from the shared
// state into a cached string (View is cheap: it runs after every message), and lists its own
// keys, which the footer and the help show beside the global ones.
type panel interface {
	help.KeyMap
	SetSize(width, height int)
	Update(msg tea.Msg) tea.Cmd
	View() string
}

// capturer is a panel that takes every key while Capturing (a text field being typed into),
// so typing "q" in a filter does not quit.
type capturer interface{ Capturing() bool }

// tab is a view in the tab line.
type tab struct {
	name string
	make func(*common) panel
	// ownLoad: the view shows the dashboard's own load (its requests, its tuning runs), which
	// a fleet does not have, so fleet mode leaves it out.
	ownLoad bool
}

// tabs are the views in order. Their keys (1, 2, ...), the tab line, tab/shift+tab and the
// help come from this list, and the golden views test each one (go test ./tui -update writes
// a new view's files): a view is added with its file and one line here. The root addresses a
// panel by its name, never by its place.
var tabs = []tab{
	{overviewTab, newOverview, false},
	{streamTab, newStream, true},
	{logTab, newLogPanel, false},
	{"Runs", newRuns, false},
	{"Capacity", newCapacity, false},
	{curvesTab, newCurves, true},
}

// viewKeys are the number keys of the tabs.
func viewKeys() []key.Binding { return viewKeysOf(tabs) }

// viewKeysOf are the number keys of a list of tabs.
func viewKeysOf(tabs []tab) []key.Binding {
	out := make([]key.Binding, len(tabs))
	for i, t := range tabs {
		k := string(rune('1' + i))
		out[i] = key.NewBinding(key.WithKeys(k), key.WithHelp(k, t.name))
	}
	return out
}

// noKeys is embedded by panels without keys of their own.
type noKeys struct{}

func (noKeys) ShortHelp() []key.Binding  { return nil }
func (noKeys) FullHelp() [][]key.Binding { return nil }

// panelMsg is a message for one panel, by the name of its tab: what a panel's command answers
// (a text field's blink) goes back to that panel, whichever view is active by then.
type panelMsg struct {
	to  string
	msg tea.Msg
}

// rootMsg is a message a panel's command sends the root (a drill-down), not itself.
type rootMsg interface{ forRoot() }

// addressed makes the messages of cmd panelMsgs to the panel named to; the root's own pass
// as they are, and a batch's commands are addressed in turn.
func addressed(to string, cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		switch msg := cmd().(type) {
		case nil:
			return nil
		case tea.BatchMsg:
			out := make(tea.BatchMsg, len(msg))
			for i, c := range msg {
				out[i] = addressed(to, c)
			}
			return out
		case rootMsg:
			return msg
		default:
			return panelMsg{to: to, msg: msg}
		}
	}
}

// view is the index of the view named name in this dashboard's tabs, -1 when it has none
// (fleet mode leaves some out).
func (m *Model) view(name string) int {
	for i, t := range m.tabs {
		if t.name == name {
			return i
		}
	}
	return -1
}

// send hands msg to the panel named to, when the dashboard has it; what its command answers
// comes back to it.
func (m *Model) send(to string, msg tea.Msg) tea.Cmd {
	i := m.view(to)
	if i < 0 {
		return nil
	}
	return addressed(to, m.panels[i].Update(msg))
}

// toActive hands msg (a key) to the active panel.
func (m *Model) toActive(msg tea.Msg) tea.Cmd { return m.send(m.tabs[m.active].name, msg) }

// show makes the view named name the active one, when the dashboard has it.
func (m *Model) show(name string) {
	if i := m.view(name); i >= 0 {
		m.setView(i)
	}
}

// viewKey is the key that shows the view named name, "" when the dashboard has none.
func (m *Model) viewKey(name string) string {
	if i := m.view(name); i >= 0 {
		return m.keys.Views[i].Help().Key
	}
	return ""
}
