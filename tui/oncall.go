package tui

import (
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// recordDoneMsg is a flight-recorder bundle written (or not).
type recordDoneMsg struct {
	path string
	err  error
}

// record writes a bundle in a command: the verdicts now are copied here, the scrapes and the
// rest are the recorder's.
func (m *Model) record() tea.Cmd {
	c, s := m.c, &m.c.s
	rec := c.deps.Recorder
	if rec == nil {
		c.setStatus("no flight recorder here", true)
		return nil
	}
	verdicts := append([]diagnose.Verdict(nil), s.verdicts...)
	if f := s.fleet.f; f != nil && s.fleet.drill == nil {
		verdicts = append([]diagnose.Verdict(nil), f.Verdicts...)
	}
	c.setStatus("writing a flight-recorder bundle ...", false)
	return func() tea.Msg {
		path, err := rec.Record(verdicts)
		return recordDoneMsg{path: path, err: err}
	}
}

func (m *Model) recorded(msg recordDoneMsg) {
	if msg.err != nil {
		m.c.setStatus(clean(msg.err.Error()), true)
		return
	}
	m.c.setStatus("bundle written: "+clean(msg.path), false)
}

func (m *Model) toggleCanary() {
	c := m.c
	cn := c.deps.Canary
	if cn == nil {
		c.setStatus("the canary probe is for attach mode", true)
		return
	}
	cn.SetOn(!cn.On())
	if cn.On() {
		c.setStatus(fmt.Sprintf("canary on: one small request every %s", fmtDur(cn.Interval())), false)
	} else {
		c.setStatus("canary off", false)
	}
}

// canaryItems is the header's canary block: the last probe's TTFT and TPOT, apart from the
// load's figures.
func canaryItems(c *common) []item {
	cn, st := c.deps.Canary, &c.styles
	if cn == nil || !cn.On() {
		return nil
	}
	last, ok := cn.Last()
	text, short := st.Label.Render("canary "), st.Label.Render("canary ")
	switch {
	case !ok:
		text += st.Muted.Render("waiting")
		short = text
	case !last.OK():
		text += st.Bad.Render("failed: " + truncate(clean(string(last.Error)), 30))
		short += st.Bad.Render("failed")
	default:
		ttft, tpot := fmtDur(last.TTFT.Round(time.Millisecond)), fmtDur(last.TPOT.Round(100*time.Microsecond))
		text += st.Label.Render("TTFT ") + ttft + st.Label.Render(" TPOT ") + tpot
		short += ttft + st.Muted.Render("/") + tpot
	}
	// Turned on by the user: after the load's figures and the verdict, before the details;
	// the short form where the line has no room for the words.
	return []item{{text, 1}, {short, 1}}
}
