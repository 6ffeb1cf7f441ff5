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

// tabs are the views in order. Their keys (1, 2, ...), the tab line and tab/shift+tab come from
// this list: a view is added with its file and one line here.
var tabs = []tab{
	{"Overview", newOverview, false},
	{"Stream", newStream, true},
	{"Log", newLogPanel, false},
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
