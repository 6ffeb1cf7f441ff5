package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/vllmtop/vllmtop/internal/textfmt"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
)

const headerLines, footerLines = 3, 1

func (m *Model) bodyHeight() int { return max(m.height-headerLines-footerLines, 0) }

// layout sizes the panels for the terminal.
func (m *Model) layout() {
	bh := m.bodyHeight()
	cw, ch := m.width/2, bh/2
	for i, c := range m.charts {
		w := cw
		if i%2 == 1 {
			w = m.width - cw
		}
		c.setSize(w-1, ch)
	}
	m.logView.Width = m.width
	m.logView.Height = max(bh-1, 1)
	m.restyleLog()
	m.refreshLogView()
}

func (m *Model) redrawCharts() {
	if m.width < minWidth || m.height < minHeight {
		return
	}
	now := m.deps.Now()
	for _, c := range m.charts {
		c.render(m.styles, now)
	}
	row := func(a, b *chart) string {
		return lipgloss.JoinHorizontal(lipgloss.Top, padBlock(a.view(), a.w+1, a.h), padBlock(b.view(), b.w, b.h))
	}
	m.overview = row(m.charts[0], m.charts[1]) + "\n" + row(m.charts[2], m.charts[3])
}

// View renders the whole screen. It only stitches cached pieces and short text.
func (m Model) View() string {
	if m.width == 0 || m.height == 0 {
		return "vllmtop: starting ..."
	}
	if m.width < minWidth || m.height < minHeight {
		return truncate(fmt.Sprintf("terminal too small: %dx%d (vllmtop needs %dx%d)", m.width, m.height, minWidth, minHeight), m.width)
	}
	var body string
	switch {
	case m.showHelp:
		body = m.helpView()
	case m.view == viewOverview:
		body = m.overviewView()
	case m.view == viewStream:
		body = m.streamView()
	case m.view == viewLog:
		body = m.logViewString()
	case m.view == viewRuns:
		body = m.runsView()
	case m.view == viewCapacity:
		body = m.capacityView()
	}
	if m.view != viewOverview || m.showHelp {
		body = clampLines(body, m.width, m.bodyHeight()) // the overview is fitted when composed
	}
	return strings.Join([]string{m.header(), m.tabs(), padLines(body, m.bodyHeight()), m.footer()}, "\n")
}

func (m *Model) stateStyle(s server.State) lipgloss.Style {
	switch s {
	case server.Ready:
		return m.styles.Good
	case server.Starting, server.Loading, server.Stopping:
		return m.styles.Warn
	case server.Unhealthy, server.Exited:
		return m.styles.Bad
	}
	return m.styles.Muted
}

func (m *Model) header() string {
	st := m.styles
	sep := st.Muted.Render(" · ")
	srv := m.server
	model := "–"
	if mod := m.model(); mod != nil && mod.Name != "" {
		model = mod.Name
	} else if v := server.ModelArg(srv.Args); v != "" {
		model = v
	}
	state := srv.State.String()
	if srv.State == server.Exited {
		state += " (" + srv.Exit.String() + ")"
	}
	parts := []string{st.Title.Render("vllmtop"), st.Muted.Render(m.deps.Mode.String()), st.Value.Render(model), m.stateStyle(srv.State).Render(state)}
	if !srv.ReadyAt.IsZero() && srv.State == server.Ready {
		parts = append(parts, st.Label.Render("up ")+fmtDur(m.deps.Now().Sub(srv.ReadyAt)))
	}
	if m.util > 0 || m.pendingUtil > 0 {
		u := st.Label.Render("util ") + st.Value.Render(fmt.Sprintf("%.2f", m.util))
		if m.pendingUtil != m.util {
			u += st.Warn.Render(fmt.Sprintf("→%.2f", m.pendingUtil))
		}
		parts = append(parts, u)
	}
	if tok, conc := m.capacity(); tok > 0 {
		parts = append(parts, st.Label.Render("KV ")+st.Value.Render(commas(tok))+st.Label.Render(" tok"))
		if conc > 0 {
			parts = append(parts, st.Label.Render("max conc ")+st.Value.Render(fmt.Sprintf("%.2fx", conc)))
		}
	}
	if srv.ModelGiB > 0 {
		parts = append(parts, st.Label.Render("weights ")+fmt.Sprintf("%.2f GiB", srv.ModelGiB))
	}
	if m.deps.Target != "" {
		parts = append(parts, st.Muted.Render(m.deps.Target))
	}
	line1 := truncate(strings.Join(parts, sep), m.width)

	ls := m.loader
	mode := "closed"
	if m.rateMode {
		mode = "open"
	}
	lp := []string{st.Label.Render("load ") + st.Value.Render(mode+" "+m.loadSettings())}
	if m.paused {
		lp = append(lp, st.Warn.Render("paused"))
	}
	lp = append(lp, st.Label.Render("in flight ")+fmt.Sprint(ls.InFlight), st.Label.Render("done ")+fmt.Sprint(ls.Finished))
	w := m.window
	fails := w.Failures
	f := st.Label.Render("failed ") + fmt.Sprint(fails)
	if fails > 0 {
		f = st.Bad.Render(fmt.Sprintf("failed %d", fails)) + st.Muted.Render(" "+classes(w.FailuresByClass))
	}
	lp = append(lp, f)
	achieved := st.Label.Render("req/s ") + fmt.Sprintf("%.1f", w.RequestsPerSec)
	if m.rateMode {
		achieved += st.Muted.Render(fmt.Sprintf(" of %s", trimFloat(m.rate)))
	}
	lp = append(lp, achieved, st.Label.Render("lag ")+fmtDur(ls.Lag), st.Label.Render("epoch ")+fmt.Sprint(ls.Epoch))
	if m.longPrompts {
		lp = append(lp, st.Warn.Render("long prompts"))
	}
	if m.srvErr != "" {
		lp = append(lp, st.Bad.Render("metrics failing"))
	}
	line2 := truncate(strings.Join(lp, sep), m.width)
	return line1 + "\n" + line2
}

func classes(by map[loadgen.ErrorClass]int) string {
	var parts []string
	for k, v := range by {
		parts = append(parts, fmt.Sprintf("%s:%d", k, v))
	}
	sortStrings(parts)
	return strings.Join(parts, " ")
}

func (m *Model) tabs() string {
	var out []string
	for i, n := range viewNames {
		label := fmt.Sprintf("%d %s", i+1, n)
		if i == m.view {
			out = append(out, m.styles.TabOn.Render(label))
		} else {
			out = append(out, m.styles.Tab.Render(label))
		}
	}
	return truncate(strings.Join(out, ""), m.width)
}

func (m *Model) footer() string {
	st := m.styles
	if m.confirming {
		return truncate(st.Confirm.Render(fmt.Sprintf("restart the server with --gpu-memory-utilization %.2f (now %.2f)? enter/y to restart, esc/n to cancel", m.pendingUtil, m.util)), m.width)
	}
	if m.filtering {
		return truncate(m.filter.View(), m.width)
	}
	msg := ""
	switch {
	case m.status != "" && m.statusBad:
		msg = st.Bad.Render(m.status)
	case m.srvErr != "":
		msg = st.Bad.Render("metrics: " + m.srvErr)
	case m.status != "":
		msg = st.Base.Render(m.status)
	}
	h := m.help.ShortHelpView(m.keys.ShortHelp())
	if msg == "" {
		return truncate(h, m.width)
	}
	room := m.width - lipgloss.Width(msg) - 3
	if room > 20 {
		return truncate(msg+"   "+truncate(h, room), m.width)
	}
	return truncate(msg, m.width)
}

func (m *Model) helpView() string {
	m.help.ShowAll = true
	defer func() { m.help.ShowAll = false }()
	title := m.styles.Title.Render("Keys") + m.styles.Muted.Render("  (? or esc to close)")
	groups := m.keys.FullHelp()
	if m.width >= 120 {
		return title + "\n\n" + m.help.FullHelpView(groups)
	}
	// Narrow terminals get the key groups in two rows, so no column is cut.
	return title + "\n\n" + m.help.FullHelpView(groups[:3]) + "\n\n" + m.help.FullHelpView(groups[3:])
}

func (m *Model) overviewView() string { return m.overview }

// padBlock makes s exactly w cells wide and h lines tall.
func padBlock(s string, w, h int) string {
	lines := strings.Split(padLines(s, h), "\n")
	for i, l := range lines {
		l = truncate(l, w)
		if pad := w - lipgloss.Width(l); pad > 0 {
			l += strings.Repeat(" ", pad)
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// streamView shows the watched request's text with each token coloured by its gap.
func (m *Model) streamView() string {
	st := m.styles
	v := m.watchView
	var b strings.Builder
	if m.watched == nil || v.Started.IsZero() {
		b.WriteString(st.Muted.Render("no request watched yet: press w to follow the next request, p to switch between short and long prompts"))
		return b.String()
	}
	ttft, meanITL := time.Duration(0), time.Duration(0)
	if len(v.Tokens) > 0 {
		ttft = v.Tokens[0].At.Sub(v.Started)
	}
	if len(v.Tokens) > 1 {
		meanITL = v.Tokens[len(v.Tokens)-1].At.Sub(v.Tokens[0].At) / time.Duration(len(v.Tokens)-1)
	}
	ratio := "–"
	if meanITL > 0 {
		ratio = fmt.Sprintf("%.1fx", float64(ttft)/float64(meanITL))
	}
	state := st.Warn.Render("streaming")
	if v.Result != nil {
		if v.Result.OK() {
			state = st.Good.Render("done " + v.Result.FinishReason)
		} else {
			state = st.Bad.Render(string(v.Result.Error) + " " + v.Result.ErrorMessage)
		}
	}
	fmt.Fprintf(&b, "%s %s   %s %s   %s %s   %s %s   %s %s   %s\n",
		st.Label.Render("prompt"), st.Value.Render(fmt.Sprintf("%d tok", v.Prompt.InputTokens)),
		st.Label.Render("TTFT"), st.Value.Render(fmtDur(ttft)),
		st.Label.Render("mean ITL"), st.Value.Render(fmtDur(meanITL)),
		st.Label.Render("TTFT/ITL"), st.Value.Render(ratio),
		st.Label.Render("tokens"), st.Value.Render(fmt.Sprint(len(v.Tokens))), state)
	// The legend: gap buckets relative to the request's median gap.
	med := medianGap(v.Tokens)
	bounds := []float64{0.5, 0.9, 1.5, 3}
	legend := []string{st.Label.Render("gap vs median " + fmtDur(med) + ":")}
	names := []string{"<0.5x", "<0.9x", "<1.5x", "<3x", "≥3x"}
	for i, n := range names {
		legend = append(legend, st.Heat[i].Render("■ "+n))
	}
	b.WriteString(strings.Join(legend, " ") + "\n\n")
	var text strings.Builder
	for i, t := range v.Tokens {
		gap := 1.0
		if i > 0 && med > 0 {
			gap = float64(t.At.Sub(v.Tokens[i-1].At)) / float64(med)
		}
		bucket := len(bounds)
		for j, bd := range bounds {
			if gap < bd {
				bucket = j
				break
			}
		}
		text.WriteString(st.Heat[bucket].Render(printable(t.Text)))
	}
	b.WriteString(lipgloss.NewStyle().Width(m.width).Render(text.String()))
	return tailLines(b.String(), m.bodyHeight())
}

// printable drops control characters (but newlines) from server text, so a server cannot
// move the cursor or talk to the terminal through the stream view.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || (r >= 0x20 && r != 0x7f && (r < 0x80 || r >= 0xa0)) {
			return r
		}
		return -1
	}, s)
}

func medianGap(ts []loadgen.WatchedToken) time.Duration {
	if len(ts) < 2 {
		return 0
	}
	gaps := make([]float64, 0, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, float64(ts[i].At.Sub(ts[i-1].At)))
	}
	sortFloats(gaps)
	return time.Duration(gaps[len(gaps)/2])
}

// tailLines keeps the first 3 lines (the figures) and the last lines of the text that fit.
func tailLines(s string, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= h || h < 4 {
		return s
	}
	return strings.Join(append(lines[:3], lines[len(lines)-(h-3):]...), "\n")
}

// styleLogLine fits a log line to the width and colours errors, warnings and capacity lines.
func (m *Model) styleLogLine(l server.Line) string {
	st := m.styles
	text := truncate(l.Text, m.width)
	low := l.Text
	switch {
	case strings.Contains(low, " ERROR ") || strings.Contains(low, "Error") || strings.Contains(low, "Traceback"):
		return st.Bad.Render(text)
	case strings.Contains(low, "WARNING"):
		return st.Warn.Render(text)
	case strings.Contains(low, "KV cache") || strings.Contains(low, "Maximum concurrency") || strings.Contains(low, "Model loading took"):
		return st.Good.Render(text)
	}
	return text
}

// restyleLog renders every line again (after a resize or a theme change).
func (m *Model) restyleLog() {
	m.logStyled = m.logStyled[:0]
	for _, l := range m.logLines {
		m.logStyled = append(m.logStyled, m.styleLogLine(l))
	}
	m.logDirty = true
}

// refreshLogView puts the (filtered) styled lines in the viewport.
func (m *Model) refreshLogView() {
	m.logDirty = false
	if m.logView.Width == 0 {
		return
	}
	filter := strings.ToLower(m.filter.Value())
	var b strings.Builder
	for i, l := range m.logLines {
		if filter != "" && !strings.Contains(strings.ToLower(l.Text), filter) {
			continue
		}
		b.WriteString(m.logStyled[i])
		b.WriteByte('\n')
	}
	m.logView.SetContent(strings.TrimSuffix(b.String(), "\n"))
	if m.follow {
		m.logView.GotoBottom()
	}
}

func (m *Model) logViewString() string {
	st := m.styles
	if m.deps.Mode == ModeAttach {
		return st.Muted.Render("attached to " + m.deps.Target + ": the server's log is not available here (it was not started by vllmtop)")
	}
	follow := "follow on"
	if !m.follow {
		follow = "follow off (f)"
	}
	info := st.Muted.Render(fmt.Sprintf("%d lines · %s · / filter", len(m.logLines), follow))
	if m.droppedLogs > 0 {
		info += st.Warn.Render(fmt.Sprintf(" · %d lines not shown live (in the ring)", m.droppedLogs))
	}
	if f := m.filter.Value(); f != "" {
		info += st.Warn.Render(" · filter: " + f)
	}
	return truncate(info, m.width) + "\n" + m.logView.View()
}

// run is row i of the Runs view: the load's epoch and the server's note on it.
func (m *Model) run(i int) (loadgen.EpochStats, epochNote) {
	e := m.runs[i]
	var n epochNote
	if p, ok := m.notes[e.Epoch]; ok {
		n = *p
	}
	return e, n
}

// runByEpoch is the row of epoch n.
func (m *Model) runByEpoch(n int) (loadgen.EpochStats, epochNote) {
	for i, e := range m.runs {
		if e.Epoch == n {
			return m.run(i)
		}
	}
	return loadgen.EpochStats{Epoch: n}, epochNote{}
}

// settings is how the Runs view names an epoch: its load, and why it began ("C=4 (restart)").
func settings(e loadgen.EpochStats) string {
	if e.Label != "" {
		return e.Settings + " (" + e.Label + ")"
	}
	return e.Settings
}

func (m *Model) runsView() string {
	st := m.styles
	var b strings.Builder
	// Below 110 columns the table drops max concurrency and TTFT p50 to fit.
	wide := m.width >= 110
	head := fmt.Sprintf("  %-4s %-14s %5s %10s %8s %8s %9s %6s %5s", "#", "settings", "util", "KV tokens", "TTFT p99", "TPOT p50", "out tok/s", "preem", "fail")
	if wide {
		head = fmt.Sprintf("  %-4s %-22s %5s %11s %8s %8s %8s %8s %9s %7s %6s", "#", "settings", "util", "KV tokens", "max conc", "TTFT p50", "TTFT p99", "TPOT p50", "out tok/s", "preempt", "fail")
	}
	b.WriteString(st.Label.Render(truncate(head, m.width)) + "\n")
	// Show the rows around the cursor that fit above the hint and the comparison.
	room := m.bodyHeight() - 2
	if len(m.picked) == 2 {
		room -= 9
	}
	room = max(room, 3)
	first := min(max(m.cursor-room+1, 0), max(len(m.runs)-room, 0))
	for i := first; i < len(m.runs) && i < first+room; i++ {
		s, e := m.run(i)
		mark := " "
		for _, p := range m.picked {
			if p == s.Epoch {
				mark = "*"
			}
		}
		var row string
		if wide {
			row = fmt.Sprintf("%s %-4d %-22s %5.2f %11s %8s %8s %8s %8s %9s %7.0f %6d", mark, s.Epoch, truncate(settings(s), 22), e.util,
				commasOr(e.kvTokens), concOr(e.maxConc), qms(s.TTFT.P50, s.TTFT.N), qms(s.TTFT.P99, s.TTFT.N), qms(s.TPOT.P50, s.TPOT.N),
				siNumber(s.OutputTokensPerSec()), e.preempt, s.Failures)
		} else {
			row = fmt.Sprintf("%s %-4d %-14s %5.2f %10s %8s %8s %9s %6.0f %5d", mark, s.Epoch, truncate(settings(s), 14), e.util,
				commasOr(e.kvTokens), qms(s.TTFT.P99, s.TTFT.N), qms(s.TPOT.P50, s.TPOT.N), siNumber(s.OutputTokensPerSec()), e.preempt, s.Failures)
		}
		row = truncate(row, m.width)
		if i == m.cursor {
			row = st.Selected.Render(row)
		}
		b.WriteString(row + "\n")
	}
	b.WriteString(st.Muted.Render("↑/↓ move · x pick two runs to compare") + "\n")
	if len(m.picked) == 2 {
		sa, a := m.runByEpoch(m.picked[0])
		sc, c := m.runByEpoch(m.picked[1])
		b.WriteString("\n" + st.Title.Render(fmt.Sprintf("run %d vs run %d", sa.Epoch, sc.Epoch)) + "\n")
		cmp := func(name string, x, y float64, unit string, lowerBetter bool) {
			show := func(v float64) string {
				switch {
				case math.IsNaN(v):
					return "–"
				case unit == "util":
					return fmt.Sprintf("%.2f", v)
				}
				return fmtValue(v, unit)
			}
			d := pct(x, y)
			ds := st.Muted.Render("–")
			if !math.IsNaN(d) {
				better := (d < 0) == lowerBetter
				s := st.Good
				if !better && d != 0 {
					s = st.Bad
				}
				ds = s.Render(fmt.Sprintf("%+.1f%%", d))
			}
			fmt.Fprintf(&b, "  %-16s %12s %12s  %s\n", name, show(x), show(y), ds)
		}
		cmp("util", a.util, c.util, "util", false)
		cmp("KV tokens", float64(a.kvTokens), float64(c.kvTokens), "", false)
		cmp("TTFT p50", msf(sa.TTFT.P50, sa.TTFT.N), msf(sc.TTFT.P50, sc.TTFT.N), "ms", true)
		cmp("TTFT p99", msf(sa.TTFT.P99, sa.TTFT.N), msf(sc.TTFT.P99, sc.TTFT.N), "ms", true)
		cmp("TPOT p50", msf(sa.TPOT.P50, sa.TPOT.N), msf(sc.TPOT.P50, sc.TPOT.N), "ms", true)
		cmp("out tok/s", sa.OutputTokensPerSec(), sc.OutputTokensPerSec(), "", false)
		cmp("preemptions", a.preempt, c.preempt, "", true)
	}
	return clampLines(b.String(), m.width, m.bodyHeight())
}

func pct(a, b float64) float64 {
	if a == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return (b - a) / a * 100
}

func qms(d time.Duration, n int64) string {
	if n == 0 {
		return "–"
	}
	return fmtValue(float64(d)/float64(time.Millisecond), "ms")
}

func commasOr(n int) string {
	if n == 0 {
		return "–"
	}
	return commas(n)
}

func concOr(c float64) string {
	if c == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", c)
}

// capacityView is the what-if table of --gpu-memory-utilization values.
func (m *Model) capacityView() string {
	st := m.styles
	var b strings.Builder
	tok, conc := m.capacity()
	predict := m.deps.Capacity
	source := "the simulator's capacity model"
	if predict == nil {
		predict = server.ScaledCapacity(m.server, m.util, tok, conc)
		source = "scaled from what the server reported"
	}
	if predict == nil {
		return st.Muted.Render("capacity what-if: waiting for the server to report its KV cache size")
	}
	b.WriteString(st.Title.Render("KV cache by --gpu-memory-utilization") + st.Muted.Render("  ("+source+")") + "\n")
	b.WriteString(st.Label.Render(fmt.Sprintf("  %5s %14s %10s %14s %10s", "util", "KV tokens", "max conc", "observed", "obs conc")) + "\n")
	cur := math.Round(m.util*100) / 100
	utils := []float64{}
	for u := 0.70; u <= 0.981; u += 0.02 {
		utils = append(utils, math.Round(u*100)/100)
	}
	if cur > 0 && !containsFloat(utils, cur) {
		utils = append(utils, cur)
		sortFloats(utils)
	}
	if m.pendingUtil != cur && m.pendingUtil > 0 && !containsFloat(utils, m.pendingUtil) {
		utils = append(utils, m.pendingUtil)
		sortFloats(utils)
	}
	for _, u := range utils {
		t, c, err := predict(u)
		pred := fmt.Sprintf("%14s %10s", commasOr(t), concOr(c))
		if err != nil {
			pred = fmt.Sprintf("%25s", "does not start")
		}
		obs := ""
		mark := " "
		if u == cur {
			mark = "▶"
			obs = fmt.Sprintf(" %14s %10s", commasOr(tok), concOr(conc))
		}
		if u == m.pendingUtil && u != cur {
			mark = "→"
		}
		line := fmt.Sprintf("%s %5.2f %s%s", mark, u, pred, obs)
		switch {
		case u == cur:
			line = st.Good.Render(line)
		case err != nil:
			line = st.Bad.Render(line)
		case u == m.pendingUtil:
			line = st.Warn.Render(line)
		}
		b.WriteString(line + "\n")
	}
	b.WriteString(st.Muted.Render("▶ current  → pending (u/U, ctrl+u/ctrl+y; enter restarts)"))
	return clampLines(b.String(), m.width, m.bodyHeight())
}

func containsFloat(xs []float64, x float64) bool {
	for _, v := range xs {
		if math.Abs(v-x) < 1e-9 {
			return true
		}
	}
	return false
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func commas(n int) string { return textfmt.Thousands(int64(n)) }
