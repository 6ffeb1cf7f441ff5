package tui

import (
	"io"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/vllmtop/vllmtop/themes"
)

// SeriesStyle is how one line of a chart is told apart: its colour, and the glyph that stands
// for it without colour (in the plot and in the legend).
type SeriesStyle struct {
	Style lipgloss.Style
	Glyph string // the NO_COLOR plot mark and legend mark: "*", "+", "x", ...
	Mark  string // the legend mark with colour: "━"
}

// Styles are every style the dashboard uses, built from a theme in one place. Panels read them
// and never build styles of their own.
type Styles struct {
	Theme   themes.Theme
	NoColor bool // no colour at all: attributes (bold, underline, reverse) and glyphs instead

	Base, Muted, Title, Label, Value lipgloss.Style
	Good, Warn, Bad                  lipgloss.Style
	Tab, TabOn                       lipgloss.Style
	Selected                         lipgloss.Style // the cursor row
	Picked                           lipgloss.Style // a run picked for comparison
	Confirm                          lipgloss.Style
	Axis, Rule                       lipgloss.Style // chart axes and epoch rules
	Series                           []SeriesStyle
	// Heat styles a streamed token by its gap against the request's median gap, short to long;
	// HeatGlyphs stand for the same levels in the legend and the gap sparkline.
	Heat       []lipgloss.Style
	HeatGlyphs []string
	Help       help.Styles
}

// noColorGlyphs mark chart series when there is no colour: ASCII, one cell in every terminal.
var noColorGlyphs = []string{"*", "+", "x", "o", "#", "="}

// NewStyles builds the styles of a theme. With noColor (NO_COLOR set) no colour is used at all,
// and attributes are rendered even though the terminal was told not to colour: termenv drops
// bold, underline and reverse along with colour under NO_COLOR, and the current tab and the
// cursor need them.
func NewStyles(t themes.Theme, noColor bool) Styles {
	newStyle := lipgloss.NewStyle
	if noColor {
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.ANSI)
		newStyle = r.NewStyle
	}
	fg := func(c string) lipgloss.Style {
		if noColor || c == "" {
			return newStyle()
		}
		return newStyle().Foreground(lipgloss.Color(c))
	}
	s := Styles{
		Theme:    t,
		NoColor:  noColor,
		Base:     fg(t.Fg),
		Muted:    fg(t.FgMuted),
		Title:    fg(t.Accent).Bold(true),
		Label:    fg(t.FgMuted),
		Value:    fg(t.Fg).Bold(true),
		Good:     fg(t.Good),
		Warn:     fg(t.Warn),
		Bad:      fg(t.Bad).Bold(true),
		Tab:      fg(t.FgMuted),
		TabOn:    fg(t.Accent).Bold(true).Underline(!noColor).Reverse(noColor),
		Selected: fg(t.Fg).Reverse(true),
		Picked:   fg(t.Accent).Bold(true),
		Axis:     fg(t.FgMuted),
		Rule:     fg(t.BorderFocus),
	}
	s.Confirm = s.Warn.Bold(true)
	for i, c := range t.Series {
		s.Series = append(s.Series, SeriesStyle{Style: fg(c), Glyph: noColorGlyphs[i%len(noColorGlyphs)], Mark: "━"})
	}
	if noColor {
		for i := range s.Series {
			s.Series[i].Mark = s.Series[i].Glyph
		}
		// Without colour the slow gaps are told apart by attributes; the usual ones stay plain.
		plain := newStyle()
		s.Heat = []lipgloss.Style{plain, plain, plain, plain.Underline(true), plain.Reverse(true)}
	} else {
		for _, c := range t.Heat {
			s.Heat = append(s.Heat, fg(c))
		}
	}
	s.HeatGlyphs = []string{"▁", "▂", "▄", "▆", "█"}
	s.Help = help.Styles{
		ShortKey:       fg(t.Accent),
		ShortDesc:      fg(t.FgMuted),
		ShortSeparator: fg(t.Border),
		Ellipsis:       fg(t.FgMuted),
		FullKey:        fg(t.Accent).Bold(noColor),
		FullDesc:       fg(t.Fg),
		FullSeparator:  fg(t.Border),
	}
	return s
}

// series is the style of chart series i.
func (s *Styles) series(i int) SeriesStyle {
	if len(s.Series) == 0 {
		return SeriesStyle{Style: s.Base, Glyph: noColorGlyphs[i%len(noColorGlyphs)], Mark: "━"}
	}
	return s.Series[i%len(s.Series)]
}
