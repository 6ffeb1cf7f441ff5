package tui

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
)

// header is the two lines on top: the server (what runs, its state, its capacity) and the load
// (its setting and the current epoch's rates). Items that do not fit are left out whole, the
// least useful first, never cut mid-word.
type header struct {
	noKeys
	c     *common
	w     int
	cache string
}

func newHeader(c *common) *header { return &header{c: c} }

func (h *header) SetSize(w, _ int) { h.w = w }

func (h *header) Update(msg tea.Msg) tea.Cmd {
	switch msg.(type) {
	case refreshMsg, restyleMsg:
		if h.c.deps.Fleet != nil {
			h.cache = fleetHeader(h.c, h.w)
			return nil
		}
		h.cache = h.serverLine() + "\n" + h.loadLine()
	}
	return nil
}

func (h *header) View() string { return h.cache }

// item is one part of a header line and its priority (0 is shown first, and always if it fits).
type item struct {
	text string
	prio int
}

func fitItems(items []item, sep string, width int) string {
	parts, prio := make([]string, len(items)), make([]int, len(items))
	for i, it := range items {
		parts[i], prio[i] = it.text, it.prio
	}
	return joinFit(parts, prio, sep, width)
}

func (h *header) serverLine() string {
	c, s, st := h.c, &h.c.s, &h.c.styles
	srv := s.server
	model := "–"
	if m := s.model(); m != nil && m.Name != "" {
		model = m.Name
	} else if v := server.ModelArg(srv.Args); v != "" {
		model = v
	}
	state, style := h.state()
	items := []item{
		{st.Title.Render("vllmtop"), 0},
		{st.Muted.Render(c.deps.Mode.String()), 0},
		{st.Value.Render(truncate(clean(model), 48)), 0},
	}
	// The state (an exit or an unreachable server says why) is cut to the room left, never
	// left out: it is what the user most needs when something is wrong.
	used := 0
	for _, it := range items {
		used += lipgloss.Width(it.text) + lipgloss.Width(" · ")
	}
	items = append(items, item{style.Render(truncate(state, max(h.w-used, 12))), 0})
	if m := s.model(); m != nil && len(m.Engines) > 1 {
		// A data-parallel server: its engines' rows are in the fleet view and `vllmtop metrics`.
		items = append(items, item{st.Value.Render(strconv.Itoa(len(m.Engines))) + st.Label.Render(" engines"), 1})
	}
	if up, ok := h.uptime(); ok {
		items = append(items, item{st.Label.Render("up ") + fmtDur(up), 2})
	}
	if s.util > 0 || s.pendingUtil > 0 {
		u := st.Label.Render("util ") + st.Value.Render(fmt.Sprintf("%.2f", s.util))
		prio := 2
		if s.pendingUtil != s.util {
			u += st.Warn.Render(fmt.Sprintf("→%.2f", s.pendingUtil))
			prio = 0 // being changed: it goes before the uptime, not off the line
		}
		items = append(items, item{u, prio})
	}
	if tok, conc := s.capacity(); tok > 0 {
		// KV before the uptime and the utilisation: it is what the load is measured against.
		items = append(items, item{st.Label.Render("KV ") + st.Value.Render(commas(tok)) + st.Label.Render(" tok"), 1})
		if conc > 0 {
			items = append(items, item{st.Label.Render("max conc ") + st.Value.Render(fmt.Sprintf("%.2fx", conc)), 3})
		}
	}
	if c.deps.Mode == ModeAttach {
		target := srv.URL
		if target == "" {
			target = c.deps.Target
		}
		items = append(items, item{st.Muted.Render(clean(target)), 1})
	} else if cmd := commandSummary(srv.Args); cmd != "" {
		items = append(items, item{st.Muted.Render(cmd), 4})
	}
	if srv.ModelGiB > 0 {
		items = append(items, item{st.Label.Render("weights ") + fmt.Sprintf("%.2f GiB", srv.ModelGiB), 5})
	}
	if v := clean(srv.Version); v != "" {
		items = append(items, item{st.Muted.Render("vLLM " + v), 6})
	}
	return fitItems(items, st.Muted.Render(" · "), h.w)
}

// state is the server's state as the header says it: a restart under way is "restarting"
// (not the exit and start it goes through), a server that does not answer says why.
func (h *header) state() (string, lipgloss.Style) {
	s, st := &h.c.s, &h.c.styles
	srv := s.server
	switch {
	case s.phase == phaseRestarting:
		return "restarting", st.Warn
	case s.phase == phaseStopping || s.phase == phaseForced:
		return "stopping", st.Warn
	case srv.State == server.Exited:
		// Before unreachable: a server that exited refuses connections too, and its exit says why.
		return "exited (" + truncate(clean(srv.Exit.String()), 160) + ")", st.Bad
	case srv.Unreachable != "":
		return "unreachable: " + truncate(clean(srv.Unreachable), 160), st.Bad
	case srv.State == server.Ready:
		return "ready", st.Good
	case srv.State == server.Unhealthy:
		return "unhealthy", st.Bad
	case srv.State == server.Starting, srv.State == server.Loading, srv.State == server.Stopping:
		return srv.State.String(), st.Warn
	}
	return srv.State.String(), st.Muted
}

// uptime is the server process's age from process_start_time_seconds; without it, the time
// since it was ready in this run.
func (h *header) uptime() (time.Duration, bool) {
	s, now := &h.c.s, h.c.now()
	if s.snap != nil && s.snap.ProcessStartSeconds.OK {
		start := time.Unix(0, int64(s.snap.ProcessStartSeconds.V*1e9))
		if up := now.Sub(start); up >= 0 && up < 10*365*24*time.Hour {
			return up, true
		}
	}
	if s.server.State == server.Ready && !s.server.ReadyAt.IsZero() {
		return now.Sub(s.server.ReadyAt), true
	}
	return 0, false
}

// keyFlags are the server flags the header names, in order.
var keyFlags = []string{"--gpu-memory-utilization", "--max-num-seqs", "--max-model-len", "--tensor-parallel-size", "-tp",
	"--kv-cache-dtype", "--quantization", "--max-num-batched-tokens", "--api-server-count", "--data-parallel-size", "-dp",
	"--sim-gpu", "--speculative-config"}

// commandSummary names the server command by its program (never a build path) and its
// subcommand, with the key flags it was given: "vllmtop sim --gpu-memory-utilization 0.92".
func commandSummary(args []string) string {
	if len(args) == 0 {
		return ""
	}
	parts := []string{clean(filepath.Base(args[0]))}
	if len(args) > 1 && (args[1] == "sim" || args[1] == "serve") {
		parts = append(parts, args[1])
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		for _, f := range keyFlags {
			switch {
			case a == f && i+1 < len(args):
				parts = append(parts, f, clean(args[i+1]))
			case strings.HasPrefix(a, f+"="):
				parts = append(parts, clean(a))
			}
		}
	}
	return truncate(strings.Join(parts, " "), 120)
}

func (h *header) loadLine() string {
	c, s, st := h.c, &h.c.s, &h.c.styles
	ls := s.loader
	items := append(h.loadSetting(), h.epochItems()...)
	if fails := s.live.FailuresByClass; len(fails) > 0 {
		items = append(items, item{st.Muted.Render(classes(fails)), 3})
	}
	// The lag is the open loop's: the runner keeps its last value after a switch to closed loop.
	if s.rateMode && ls.Lag > 0 {
		// How late the open loop sent its last request behind its schedule: the client, not
		// the server, is then the bottleneck.
		lag := st.Label.Render("client lag ") + fmtDur(ls.Lag)
		if ls.Lag > 50*time.Millisecond {
			lag = st.Warn.Render("client lag " + fmtDur(ls.Lag))
		}
		items = append(items, item{lag, 3})
	}
	if spec := h.specDecode(); spec != "" {
		items = append(items, item{spec, 3})
	}
	if s.longPrompts {
		items = append(items, item{st.Warn.Render("long prompts"), 4})
	}
	if w := h.metricsWarning(); w != "" {
		items = append(items, item{w, 3})
	}
	if it, ok := backendItem(c, h.w); ok {
		items = append(items, it)
	}
	// The canary comes after the verdict, which the help promises goes first; in its short
	// form where its words do not fit.
	canary := canaryItems(c)
	sep := st.Muted.Render(" · ")
	with := func(verdict ...item) string {
		base := append(append([]item(nil), items...), verdict...)
		line := fitItems(base, sep, h.w)
		for _, cn := range canary {
			// A canary form that fits, and leaves in the line the verdict that was there.
			l := fitItems(append(base, cn), sep, h.w)
			if strings.Contains(l, cn.text) && (len(verdict) == 0 || strings.Contains(l, verdict[0].text) || !strings.Contains(line, verdict[0].text)) {
				return l
			}
		}
		return line
	}
	short, full, ok := verdictItem(c)
	if !ok {
		return with()
	}
	line := with(short)
	if compact := compactVerdict(c); !strings.Contains(line, short.text) && compact.text != "" {
		line = with(compact) // "DEGRADED kv-bound +2" where the list is too long
	}
	// The whole sentence where it fits beside every figure the short form left room for.
	if room := h.w - lipgloss.Width(line); full != "" && strings.Contains(line, short.text) &&
		lipgloss.Width(full) <= lipgloss.Width(short.text)+room {
		line = with(item{full, short.prio})
	}
	return line
}

// loadSetting is the load's mode and setting, whether it is paused, and its requests in
// flight.
func (h *header) loadSetting() []item {
	s, st := &h.c.s, &h.c.styles
	ls := s.loader
	mode := "closed"
	settings := fmt.Sprintf("C=%d", s.concurrency)
	if s.rateMode {
		mode, settings = "open", fmt.Sprintf("rate %s/s", trimFloat(s.rate))
		if n := h.c.deps.RateCap; n > 0 {
			settings += fmt.Sprintf(" ≤%d in flight", n)
		}
	}
	switch ls.Replay {
	case loadgen.ReplayTrace:
		mode, settings = "trace", "replay"
	case loadgen.ReplayConversations:
		mode = "conversations"
	}
	items := []item{{st.Label.Render("load ") + st.Value.Render(mode+" "+settings), 0}}
	switch {
	case s.autoPause != "":
		items = append(items, item{st.Bad.Render("paused: server down"), 0})
	case s.paused:
		items = append(items, item{st.Warn.Render("paused"), 0})
	}
	return append(items, item{st.Label.Render("in flight ") + fmt.Sprint(ls.InFlight), 4})
}

// epochItems are the current epoch's number, age, requests, failures and rates.
func (h *header) epochItems() []item {
	c, s, st := h.c, &h.c.s, &h.c.styles
	ls := s.loader
	i := s.runIndex(s.epoch)
	if i < 0 {
		return nil
	}
	e := s.runs[i]
	active := s.active(i, c.now())
	items := []item{
		{st.Label.Render("epoch ") + st.Value.Render(fmt.Sprint(e.Epoch)) + st.Muted.Render(" "+fmtAge(active)), 4},
		{commas(e.Requests) + st.Label.Render(" done"), 0},
	}
	if e.Failures > 0 {
		items = append(items, item{st.Bad.Render(commas(e.Failures) + " failed"), 0})
	} else {
		items = append(items, item{"0" + st.Label.Render(" failed"), 0})
	}
	sec := active.Seconds()
	if sec < 1 {
		return items
	}
	rps := fmt.Sprintf("%.1f", float64(e.Requests)/sec) + st.Label.Render(" req/s")
	if s.rateMode {
		rps += st.Muted.Render(" of " + trimFloat(s.rate))
	}
	// Tokens as they arrive since the epoch began: long outputs finish minutes after their
	// tokens were streamed.
	tok := float64(e.OutputTokens)
	if n, ok := s.notes[e.Epoch]; ok && ls.TokensReceived-n.tokens0 > 0 {
		tok = float64(ls.TokensReceived - n.tokens0)
	}
	return append(items, item{rps, 3}, item{siNumber(tok/sec) + st.Label.Render(" tok/s"), 1})
}

// specDecode is speculative decoding's acceptance over the last scrape window, when the
// server drafts at all.
func (h *header) specDecode() string {
	st := &h.c.styles
	r := rates(h.c.s.fast)
	if r == nil || !r.SpecDecodeAcceptance.OK {
		return ""
	}
	out := st.Label.Render("spec accept ") + fmt.Sprintf("%.0f%%", r.SpecDecodeAcceptance.V*100)
	if r.SpecDecodeMeanAcceptanceLength.OK {
		out += st.Label.Render(" len ") + fmt.Sprintf("%.2f", r.SpecDecodeMeanAcceptanceLength.V)
	}
	return out
}

// metricsWarning says what is wrong with /metrics: failing (not during a restart, when it is
// expected), duplicate series, mapping warnings.
func (h *header) metricsWarning() string {
	s, st := &h.c.s, &h.c.styles
	switch {
	case s.srvErr != "" && s.phase == phaseIdle && s.server.State == server.Ready:
		return st.Bad.Render("metrics failing")
	case s.snap != nil && s.snap.DuplicateSeries > 0:
		return st.Warn.Render(fmt.Sprintf("metrics: %d duplicate series", s.snap.DuplicateSeries))
	case s.snap != nil && len(s.snap.Warnings) > 0:
		return st.Warn.Render("metrics: " + truncate(clean(s.snap.Warnings[0]), 60))
	}
	return ""
}

func classes(by map[loadgen.ErrorClass]int) string {
	parts := make([]string, 0, len(by))
	for k, v := range by {
		parts = append(parts, fmt.Sprintf("%s:%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
