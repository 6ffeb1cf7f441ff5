package tui

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

// fleetTab is the Fleet view, first in the tab line when the dashboard watches a fleet.
var fleetTab = tab{"Fleet", newFleetPanel, false}

// tabsFor are the views of a dashboard: the Fleet view first in fleet mode, then every tab.
func tabsFor(d Deps) []tab {
	if d.Fleet == nil {
		return tabs
	}
	out := []tab{fleetTab}
	for _, t := range tabs {
		if !t.ownLoad {
			out = append(out, t)
		}
	}
	return out
}

// fleetState is what the dashboard knows of its fleet: the latest rows and the row drilled
// into (nil on the fleet).
type fleetState struct {
	f     *fleet.Fleet
	drill *fleet.Row
	at    time.Time // when f arrived
	// held holds each row's verdicts (by key) and the rest (the client's, the source's) for
	// diagnose.DefaultHold, as the single server's header does, so a row does not flap.
	held   map[fleet.Key]*diagnose.Tracker
	others *diagnose.Tracker
}

// fleetMsg is the fleet's rows, read in a command after the source said it has news.
type fleetMsg struct{ f fleet.Fleet }

// drillMsg asks the root to show one row's endpoint in the Overview, Log and Runs views.
type drillMsg struct{ row fleet.Row }

func (drillMsg) forRoot() {}

// fleetRefreshEvery bounds how long the rows wait for news: states age (STALE) without any.
const fleetRefreshEvery = 2 * time.Second

// fleetMinGap is the least time between two reads of the rows: a large fleet's endpoints are
// scraped one after another, each with news, and a read (rows, verdicts, a redraw) a second
// is all a person can follow. Tests shorten it.
var fleetMinGap = time.Second

// waitFleet waits for the source's news (or fleetRefreshEvery), at least fleetMinGap, and
// reads the rows, in the command's goroutine.
func waitFleet(src FleetSource, facts diagnose.Facts) tea.Cmd {
	return waitFleetEvery(src, facts, fleetMinGap)
}

// fleetGap is the least time between two reads of a fleet of n rows: a second, and 20 ms
// more per row past 100 (3 s at 200 and over): a large fleet's rows cost more to judge and
// draw, and each of its endpoints is scraped seldom (every 15 s at 200, fleet.IntervalFor),
// so a read every 3 s still shows each scrape within a fifth of its interval.
func fleetGap(n int) time.Duration {
	return min(fleetMinGap+time.Duration(max(n-100, 0))*20*time.Millisecond, max(fleetMinGap, 3*time.Second))
}

func waitFleetEvery(src FleetSource, facts diagnose.Facts, gap time.Duration) tea.Cmd {
	return func() tea.Msg {
		start := time.Now()
		t := time.NewTimer(fleetRefreshEvery)
		defer t.Stop()
		select {
		case <-src.Updated():
		case <-t.C:
		}
		if rest := gap - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
		return fleetMsg{f: src.Fleet(facts)}
	}
}

// fleetColumn is one column of the fleet table.
type fleetColumn struct {
	title string
	width int
	prio  int         // lower is kept first when the terminal is narrow
	field fleet.Field // what s sorts it by ("" for none)
	cell  func(st *Styles, r *fleet.Row) (string, lipgloss.Style)
}

// sortKeys are the orders s cycles through: state (worst first), name, then the numbers.
var sortKeys = []struct {
	name  string
	field fleet.Field
}{
	{"state", ""}, {"name", "name"}, {"running", fleet.FieldRunning}, {"waiting", fleet.FieldWaiting},
	{"KV", fleet.FieldKVCacheUsage}, {"gen tok/s", fleet.FieldGenTokens}, {"TTFT p99", fleet.FieldTTFTP99},
	{"ITL p99", fleet.FieldITLP99}, {"preempt/s", fleet.FieldPreemptions}, {"errors/s", fleet.FieldErrors},
}

const dash = "--"

func numCell(v scrape.Value, format func(float64) string) string {
	if !v.OK || math.IsNaN(v.V) {
		return dash
	}
	return format(v.V)
}

func quantileCell(q diagnose.Quantile) string {
	if !q.V.OK {
		return dash
	}
	return q.Prefix() + fmtMs(q.V.V*1000)
}

func perSecCell(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 0.1:
		return fmt.Sprintf("%.2f", v)
	}
	return siNumber(v)
}

func fleetColumns() []fleetColumn {
	plain := func(f func(r *fleet.Row) string) func(st *Styles, r *fleet.Row) (string, lipgloss.Style) {
		return func(st *Styles, r *fleet.Row) (string, lipgloss.Style) { return f(r), st.Base }
	}
	skew := func(rule string, text string, st *Styles, r *fleet.Row) (string, lipgloss.Style) {
		for _, v := range r.Verdicts {
			if v.Rule == rule {
				return text + "!", st.Warn
			}
		}
		return text, st.Base
	}
	return []fleetColumn{
		{"name", 16, 0, "name", func(st *Styles, r *fleet.Row) (string, lipgloss.Style) { return clean(r.Name), st.Value }},
		{"model", 22, 3, "", plain(func(r *fleet.Row) string { return orDashStr(clean(r.Model)) })},
		{"state", 9, 0, "", func(st *Styles, r *fleet.Row) (string, lipgloss.Style) { return stateCell(st, r) }},
		{"run", 5, 1, fleet.FieldRunning, plain(func(r *fleet.Row) string { return numCell(r.Running, siNumber) })},
		{"wait", 6, 0, fleet.FieldWaiting, func(st *Styles, r *fleet.Row) (string, lipgloss.Style) {
			return skew(diagnose.RuleImbalance, numCell(r.Waiting, siNumber), st, r)
		}},
		{"KV%", 5, 0, fleet.FieldKVCacheUsage, func(st *Styles, r *fleet.Row) (string, lipgloss.Style) {
			txt := numCell(r.KVCacheUsage, func(v float64) string { return fmt.Sprintf("%.0f", v*100) })
			if txt, s := skew(diagnose.RuleKVSkew, txt, st, r); s.GetForeground() != st.Base.GetForeground() || strings.HasSuffix(txt, "!") {
				return txt, s
			}
			if r.KVCacheUsage.OK && r.KVCacheUsage.V >= 0.9 {
				return txt, st.Warn
			}
			return txt, st.Base
		}},
		{"util", 5, 1, "", func(st *Styles, r *fleet.Row) (string, lipgloss.Style) {
			// Configured, not measured: the first suspect when one replica lags the others.
			return numCell(r.Util, func(v float64) string { return fmt.Sprintf("%.2f", v) }), st.Base
		}},
		{"gen t/s", 7, 2, fleet.FieldGenTokens, plain(func(r *fleet.Row) string { return numCell(r.GenerationTokensPerSec, siNumber) })},
		{"TTFT99~", 10, 1, fleet.FieldTTFTP99, plain(func(r *fleet.Row) string { return quantileCell(r.TTFTP99) })},
		{"ITL99~", 9, 2, fleet.FieldITLP99, plain(func(r *fleet.Row) string { return quantileCell(r.ITLP99) })},
		{"pre/s", 6, 2, fleet.FieldPreemptions, plain(func(r *fleet.Row) string { return numCell(r.PreemptionsPerSec, perSecCell) })},
		{"err/s", 6, 2, fleet.FieldErrors, func(st *Styles, r *fleet.Row) (string, lipgloss.Style) {
			txt := numCell(r.ErrorsPerSec, perSecCell)
			if r.ErrorsPerSec.OK && r.ErrorsPerSec.V > 0 {
				return txt, st.Bad
			}
			return txt, st.Base
		}},
	}
}

func orDashStr(s string) string {
	if s == "" {
		return dash
	}
	return s
}

func stateCell(st *Styles, r *fleet.Row) (string, lipgloss.Style) {
	switch r.State {
	case fleet.StateUp:
		return "up", st.Good
	case fleet.StateDown:
		return "DOWN", st.Bad
	case fleet.StateStale:
		return "STALE", st.Warn
	case fleet.StateRestarted:
		return "RESTARTED", st.Warn
	}
	return r.State.String(), st.Muted
}

// severity is a row's worst verdict's severity (-1 without one).
func severity(r *fleet.Row) int {
	if v, ok := r.Top(); ok {
		return int(v.Severity)
	}
	return -1
}

func verdictStyle(st *Styles, v diagnose.Verdict) lipgloss.Style {
	switch v.Severity {
	case diagnose.Critical:
		return st.Bad
	case diagnose.Warning:
		return st.Warn
	}
	return st.Muted
}

// fleetPanel is the fleet table: a row per endpoint or engine, sortable, filterable and
// scrolled, with the selected row's verdict and evidence under it.
type fleetPanel struct {
	c       *common
	w, h    int
	cols    []fleetColumn
	sortIdx int
	reverse bool
	filter  textinput.Model
	typing  bool
	cursor  int // index in the shown rows
	offset  int // first shown row
	shown   []fleet.Row
	cache   string
	dirty   bool // the cache is out of date: a new size
	keys    fleetKeys
}

type fleetKeys struct {
	moveKeys
	Sort, Reverse, Filter, Clear, Drill key.Binding
}

func newFleetPanel(c *common) panel {
	b := binding
	ti := textinput.New()
	ti.Prompt = "/"
	ti.CharLimit = 64
	return &fleetPanel{c: c, cols: fleetColumns(), filter: ti, keys: fleetKeys{
		moveKeys: newMoveKeys("first row", "last row"),
		Sort:     b([]string{"s"}, "s", "sort by the next column"),
		Reverse:  b([]string{"S"}, "S", "reverse the order"),
		Filter:   b([]string{"/"}, "/", "filter rows"),
		Clear:    b([]string{"esc"}, "esc", "clear the filter"),
		Drill:    b([]string{"enter"}, "enter", "drill down (esc: back)"),
	}}
}

func (p *fleetPanel) ShortHelp() []key.Binding {
	return []key.Binding{p.keys.Drill, p.keys.Sort, p.keys.Filter}
}

func (p *fleetPanel) FullHelp() [][]key.Binding {
	k := p.keys
	return [][]key.Binding{k.list(), {k.Sort, k.Reverse, k.Filter, k.Clear, k.Drill}}
}

func (p *fleetPanel) Capturing() bool { return p.typing }

func (p *fleetPanel) SetSize(w, h int) { p.w, p.h, p.dirty = w, h, true }

func (p *fleetPanel) View() string { return p.cache }

func (p *fleetPanel) Update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.KeyMsg:
		cmd = p.key(msg)
	case refreshMsg:
		// The rows change only when new ones arrive (a fleetMsg) or a key moves them: a
		// 200-row table is not drawn again four times a second for nothing.
		if !p.dirty && p.cache != "" {
			return nil
		}
	case restyleMsg, fleetMsg:
	default:
		if !p.typing {
			return nil
		}
		p.filter, cmd = p.filter.Update(msg)
	}
	p.draw()
	return cmd
}

// page is how many rows the table shows.
func (p *fleetPanel) page() int { return max(p.h-2-detailLines, 1) }

// detailLines is the selected row's block under the table: its verdict (two lines), what the
// verdict saw and the flags, and its notes.
const detailLines = 4

func (p *fleetPanel) key(msg tea.KeyMsg) tea.Cmd {
	k := &p.keys
	if p.typing {
		switch msg.Type {
		case tea.KeyEnter:
			p.typing = false
			p.filter.Blur()
		case tea.KeyEsc:
			p.typing = false
			p.filter.Blur()
			p.filter.SetValue("")
		default:
			var cmd tea.Cmd
			p.filter, cmd = p.filter.Update(msg)
			p.cursor, p.offset = 0, 0
			return cmd
		}
		return nil
	}
	// The rows are counted when drawn, which keeps the cursor among them.
	if to, ok := k.moved(msg, p.cursor, math.MaxInt32, p.page()); ok {
		p.cursor = to
		return nil
	}
	switch {
	case key.Matches(msg, k.Sort):
		p.sortIdx = (p.sortIdx + 1) % len(sortKeys)
		p.c.setStatus("fleet sorted by "+sortKeys[p.sortIdx].name, false)
	case key.Matches(msg, k.Reverse):
		p.reverse = !p.reverse
	case key.Matches(msg, k.Filter):
		p.typing = true
		return p.filter.Focus()
	case key.Matches(msg, k.Clear):
		p.filter.SetValue("")
	case key.Matches(msg, k.Drill):
		rows := p.rows()
		if i := p.clampCursor(len(rows)); i >= 0 {
			r := rows[i]
			return func() tea.Msg { return drillMsg{row: r} }
		}
	}
	return nil
}

func (p *fleetPanel) clampCursor(n int) int {
	p.cursor = min(max(p.cursor, 0), n-1)
	return p.cursor
}

// rows are the fleet's rows filtered and in the chosen order.
func (p *fleetPanel) rows() []fleet.Row {
	f := p.c.s.fleet.f
	if f == nil {
		return nil
	}
	rows := fleet.Filter(append([]fleet.Row(nil), f.Rows...), p.filter.Value())
	sk := sortKeys[p.sortIdx]
	switch sk.field {
	case "name":
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	case "":
		// The worst first: by state, then by the worst verdict, so the sick replica is on top.
		fleet.SortBy(rows, "")
		sort.SliceStable(rows, func(i, j int) bool {
			a, b := &rows[i], &rows[j]
			if a.State != b.State {
				return a.State > b.State
			}
			return severity(a) > severity(b)
		})
	default:
		fleet.SortBy(rows, sk.field)
	}
	if p.reverse {
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
	}
	return rows
}

// layoutColumns keeps the columns that fit beside a verdict column of at least 24 cells,
// dropping the least useful first, and gives the verdict what is left.
func (p *fleetPanel) layoutColumns() (cols []fleetColumn, verdictW int) {
	keep := make([]bool, len(p.cols))
	used := 0
	for prio := 0; prio <= 3; prio++ {
		for i, c := range p.cols {
			if c.prio == prio && used+c.width+1+24 <= p.w {
				keep[i], used = true, used+c.width+1
			}
		}
	}
	for i, c := range p.cols {
		if keep[i] {
			cols = append(cols, c)
		}
	}
	return cols, max(p.w-used, 0)
}

func (p *fleetPanel) draw() {
	if p.w == 0 || p.h == 0 {
		return
	}
	p.dirty = false
	st := &p.c.styles
	f := p.c.s.fleet.f
	var lines []string
	if f == nil {
		lines = append(lines, st.Muted.Render("waiting for the fleet's first read ..."))
		p.cache = fit(strings.Join(lines, "\n"), p.w, p.h)
		return
	}
	rows := p.rows()
	p.shown = rows
	lines = append(lines, p.summaryLine(f, len(rows)))
	cols, vw := p.layoutColumns()
	sortField := sortKeys[p.sortIdx].field
	var hdr []string
	win := ""
	if len(rows) > 0 {
		win = strings.TrimSuffix(strings.TrimPrefix(rows[0].EstimateLabel(), "~"), " est")
	}
	for i, c := range cols {
		t := c.title
		if win != "" && (c.field == fleet.FieldTTFTP99 || c.field == fleet.FieldITLP99) {
			t = strings.TrimSuffix(t, "~") + " " + shortWindow(win) + "~" // the window the estimate covers
			// A window such as "39s" widens its column rather than shift the ones after it.
			if extra := lipgloss.Width(t) - c.width; extra > 0 && vw-extra >= 8 {
				cols[i].width, vw = c.width+extra, vw-extra
			}
		}
		if sortField != "" && c.field == sortField {
			t += p.arrow()
		}
		hdr = append(hdr, padRight(t, cols[i].width))
	}
	hdr = append(hdr, "verdict")
	lines = append(lines, st.Label.Render(truncate(strings.Join(hdr, " "), p.w)))
	page := p.page()
	cur := p.clampCursor(len(rows))
	if cur < p.offset {
		p.offset = cur
	}
	if cur >= p.offset+page {
		p.offset = cur - page + 1
	}
	p.offset = min(max(p.offset, 0), max(len(rows)-page, 0))
	for i := p.offset; i < len(rows) && i < p.offset+page; i++ {
		lines = append(lines, p.rowLine(&rows[i], cols, vw, i == cur))
	}
	switch {
	case len(rows) > 0:
	case p.filter.Value() != "":
		lines = append(lines, st.Muted.Render("no row matches the filter (esc clears it)"))
	default:
		lines = append(lines, st.Muted.Render("no server to show yet"))
	}
	for len(lines) < page+2 {
		lines = append(lines, "")
	}
	lines = append(lines, p.detail(rows, cur)...)
	p.cache = fit(strings.Join(lines, "\n"), p.w, p.h)
}

func (p *fleetPanel) arrow() string {
	if p.reverse {
		return "▲"
	}
	return "▼"
}

func (p *fleetPanel) summaryLine(f *fleet.Fleet, shown int) string {
	st := &p.c.styles
	counts := map[diagnose.State]int{}
	for _, r := range f.Rows {
		counts[r.State]++
	}
	parts := []string{st.Value.Render(fmt.Sprintf("%d/%d up", f.Up, f.Endpoints)), st.Label.Render("by ") + sortKeys[p.sortIdx].name + p.arrow()}
	for _, s := range []diagnose.State{fleet.StateDown, fleet.StateStale, fleet.StateRestarted} {
		if n := counts[s]; n > 0 {
			parts = append(parts, st.Warn.Render(fmt.Sprintf("%d %s", n, s)))
		}
	}
	if shown != len(f.Rows) {
		parts = append(parts, fmt.Sprintf("%d of %d rows shown", shown, len(f.Rows)))
	} else {
		parts = append(parts, fmt.Sprintf("%d rows", len(f.Rows)))
	}
	if p.typing || p.filter.Value() != "" {
		parts = append(parts, p.filter.View())
	}
	if len(f.Rows) > 0 {
		if est := f.Rows[0].EstimateLabel(); est != "" {
			parts = append(parts, st.Muted.Render("~ p99 estimated from histograms over "+strings.TrimSuffix(strings.TrimPrefix(est, "~"), " est")))
		}
	}
	return truncate(strings.Join(parts, st.Muted.Render(" · ")), p.w)
}

func (p *fleetPanel) rowLine(r *fleet.Row, cols []fleetColumn, vw int, selected bool) string {
	st := &p.c.styles
	cells := make([]string, 0, len(cols)+1)
	for _, c := range cols {
		txt, style := c.cell(st, r)
		if r.Frozen && c.field != "name" && c.title != "state" {
			style = st.Muted
		}
		cells = append(cells, style.Render(fixedWidth(txt, c.width)))
	}
	v, ok := r.Top()
	switch {
	case ok:
		cells = append(cells, verdictStyle(st, v).Render(truncate(v.Rule+": "+clean(v.Text), vw)))
	case r.State == fleet.StateUp:
		cells = append(cells, st.Good.Render("ok"))
	default:
		cells = append(cells, st.Muted.Render(dash))
	}
	line := strings.Join(cells, " ")
	if selected {
		return st.Selected.Render(padRight(truncate(line, p.w), p.w))
	}
	// Every cell has its width and the verdict was cut to what is left: the line fits.
	return line
}

// fixedWidth is s cut or padded to width cells; plain ASCII (most cells) without measuring
// graphemes, which was most of drawing a large table.
func fixedWidth(s string, width int) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] < 0x20 {
			return padRight(truncate(s, width), width)
		}
	}
	if len(s) > width {
		return truncate(s, width)
	}
	return s + strings.Repeat(" ", width-len(s))
}

// detail is the selected row's verdict in full, its evidence and flags, and what its backend
// does not export or why it is not up.
func (p *fleetPanel) detail(rows []fleet.Row, cur int) []string {
	st := &p.c.styles
	out := make([]string, detailLines)
	if cur < 0 || cur >= len(rows) {
		return out
	}
	r := &rows[cur]
	name := st.Value.Render(clean(r.Name))
	if v, ok := r.Top(); ok {
		words := append([]string{name, verdictStyle(st, v).Render(v.Severity.String() + " " + v.Rule + ":")}, strings.Fields(clean(v.Text))...)
		copy(out, wrapItems(words, " ", p.w, 2))
		var ev []string
		for _, e := range v.Evidence {
			ev = append(ev, e.String())
		}
		var parts []string
		if len(ev) > 0 {
			parts = append(parts, st.Label.Render("saw ")+strings.Join(ev, "; "))
		}
		if len(v.Flags) > 0 {
			parts = append(parts, st.Label.Render("change ")+strings.Join(v.Flags, " "))
		}
		out[2] = strings.Join(parts, st.Muted.Render(" · "))
	} else {
		out[0] = name + " " + st.Good.Render("no verdict")
	}
	var notes []string
	if r.StateDetail != "" {
		notes = append(notes, clean(r.StateDetail))
	}
	if r.LastError != "" && r.State == fleet.StateUp {
		notes = append(notes, "last error: "+clean(r.LastError))
	}
	if len(r.NotExported) > 0 {
		names := make([]string, len(r.NotExported))
		for i, f := range r.NotExported {
			names[i] = string(f)
		}
		backend := map[scrape.Backend]string{scrape.BackendSGLang: "SGLang", scrape.BackendTGI: "TGI"}[r.Backend]
		if backend == "" {
			backend = "this server"
		}
		notes = append(notes, backend+" does not export "+strings.Join(names, ", "))
	}
	if r.URL != "" {
		notes = append(notes, clean(r.URL))
	}
	out[3] = st.Muted.Render(strings.Join(notes, " · "))
	for i := range out {
		out[i] = truncate(out[i], p.w)
	}
	return out
}

// fleetHeader is the header in fleet mode: the fleet's overall verdict, or the endpoint
// drilled into.
func fleetHeader(c *common, w int) string {
	st := &c.styles
	fs := &c.s.fleet
	items := []item{{st.Title.Render("vllmtop"), 0}, {st.Muted.Render("fleet"), 0}}
	line2 := st.Muted.Render("waiting for the fleet's first read ...")
	if fs.drill != nil {
		r := fs.drill
		if f := fs.f; f != nil {
			if cur, ok := f.Row(r.Key); ok {
				r = cur
			}
		}
		txt, style := stateCell(st, r)
		items = append(items, item{st.Value.Render("› " + clean(r.Name)), 0})
		if r.Model != "" { // a row that was never read has none
			items = append(items, item{st.Value.Render(truncate(clean(r.Model), 48)), 1})
		}
		items = append(items, item{style.Render(txt), 0}, item{st.Muted.Render(clean(r.URL)), 2}, item{st.Muted.Render("esc: back to the fleet"), 1})
		o, sum := diagnose.Summary(r.Verdicts)
		line2 = overallStyle(st, o).Render(truncate(clean(sum), w))
		return fitItems(items, st.Muted.Render(" · "), w) + "\n" + line2
	}
	if f := fs.f; f != nil {
		items = append(items, item{st.Muted.Render(f.Source), 1}, item{st.Value.Render(fmt.Sprintf("%d/%d up", f.Up, f.Endpoints)), 0})
		if !fs.at.IsZero() {
			items = append(items, item{st.Label.Render("read ") + fmtAge(c.now().Sub(f.Time)) + st.Muted.Render(" ago"), 2})
		}
		o, sum := f.Summary()
		line2 = overallStyle(st, o).Render(truncate(clean(sum), w))
	}
	return fitItems(items, st.Muted.Render(" · "), w) + "\n" + line2
}

func overallStyle(st *Styles, o diagnose.Overall) lipgloss.Style {
	switch o {
	case diagnose.Failing:
		return st.Bad
	case diagnose.Degraded:
		return st.Warn
	}
	return st.Good
}

// drillInto points the Overview, Log and Runs views at one row's endpoint: its scrapes, and
// its history so far for the charts.
func (m *Model) drillInto(r fleet.Row) tea.Cmd {
	c, s := m.c, &m.c.s
	if c.deps.DrillScraper == nil {
		c.setStatus("this fleet has no drill-down", true)
		return nil
	}
	scr, err := c.deps.DrillScraper(r)
	if err != nil {
		c.setStatus("drill-down: "+clean(err.Error()), true)
		return nil
	}
	s.fleet.drill = &r
	c.deps.Scraper = scr
	m.scrapeGen++
	m.snaps, s.snap, s.fast, s.slow, s.srvErr = nil, nil, nil, nil, ""
	s.hist = newHistory(seriesAggregates())
	if c.deps.Fleet != nil {
		backfill(s.hist, c.deps.Fleet.History(), r.Key)
	}
	m.show(overviewTab)
	m.header.Update(refreshMsg{})
	c.setStatus("drilled into "+clean(r.Name)+" (esc: back to the fleet)", false)
	return scheduleScrape(m.scrapeGen, 0)
}

// leaveDrill goes back to the fleet table and stops scraping the endpoint.
func (m *Model) leaveDrill() {
	c, s := m.c, &m.c.s
	s.fleet.drill = nil
	c.deps.Scraper = nil
	m.scrapeGen++
	m.snaps, s.snap, s.fast, s.slow = nil, nil, nil, nil
	m.show(fleetTab.name)
	m.header.Update(refreshMsg{})
	c.setStatus("", false)
}

// backfill writes a row's fleet history into the charts' history, oldest second first, so
// the drill-down's charts show what the fleet saw before (an hour, from Prometheus).
func backfill(h *history, fh *fleet.History, k fleet.Key) {
	if fh == nil {
		return
	}
	series := map[fleet.Metric]struct {
		idx   int
		scale float64
	}{
		fleet.MetricRunning: {serRunning, 1}, fleet.MetricWaiting: {serWaiting, 1}, fleet.MetricKVCacheUsage: {serKV, 100},
		fleet.MetricGenTokens: {serSrvGenTok, 1}, fleet.MetricTTFTP99: {serSrvTTFTp99, 1000},
	}
	bySec := map[int64][]sample{}
	for _, metric := range fleet.Metrics {
		to, ok := series[metric]
		if !ok {
			continue
		}
		for _, pt := range fh.Series(k, metric) {
			sec := pt.T.Unix()
			row, ok := bySec[sec]
			if !ok {
				row = make([]sample, len(seriesDefs))
				bySec[sec] = row
			}
			row[to.idx] = value(pt.V * to.scale)
		}
	}
	secs := make([]int64, 0, len(bySec))
	for sec := range bySec {
		secs = append(secs, sec)
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i] < secs[j] })
	for _, sec := range secs {
		h.push(time.Unix(sec, 0), bySec[sec])
	}
}

// fleetKeys turns off the keys that need a load or a supervised server, which a fleet has
// not, so the footer and the help do not offer them.
func (k *KeyMap) fleetOnly() {
	for _, b := range []*key.Binding{&k.More, &k.Less, &k.Double, &k.Halve, &k.RateMode, &k.Pause, &k.PromptLen,
		&k.UtilDown, &k.UtilUp, &k.UtilDownBig, &k.UtilUpBig, &k.Restart, &k.Canary, &k.Prefix,
		&k.Tune.Search, &k.Tune.Sweep, &k.Tune.Export} {
		b.SetEnabled(false)
	}
}

// facts are what the client knows of itself, for the verdicts.
func (m *Model) facts() diagnose.Facts {
	c, s := m.c, &m.c.s
	f := diagnose.Facts{Lag: s.loader.Lag, MaxNumSeqs: c.deps.MaxNumSeqs, MaxNumBatchedTokens: c.deps.MaxNumBatchedTokens}
	if s.rateMode && !s.paused && c.deps.Load != nil {
		if i := s.runIndex(s.epoch); i >= 0 {
			// Both rates or neither: an epoch younger than 10 s has sent too few to judge.
			if sec := s.active(i, c.now()).Seconds(); sec >= 10 {
				f.TargetRate, f.AchievedRate, f.RateSeconds = s.rate, float64(s.runs[i].Requests)/sec, sec
			}
		}
	}
	return f
}

func (m *Model) thresholds() diagnose.Thresholds {
	if t := m.c.deps.Thresholds; t != nil {
		return *t
	}
	return diagnose.DefaultThresholds()
}

// judge takes the verdicts on the one server watched after a scrape: a few rules over
// numbers already parsed, so it runs in Update.
func (m *Model) judge() {
	s := &m.c.s
	w := s.slow
	if w == nil {
		w = s.fast
	}
	if s.snap == nil || w == nil {
		s.verdicts = nil
		return
	}
	subject := "server"
	if u := clean(s.server.URL); u != "" {
		subject = u
	}
	if s.fleet.drill != nil {
		subject = s.fleet.drill.Name
	}
	if s.held == nil {
		s.held = diagnose.NewTracker(diagnose.DefaultHold)
	}
	vs := diagnose.Server(subject, s.snap, w, m.facts(), m.thresholds())
	if restarted := (s.slow != nil && s.slow.Restarted) || (s.fast != nil && s.fast.Restarted); !restarted {
		s.ownRestart = false
	} else if s.ownRestart {
		// The restart the user asked for (u, U, the tuner) is no finding.
		vs = slices.DeleteFunc(vs, func(v diagnose.Verdict) bool { return v.Rule == diagnose.RuleRestarted })
	}
	s.verdicts = s.held.Update(m.c.now(), vs)
}

// shortField names a field as the header says it.
var shortField = map[fleet.Field]string{
	fleet.FieldRunning: "running", fleet.FieldWaiting: "waiting", fleet.FieldKVCacheUsage: "KV %",
	fleet.FieldGenTokens: "gen tok/s", fleet.FieldPromptTokens: "prompt tok/s", fleet.FieldTTFTP99: "TTFT",
	fleet.FieldITLP99: "ITL", fleet.FieldPreemptions: "preemptions", fleet.FieldErrors: "errors",
	fleet.FieldPrefixHits: "prefix hits", fleet.FieldQueueMean: "queue time", fleet.FieldPrefillMean: "prefill time",
}

// backendItem says, for SGLang and TGI, which of the fields vLLM has they do not export, so
// a "--" or an empty chart reads as the server's silence, not a failure.
func backendItem(c *common, w int) (item, bool) {
	s, st := &c.s, &c.styles
	if s.snap == nil {
		return item{}, false
	}
	name := map[scrape.Backend]string{scrape.BackendSGLang: "SGLang", scrape.BackendTGI: "TGI"}[s.snap.Backend]
	if name == "" {
		return item{}, false
	}
	missing := fleet.NotExported(s.snap.Backend)
	names := make([]string, len(missing))
	for i, f := range missing {
		names[i] = shortField[f]
	}
	text := truncate(name+" exports no "+strings.Join(names, ", "), max(w/3, 40))
	return item{st.Warn.Render(name) + st.Muted.Render(strings.TrimPrefix(text, name)), 3}, true
}

// shortWindow writes a Duration string the short way: "1m0s" is "1m", "5m30s" stays.
func shortWindow(d string) string {
	if strings.HasSuffix(d, "m0s") {
		return strings.TrimSuffix(d, "0s")
	}
	return d
}
