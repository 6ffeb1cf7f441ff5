package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// KeyMap is the keys the dashboard answers whichever view is active; each panel has its own
// besides (its ShortHelp and FullHelp).
type KeyMap struct {
	NextView, PrevView                       key.Binding
	Views                                    []key.Binding // 1, 2, ... from the tab list
	More, Less, Double, Halve                key.Binding
	RateMode, Pause, PromptLen               key.Binding
	UtilDown, UtilUp, UtilDownBig, UtilUpBig key.Binding
	Restart, Confirm, Cancel                 key.Binding
	Theme, Help, Quit, ForceQuit             key.Binding
	Prefix                                   key.Binding
	Tune                                     tuneKeys
	Canary, Record                           key.Binding
}

func binding(keys []string, k, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
}

// DefaultKeyMap returns the dashboard's global keys.
func DefaultKeyMap() KeyMap {
	b := binding
	return KeyMap{
		NextView:    b([]string{"tab"}, "tab", "next view"),
		PrevView:    b([]string{"shift+tab"}, "shift+tab", "previous view"),
		Views:       viewKeys(),
		More:        b([]string{"+", "="}, "+", "load +1"),
		Less:        b([]string{"-", "_"}, "-", "load -1"),
		Double:      b([]string{"]"}, "]", "load x2"),
		Halve:       b([]string{"["}, "[", "load /2"),
		RateMode:    b([]string{"r"}, "r", "rate / concurrency"),
		Pause:       b([]string{" "}, "space", "pause / resume load"),
		PromptLen:   b([]string{"p"}, "p", "short / long prompts"),
		UtilDown:    b([]string{"u"}, "u", "gpu util -0.01"),
		UtilUp:      b([]string{"U"}, "U", "gpu util +0.01"),
		UtilDownBig: b([]string{"ctrl+u"}, "ctrl+u", "gpu util -0.05"),
		UtilUpBig:   b([]string{"ctrl+y"}, "ctrl+y", "gpu util +0.05"),
		Restart:     b([]string{"enter"}, "enter", "restart with pending util"),
		Confirm:     b([]string{"enter", "y"}, "enter/y", "confirm restart"),
		Cancel:      b([]string{"esc", "n"}, "esc/n", "cancel restart"),
		Theme:       b([]string{"t"}, "t", "next theme"),
		Help:        b([]string{"?"}, "?", "help"),
		Quit:        b([]string{"q"}, "q", "quit (twice: force)"),
		ForceQuit:   b([]string{"ctrl+c"}, "ctrl+c", "force quit"),
		Prefix:      b([]string{"P"}, "P", "shared prefix on / off"),
		Tune:        defaultTuneKeys(),
		Canary:      b([]string{"C"}, "C", "canary probe on / off"),
		Record:      b([]string{"B"}, "B", "write a flight-recorder bundle"),
	}
}

// ShortHelp is the footer's part of the global keys, most useful first; "? help" and "q quit"
// are the footer's own and always shown.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.NextView, k.More, k.Less, k.Pause, k.UtilDown, k.Restart}
}

// FullHelp is the global part of the ? overlay, in groups.
func (k KeyMap) FullHelp() [][]key.Binding {
	views := append([]key.Binding{k.NextView, k.PrevView}, k.Views...)
	return [][]key.Binding{
		views,
		{k.More, k.Less, k.Double, k.Halve, k.RateMode, k.Pause, k.PromptLen, k.Prefix},
		{k.UtilDown, k.UtilUp, k.UtilDownBig, k.UtilUpBig, k.Restart},
		{k.Theme, k.Help, k.Quit, k.ForceQuit},
		{k.Tune.Search, k.Tune.Sweep, k.Tune.Export},
		{k.Canary, k.Record},
	}
}

// splitKeys turns a key message that carries several runes (keys typed faster than the
// terminal is read, auto-repeat, a paste) into one message per rune, so "+++" is three presses,
// not one unknown key. A single key comes back as it is.
func splitKeys(msg tea.KeyMsg) []tea.KeyMsg {
	if msg.Type != tea.KeyRunes || len(msg.Runes) <= 1 {
		return []tea.KeyMsg{msg}
	}
	out := make([]tea.KeyMsg, 0, len(msg.Runes))
	for _, r := range msg.Runes {
		k := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}
		if r == ' ' {
			k.Type = tea.KeySpace
		}
		out = append(out, k)
	}
	return out
}

// moveKeys move through a panel's lines or rows; top and bottom are their help.
type moveKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
}

func newMoveKeys(top, bottom string) moveKeys {
	b := binding
	return moveKeys{
		Up:       b([]string{"up", "k"}, "↑/k", "up"),
		Down:     b([]string{"down", "j"}, "↓/j", "down"),
		PageUp:   b([]string{"pgup", "ctrl+b"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown", "ctrl+f"}, "pgdn", "page down"),
		Top:      b([]string{"home", "g"}, "g/home", top),
		Bottom:   b([]string{"end", "G"}, "G/end", bottom),
	}
}

// list is the keys in the order the help shows them.
func (k moveKeys) list() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}
}

// moved is where msg moves a cursor at row i of n, a page being page rows; ok is false when
// msg is not one of these keys.
func (k moveKeys) moved(msg tea.KeyMsg, i, n, page int) (to int, ok bool) {
	switch {
	case key.Matches(msg, k.Up):
		to = i - 1
	case key.Matches(msg, k.Down):
		to = i + 1
	case key.Matches(msg, k.PageUp):
		to = i - page
	case key.Matches(msg, k.PageDown):
		to = i + page
	case key.Matches(msg, k.Top):
		to = 0
	case key.Matches(msg, k.Bottom):
		to = n - 1
	default:
		return i, false
	}
	return min(max(to, 0), n-1), true
}
