package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
)

// helpView is the ? overlay: the global keys and the active panel's, in blocks laid out to the
// width (so nothing is cut at any size), then what the screen's less obvious marks mean.
type helpView struct {
	c    *common
	w, h int
	top  int // the first line of the keys shown, where they are more than the screen has
}

// scroll moves the keys shown by n lines (negative: up), within what there is.
func (h *helpView) scroll(n int) { h.top = max(h.top+n, 0) }

func newHelpView(c *common) *helpView { return &helpView{c: c} }

func (h *helpView) SetSize(w, hh int) { h.w, h.h = w, hh }

// helpGroup is a titled block of keys.
type helpGroup struct {
	title string
	keys  []key.Binding
}

// globalHelp is the global keys of k as the help shows them: pairs on one line, to stay
// short, and only the keys that do something here (a fleet has no load and no server of its
// own, so it turns theirs off).
func globalHelp(k KeyMap) []helpGroup {
	var groups []helpGroup
	add := func(title string, entries ...helpEntry) {
		g := helpGroup{title: title}
		for _, e := range entries {
			var keys, descs []string
			for i, b := range e.of {
				if b.Enabled() {
					keys, descs = append(keys, b.Help().Key), append(descs, e.descs[i])
				}
			}
			switch {
			case len(keys) == len(e.of) && e.key != "":
				g.keys = append(g.keys, key.NewBinding(key.WithHelp(e.key, e.desc))) // all of them, in short
			case len(keys) > 0:
				g.keys = append(g.keys, key.NewBinding(key.WithHelp(strings.Join(keys, "/"), strings.Join(descs, e.sep))))
			}
		}
		if len(g.keys) > 0 {
			groups = append(groups, g)
		}
	}
	one := func(b key.Binding, desc string) helpEntry {
		return helpEntry{of: []key.Binding{b}, descs: []string{desc}}
	}
	tk := k.Tune
	add("views", helpEntry{of: []key.Binding{k.NextView, k.PrevView}, descs: []string{"next", "previous view"}, sep: " / ", key: "tab/shift+tab", desc: "next / previous view"},
		one(key.NewBinding(key.WithKeys("1"), key.WithHelp(fmt.Sprintf("1-%d", len(k.Views)), "")), "view by number"))
	add("load", helpEntry{of: []key.Binding{k.More, k.Less}, descs: []string{"load +1", "-1"}, sep: " / ", key: "+/-", desc: "load ±1"},
		helpEntry{of: []key.Binding{k.Double, k.Halve}, descs: []string{"load ×2", "÷2"}, sep: " / ", key: "]/[", desc: "load ×2 / ÷2"},
		one(k.RateMode, "rate / concurrency"), one(k.Pause, "pause / resume"), one(k.PromptLen, "short / long prompts"),
		one(k.Prefix, "shared prefix on / off"))
	add("server", helpEntry{of: []key.Binding{k.UtilDown, k.UtilUp}, descs: []string{"util −0.01", "+0.01"}, sep: " / ", key: "u/U", desc: "util −/+ 0.01"},
		helpEntry{of: []key.Binding{k.UtilDownBig, k.UtilUpBig}, descs: []string{"util −0.05", "+0.05"}, sep: " / ", key: "ctrl+u/y", desc: "util −/+ 0.05"},
		one(k.Restart, "restart with it"),
		helpEntry{of: []key.Binding{tk.Search, tk.Sweep, tk.Export}, descs: []string{"SLO search", "util sweep", "export"}, sep: " / "})
	add("dashboard", one(k.Theme, "next theme"), helpEntry{of: []key.Binding{k.Canary, k.Record}, descs: []string{"canary", "bundle"}, sep: " / "},
		one(k.Quit, "quit (twice: force)"), one(k.ForceQuit, "force quit"))
	return groups
}

// helpEntry is one line of the help: the bindings it names together, each with its words,
// and (key and desc) a shorter line for all of them at once.
type helpEntry struct {
	of        []key.Binding
	descs     []string
	sep       string
	key, desc string
}

// helpNotes explain what is on screen but not in a key.
var helpNotes = []string{
	"header: state, load, done/failed, tok/s and the verdict go first; when the line runs out of room, uptime, util, max conc, in flight, epoch and then req/s drop (Runs and Capacity show them). Its req/s and tok/s are averages since the epoch began; the charts' legends give the latest window. The footer gives the worst verdict's evidence and the flag to change.",
	"┊N on a chart: epoch N began (a load change or a restart); Runs has a row for each.",
	"≤x, ≥x: a server quantile known only as a bound (it fell in a histogram's first or last bucket): drawn dotted, never sets an axis.",
	"n=: requests behind the client's percentiles, over the last live window.",
	"client lag: how late the open loop sent requests behind its schedule (shown only when not 0).",
}

// View draws the help for the global keys and panel p (named name).
func (h *helpView) View(k KeyMap, p panel, name string) string {
	st := &h.c.styles
	groups := globalHelp(k)
	for i, g := range p.FullHelp() {
		title := strings.ToLower(name)
		if i > 0 {
			title = ""
		}
		groups = append(groups, helpGroup{title, g})
	}
	blocks := make([]string, 0, len(groups))
	for _, g := range groups {
		if len(g.keys) > 0 {
			blocks = append(blocks, h.block(g))
		}
	}
	out := []string{st.Title.Render("Keys") + st.Muted.Render("  (? or esc closes)")}
	keys := masonry(blocks, h.w, 3)
	if h.h > 2 && len(keys)+1 > h.h {
		// The rest would be cut without a word: ↓ and ↑ scroll the keys, and the keys that end
		// the session are said here.
		room := h.h - 2
		h.top = min(h.top, len(keys)-room)
		shown := keys[h.top : h.top+room]
		more := fmt.Sprintf("↓/↑ scroll · %d above, %d below · q quits, ctrl+c forces", h.top, len(keys)-h.top-room)
		out = append(append(out, shown...), st.Muted.Render(truncate(more, h.w)))
	} else {
		h.top = 0
		out = append(out, keys...)
	}
	// The notes that fit whole, below the keys.
	for i, n := range helpNotes {
		lines := wrapWords(n, h.w)
		if i == 0 {
			lines = append([]string{""}, lines...) // a gap under the keys
		}
		if len(out)+len(lines) > h.h {
			break
		}
		for _, l := range lines {
			out = append(out, st.Muted.Render(l))
		}
	}
	return strings.Join(out, "\n")
}

func (h *helpView) block(g helpGroup) string {
	st := &h.c.styles
	kw := 0
	for _, b := range g.keys {
		kw = max(kw, lipgloss.Width(b.Help().Key))
	}
	lines := []string{st.Label.Render(g.title)}
	for _, b := range g.keys {
		lines = append(lines, st.Help.FullKey.Render(padRight(b.Help().Key, kw))+"  "+st.Help.FullDesc.Render(b.Help().Desc))
	}
	return strings.Join(lines, "\n")
}

// masonry lays blocks out in the most columns that fit in width (gap cells apart, each column
// as wide as its widest block), each block going to the shortest column, so the keys take as
// few rows as they can.
func masonry(blocks []string, width, gap int) []string {
	for n := len(blocks); n >= 1; n-- {
		cols := make([][]string, n)
		widths := make([]int, n)
		for _, b := range blocks {
			shortest := 0
			for i := range cols {
				if len(cols[i]) < len(cols[shortest]) {
					shortest = i
				}
			}
			lines := strings.Split(b, "\n")
			if len(cols[shortest]) > 0 {
				lines = append([]string{""}, lines...)
			}
			cols[shortest] = append(cols[shortest], lines...)
			widths[shortest] = max(widths[shortest], lipgloss.Width(b))
		}
		total := gap * (n - 1)
		for _, w := range widths {
			total += w
		}
		if total > width && n > 1 {
			continue
		}
		rendered := make([]string, 0, 2*n)
		for i, c := range cols {
			if i > 0 {
				rendered = append(rendered, strings.Repeat(" ", gap))
			}
			rendered = append(rendered, strings.Join(c, "\n"))
		}
		return strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, rendered...), "\n")
	}
	return nil
}

// wrapWords breaks plain text into lines of at most width cells, at spaces.
func wrapWords(s string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = w
		case lipgloss.Width(cur)+1+lipgloss.Width(w) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	for i := range lines {
		lines[i] = truncate(lines[i], width)
	}
	return lines
}
