package tui

import (
	"os"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/vllmtop/vllmtop/themes"
)

// Styles are every style the dashboard uses, built from a theme in one place.
type Styles struct {
	Theme    themes.Theme
	Base     lipgloss.Style
	Muted    lipgloss.Style
	Title    lipgloss.Style
	Tab      lipgloss.Style
	TabOn    lipgloss.Style
	Panel    lipgloss.Style
	Label    lipgloss.Style
	Value    lipgloss.Style
	Good     lipgloss.Style
	Warn     lipgloss.Style
	Bad      lipgloss.Style
	Status   lipgloss.Style
	Confirm  lipgloss.Style
	Series   []lipgloss.Style
	Heat     []lipgloss.Style
	Selected lipgloss.Style
	Help     help.Styles
}

// NewStyles builds the styles of a theme. With NO_COLOR set, every style is plain.
func NewStyles(t themes.Theme) Styles {
	plain := os.Getenv("NO_COLOR") != ""
	fg := func(c string) lipgloss.Style {
		if plain || c == "" {
			return lipgloss.NewStyle()
		}
		return lipgloss.NewStyle().Foreground(lipgloss.Color(c))
	}
	s := Styles{
		Theme:  t,
		Base:   fg(t.Fg),
		Muted:  fg(t.FgMuted),
		Title:  fg(t.Accent).Bold(true),
		Tab:    fg(t.FgMuted).Padding(0, 1),
		TabOn:  fg(t.Accent).Bold(true).Underline(true).Padding(0, 1),
		Panel:  lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color(t.Border)),
		Label:  fg(t.FgMuted),
		Value:  fg(t.Fg).Bold(true),
		Good:   fg(t.Good),
		Warn:   fg(t.Warn),
		Bad:    fg(t.Bad).Bold(true),
		Status: fg(t.FgMuted),
	}
	if plain {
		s.Panel = lipgloss.NewStyle().Border(lipgloss.RoundedBorder())
	}
	s.Confirm = s.Warn.Bold(true)
	s.Selected = s.Base.Reverse(true)
	for _, c := range t.Series {
		s.Series = append(s.Series, fg(c))
	}
	for _, c := range t.Heat {
		s.Heat = append(s.Heat, fg(c))
	}
	s.Help = help.Styles{
		ShortKey:       fg(t.Accent),
		ShortDesc:      fg(t.FgMuted),
		ShortSeparator: fg(t.Border),
		Ellipsis:       fg(t.FgMuted),
		FullKey:        fg(t.Accent),
		FullDesc:       fg(t.Fg),
		FullSeparator:  fg(t.Border),
	}
	return s
}
