package tui

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every key the dashboard answers.
type KeyMap struct {
	NextView, View1, View2, View3, View4, View5 key.Binding
	More, Less, Double, Halve                   key.Binding
	RateMode, Pause                             key.Binding
	UtilDown, UtilUp, UtilDownBig, UtilUpBig    key.Binding
	Restart, Cancel                             key.Binding
	Watch, PromptLen                            key.Binding
	Theme, Help, Quit, ForceQuit                key.Binding
	Up, Down, Select, Follow, Filter            key.Binding
}

// DefaultKeyMap returns the dashboard's keys.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return KeyMap{
		NextView:    b([]string{"tab"}, "tab", "next view"),
		View1:       b([]string{"1"}, "1", "overview"),
		View2:       b([]string{"2"}, "2", "stream"),
		View3:       b([]string{"3"}, "3", "log"),
		View4:       b([]string{"4"}, "4", "runs"),
		View5:       b([]string{"5"}, "5", "capacity"),
		More:        b([]string{"+", "="}, "+", "load +1"),
		Less:        b([]string{"-", "_"}, "-", "load -1"),
		Double:      b([]string{"]"}, "]", "load x2"),
		Halve:       b([]string{"["}, "[", "load /2"),
		RateMode:    b([]string{"r"}, "r", "rate/concurrency"),
		Pause:       b([]string{" "}, "space", "pause/resume load"),
		UtilDown:    b([]string{"u"}, "u", "gpu util -0.01"),
		UtilUp:      b([]string{"U"}, "U", "gpu util +0.01"),
		UtilDownBig: b([]string{"ctrl+u"}, "ctrl+u", "gpu util -0.05"),
		UtilUpBig:   b([]string{"ctrl+y"}, "ctrl+y", "gpu util +0.05"),
		Restart:     b([]string{"enter"}, "enter", "restart with pending util"),
		Cancel:      b([]string{"esc"}, "esc", "cancel"),
		Watch:       b([]string{"w"}, "w", "watch a new request"),
		PromptLen:   b([]string{"p"}, "p", "short/long prompts"),
		Theme:       b([]string{"t"}, "t", "next theme"),
		Help:        b([]string{"?"}, "?", "help"),
		Quit:        b([]string{"q"}, "q", "quit (twice: force)"),
		ForceQuit:   b([]string{"ctrl+c"}, "ctrl+c", "force quit"),
		Up:          b([]string{"up", "k"}, "↑/k", "up"),
		Down:        b([]string{"down", "j"}, "↓/j", "down"),
		Select:      b([]string{"x"}, "x", "select run to compare"),
		Follow:      b([]string{"f"}, "f", "follow log"),
		Filter:      b([]string{"/"}, "/", "filter log"),
	}
}

// ShortHelp is the status-bar help.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.NextView, k.More, k.Less, k.Pause, k.UtilDown, k.Restart, k.Help, k.Quit}
}

// FullHelp is the ? overlay.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.NextView, k.View1, k.View2, k.View3, k.View4, k.View5},
		{k.More, k.Less, k.Double, k.Halve, k.RateMode, k.Pause},
		{k.UtilDown, k.UtilUp, k.UtilDownBig, k.UtilUpBig, k.Restart, k.Cancel},
		{k.Watch, k.PromptLen, k.Up, k.Down, k.Select, k.Follow, k.Filter},
		{k.Theme, k.Help, k.Quit, k.ForceQuit},
	}
}
