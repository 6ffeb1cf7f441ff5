package tui

import (
	"fmt"
	"math"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/server"
)

// capacityData is everything the Capacity view shows, in one plain struct: whichever source
// knows the figures (the server's log, its vllm:cache_config_info, a capacity model) fills it,
// and the view only draws it.
type capacityData struct {
	Util, PendingUtil float64 // --gpu-memory-utilization now and for the next restart
	KVTokens          int
	KVBlocks          int
	BlockSize         int     // tokens per block
	MaxConcurrency    float64 // requests of MaxModelLen tokens that fit at once
	MaxModelLen       int
	Reported          string // where the current figures come from
	// Predict gives the capacity at another utilisation; nil when nothing can predict it.
	Predict    CapacityFunc
	Source     string // what Predict is
	CanRestart bool
	NoRestart  string // why not, when CanRestart is false
	Why        string // why there is no prediction, when Predict is nil
	// Fit is how the current workload fits, with the memory plan and the what-ifs.
	Fit capacityFit
}

// gatherCapacity fills capacityData from the state: the log's figures first (they are what
// vLLM computed), then cache_config_info (attach mode has nothing else).
func gatherCapacity(c *common) capacityData {
	s := &c.s
	d := capacityData{Util: s.util, PendingUtil: s.pendingUtil, CanRestart: !c.deps.RestartDisabled && c.deps.Supervisor != nil,
		KVTokens: s.server.KVCacheTokens, KVBlocks: s.server.KVCacheBlocks, MaxConcurrency: s.server.MaxConcurrency,
		MaxModelLen: s.server.MaxModelLen, NoRestart: noRestartReason(c.deps.Mode)}
	if d.KVTokens > 0 {
		d.Reported = "the server's log"
	}
	if s.snap != nil {
		cp := s.snap.Capacity
		if d.KVTokens == 0 && cp.KVCacheTokens.OK {
			d.KVTokens, d.Reported = int(cp.KVCacheTokens.V), "vllm:cache_config_info"
		}
		if d.KVBlocks == 0 {
			d.KVBlocks = int(cp.NumGPUBlocks.Or(0))
		}
		d.BlockSize = int(cp.BlockSizeTokens.Or(0))
		if d.MaxConcurrency == 0 {
			d.MaxConcurrency = cp.MaxConcurrency.Or(0)
		}
		if d.Util == 0 && cp.GPUMemoryUtilization.OK {
			d.Util, d.PendingUtil = cp.GPUMemoryUtilization.V, cp.GPUMemoryUtilization.V
		}
	}
	switch {
	case c.deps.Capacity != nil:
		d.Predict, d.Source = c.deps.Capacity, "the simulator's capacity model"
	default:
		if f := server.ScaledCapacity(s.server, d.Util, d.KVTokens, d.MaxConcurrency); f != nil {
			d.Predict, d.Source = f, "scaled from what the server's log reported"
		} else if c.deps.Mode == ModeAttach {
			d.Why = "a what-if needs the server's log (the weights' size): an attached server reports only its current capacity"
		} else {
			d.Why = "a what-if needs the server's KV cache size and weights, from its log"
		}
	}
	return d
}

// capacityPanel is the KV cache now and, where it can be predicted, at other utilisations.
type capacityPanel struct {
	noKeys
	c     *common
	w, h  int
	cache string
	memo  capacityReports
}

func newCapacity(c *common) panel { return &capacityPanel{c: c} }

func (p *capacityPanel) SetSize(w, h int) { p.w, p.h = w, h }

func (p *capacityPanel) View() string { return p.cache }

func (p *capacityPanel) Update(msg tea.Msg) tea.Cmd {
	switch msg.(type) {
	case refreshMsg, restyleMsg, tea.KeyMsg, workloadMsg:
		d := gatherCapacity(p.c)
		d.Fit = gatherFit(p.c, d, &p.memo)
		p.cache = fit(p.render(d), p.w, p.h)
	}
	return nil
}

func (p *capacityPanel) render(d capacityData) string {
	st := &p.c.styles
	out := []string{st.Title.Render("KV cache") + st.Muted.Render(orDash(d.Reported != "", "  (from "+d.Reported+")"))}
	if d.KVTokens == 0 {
		out = append(out, st.Muted.Render("waiting for the server to report its KV cache (its log, or vllm:cache_config_info in /metrics)"))
		return strings.Join(out, "\n")
	}
	now := []string{st.Label.Render("util ") + st.Value.Render(fmt.Sprintf("%.2f", d.Util)),
		st.Value.Render(commas(d.KVTokens)) + st.Label.Render(" tokens")}
	if d.KVBlocks > 0 {
		blocks := st.Value.Render(commas(d.KVBlocks)) + st.Label.Render(" blocks")
		if d.BlockSize > 0 {
			blocks += st.Label.Render(fmt.Sprintf(" of %d", d.BlockSize))
		}
		now = append(now, blocks)
	}
	if d.MaxConcurrency > 0 {
		conc := st.Label.Render("max conc ") + st.Value.Render(fmt.Sprintf("%.2fx", d.MaxConcurrency))
		if d.MaxModelLen > 0 {
			conc += st.Label.Render(" at " + commas(d.MaxModelLen) + " tok/request")
		}
		now = append(now, conc)
	}
	out = append(out, wrapItems(now, st.Muted.Render(" · "), p.w, 2)...)
	out = append(out, "")
	if f := renderFit(st, d.Fit, p.w); len(f) > 0 {
		out = append(append(out, f...), "")
	}
	if d.Predict == nil {
		return strings.Join(append(out, wrapWords(d.Why, p.w)...), "\n")
	}
	out = append(out, st.Title.Render("what-if by --gpu-memory-utilization")+st.Muted.Render("  ("+d.Source+")"),
		st.Label.Render(fmt.Sprintf("  %5s %14s %10s   %s", "util", "KV tokens", "max conc", "observed now")))
	cur := math.Round(d.Util*100) / 100
	utils := whatIfUtils(cur, d.PendingUtil)
	// Keep the rows around the current one that fit.
	room := max(p.h-len(out)-1, 3)
	if len(utils) > room {
		at := sort.SearchFloat64s(utils, cur)
		first := min(max(at-room/2, 0), len(utils)-room)
		utils = utils[first : first+room]
	}
	for _, u := range utils {
		t, conc, err := d.Predict(u)
		pred := fmt.Sprintf("%14s %10s", orDash(t > 0, commas(t)), orDash(conc > 0, fmt.Sprintf("%.2fx", conc)))
		if err != nil {
			pred = fmt.Sprintf("%25s", "does not start")
		}
		mark, obs := " ", ""
		if u == cur {
			mark = "▶"
			obs = fmt.Sprintf("   %s tok · %s", commas(d.KVTokens), orDash(d.MaxConcurrency > 0, fmt.Sprintf("%.2fx", d.MaxConcurrency)))
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
	out = append(out, st.Muted.Render(hint))
	return strings.Join(out, "\n")
}

// whatIfUtils are 0.70 to 0.98 by 0.02, with the current and pending utilisations.
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
