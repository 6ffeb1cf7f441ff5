package tui

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/vllmtop/vllmtop/loadgen"
)

// watchSource is what the Stream view reads of a watched request (a *loadgen.Watched).
type watchSource interface {
	View(from int) loadgen.WatchedView
}

// watchSlot is one pane of the Stream view: the request it shows and the one it waits for (a
// request that has not started yet does not replace the last one on screen).
type watchSlot struct {
	cur, next watchSource
	v         loadgen.WatchedView
	// queue and prefill are the server's mean queueing and prefill times when this request's
	// first token arrived: the server's figures for the requests around it, not for later ones.
	queue, prefill time.Duration
	known          bool
}

// streamTab is the watched requests' view, told when the workload switches.
const streamTab = "Stream"

// stream shows two watched requests side by side, the last of the short-prompt workload and
// the last of the long one: what each spent before its first token (queueing and prefill) and
// decoding, its token gaps, and a note when its decode slows because other requests' prefills
// share the engine's steps.
type stream struct {
	c     *common
	w, h  int
	slots [2]watchSlot // short, long
	cache string
	keys  streamKeys
}

type streamKeys struct{ Watch key.Binding }

func newStream(c *common) panel {
	return &stream{c: c, keys: streamKeys{Watch: binding([]string{"w"}, "w", "watch the next request")}}
}

func (p *stream) ShortHelp() []key.Binding  { return []key.Binding{p.keys.Watch} }
func (p *stream) FullHelp() [][]key.Binding { return [][]key.Binding{{p.keys.Watch}} }

func (p *stream) SetSize(w, h int) { p.w, p.h = w, h }

func (p *stream) View() string { return p.cache }

func (p *stream) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		if key.Matches(msg, p.keys.Watch) {
			p.watch(p.c.s.longPrompts)
			p.c.setStatus(watchingNext, false)
		}
	case workloadMsg:
		p.watch(msg.long)
		return nil
	case refreshMsg:
		p.pull()
	case restyleMsg:
	default:
		return nil
	}
	p.draw()
	return nil
}

func (p *stream) watch(long bool) {
	if l := p.c.deps.Load; l != nil {
		p.slots[boolIndex(long)].next = l.Watch()
	}
}

// pull takes the watched requests' new tokens, swaps in a request that started, and watches
// another of the current workload when the shown one has finished.
// watchingNext is the status the watch key sets, until the request it watches begins.
const watchingNext = "watching the next request"

func (p *stream) pull() {
	cur := boolIndex(p.c.s.longPrompts)
	for i := range p.slots {
		sl := &p.slots[i]
		if sl.next != nil {
			if v := sl.next.View(0); !v.Started.IsZero() {
				*sl = watchSlot{cur: sl.next, v: v}
				if len(v.Tokens) > 0 {
					p.serverTimes(sl)
				}
				if p.c.s.status == watchingNext {
					p.c.setStatus("", false) // the request watched has begun: the note is done
				}
			}
		}
		if sl.cur != nil {
			had := len(sl.v.Tokens)
			nv := sl.cur.View(had)
			sl.v.Tokens = append(sl.v.Tokens, nv.Tokens...)
			sl.v.Prompt, sl.v.Started, sl.v.Result = nv.Prompt, nv.Started, nv.Result
			if had == 0 && len(sl.v.Tokens) > 0 {
				p.serverTimes(sl)
			}
		}
		if i == cur && sl.next == nil && (sl.cur == nil || sl.v.Result != nil) {
			p.watch(i == 1)
		}
	}
}

// serverTimes notes the server's mean queueing and prefill times now, if it reports them.
func (p *stream) serverTimes(sl *watchSlot) {
	rs := rates(p.c.s.slow)
	if rs == nil || rs.QueueSeconds == nil || !rs.QueueSeconds.Mean.OK {
		return
	}
	sl.known = true
	sl.queue = time.Duration(rs.QueueSeconds.Mean.V * float64(time.Second))
	if rs.PrefillSeconds != nil && rs.PrefillSeconds.Mean.OK {
		sl.prefill = time.Duration(rs.PrefillSeconds.Mean.V * float64(time.Second))
	}
}

// request is what the view measures of one watched request.
type request struct {
	ttft, decode time.Duration
	gaps         []time.Duration
	waiting      bool // no first token yet: ttft is the wait so far
}

func measure(v loadgen.WatchedView) request {
	var r request
	if len(v.Tokens) == 0 || v.Started.IsZero() {
		return r
	}
	r.ttft = v.Tokens[0].At.Sub(v.Started)
	r.decode = v.Tokens[len(v.Tokens)-1].At.Sub(v.Tokens[0].At)
	r.gaps = make([]time.Duration, 0, len(v.Tokens)-1)
	for i := 1; i < len(v.Tokens); i++ {
		r.gaps = append(r.gaps, v.Tokens[i].At.Sub(v.Tokens[i-1].At))
	}
	return r
}

// pctile is the q-quantile (0..1) of ds by the nearest rank, 0 when empty.
// engineSteps are the gaps that can be an engine step: a gap under a quarter of the median is
// a token that arrived with the one before it (read late, in one chunk), not a faster step.
func engineSteps(gaps []time.Duration) []time.Duration {
	med := pctile(gaps, 0.5)
	out := make([]time.Duration, 0, len(gaps))
	for _, g := range gaps {
		if 4*g >= med {
			out = append(out, g)
		}
	}
	return out
}

func pctile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func (p *stream) draw() {
	if p.w <= 0 || p.h <= 0 {
		return
	}
	st := &p.c.styles
	reqs := [2]request{measure(p.slots[0].v), measure(p.slots[1].v)}
	for i, sl := range p.slots {
		if v := sl.v; len(v.Tokens) == 0 && v.Result == nil && !v.Started.IsZero() {
			// Still before its first token: the bar is its wait so far, and grows.
			reqs[i].ttft, reqs[i].waiting = max(p.c.now().Sub(v.Started), 0), true
		}
	}
	paneW := (p.w - 1) / 2
	var longest time.Duration // TTFT and decode bars share one time scale across the panes
	for _, r := range reqs {
		longest = max(longest, r.ttft, r.decode)
	}
	scale := newBarScale(longest, paneW-barLabelW)
	rows := p.h - 1
	var panes [2][]string
	for i := range p.slots {
		panes[i] = p.pane(i, reqs[i], scale, paneW, rows)
	}
	out := []string{p.legend()}
	for r := 0; r < rows; r++ {
		out = append(out, padRight(truncate(at(panes[0], r), paneW), paneW)+st.Muted.Render("│")+truncate(at(panes[1], r), paneW))
	}
	p.cache = fit(strings.Join(out, "\n"), p.w, p.h)
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// legend says what the token styles and the gap glyphs mean.
func (p *stream) legend() string {
	st := &p.c.styles
	names := []string{"<0.5x", "<0.9x", "<1.5x", "<3x", "≥3x"}
	items := []string{st.Label.Render("token gap vs the request's median:")}
	for i, n := range names {
		items = append(items, st.Heat[i].Render(st.HeatGlyphs[i]+" "+n))
	}
	line := strings.Join(items, " ")
	// The server exports no request's own queueing or prefill time: the split is its means'.
	if note := st.Muted.Render(" · queue/prefill: server means, not per request"); lipgloss.Width(line+note) <= p.w {
		line += note
	}
	return truncate(line, p.w)
}

// pane is one request: its title, its TTFT and decode bars, its gaps, a note, its text.
func (p *stream) pane(i int, r request, scale barScale, w, rows int) []string {
	st := &p.c.styles
	v := p.slots[i].v
	kind := []string{"short prompt", "long prompt"}[i]
	if p.slots[i].cur == nil {
		msg := "no " + kind + " request watched yet: one is followed when its workload runs (press p to switch)"
		if p.c.deps.Load == nil {
			msg = "no load: nothing to watch"
		}
		return wrapWords(msg, w)
	}
	state := st.Warn.Render("streaming")
	if res := v.Result; res != nil {
		if res.OK() {
			state = st.Good.Render("done " + clean(res.FinishReason))
		} else {
			state = st.Bad.Render(string(res.Error) + " " + clean(res.ErrorMessage))
		}
	}
	itl := ""
	if len(r.gaps) > 0 {
		itl = st.Muted.Render(" · ITL " + fmtDur(r.decode/time.Duration(len(r.gaps))))
	}
	counts := fmt.Sprintf(" %d→%d tok · ", v.Prompt.InputTokens, len(v.Tokens))
	if len(v.Tokens) == 0 && v.Result == nil {
		// "4096→0" reads as a request that produced nothing; it is one still in prefill or queued.
		counts = fmt.Sprintf(" %d tok in · ", v.Prompt.InputTokens)
		state = st.Warn.Render("waiting for the first token")
	}
	out := []string{truncate(st.Title.Render(kind)+st.Muted.Render(counts)+state+itl, w)}
	ttft, detail := p.ttftBar(p.slots[i], r, scale, w)
	out = append(out, ttft, p.decodeBar(r, scale, w))
	out = append(out, scale.line(st, w)...)
	out = append(out, detail...)
	out = append(out, p.gapLine(r, w))
	var clean time.Duration
	if i == 1 {
		if short := measure(p.slots[0].v); len(short.gaps) >= 8 && p.slots[0].v.Result != nil {
			clean = short.decode / time.Duration(len(short.gaps))
		}
	}
	if note := p.interference(r, clean, "the short prompt's"); note != "" {
		out = append(out, wrapWords(note, w)...)
	}
	out = append(out, "")
	room := rows - len(out)
	if room > 0 {
		out = append(out, tokenText(st, v.Tokens, w, room)...)
	}
	return out
}

// ttftBar is the time to the first token, split where the server's histograms say how long
// requests queued (the rest is prefill and the way there and back), and the lines that say
// the split is of the server's means: vLLM exports no request's own queueing or prefill.
func (p *stream) ttftBar(sl watchSlot, r request, scale barScale, w int) (string, []string) {
	st := &p.c.styles
	label := st.Label.Render("TTFT   ") + st.Value.Render(padRight(fmtDur(r.ttft), barLabelW-8)) + " "
	cells := scale.cells(r.ttft)
	queue := time.Duration(0)
	detail := "no queue/prefill split: the server's queueing was not known at its first token"
	switch {
	case r.waiting:
		label = st.Label.Render("TTFT   ") + st.Value.Render(padRight("≥"+fmtDur(r.ttft), barLabelW-8)) + " "
		detail = "queued or in prefill so far; the split follows its first token"
	case sl.known:
		times := "queue " + fmtDur(sl.queue)
		if sl.prefill > 0 {
			times += ", prefill " + fmtDur(sl.prefill)
		}
		// The means are of every request around this one: when they add up to more than its
		// TTFT (a short prompt among long ones, or one that queued less than most) they do not
		// describe it, and the bar stays whole.
		if sl.queue+sl.prefill <= r.ttft+r.ttft/10 {
			queue = min(sl.queue, r.ttft)
			detail = "░ queue " + fmtDur(sl.queue)
			if sl.prefill > 0 {
				detail += " ▓ prefill " + fmtDur(sl.prefill)
			}
			detail += " (server means)"
		} else {
			detail = "server means of all requests: " + times
		}
	}
	qCells := 0
	if r.ttft > 0 {
		qCells = int(math.Round(float64(cells) * float64(queue) / float64(r.ttft)))
	}
	bar := st.Warn.Render(strings.Repeat("░", qCells)) + st.series(0).Style.Render(strings.Repeat("▓", cells-qCells))
	var out []string
	for _, l := range wrapWords(detail, max(w-7, 8)) {
		out = append(out, st.Muted.Render(truncate("       "+l, w)))
	}
	return label + bar, out
}

func (p *stream) decodeBar(r request, scale barScale, w int) string {
	st := &p.c.styles
	label := st.Label.Render("decode ") + st.Value.Render(padRight(fmtDur(r.decode), barLabelW-8)) + " "
	return truncate(label+st.series(1).Style.Render(strings.Repeat("█", scale.cells(r.decode))), w)
}

// barCells is d's share of scale in width cells, at least one for anything measured.
func barCells(d, scale time.Duration, width int) int {
	if d <= 0 || scale <= 0 {
		return 0
	}
	return min(max(int(math.Round(float64(width)*float64(d)/float64(scale))), 1), width)
}

// gapLevel is the heat level of a gap against the median gap.
func gapLevel(gap, median time.Duration) int {
	if median <= 0 {
		return 1
	}
	ratio := float64(gap) / float64(median)
	for i, bound := range []float64{0.5, 0.9, 1.5, 3} {
		if ratio < bound {
			return i
		}
	}
	return 4
}

// gapLine is the last gaps as glyphs of their level, the newest on the right.
func (p *stream) gapLine(r request, w int) string {
	st := &p.c.styles
	label := st.Label.Render("gaps   ")
	n := max(w-lipgloss.Width(label), 0)
	gaps := r.gaps
	if len(gaps) > n {
		gaps = gaps[len(gaps)-n:]
	}
	med := pctile(r.gaps, 0.5)
	var b strings.Builder
	for _, g := range gaps {
		lv := gapLevel(g, med)
		b.WriteString(st.Heat[lv].Render(st.HeatGlyphs[lv]))
	}
	return label + b.String()
}

// interference explains a decode slower than a clean one while the server prefills prompts:
// with chunked prefill, other requests' prompt chunks share each engine step with this
// request's decode, so its inter-token latency rises. The clean reference is the request's own
// fastest steps, or the short-prompt request's mean when this is the long one.
func (p *stream) interference(r request, clean time.Duration, cleanName string) string {
	if len(r.gaps) < 8 {
		return ""
	}
	base, name := pctile(engineSteps(r.gaps), 0.1), "its fastest steps"
	if clean > 0 && clean < base {
		base, name = clean, cleanName
	}
	mean := r.decode / time.Duration(len(r.gaps))
	rs := rates(p.c.s.fast)
	if base <= 0 || float64(mean) < 1.3*float64(base) || rs == nil || !(rs.PromptTokensPerSec.Or(0) > 0) {
		return ""
	}
	prompt, gen := rs.PromptTokensPerSec.V, rs.GenerationTokensPerSec.Or(0)
	return fmt.Sprintf("▲ ITL %s, %.1fx %s (%s): other requests' prefills share the engine's steps (the server prefills %s prompt tok/s, %.0f%% of its tokens)",
		fmtDur(mean), float64(mean)/float64(base), name, fmtDur(base), siNumber(prompt), 100*prompt/(prompt+gen))
}

// tokenText is the end of the streamed text that fits in rows lines of w cells, each token
// styled by its gap. The text is the server's: every line of it is sanitised.
func tokenText(st *Styles, toks []loadgen.WatchedToken, w, rows int) []string {
	if w <= 0 || rows <= 0 || len(toks) == 0 {
		return nil
	}
	// Only the tail can be on screen: take tokens back from the end until they fill it twice.
	budget, first := 2*w*rows, len(toks)
	for first > 0 && budget > 0 {
		first--
		budget -= len(toks[first].Text)
	}
	gaps := make([]time.Duration, 0, len(toks))
	for i := 1; i < len(toks); i++ {
		gaps = append(gaps, toks[i].At.Sub(toks[i-1].At))
	}
	med := pctile(gaps, 0.5)
	var lines []string
	var cur strings.Builder
	curW := 0
	newLine := func() {
		lines = append(lines, cur.String())
		cur.Reset()
		curW = 0
	}
	for i := first; i < len(toks); i++ {
		lv := 1
		if i > 0 {
			lv = gapLevel(toks[i].At.Sub(toks[i-1].At), med)
		}
		for j, part := range cleanLines(toks[i].Text) {
			if j > 0 {
				newLine()
			}
			for part != "" {
				room := w - curW
				if curW > 0 && part[0] == ' ' && ansi.StringWidth(part) > room && ansi.StringWidth(part) <= w {
					// A word that does not fit starts the next line.
					newLine()
					part = part[1:]
					continue
				}
				piece := ansi.Truncate(part, room, "")
				if piece == "" && curW > 0 {
					newLine()
					continue
				}
				if piece == "" { // one character wider than the pane: it goes alone
					_, size := utf8.DecodeRuneInString(part)
					piece = part[:size]
				}
				cur.WriteString(st.Heat[lv].Render(piece))
				curW += ansi.StringWidth(piece)
				part = part[len(piece):]
			}
		}
	}
	if cur.Len() > 0 {
		newLine()
	}
	if len(lines) > rows {
		lines = lines[len(lines)-rows:]
	}
	return lines
}
