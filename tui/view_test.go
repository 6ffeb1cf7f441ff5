package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/themes"
)

// scripted runs a fixed minute and ten seconds: log lines (vllmtop's polling among them, one
// with escape sequences), three requests a second with a scrape each second, a load change at
// 25 s and the long-prompt workload from 50 s (two epoch rules on the charts), two watched
// requests in the Stream view, and two picked runs.
func scripted(t *testing.T, w, h int, theme string, noColor bool) *driver {
	t.Helper()
	d := newDriver(t, w, h, func(dp *Deps) { dp.Theme, dp.NoColor = theme, noColor })
	d.m.c.s.window = 0 // one minute: both epoch rules in view
	d.td.scr.prefix = true
	d.logs(
		"(EngineCore pid=4310) INFO 11-30 12:00:01 [model_runner.py:309] Model loading took 14.99 GiB and 3.002100 seconds",
		"(EngineCore pid=4310) INFO 11-30 12:00:02 [kv_cache_utils.py:2214] GPU KV cache size: 464,720 tokens",
		"(EngineCore pid=4310) INFO 11-30 12:00:02 [kv_cache_utils.py:2215] Maximum concurrency for 131,072 tokens per request: 3.55x",
		"(APIServer pid=4127) WARNING 11-30 12:00:03 [api_server.py:12] a warning line",
		`(APIServer pid=4127) INFO:     127.0.0.1:51240 - "GET /health HTTP/1.1" 200 OK`,
		`(APIServer pid=4127) INFO:     127.0.0.1:51241 - "GET /metrics HTTP/1.1" 200 OK`,
		`(APIServer pid=4127) INFO:     127.0.0.1:51242 - "POST /v1/completions HTTP/1.1" 200 OK`,
		"(APIServer pid=4127) ERROR 11-30 12:00:04 [serving.py:99] a line from a hostile server \x1b]0;pwned\x07\x1b[2J with escapes",
		"(APIServer pid=4127) INFO 11-30 12:00:05 [loggers.py:310] Engine 000: Avg prompt throughput: 768.0 tokens/s, Avg generation throughput: 384.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 21.0%, Prefix cache hit rate: 0.0%",
	)
	for sec := 1; sec <= 70; sec++ {
		ttft := 38 * time.Millisecond
		if sec > 50 {
			ttft = 290 * time.Millisecond
			d.td.scr.ttft = 0.3
		}
		d.requests(3, ttft)
		d.second()
		switch sec {
		case 25:
			d.press("+")
		case 50:
			d.press("p")
		}
	}
	st := panelOf[*stream](d)
	st.slots[0] = watchSlot{cur: watchedRequest(*d.td.clock, 256, 40, 33*time.Millisecond, 9*time.Millisecond, false, true)}
	st.slots[1] = watchSlot{cur: watchedRequest(*d.td.clock, 4096, 60, 280*time.Millisecond, 9*time.Millisecond, true, false)}
	runs := panelOf[*runsPanel](d)
	runs.pick(0)
	runs.pick(d.m.c.s.epoch)
	d.m.c.s.tune = demoTune()
	d.m.c.s.status = ""
	d.second()
	return d
}

// watchedRequest is a request that started at end minus its length: its first token after
// ttft, then one token every gap (every 4th one a long gap when interfered), done or not.
func watchedRequest(end time.Time, prompt, tokens int, ttft, gap time.Duration, interfered, done bool) *scriptedWatch {
	words := []string{" The", " scheduler", " admits", " waiting", " requests", " when", " blocks", " free", ".", "\n"}
	var toks []loadgen.WatchedToken
	at := time.Duration(0)
	for i := 0; i < tokens; i++ {
		if i == 0 {
			at = ttft
		} else if interfered && i%4 == 0 {
			at += 4 * gap
		} else {
			at += gap
		}
		toks = append(toks, loadgen.WatchedToken{Text: words[i%len(words)], At: end.Add(at)})
	}
	start := end.Add(-at - time.Millisecond)
	for i := range toks {
		toks[i].At = toks[i].At.Add(-at - time.Millisecond)
	}
	v := loadgen.WatchedView{Prompt: loadgen.Prompt{InputTokens: prompt, OutputTokens: tokens}, Started: start, Tokens: toks}
	if done {
		v.Result = &loadgen.Result{FinishReason: "length", OutputTokens: tokens}
	}
	return &scriptedWatch{v: v}
}

func maxLineWidth(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, lipgloss.Width(l))
	}
	return w
}

// colour matches an SGR sequence that sets a colour (30-38, 40-48, 90-107 and extended).
var colour = regexp.MustCompile(`\x1b\[[0-9;]*(3[0-8]|4[0-8]|9[0-7]|10[0-7])[;m]`)

// goldenSizes are the terminals the golden views are drawn at.
var goldenSizes = [][2]int{{80, 24}, {120, 40}, {200, 60}}

func sizeName(sz [2]int) string { return fmt.Sprintf("%dx%d", sz[0], sz[1]) }

// TestGoldenViews draws every view of the tab table at every size and style; go test ./tui
// -update writes the files again (a new view's too).
func TestGoldenViews(t *testing.T) {
	for _, sz := range goldenSizes {
		for _, noColor := range []bool{false, true} {
			d := scripted(t, sz[0], sz[1], "dark", noColor)
			styles := themes.Names()
			if noColor {
				styles = []string{"NO_COLOR"}
			}
			for _, style := range styles {
				// The t key switches the theme as a user would; the script is not run again.
				for !noColor && d.m.c.theme.Name != style {
					d.press("t")
				}
				d.m.c.s.status = ""
				for _, tb := range tabs {
					t.Run(style+"/"+sizeName(sz)+"/"+tb.name, func(t *testing.T) {
						d.m.show(tb.name)
						d.m.header.Update(refreshMsg{})
						out := d.view()
						lines := strings.Split(out, "\n")
						assert.LessOrEqual(t, maxLineWidth(out), sz[0], "no line wider than the terminal")
						assert.Len(t, lines, sz[1], "the screen is filled, no more")
						footer := lines[len(lines)-1]
						assert.Contains(t, footer, "? help", "the footer always shows help")
						assert.Contains(t, footer, "q quit", "the footer always shows quit")
						if tb.name == "Overview" {
							assert.Contains(t, out, "┊", "the scripted load changes are drawn as epoch rules")
							assert.Contains(t, out, "≤300ms", "a bound quantile reads as a bound")
						}
						assert.NotContains(t, out, "pwned", "escape sequences from the server never reach the screen")
						assert.NotContains(t, out, "\x07")
						if noColor {
							assert.False(t, colour.MatchString(out), "NO_COLOR: no colour at all")
							assert.Regexp(t, `\x1b\[([0-9;]*;)?7[;m]`, out, "NO_COLOR: the active tab is reversed")
						}
						golden.RequireEqual(t, []byte(out))
					})
				}
			}
		}
	}
}

func TestOverviewShowsEpochRulesAndTheSharedWindow(t *testing.T) {
	d := scripted(t, 120, 40, "dark", false)
	d.m.show(overviewTab)
	out := d.view()
	assert.Contains(t, out, "┊", "epoch rules are drawn")
	for _, n := range []string{"1", "2"} {
		assert.Regexp(t, "[│┊ ]"+n+"[ ⠀-⣿┊]", out, "rule %s is labelled with its epoch", n)
	}
	// Every chart's time axis is the same: the same ticks at the same columns.
	var axes []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "└") {
			axes = append(axes, l)
		}
	}
	require.Len(t, axes, 2, "two rows of charts, each line holding two axes")
	assert.Equal(t, axes[0], axes[1], "the top and bottom charts' axes are identical")
	cells := []rune(axes[0])
	w := (120 - 1) / 2
	require.GreaterOrEqual(t, len(cells), 2*w+1)
	assert.Equal(t, string(cells[:w]), string(cells[w+1:2*w+1]), "the left and right charts' axes are identical")
	assert.Contains(t, axes[0], "┴", "the axis has ticks")
	assert.Contains(t, out, "≤300ms", "a queue p99 in the first bucket reads as a bound")
	assert.Regexp(t, `client n=\d+/10s`, out, "the client's percentiles say their sample count and window")
}

// Below the size the whole help needs, it says how much is hidden and how to leave.
func TestHelpAtTheSmallestSizeSaysWhatItHides(t *testing.T) {
	d := newDriver(t, 60, 16)
	d.press("?")
	require.True(t, d.m.showHelp)
	out := d.view()
	assert.Regexp(t, `↓/↑ scroll · 0 above, \d+ below · q quits, ctrl\+c forces`, out)
	assert.LessOrEqual(t, maxLineWidth(out), 60)
	assert.LessOrEqual(t, len(strings.Split(out, "\n")), 16)

	// ↓ scrolls the keys, not the view behind; at the bottom every key has been shown.
	seen := out
	for range 40 {
		d.press("down")
		seen += d.view()
	}
	assert.Regexp(t, `↓/↑ scroll · \d+ above, 0 below`, d.view())
	for _, g := range globalHelp(d.m.offeredKeys()) {
		for _, b := range g.keys {
			assert.Contains(t, seen, b.Help().Desc)
		}
	}
	d.press("up")
	assert.Regexp(t, `↓/↑ scroll · \d+ above, 1 below`, d.view())
	d.press("esc")
	d.press("?")
	assert.Contains(t, d.view(), "scroll · 0 above", "the help opens at its top")
}

func TestHelpIsCompleteAtEverySize(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		d := newDriver(t, sz[0], sz[1])
		for _, tb := range tabs {
			d.m.show(tb.name)
			d.press("?")
			require.True(t, d.m.showHelp)
			out := d.view()
			assert.LessOrEqual(t, maxLineWidth(out), sz[0])
			assert.LessOrEqual(t, len(strings.Split(out, "\n")), sz[1], "%dx%d %s: the help fits the screen", sz[0], sz[1], tb.name)
			if strings.Contains(out, "↓/↑ scroll") {
				// A panel with many keys at 80x24: the help says what it hides.
				d.press("esc")
				continue
			}
			for _, g := range globalHelp(d.m.offeredKeys()) {
				for _, b := range g.keys {
					assert.Contains(t, out, b.Help().Desc, "%dx%d %s: every global key is in the help", sz[0], sz[1], tb.name)
				}
			}
			tk := d.m.keys.Tune
			assert.Regexp(t, tk.Search.Help().Key+"/"+tk.Sweep.Help().Key+"/"+tk.Export.Help().Key+` +SLO search / util sweep / export`, out,
				"%dx%d %s: the tuning keys are in the help", sz[0], sz[1], tb.name)
			for _, g := range d.m.panels[d.m.view(tb.name)].FullHelp() {
				for _, b := range g {
					assert.Contains(t, out, b.Help().Desc, "%dx%d %s: every key of the panel is in the help", sz[0], sz[1], tb.name)
				}
			}
			d.press("esc")
			assert.False(t, d.m.showHelp)
		}
	}
}

func TestTooSmallAndBeforeTheFirstSize(t *testing.T) {
	td := newTestDeps(t)
	m := New(td.deps)
	assert.Equal(t, "vllmtop: starting ...", m.View())
	for _, sz := range [][2]int{{59, 30}, {100, 15}, {40, 10}, {10, 3}, {1, 1}} {
		m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		out := m.View()
		want := fmt.Sprintf("terminal too small: %dx%d (vllmtop needs 60x16)", sz[0], sz[1])
		flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "…", "")), " ")
		assert.True(t, strings.HasPrefix(want, flat), "%v: %q", sz, out)
		assert.LessOrEqual(t, maxLineWidth(out), sz[0])
		assert.LessOrEqual(t, len(strings.Split(out, "\n")), sz[1])
		if sz[0] >= 20 && sz[1] >= 3 {
			assert.Equal(t, want, flat, "%v: the size it needs is shown whole", sz)
		}
	}
}

// At 80 columns the legends keep every series whole: the sample-count note shortens, and no
// legend line is cut with an ellipsis.
func TestOverviewLegendsFitAt80Columns(t *testing.T) {
	d := scripted(t, 80, 24, "dark", false)
	d.m.show(overviewTab)
	out := d.view()
	assert.Contains(t, out, "≤300ms", "the queue bound stays")
	assert.Regexp(t, `\bn=\d+(/10s)?\b`, out, "the sample count stays, in a shorter form")
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "━") || strings.Contains(l, "◂") {
			assert.NotContains(t, l, "…", "a legend line is not cut: %q", l)
		}
	}
}

// Epoch numbers close together do not run into each other: the newest keep theirs, the
// others keep their rule; the newest at the right edge moves left to fit.
func TestEpochLabelsDoNotTouch(t *testing.T) {
	end := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	w := timeWindow{End: end, Span: 60 * time.Second}
	at := func(sec int) time.Time { return end.Add(time.Duration(sec-60) * time.Second) }
	p := plotSpec{W: w, Cols: 60, Rows: 3, Epochs: []epochMark{{at(10), 3}, {at(11), 6}, {at(12), 7}, {at(13), 8}, {at(40), 11}, {at(60), 12}}}
	cells := make([][]cell, p.Rows)
	for r := range cells {
		cells[r] = make([]cell, p.Cols)
	}
	drawEpochs(p, cells)
	var top strings.Builder
	for _, c := range cells[0] {
		if c.r == 0 {
			top.WriteByte(' ')
		} else {
			top.WriteRune(c.r)
		}
	}
	labels := strings.Fields(strings.ReplaceAll(top.String(), "┊", " "))
	assert.Equal(t, []string{"6", "8", "11", "12"}, labels, "%q", top.String())
	assert.True(t, strings.HasSuffix(top.String(), "12"), "the newest fits at the edge: %q", top.String())
	for r := 1; r < p.Rows; r++ {
		rules := 0
		for _, c := range cells[r] {
			if c.r == '┊' {
				rules++
			}
		}
		assert.Equal(t, 6, rules, "every epoch keeps its rule")
	}
}

// The Capacity view scrolls where it is taller than the screen: the last line says how many
// lines are below and the keys that reach them, and a line above says what scrolled away.
func TestCapacityScrolls(t *testing.T) {
	d := scripted(t, 80, 17, "dark", false)
	d.showView("Capacity")
	out := d.view()
	require.Regexp(t, `… \d+ more lines? below \(↓/j, pgdn\)`, out)
	d.press("G")
	out = d.view()
	assert.Regexp(t, `… \d+ lines? above \(↑/k\)`, out)
	assert.NotContains(t, out, "below (↓/j", "the end is reached")
	assert.Contains(t, out, "what-if by --gpu-memory-utilization", "the utilisation table is in view")
	utilRows := regexp.MustCompile(`(?m)^[▶→ ] +0\.\d\d +[\d,]+ `).FindAllString(out, -1)
	assert.GreaterOrEqual(t, len(utilRows), minWhatIfRows, "a short terminal scrolls to the utilisations around the current one:\n%s", out)
	assert.LessOrEqual(t, len(strings.Split(out, "\n")), 17)
	d.press("g")
	assert.NotContains(t, d.view(), "above (↑/k)")
}
