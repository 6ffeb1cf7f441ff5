package tui

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/vllmtop/vllmtop/server"
)

// maxLogLines is how many lines the Log view keeps (the supervisor's ring keeps its own).
const maxLogLines = 5000

// logLevel colours a line.
type logLevel uint8

const (
	logPlain logLevel = iota
	logWarn
	logError
	logCapacity
)

type logLine struct {
	text    string
	level   logLevel
	polling bool // vllmtop's own GET /health or /metrics
}

// logTab is the server log's view, which keeps the log lines.
const logTab = "Log"

// logPanel is the server's log: vllmtop's own polling hidden unless asked for, a filter,
// wrapping or horizontal scrolling, and paging. It draws only the lines on screen.
type logPanel struct {
	c           *common
	w, h        int
	lines       []logLine
	pollingN    int // polling lines among lines
	dropped     uint64
	showPolling bool
	wrap        bool
	follow      bool
	top         int // index in visible of the first line shown, when not following
	xoff        int // cells scrolled right, when not wrapping
	visible     []int
	filter      textinput.Model
	filtering   bool
	cache       string
	keys        logKeys
}

type logKeys struct {
	moveKeys
	Left, Right                          key.Binding
	Follow, Filter, Clear, Polling, Wrap key.Binding
}

func newLogPanel(c *common) panel {
	b := binding
	p := &logPanel{c: c, follow: true, keys: logKeys{
		moveKeys: newMoveKeys("first line", "last line, follow"),
		Left:     b([]string{"left", "h"}, "←/h", "scroll left"),
		Right:    b([]string{"right", "l"}, "→/l", "scroll right"),
		Follow:   b([]string{"f"}, "f", "follow on/off"),
		Filter:   b([]string{"/"}, "/", "filter"),
		Clear:    b([]string{"esc"}, "esc", "clear filter"),
		Polling:  b([]string{"a"}, "a", "show vllmtop's polling"),
		Wrap:     b([]string{"w"}, "w", "wrap long lines"),
	}}
	p.filter = textinput.New()
	p.filter.Prompt = "/"
	p.filter.Placeholder = "filter (enter applies, esc clears)"
	return p
}

func (p *logPanel) ShortHelp() []key.Binding {
	return []key.Binding{p.keys.Filter, p.keys.Polling, p.keys.Wrap, p.keys.Follow}
}

func (p *logPanel) FullHelp() [][]key.Binding {
	k := p.keys
	return [][]key.Binding{append(k.list(), k.Left, k.Right), {k.Follow, k.Filter, k.Clear, k.Polling, k.Wrap}}
}

func (p *logPanel) Capturing() bool { return p.filtering }

func (p *logPanel) SetSize(w, h int) {
	p.w, p.h = w, h
	p.filter.Width = max(w-4, 1)
}

func (p *logPanel) View() string { return p.cache }

func (p *logPanel) Update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case logLinesMsg:
		// Kept now, drawn at the next refresh: a busy log must not cost a draw a batch.
		p.add(msg.lines, msg.dropped)
		return nil
	case tea.KeyMsg:
		cmd = p.key(msg)
	case refreshMsg, restyleMsg:
	default:
		if p.filtering {
			p.filter, cmd = p.filter.Update(msg)
		}
	}
	p.draw()
	return cmd
}

func (p *logPanel) add(lines []server.Line, dropped uint64) {
	p.dropped += dropped
	for _, l := range lines {
		ll := classify(clean(l.Text))
		p.lines = append(p.lines, ll)
		if ll.polling {
			p.pollingN++
		}
		if p.passes(ll) {
			p.visible = append(p.visible, len(p.lines)-1)
		}
	}
	// Trim in steps, so a busy log costs a copy now and then, not one a line.
	if len(p.lines) > maxLogLines+maxLogLines/10 {
		p.lines = append(p.lines[:0:0], p.lines[len(p.lines)-maxLogLines:]...)
		p.pollingN = 0
		for _, l := range p.lines {
			if l.polling {
				p.pollingN++
			}
		}
		p.reindex()
	}
}

// classify colours a line and tells vllmtop's own polling (uvicorn's access log of GET
// /health and GET /metrics) from the rest.
func classify(text string) logLine {
	l := logLine{text: text}
	switch {
	case strings.Contains(text, `"GET /health`) || strings.Contains(text, `"GET /metrics`):
		l.polling = true
	case strings.Contains(text, " ERROR ") || strings.Contains(text, "Error") || strings.Contains(text, "Traceback"):
		l.level = logError
	case strings.Contains(text, "WARNING"):
		l.level = logWarn
	case strings.Contains(text, "KV cache") || strings.Contains(text, "Maximum concurrency") || strings.Contains(text, "Model loading took"):
		l.level = logCapacity
	}
	return l
}

func (p *logPanel) passes(l logLine) bool {
	if l.polling && !p.showPolling {
		return false
	}
	f := strings.ToLower(p.filter.Value())
	return f == "" || strings.Contains(strings.ToLower(l.text), f)
}

func (p *logPanel) reindex() {
	p.visible = p.visible[:0]
	for i, l := range p.lines {
		if p.passes(l) {
			p.visible = append(p.visible, i)
		}
	}
	p.top = min(p.top, max(len(p.visible)-1, 0))
}

func (p *logPanel) rows() int { return max(p.h-1, 1) }

func (p *logPanel) key(msg tea.KeyMsg) tea.Cmd {
	k := p.keys
	if p.filtering {
		switch msg.Type {
		case tea.KeyEnter:
			p.filtering = false
			p.filter.Blur()
			return nil
		case tea.KeyEsc:
			p.filtering = false
			p.filter.Blur()
			p.filter.SetValue("")
			p.reindex()
			return nil
		}
		var cmd tea.Cmd
		p.filter, cmd = p.filter.Update(msg)
		p.reindex()
		return cmd
	}
	page := max(p.rows()-1, 1)
	switch {
	case key.Matches(msg, k.Up):
		p.scroll(-1)
	case key.Matches(msg, k.Down):
		p.scroll(1)
	case key.Matches(msg, k.PageUp):
		p.scroll(-page)
	case key.Matches(msg, k.PageDown):
		p.scroll(page)
	case key.Matches(msg, k.Top):
		p.follow, p.top = false, 0
	case key.Matches(msg, k.Bottom):
		p.follow = true
	case key.Matches(msg, k.Left):
		p.xoff = max(p.xoff-p.w/4, 0)
	case key.Matches(msg, k.Right):
		if !p.wrap {
			p.xoff += max(p.w/4, 1)
		}
	case key.Matches(msg, k.Follow):
		p.follow = !p.follow
		if !p.follow {
			p.top = p.bottomTop()
		}
	case key.Matches(msg, k.Filter):
		p.filtering = true
		return p.filter.Focus()
	case key.Matches(msg, k.Clear):
		p.filter.SetValue("")
		p.reindex()
	case key.Matches(msg, k.Polling):
		p.showPolling = !p.showPolling
		p.reindex()
	case key.Matches(msg, k.Wrap):
		p.wrap, p.xoff = !p.wrap, 0
	}
	return nil
}

// bottomTop is the top index that shows the last lines.
func (p *logPanel) bottomTop() int { return max(len(p.visible)-p.rows(), 0) }

func (p *logPanel) scroll(d int) {
	if p.follow {
		p.follow, p.top = false, p.bottomTop()
	}
	p.top = min(max(p.top+d, 0), p.bottomTop())
	if d > 0 && p.top == p.bottomTop() {
		p.follow = true // scrolling down to the end follows again, as less +F does
	}
}

func (p *logPanel) draw() {
	c, st := p.c, &p.c.styles
	if c.deps.Mode == ModeAttach {
		target := c.deps.Target
		if d := c.s.fleet.drill; d != nil { // a fleet's row: its endpoint, not the fleet's source
			target = d.URL
			if target == "" {
				target = d.Name
			}
		}
		p.cache = fit(st.Muted.Render("attached to "+clean(target)+": the server's log is not available here (vllmtop did not start it)"), p.w, p.h)
		return
	}
	p.cache = fit(p.infoLine()+"\n"+strings.Join(p.body(), "\n"), p.w, p.h)
}

func (p *logPanel) infoLine() string {
	st := &p.c.styles
	if p.filtering {
		return truncate(p.filter.View(), p.w)
	}
	parts := []string{fmt.Sprintf("%d lines", len(p.visible))}
	if p.follow {
		parts = append(parts, "following")
	} else {
		parts = append(parts, fmt.Sprintf("line %d (G follows)", p.top+1))
	}
	switch {
	case p.showPolling:
		parts = append(parts, "vllmtop's polling shown (a hides)")
	case p.pollingN > 0:
		parts = append(parts, fmt.Sprintf("%d polling lines hidden (a shows)", p.pollingN))
	}
	if p.wrap {
		parts = append(parts, "wrapped (w)")
	} else if p.xoff > 0 {
		parts = append(parts, fmt.Sprintf("→%d (←/h)", p.xoff))
	}
	info := st.Muted.Render(strings.Join(parts, " · "))
	if f := p.filter.Value(); f != "" {
		info += st.Warn.Render(" · filter: " + clean(f) + " (esc clears)")
	}
	if p.dropped > 0 {
		info += st.Warn.Render(fmt.Sprintf(" · %d lines not shown live (in the server's ring)", p.dropped))
	}
	return truncate(info, p.w)
}

// body is the lines on screen: from the bottom up when following, from top otherwise; wrapped
// lines take several rows.
func (p *logPanel) body() []string {
	rows := p.rows()
	var out []string
	if p.follow {
		for i := len(p.visible) - 1; i >= 0 && len(out) < rows; i-- {
			r := p.render(p.lines[p.visible[i]])
			for j := len(r) - 1; j >= 0 && len(out) < rows; j-- {
				out = append(out, r[j])
			}
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	for i := p.top; i < len(p.visible) && len(out) < rows; i++ {
		out = append(out, p.render(p.lines[p.visible[i]])...)
	}
	if len(out) > rows {
		out = out[:rows]
	}
	return out
}

// render is one line as rows of the screen: wrapped, or cut at the horizontal offset.
func (p *logPanel) render(l logLine) []string {
	st := &p.c.styles
	style := st.Base
	switch l.level {
	case logError:
		style = st.Bad
	case logWarn:
		style = st.Warn
	case logCapacity:
		style = st.Good
	case logPlain:
		if l.polling {
			style = st.Muted
		}
	}
	if p.wrap {
		rows := strings.Split(ansi.Hardwrap(l.text, max(p.w, 1), true), "\n")
		for i, r := range rows {
			rows[i] = style.Render(r)
		}
		return rows
	}
	text := l.text
	if p.xoff > 0 {
		text = ansi.Cut(text, p.xoff, p.xoff+p.w)
	}
	if lipgloss.Width(text) > p.w {
		text = cutKeepingStatus(text, p.w)
	}
	return []string{style.Render(text)}
}

// accessStatus is the end of an access-log line: the quoted request, then its status.
var accessStatus = regexp.MustCompile(`" [1-5][0-9][0-9]( [A-Za-z][A-Za-z -]*)?$`)

// cutKeepingStatus cuts text to w columns with an ellipsis; an access-log line loses the middle
// of its request instead, so that its status code stays on screen.
func cutKeepingStatus(text string, w int) string {
	if loc := accessStatus.FindStringIndex(text); loc != nil {
		tail := text[loc[0]:]
		if tw := lipgloss.Width(tail); tw+8 < w {
			return ansi.Truncate(text[:loc[0]], w-tw-1, "") + "…" + tail
		}
	}
	return ansi.Truncate(text, w, "…")
}
