package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/vllmtop/vllmtop/server"
)

// footer is the bottom line: the status message (or the restart's question) on the left, keys
// on the right: the active panel's and the global ones as room allows, and always "? help" and
// "q quit", which nothing may push off the screen.
type footer struct {
	noKeys
	c *common
	w int
}

func newFooter(c *common) *footer { return &footer{c: c} }

func (f *footer) SetSize(w, _ int) { f.w = w }

func (f *footer) Update(tea.Msg) tea.Cmd { return nil }

// statusHold is how long a plain status message keeps the footer from the verdict.
const statusHold = 5 * time.Second

// View draws the footer for the global keys k and the active panel p.
func (f *footer) View(k KeyMap, p panel) string {
	s, st := &f.c.s, &f.c.styles
	sep := st.Muted.Render(" · ")
	keyText := func(b key.Binding) string {
		h := b.Help()
		return st.Help.ShortKey.Render(h.Key) + " " + st.Help.ShortDesc.Render(h.Desc)
	}
	must := keyText(k.Help) + sep + st.Help.ShortKey.Render("q") + " " + st.Help.ShortDesc.Render("quit")
	msg := ""
	switch {
	case s.phase == phaseConfirming:
		// The question and its keys whole; the shorter form where the long one would be cut.
		q := fmt.Sprintf("restart the server with --gpu-memory-utilization %.2f (now %.2f)? enter/y restart · esc/n cancel", s.pendingUtil, s.util)
		short := fmt.Sprintf("restart with util %.2f (now %.2f)? enter/y yes · esc/n no", s.pendingUtil, s.util)
		if !utilPending(s) {
			q = fmt.Sprintf("restart the server as it is (--gpu-memory-utilization %.2f)? enter/y restart · esc/n cancel", s.util)
			short = fmt.Sprintf("restart as it is (util %.2f)? enter/y yes · esc/n no", s.util)
		}
		if lipgloss.Width(q)+3+lipgloss.Width(must) > f.w {
			q = short
		}
		msg = st.Confirm.Render(q)
	case s.status != "" && s.statusBad:
		msg = st.Bad.Render(s.status)
	case s.srvErr != "" && s.phase == phaseIdle && s.server.State == server.Ready:
		msg = st.Bad.Render("metrics: " + s.srvErr)
	case s.status != "" && (f.c.now().Sub(s.statusAt) < statusHold || f.c.deps.Fleet != nil):
		msg = st.Base.Render(s.status)
	case f.c.deps.Fleet == nil:
		// The verdict's evidence and the flag to change, on one line at every size: the
		// header has room for its name only.
		if msg = footerVerdict(f.c, f.w-lipgloss.Width(must)-3); msg == "" && s.status != "" {
			msg = st.Base.Render(s.status)
		}
	}
	// Keys fill what the message leaves, the panel's first: the message says what is happening
	// now, and every key is in the ? help.
	room := f.w - lipgloss.Width(must)
	if msg != "" {
		room -= lipgloss.Width(msg) + 3
	}
	var opt []string
	if s.phase != phaseConfirming {
		for _, b := range append(p.ShortHelp(), k.ShortHelp()...) {
			if !b.Enabled() {
				continue
			}
			if b.Help() == k.Restart.Help() && !utilPending(s) {
				continue // no utilisation pending: the key restarts as it is (? lists it)
			}
			if s.tune.kind != tuneIdle && refusedWhileTuning(k, b) {
				continue // a tuning run refuses them until it ends
			}
			t := keyText(b)
			if w := lipgloss.Width(t) + lipgloss.Width(sep); w <= room {
				opt = append(opt, t)
				room -= w
			}
		}
	}
	right := strings.Join(append(opt, must), sep)
	left := truncate(msg, max(f.w-lipgloss.Width(right)-3, 0))
	gap := f.w - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 {
		return truncate(right, f.w)
	}
	return left + strings.Repeat(" ", gap) + right
}

func refusedWhileTuning(k KeyMap, b key.Binding) bool {
	if b.Help() == k.Restart.Help() {
		return true
	}
	for _, r := range k.tuneRefused() {
		if b.Help() == r.Help() {
			return true
		}
	}
	return false
}
