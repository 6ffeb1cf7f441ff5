package tui

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/loadgen"

	"github.com/charmbracelet/lipgloss"
)

// foldBelow is how short an epoch may be before its row is folded away: a key pressed three
// times makes two epochs of a fraction of a second, whose figures mean nothing.
const foldBelow = 3 * time.Second

// runsPanel is a row per epoch (one load setting, one server run) with its figures, and the
// comparison of two picked rows.
type runsPanel struct {
	c      *common
	w, h   int
	cursor int   // the epoch under the cursor; -1 follows the newest
	picked []int // epochs picked for comparison: A, then B
	cache  string
	keys   runsKeys
	// warmups is how many of the folded runs were a probe's warm-up.
	warmups int
}

type runsKeys struct {
	moveKeys
	Pick, Clear key.Binding
}

func newRuns(c *common) panel {
	b := binding
	return &runsPanel{c: c, cursor: -1, keys: runsKeys{
		moveKeys: newMoveKeys("first run", "newest run"),
		Pick:     b([]string{"x"}, "x", "pick A, then B, to compare"),
		Clear:    b([]string{"esc"}, "esc", "clear the picks"),
	}}
}

func (p *runsPanel) ShortHelp() []key.Binding { return []key.Binding{p.keys.Pick, p.keys.Down} }

func (p *runsPanel) FullHelp() [][]key.Binding {
	k := p.keys
	return [][]key.Binding{k.list(), {k.Pick, k.Clear}}
}

func (p *runsPanel) SetSize(w, h int) { p.w, p.h = w, h }

func (p *runsPanel) View() string { return p.cache }

func (p *runsPanel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		p.key(msg)
	case refreshMsg, restyleMsg:
	default:
		return nil
	}
	p.draw()
	return nil
}

// row is one shown run: the load's epoch, the dashboard's note, and its span.
type row struct {
	e      loadgen.EpochStats
	n      epochNote
	active time.Duration
	live   bool
}

// rows are the runs shown, oldest first, and how many brief ones were folded away.
func (p *runsPanel) rows() (rows []row, folded int) {
	s, now := &p.c.s, p.c.now()
	p.warmups = 0
	for i := range s.runs {
		e, active := s.shownRun(i, now)
		r := row{e: e, active: active, live: e.Epoch == s.epoch}
		if n, ok := s.notes[e.Epoch]; ok {
			r.n = *n
		}
		if !r.live && !p.isPicked(e.Epoch) && r.n.warmup {
			// A probe's warm-up is not a result: its probe is the next run.
			p.warmups++
			folded++
			continue
		}
		// A labelled run with results (a probe of a search) is kept however brief.
		if !r.live && !p.isPicked(e.Epoch) && r.active < foldBelow && (e.Label == "" || e.Requests == 0) {
			folded++
			continue
		}
		rows = append(rows, r)
	}
	// Picks of runs that are gone go with them.
	kept := p.picked[:0]
	for _, n := range p.picked {
		for _, r := range rows {
			if r.e.Epoch == n {
				kept = append(kept, n)
				break
			}
		}
	}
	p.picked = kept
	return rows, folded
}

func (p *runsPanel) isPicked(n int) bool {
	for _, x := range p.picked {
		if x == n {
			return true
		}
	}
	return false
}

// cursorIndex is the cursor's row in rows.
func (p *runsPanel) cursorIndex(rows []row) int {
	if p.cursor < 0 {
		return len(rows) - 1
	}
	for i, r := range rows {
		if r.e.Epoch >= p.cursor {
			return i
		}
	}
	return len(rows) - 1
}

func (p *runsPanel) key(msg tea.KeyMsg) {
	rows, _ := p.rows()
	if len(rows) == 0 {
		return
	}
	k, i := p.keys, p.cursorIndex(rows)
	page := max(p.h/2, 1)
	if to, ok := k.moved(msg, i, len(rows), page); ok {
		p.cursor = rows[to].e.Epoch
		if to == len(rows)-1 {
			p.cursor = -1 // at the end, the cursor follows new runs
		}
		return
	}
	switch {
	case key.Matches(msg, k.Pick):
		p.pick(rows[i].e.Epoch)
	case key.Matches(msg, k.Clear):
		p.picked = nil
	}
}

// pick chooses or unchooses epoch n; a third pick drops the oldest.
func (p *runsPanel) pick(n int) {
	for j, x := range p.picked {
		if x == n {
			p.picked = append(p.picked[:j], p.picked[j+1:]...)
			return
		}
	}
	p.picked = append(p.picked, n)
	if len(p.picked) > 2 {
		p.picked = p.picked[1:]
	}
}

// column is one column of the table: shown by priority (0 first) while the width allows.
type column struct {
	title string
	width int
	prio  int
	left  bool
	cell  func(r row) string
}

func (p *runsPanel) columns() []column {
	slo := p.c.deps.Goodput.Set()
	cols := []column{
		{"#", 4, 0, true, func(r row) string { return fmt.Sprint(r.e.Epoch) }},
		{"settings", 18, 0, true, func(r row) string {
			if r.live {
				return settingsOf(r) + " ·live"
			}
			return settingsOf(r)
		}},
		{"workload", 18, 3, true, func(r row) string { return p.rowWorkload(r) }},
		{"util", 5, 6, false, func(r row) string { return orDash(r.n.util > 0, fmt.Sprintf("%.2f", r.n.util)) }},
		{"KV tok", 9, 7, false, func(r row) string { return orDash(r.n.kvTokens > 0, commas(r.n.kvTokens)) }},
		{"dur", 6, 3, false, func(r row) string { return fmtAge(r.active) }},
		{"reqs", 6, 4, false, func(r row) string { return fmt.Sprint(r.e.Requests) }},
		{"req/s", 6, 1, false, func(r row) string { return rateCell(rateEstimate(r.e.Requests, r.active.Seconds())) }},
		{"TTFT p50", 8, 5, false, func(r row) string { return qCell(r.e.TTFT, 0.5) }},
		{"TTFT p99", 8, 1, false, func(r row) string { return qCell(r.e.TTFT, 0.99) }},
		{"ITL p99", 8, 2, false, func(r row) string { return qCell(r.e.ITL, 0.99) }},
		{"E2E p50", 8, 4, false, func(r row) string { return qCell(r.e.E2EL, 0.5) }},
		{"TPOT p50", 8, 8, false, func(r row) string { return qCell(r.e.TPOT, 0.5) }},
		{"tok/s", 7, 2, false, func(r row) string {
			return rateCell(perRequestRate(float64(r.e.OutputTokens), r.e.Requests, r.active.Seconds()))
		}},
	}
	if slo {
		cols = append(cols, column{"good/s", 7, 4, false, func(r row) string { return rateCell(rateEstimate(r.e.Good, r.active.Seconds())) }})
	}
	cols = append(cols,
		column{"preempt", 7, 7, false, func(r row) string { return fmt.Sprintf("%.0f", r.n.preempt) }},
		column{"fail", 5, 5, false, func(r row) string { return fmt.Sprint(r.e.Failures) }},
	)
	return cols
}

// fitColumns keeps the columns that fit in width, by priority, in their order.
func fitColumns(cols []column, width int) []column {
	order := make([]int, len(cols))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cols[order[a]].prio < cols[order[b]].prio })
	keep := make([]bool, len(cols))
	used := 0
	for _, i := range order {
		if w := cols[i].width + 1; used+w <= width {
			keep[i], used = true, used+w
		}
	}
	var out []column
	for i, k := range keep {
		if k {
			out = append(out, cols[i])
		}
	}
	return out
}

// widenText gives the room the columns leave in width to the text columns (settings,
// workload) whose cells are longer than their width, so that a wide terminal shows them whole.
func widenText(cols []column, rows []row, width int) []column {
	room := width
	for _, c := range cols {
		room -= c.width + 1
	}
	for i := range cols {
		if !cols[i].left || room <= 0 {
			continue
		}
		need := cols[i].width
		for _, r := range rows {
			need = max(need, lipgloss.Width(cols[i].cell(r)))
		}
		grow := min(need-cols[i].width, room)
		cols[i].width += grow
		room -= grow
	}
	return cols
}

func cellText(c column, s string) string {
	s = truncate(s, c.width)
	if c.left {
		return padRight(s, c.width)
	}
	return padLeft(s, c.width)
}

func settingsOf(r row) string {
	s := r.e.Settings
	if r.e.Label != "" {
		s += " (" + clean(r.e.Label) + ")"
	}
	return s
}

// shortWorkload names a workload compactly: "random 256 in / 128 out" is "random 256→128",
// and with the prefix demo's "…, prefix on" it is "256→128 prefix on".
func shortWorkload(name string) string { return workloadLabel(name, 0, 0) }

// rowWorkload is r's workload as workloadLabel names it, with the epoch's mean prompt; before
// any request finished, the workload's own prompt and the prefix demo's, as sent.
func (p *runsPanel) rowWorkload(r row) string {
	mean := 0
	if r.e.Requests > 0 {
		mean = int(math.Round(float64(r.e.PromptTokens) / float64(r.e.Requests)))
	}
	return workloadLabel(r.n.workload, mean, p.c.deps.PrefixLen)
}

// workloadLabel is shortWorkload with the prompt length the requests had (promptMean > 0),
// or, before any finished, the workload's plus the prefix demo's prefixLen tokens: the demo
// puts its shared or random prefix before the workload's own prompt, so "256→128 prefix off"
// sends 1,280-token prompts and is shown as "1280→128 prefix off".
func workloadLabel(name string, promptMean, prefixLen int) string {
	name, prefix := loadgen.SplitPrefixName(clean(name))
	if strings.HasSuffix(name, " out") && strings.Contains(name, " in / ") {
		in, out, _ := strings.Cut(strings.TrimSuffix(name, " out"), " in / ")
		if f := strings.Fields(in); prefix != "" && len(f) > 0 {
			if n, err := strconv.Atoi(f[len(f)-1]); promptMean > 0 {
				f[len(f)-1] = fmt.Sprint(promptMean)
			} else if err == nil && prefixLen > 0 {
				f[len(f)-1] = fmt.Sprint(n + prefixLen)
			}
			in = strings.Join(f, " ")
		}
		name = in + "→" + out
	}
	if prefix != "" {
		name = strings.TrimPrefix(name, "random ") + " " + prefix
	}
	return orDash(name != "", name)
}

func rateCell(e estimate) string {
	if math.IsNaN(e.V) {
		return "–"
	}
	return siNumber(e.V)
}

func qCell(q loadgen.Quantiles, p float64) string {
	e := quantileEstimate(q, p)
	if math.IsNaN(e.V) {
		return "–"
	}
	return fmtMs(e.V)
}

const markWidth = 3 // cursor, pick letter, space

func (p *runsPanel) draw() {
	if p.w <= 0 || p.h <= 0 {
		return
	}
	st := &p.c.styles
	rows, folded := p.rows()
	cols := widenText(fitColumns(p.columns(), p.w-markWidth), rows, p.w-markWidth)
	var head strings.Builder
	head.WriteString(strings.Repeat(" ", markWidth))
	for _, c := range cols {
		head.WriteString(cellText(c, c.title) + " ")
	}
	out := []string{st.Label.Render(truncate(head.String(), p.w))}
	var cmp []string
	if len(p.picked) == 2 {
		cmp = p.comparison()
	}
	hint := "↑/↓ move · x picks A then B to compare · live: the current run · paused time is not counted"
	if folded > 0 {
		what := "shorter than " + fmtAge(foldBelow)
		if p.warmups > 0 {
			what += " or a probe's warm-up"
		}
		hint = fmt.Sprintf("%d runs %s folded away · ", folded, what) + hint
	}
	hints := wrapWords(hint, p.w) // wrapped, not cut: the last words say what the durations mean
	rowsShown := min(max(len(rows), 1), 3)
	// Short of rows, the comparison the user asked for comes before the hint's second line,
	// then before the blank above it.
	if len(cmp) > 0 && 1+rowsShown+len(hints)+len(cmp) > p.h {
		hints = []string{truncate(hint, p.w)}
	}
	if len(cmp) > 0 && 1+rowsShown+len(hints)+len(cmp) > p.h {
		cmp = cmp[1:]
	}
	room := max(p.h-1-len(hints)-len(cmp), 3)
	cur := p.cursorIndex(rows)
	first := min(max(cur-room+1, 0), max(len(rows)-room, 0))
	for i := first; i < len(rows) && i < first+room; i++ {
		r := rows[i]
		mark := []rune("   ")
		if i == cur {
			mark[0] = '▶'
		}
		for j, n := range p.picked {
			if n == r.e.Epoch {
				mark[1] = rune('A' + j)
			}
		}
		var line strings.Builder
		line.WriteString(string(mark))
		for _, c := range cols {
			line.WriteString(cellText(c, c.cell(r)) + " ")
		}
		text := truncate(line.String(), p.w)
		switch {
		case i == cur:
			text = st.Selected.Render(padRight(text, p.w))
		case r.live:
			text = st.Good.Render(text)
		case p.isPicked(r.e.Epoch):
			text = st.Picked.Render(text)
		}
		out = append(out, text)
	}
	if len(rows) == 0 {
		out = append(out, st.Muted.Render("no runs yet: every load change or restart starts one"))
	}
	for _, l := range hints {
		out = append(out, st.Muted.Render(truncate(l, p.w)))
	}
	out = append(out, cmp...)
	p.cache = fit(strings.Join(out, "\n"), p.w, p.h)
}

// comparison reads A -> B: each figure of both runs and the change, coloured only when it is
// beyond the noise of the two samples, with the verdict in words (for NO_COLOR, and to say why
// a change is not coloured).
func (p *runsPanel) comparison() []string {
	st, s, now := &p.c.styles, &p.c.s, p.c.now()
	get := func(n int) (row, bool) {
		i := s.runIndex(n)
		if i < 0 {
			return row{}, false
		}
		e, active := s.shownRun(i, now)
		r := row{e: e, active: active}
		if note, ok := s.notes[n]; ok {
			r.n = *note
		}
		return r, true
	}
	a, okA := get(p.picked[0])
	b, okB := get(p.picked[1])
	if !okA || !okB {
		return nil
	}
	nameW := 12
	valW := max(min((p.w-nameW-26)/2, 20), 10)
	title := fmt.Sprintf("A (run %d) -> B (run %d)", a.e.Epoch, b.e.Epoch)
	head := padRight("", nameW) + padLeft(fmt.Sprintf("A · run %d", a.e.Epoch), valW) + padLeft(fmt.Sprintf("B · run %d", b.e.Epoch), valW) + padLeft("change", 10) + "  "
	out := []string{"", st.Title.Render(title), st.Label.Render(truncate(head, p.w))}
	text := func(name, av, bv string) {
		out = append(out, truncate(padRight(name, nameW)+padLeft(truncate(av, valW-2), valW)+padLeft(truncate(bv, valW-2), valW), p.w)) // two cells apart, so two texts never read as one
	}
	line := func(name string, ea, eb estimate, format func(float64) string, lowerBetter bool) {
		pct, v := judge(ea, eb, lowerBetter)
		change := "–"
		if !math.IsNaN(pct) {
			change = fmt.Sprintf("%+.1f%%", pct)
		}
		style := st.Muted
		switch v {
		case verdictBetter:
			style = st.Good
		case verdictWorse:
			style = st.Bad
		case verdictNone, verdictFew, verdictNoise:
		}
		row := padRight(name, nameW) + padLeft(format(ea.V), valW) + padLeft(format(eb.V), valW) + " " + style.Render(padLeft(change, 9)+"  "+v.String())
		out = append(out, truncate(row, p.w))
	}
	ms := func(v float64) string { return fmtMs(v) }
	num := func(v float64) string { return siNumber(v) }
	sa, sb := a.active.Seconds(), b.active.Seconds()
	text("settings", settingsOf(a), settingsOf(b))
	text("workload", p.rowWorkload(a), p.rowWorkload(b))
	text("util · KV", fmt.Sprintf("%.2f · %s", a.n.util, orDash(a.n.kvTokens > 0, siNumber(float64(a.n.kvTokens)))),
		fmt.Sprintf("%.2f · %s", b.n.util, orDash(b.n.kvTokens > 0, siNumber(float64(b.n.kvTokens)))))
	text("duration", fmt.Sprintf("%s · %d req", fmtAge(a.active), a.e.Requests), fmt.Sprintf("%s · %d req", fmtAge(b.active), b.e.Requests))
	line("req/s", rateEstimate(a.e.Requests, sa), rateEstimate(b.e.Requests, sb), num, false)
	line("out tok/s", perRequestRate(float64(a.e.OutputTokens), a.e.Requests, sa), perRequestRate(float64(b.e.OutputTokens), b.e.Requests, sb), num, false)
	if p.c.deps.Goodput.Set() {
		line("goodput/s", rateEstimate(a.e.Good, sa), rateEstimate(b.e.Good, sb), num, false)
	}
	line("TTFT p50", quantileEstimate(a.e.TTFT, 0.5), quantileEstimate(b.e.TTFT, 0.5), ms, true)
	line("TTFT p99", quantileEstimate(a.e.TTFT, 0.99), quantileEstimate(b.e.TTFT, 0.99), ms, true)
	line("ITL p99", quantileEstimate(a.e.ITL, 0.99), quantileEstimate(b.e.ITL, 0.99), ms, true)
	line("E2E p50", quantileEstimate(a.e.E2EL, 0.5), quantileEstimate(b.e.E2EL, 0.5), ms, true)
	line("failures/s", rateEstimate(a.e.Failures, sa), rateEstimate(b.e.Failures, sb), num, true)
	line("preempt/s", rateEstimate(int(a.n.preempt), sa), rateEstimate(int(b.n.preempt), sb), num, true)
	return out
}
