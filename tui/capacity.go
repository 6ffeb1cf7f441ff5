package tui

import (
	"fmt"
	"math"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/capacity"

	"github.com/charmbracelet/bubbles/key"
)

// capacityView is what the Capacity view draws: the one capacity report, each figure with
// its source, and the dashboard's side (the pending utilisation, whether it can restart).
type capacityView struct {
	capacity.Report
	PendingUtil float64 // --gpu-memory-utilization for the next restart
	CanRestart  bool
	NoRestart   string // why not, when CanRestart is false
}

// knownCapacity is what the dashboard knows of its server's KV cache, as plain values for
// capacity.Build. It keeps the latest figures a run logged: after a restart at another
// utilisation they are scaled until the new run logs its own.
func (c *common) knownCapacity() capacity.Known {
	s := &c.s
	k := s.knownCapacity()
	k.Workload = c.deps.Workloads[boolIndex(s.longPrompts)]
	k.Sim, k.Attached = c.deps.Capacity, c.deps.Mode == ModeAttach
	if k.Log.KVTokens == 0 && s.logged.KVTokens > 0 {
		k.Log = s.logged
	}
	return k
}

// knownCapacity is what the server's log and its metrics say of the KV cache now. It notes
// the log's figures in s.logged, for the restart after which the log says nothing yet.
func (s *state) knownCapacity() capacity.Known {
	k := capacity.Known{Util: s.server.GPUMemoryUtilization, DefaultUtil: s.util, Log: server.LoggedCapacity(s.server)}
	if k.Log.KVTokens > 0 {
		if k.Log.Util == 0 {
			// Started without the flag: the run's utilisation is the one the server reported,
			// which a later run at another one scales the log from.
			k.Log.Util = s.util
		}
		s.logged = k.Log
	}
	if s.snap != nil {
		k.Cache = s.snap.Capacity.CacheInfo()
	}
	return k
}

// gatherCapacity builds the capacity report from what is known, with the dashboard's side.
func gatherCapacity(c *common) capacityView {
	s := &c.s
	return capacityView{Report: capacity.Build(c.knownCapacity()), PendingUtil: s.pendingUtil,
		CanRestart: !c.deps.RestartDisabled && c.deps.Supervisor != nil, NoRestart: noRestartReason(c.deps.Mode)}
}

// capacityPanel is the KV cache now and, where it can be predicted, at other utilisations.
type capacityPanel struct {
	c     *common
	keys  moveKeys
	w, h  int
	top   int // the first line shown: the view scrolls where it is taller than the screen
	cache string
}

func newCapacity(c *common) panel {
	return &capacityPanel{c: c, keys: newMoveKeys("top", "bottom")}
}

// ShortHelp leaves the footer to the server keys this view is for; the scroll keys are in the
// help, and the view's own "more lines below" line names them.
func (p *capacityPanel) ShortHelp() []key.Binding { return nil }

func (p *capacityPanel) FullHelp() [][]key.Binding { return [][]key.Binding{p.keys.list()} }

func (p *capacityPanel) SetSize(w, h int) { p.w, p.h = w, h }

func (p *capacityPanel) View() string { return p.cache }

func (p *capacityPanel) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		lines := strings.Split(p.render(gatherCapacity(p.c)), "\n")
		if to, ok := p.keys.moved(msg, p.top, max(1, len(lines)-p.h+1), max(1, p.h-2)); ok {
			p.top = to
		}
		p.cache = p.fit(lines)
	case refreshMsg, restyleMsg, workloadMsg:
		p.cache = p.fit(strings.Split(p.render(gatherCapacity(p.c)), "\n"))
	}
	return nil
}

// fit shows the lines from p.top: a line above says how many are hidden there, the last one
// how many below and how to reach them.
func (p *capacityPanel) fit(lines []string) string {
	st := &p.c.styles
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) <= p.h || p.h < 3 {
		p.top = 0
		return fitMore(st, strings.Join(lines, "\n"), p.w, p.h)
	}
	p.top = min(p.top, len(lines)-p.h) // the last screen ends on the last line
	var out []string
	body, from := p.h, p.top
	if from > 0 {
		// The first line says what is above, in place of the line it hides.
		out = append(out, st.Muted.Render(fmt.Sprintf("… %d %s above (↑/k)", from+1, plural(from+1, "line", "lines"))))
		from++
		body--
	}
	if len(lines)-from > body {
		body-- // and the last what is below
	}
	end := min(len(lines), from+body)
	out = append(out, lines[from:end]...)
	if rest := len(lines) - end; rest > 0 {
		out = append(out, st.Muted.Render(fmt.Sprintf("… %d more %s below (↓/j, pgdn)", rest, plural(rest, "line", "lines"))))
	}
	return fit(strings.Join(out, "\n"), p.w, p.h)
}

func (p *capacityPanel) render(d capacityView) string {
	st := &p.c.styles
	src := ""
	if d.KVTokens.Known() {
		src = "  (" + strings.Join(append([]string{d.KVTokens.Source.Phrase()}, d.Sources()...), "; ") + ")"
	}
	if src == "" {
		src = "  " + dash // the source is not known yet
	}
	out := []string{st.Title.Render("KV cache") + st.Muted.Render(src)}
	if d.KVTokens.V == 0 {
		out = append(out, st.Muted.Render("waiting for the server to report its KV cache (its log, or vllm:cache_config_info in /metrics)"))
		return strings.Join(out, "\n")
	}
	out = append(out, p.renderNow(d.Report)...)
	if a := renderAdvice(st, p.c.s.server.MemoryAdvice, p.w); len(a) > 0 {
		out = append(out, a...)
	}
	out = append(out, "")
	if f := renderFit(st, d.Report, p.w); len(f) > 0 {
		out = append(append(out, f...), "")
	}
	if d.WhatIf == nil {
		return strings.Join(append(out, wrapWords(d.NoWhatIf, p.w)...), "\n")
	}
	return strings.Join(p.renderWhatIf(out, d), "\n")
}

// renderNow is the KV cache now: the utilisation, tokens, blocks and concurrency.
func (p *capacityPanel) renderNow(r capacity.Report) []string {
	st := &p.c.styles
	now := []string{st.Label.Render("util ") + st.Value.Render(fmt.Sprintf("%.2f", r.Util)),
		st.Value.Render(commas(r.KVTokens.V)) + st.Label.Render(" tokens")}
	if r.KVBlocks.V > 0 {
		blocks := st.Value.Render(commas(r.KVBlocks.V)) + st.Label.Render(" blocks")
		if r.BlockSize.V > 0 {
			blocks += st.Label.Render(fmt.Sprintf(" of %d", r.BlockSize.V))
		}
		now = append(now, blocks)
	}
	if r.MaxConcurrency.V > 0 {
		conc := st.Label.Render("max conc ") + st.Value.Render(fmt.Sprintf("%.2fx", r.MaxConcurrency.V))
		if r.MaxModelLen.V > 0 {
			conc += st.Label.Render(" at " + commas(r.MaxModelLen.V) + " tok/request")
		}
		now = append(now, conc)
	}
	return wrapItems(now, st.Muted.Render(" · "), p.w, 2)
}

// renderAdvice is vLLM's own advice from its start-up log: the --kv-cache-memory that would
// use the GPU's free memory whole, and what it would add to the cache in use. Nothing when the
// log gave no advice or the cache already takes that much.
func renderAdvice(st *Styles, a server.MemoryAdvice, w int) []string {
	fill := float64(a.FillGPUBytes) / (1 << 30)
	if fill <= 0 || fill-a.KVCacheGiB < 0.01 {
		return nil
	}
	text := fmt.Sprintf("vLLM's advice: --kv-cache-memory=%d (%.2f GiB) uses all free GPU memory, +%.2f GiB over the %.2f GiB cache now",
		a.FillGPUBytes, fill, fill-a.KVCacheGiB, a.KVCacheGiB)
	lines := wrapWords(text, w)
	for i := range lines {
		lines[i] = st.Muted.Render(lines[i])
	}
	return lines
}

// renderWhatIf appends the table of the KV cache at other utilisations to out, as many rows
// around the current one as fit, with what the server reports beside the current one.
func (p *capacityPanel) renderWhatIf(out []string, d capacityView) []string {
	st := &p.c.styles
	out = append(out, st.Title.Render("what-if by --gpu-memory-utilization")+st.Muted.Render("  ("+d.WhatIfSource.Phrase()+")"),
		st.Label.Render(fmt.Sprintf("  %5s %14s %10s   %s", "util", "KV tokens", "max conc", "observed now")))
	cur := math.Round(d.Util*100) / 100
	utils := whatIfUtils(cur, d.PendingUtil)
	// Keep the rows around the current one that fit with the key below them, and on a short
	// terminal still the nearest few either side: the view scrolls to them.
	room := max(p.h-screenRows(out)-1, minWhatIfRows)
	if len(utils) > room {
		at := sort.SearchFloat64s(utils, cur)
		first := min(max(at-room/2, 0), len(utils)-room)
		utils = utils[first : first+room]
	}
	for _, u := range utils {
		t, conc, err := d.WhatIf(u)
		pred := fmt.Sprintf("%14s %10s", orDash(t > 0, commas(t)), orDash(conc > 0, fmt.Sprintf("%.2fx", conc)))
		if err != nil {
			pred = fmt.Sprintf("%25s", "does not start")
		}
		mark, obs := " ", ""
		if u == cur {
			mark = "▶"
			if d.KVTokens.Source.Reported() {
				obs = fmt.Sprintf("   %s tok · %s", commas(d.KVTokens.V), orDash(d.MaxConcurrency.V > 0, fmt.Sprintf("%.2fx", d.MaxConcurrency.V)))
			}
		} else if u == d.PendingUtil {
			mark = "→"
		}
		line := fmt.Sprintf("%s %5.2f %s%s", mark, u, pred, obs)
		switch {
		case u == cur:
			line = st.Good.Render(line)
		case err != nil:
			line = st.Bad.Render(line)
		case u == d.PendingUtil:
			line = st.Warn.Render(line)
		}
		out = append(out, line)
	}
	hint := "▶ current  → pending (u/U, ctrl+u/ctrl+y; enter restarts)"
	if !d.CanRestart {
		hint = "▶ current (" + d.NoRestart + ")"
	}
	return append(out, st.Muted.Render(hint)) // below the rows; a short terminal scrolls to it
}

// whatIfUtils are 0.70 to 0.98 by 0.02, with the current and pending utilisations.
// minWhatIfRows is how many utilisations the table keeps however short the terminal: the
// current one and three either side.
const minWhatIfRows = 7

func whatIfUtils(cur, pending float64) []float64 {
	var out []float64
	for u := 0.70; u <= 0.981; u += 0.02 {
		out = append(out, math.Round(u*100)/100)
	}
	for _, x := range []float64{cur, pending} {
		if x > 0 && !containsFloat(out, x) {
			out = append(out, x)
		}
	}
	sort.Float64s(out)
	return out
}

func containsFloat(xs []float64, x float64) bool {
	for _, v := range xs {
		if math.Abs(v-x) < 1e-9 {
			return true
		}
	}
	return false
}

// noRestartReason says why the dashboard cannot restart its server: it did not start it, or it
// does not know the command's flags well enough to change --gpu-memory-utilization.
func noRestartReason(m Mode) string {
	if m == ModeAttach {
		return "attached: vllmtop cannot restart this server"
	}
	return "not vllm serve or vllmtop sim: vllmtop does not restart it with other flags"
}

// screenRows is how many rows lines take, each counted with the line breaks inside it.
func screenRows(lines []string) int {
	n := 0
	for _, l := range lines {
		n += strings.Count(l, "\n") + 1
	}
	return n
}
