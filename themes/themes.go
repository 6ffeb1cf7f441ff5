// Package themes holds the dashboard's colour palettes as data: semantic roles, not widget
// colours. Styles are built from a Theme elsewhere (tui.NewStyles); nothing here is mutable.
package themes

import (
	"sort"
	"strings"
)

// Theme is a palette of semantic roles. Colours are lipgloss colour strings ("#rrggbb" or
// an ANSI-256 number).
type Theme struct {
	Name        string
	Fg          string // body text
	FgMuted     string // labels, axes, secondary text
	Bg          string // "" keeps the terminal's background
	Accent      string // titles, the selected tab
	Border      string
	BorderFocus string
	Good        string // ready, healthy, within objectives
	Warn        string // loading, degraded, near a limit
	Bad         string // failed, exited, over a limit
	// Series colours chart lines in order (p50, p90, p99, ...); at least four.
	Series []string
	// Heat colours the token stream from short to long inter-token gaps.
	Heat []string
}

var registry = map[string]Theme{
	"dark": {
		Name: "dark", Fg: "#d0d0d0", FgMuted: "#808080", Accent: "#5fafff", Border: "#444444", BorderFocus: "#5fafff",
		Good: "#5fd75f", Warn: "#ffd75f", Bad: "#ff5f5f",
		Series: []string{"#5fafff", "#ffaf5f", "#ff5f87", "#87d787", "#af87ff"},
		Heat:   []string{"#5fd75f", "#afd75f", "#ffd75f", "#ffaf5f", "#ff5f5f"},
	},
	"light": {
		Name: "light", Fg: "#262626", FgMuted: "#6c6c6c", Accent: "#005fd7", Border: "#bcbcbc", BorderFocus: "#005fd7",
		Good: "#008700", Warn: "#af8700", Bad: "#d70000",
		Series: []string{"#005fd7", "#d75f00", "#d7005f", "#008700", "#8700af"},
		Heat:   []string{"#008700", "#5f8700", "#af8700", "#d75f00", "#d70000"},
	},
	"high-contrast": {
		Name: "high-contrast", Fg: "#ffffff", FgMuted: "#d0d0d0", Accent: "#00ffff", Border: "#ffffff", BorderFocus: "#ffff00",
		Good: "#00ff00", Warn: "#ffff00", Bad: "#ff0000",
		Series: []string{"#00ffff", "#ffff00", "#ff00ff", "#00ff00", "#ffffff"},
		Heat:   []string{"#00ff00", "#ffff00", "#ff8700", "#ff0000", "#ff00ff"},
	},
	// Okabe-Ito: distinguishable with the common colour-vision deficiencies.
	"colorblind": {
		Name: "colorblind", Fg: "#e0e0e0", FgMuted: "#9e9e9e", Accent: "#56b4e9", Border: "#5f5f5f", BorderFocus: "#56b4e9",
		Good: "#009e73", Warn: "#f0e442", Bad: "#d55e00",
		Series: []string{"#56b4e9", "#e69f00", "#cc79a7", "#009e73", "#f0e442"},
		Heat:   []string{"#0072b2", "#56b4e9", "#f0e442", "#e69f00", "#d55e00"},
	},
}

// Default is the theme used unless one is chosen.
const Default = "dark"

// ByName finds a theme, ignoring case.
func ByName(name string) (Theme, bool) {
	t, ok := registry[strings.ToLower(name)]
	return t, ok
}

// Names lists the themes in a stable order, the default first.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		if n != Default {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return append([]string{Default}, names...)
}

// Next is the theme after name in Names (for cycling with a key).
func Next(name string) Theme {
	names := Names()
	for i, n := range names {
		if n == name {
			return registry[names[(i+1)%len(names)]]
		}
	}
	return registry[Default]
}
