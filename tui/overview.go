package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
)

// seriesDef is one line the charts can draw: its name, how a coarser slot folds it, and how a
// second's sample is read from the state.
type seriesDef struct {
	name string
	agg  aggregate
	get  func(c *common, now time.Time) sample
}

// The chart series, in history order.
const (
	serTTFTp50 = iota
	serTTFTp90
	serTTFTp99
	serSrvTTFTp99
	serSrvQueueP99
	serClientTok
	serSrvGenTok
	serSrvPromptTok
	serKV
	serRunning
	serWaiting
	serPreempt
	serPrefixHit
)

var seriesDefs = []seriesDef{
	serTTFTp50:      {"p50", aggMax, func(c *common, _ time.Time) sample { return value(msOf(c.s.live.TTFT.P50, c.s.live.TTFT.N)) }},
	serTTFTp90:      {"p90", aggMax, func(c *common, _ time.Time) sample { return value(msOf(c.s.live.TTFT.P90, c.s.live.TTFT.N)) }},
	serTTFTp99:      {"p99", aggMax, func(c *common, _ time.Time) sample { return value(msOf(c.s.live.TTFT.P99, c.s.live.TTFT.N)) }},
	serSrvTTFTp99:   {"srv p99", aggMax, srvTTFT},
	serSrvQueueP99:  {"queue p99", aggMax, srvQueue},
	serClientTok:    {"client", aggMean, clientTokens},
	serSrvGenTok:    {"srv gen", aggMean, srvGen},
	serSrvPromptTok: {"srv prompt", aggMean, srvPrompt},
	serKV:           {"used", aggMean, kvUsed},
	serRunning: {"running", aggMean, func(c *common, _ time.Time) sample {
		return gauge(c, func(st server.Stats) float64 { return float64(st.Running) }, "running")
	}},
	serWaiting: {"waiting", aggMean, func(c *common, _ time.Time) sample {
		return gauge(c, func(st server.Stats) float64 { return float64(st.Waiting) }, "waiting")
	}},
	serPreempt:   {"preempt/s", aggMean, preemptions},
	serPrefixHit: {"prefix hit", aggMean, prefixHits},
}

func seriesAggregates() []aggregate {
	out := make([]aggregate, len(seriesDefs))
	for i, d := range seriesDefs {
		out[i] = d.agg
	}
	return out
}

// recordSecond reads every series for the second ending at now.
func recordSecond(c *common) []sample {
	now := c.now()
	out := make([]sample, len(seriesDefs))
	for i, d := range seriesDefs {
		out[i] = d.get(c, now)
	}
	c.s.last = out
	return out
}

func srvTTFT(c *common, _ time.Time) sample {
	if r := rates(c.s.slow); r != nil {
		return quantile(r.TTFTSeconds, "p99")
	}
	return sample{}
}

func srvQueue(c *common, _ time.Time) sample {
	if r := rates(c.s.slow); r != nil {
		return quantile(r.QueueSeconds, "p99")
	}
	return sample{}
}

// clientTokens is the client's output tokens per second since the last second, counted as
// they arrive.
func clientTokens(c *common, now time.Time) sample {
	s := &c.s
	tokens := s.loader.TokensReceived
	defer func() { s.lastTok, s.lastTokAt = tokens, now }()
	if s.lastTokAt.IsZero() || !now.After(s.lastTokAt) || tokens < s.lastTok || c.deps.Load == nil {
		return sample{}
	}
	return value(float64(tokens-s.lastTok) / now.Sub(s.lastTokAt).Seconds())
}

func srvGen(c *common, _ time.Time) sample {
	return srvTokens(c, func(r *scrape.Rates) scrape.Value { return r.GenerationTokensPerSec },
		func(st server.Stats) float64 { return st.GenerationTokensPerSec })
}

func srvPrompt(c *common, _ time.Time) sample {
	return srvTokens(c, func(r *scrape.Rates) scrape.Value { return r.PromptTokensPerSec },
		func(st server.Stats) float64 { return st.PromptTokensPerSec })
}

// srvTokens is a token rate from the last scrape window, else from a periodic stats line of
// the last 15 s when there is no /metrics.
func srvTokens(c *common, scraped func(*scrape.Rates) scrape.Value, logged func(server.Stats) float64) sample {
	if r := rates(c.s.fast); r != nil {
		return value(scraped(r).Or(math.NaN()))
	}
	if c.s.snap == nil && c.s.server.StatsTime.After(c.now().Add(-15*time.Second)) {
		return value(logged(c.s.server.Stats))
	}
	return sample{}
}

func kvUsed(c *common, _ time.Time) sample {
	if m := c.s.model(); m != nil {
		return value(m.Total.KVCacheUsage.Or(math.NaN()) * 100)
	}
	if c.s.server.StatsTime.After(c.now().Add(-15 * time.Second)) {
		// Without /metrics the periodic log line still tells KV use, running and waiting.
		return value(c.s.server.Stats.KVCacheUsagePercent)
	}
	return sample{}
}

func gauge(c *common, fromLog func(server.Stats) float64, name string) sample {
	if m := c.s.model(); m != nil {
		v := m.Total.Running
		if name == "waiting" {
			v = m.Total.Waiting
		}
		return value(v.Or(math.NaN()))
	}
	if c.s.server.StatsTime.After(c.now().Add(-15 * time.Second)) {
		return value(fromLog(c.s.server.Stats))
	}
	return sample{}
}

func preemptions(c *common, _ time.Time) sample {
	if r := rates(c.s.fast); r != nil && r.Preemptions.OK && c.s.fast.ElapsedSeconds > 0 {
		return value(r.Preemptions.V / c.s.fast.ElapsedSeconds)
	}
	return sample{}
}

// prefixHits is the server's prefix-cache hit rate over the live window, in percent of the
// prompt tokens looked up (vllm:prefix_cache_hits / vllm:prefix_cache_queries), else what its
// log's periodic line says.
func prefixHits(c *common, _ time.Time) sample {
	if r := rates(c.s.slow); r != nil && r.PrefixCacheHitRate.OK {
		return value(r.PrefixCacheHitRate.V * 100)
	}
	if c.s.snap == nil && c.s.server.StatsTime.After(c.now().Add(-15*time.Second)) && c.s.server.Stats.PrefixCacheHitRatePercent > 0 {
		return value(c.s.server.Stats.PrefixCacheHitRatePercent)
	}
	return sample{}
}

// seriesName is a series' name in a legend; the server's quantiles name the window their
// histograms cover ("srv p99 (60s)"), which is not the client's.
func seriesName(c *common, id int) string {
	name := seriesDefs[id].name
	if w := c.s.slow; (id == serSrvTTFTp99 || id == serSrvQueueP99) && w != nil && w.ElapsedSeconds >= 1 {
		name += " (" + fmtSpan(time.Duration(math.Round(w.ElapsedSeconds))*time.Second) + ")"
	}
	return name
}

// exportsPrefixCache reports whether the server tells its prefix-cache hits at all: the
// Overview leaves the line out of its legend otherwise.
func exportsPrefixCache(c *common) bool {
	if m := c.s.model(); m != nil {
		return m.Total.PrefixCacheQueries.OK
	}
	return c.s.server.Stats.PrefixCacheHitRatePercent > 0
}

// chartDef is one chart of the Overview: its series, its unit, and a fixed range if it has one.
type chartDef struct {
	title    string
	unit     unit
	fixedTop float64 // > 0: the Y range is 0..fixedTop whatever the data
	series   []int
	// lower are series (of series) drawn in a band of their own under the others, on their
	// own scale; upperName and lowerName label the two bands.
	lower                []int
	upperName, lowerName string
}

var overviewCharts = []chartDef{
	{"TTFT", unitMs, 0, []int{serTTFTp50, serTTFTp90, serTTFTp99, serSrvTTFTp99, serSrvQueueP99}, nil, "", ""},
	{"Throughput", unitTokPerSec, 0, []int{serClientTok, serSrvGenTok, serSrvPromptTok}, []int{serSrvPromptTok}, "generated", "prompt"},
	{"KV cache", unitPercent, 100, []int{serKV, serPrefixHit}, nil, "", ""},
	{"Queue", unitRequests, 0, []int{serRunning, serWaiting, serPreempt}, nil, "", ""},
}

// overviewTab is the charts' view, where a drill-down from the fleet lands.
const overviewTab = "Overview"

// overview is the four charts over one shared time window.
type overview struct {
	c      *common
	w, h   int
	cache  string
	keys   overviewKeys
	drawAt time.Time
}

type overviewKeys struct{ Window, WindowHelp key.Binding }

func newOverview(c *common) panel {
	return &overview{c: c, keys: overviewKeys{Window: binding([]string{"z"}, "z", "chart window"),
		WindowHelp: binding([]string{"z"}, "z", "chart window 1m/5m/15m/1h")}}
}

func (o *overview) ShortHelp() []key.Binding  { return []key.Binding{o.keys.Window} }
func (o *overview) FullHelp() [][]key.Binding { return [][]key.Binding{{o.keys.WindowHelp}} }

func (o *overview) SetSize(w, h int) { o.w, o.h = w, h }

func (o *overview) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		if key.Matches(msg, o.keys.Window) {
			s := &o.c.s
			s.window = (s.window + 1) % len(chartWindows)
			o.c.setStatus("charts over the last "+fmtSpan(chartWindows[s.window]), false)
			o.draw()
		}
	case refreshMsg:
		if msg.second || o.cache == "" {
			o.draw()
		}
	case restyleMsg:
		o.draw()
	}
	return nil
}

func (o *overview) View() string { return o.cache }

// draw composes the four charts. They share the window, the ticks, the plot width and the
// label gutter, so a column is the same instant in every chart.
func (o *overview) draw() {
	if o.w <= 0 || o.h <= 0 {
		return
	}
	c := o.c
	cells := grid(rect{0, 0, o.w, o.h}, 2, 2)
	win := chartWindow(c)
	// Legends first: a grid row is as tall as its taller legend.
	legends := make([][]string, len(overviewCharts))
	for i, def := range overviewCharts {
		legends[i] = o.legend(def, cells[i].W)
	}
	legendH := []int{max(len(legends[0]), len(legends[1])), max(len(legends[2]), len(legends[3]))}
	// Scales, then the widest tick label of all four sets the gutter.
	gutter := 0
	scales := make([][2]yScale, len(overviewCharts)) // upper and lower band
	for i, def := range overviewCharts {
		up, lo := bandRows(def, cells[i].H-legendH[i/2]-1)
		scales[i] = [2]yScale{o.bandScale(def, false, win, cells[i].W, up), o.bandScale(def, true, win, cells[i].W, lo)}
		for b, s := range scales[i] {
			if b == 1 && lo == 0 {
				continue
			}
			for _, v := range s.Ticks() {
				gutter = max(gutter, lipgloss.Width(axisLabel(v, def.unit)))
			}
		}
	}
	plotCols := cells[0].W - gutter - 1
	ticks := xTicks(win, plotCols)
	blocks := make([]string, len(overviewCharts))
	for i, def := range overviewCharts {
		rows := cells[i].H - legendH[i/2] - 1
		if plotCols < 8 || rows < 2 {
			blocks[i] = fit(strings.Join(legends[i], "\n"), cells[i].W, cells[i].H)
			continue
		}
		lines := append(padLegend(legends[i], legendH[i/2]), o.chartPlot(def, plotSpec{
			W: win, Cols: plotCols, Rows: rows, Gutter: gutter, Unit: def.unit, Epochs: c.s.marks, Ticks: ticks,
		}, scales[i][0], scales[i][1])...)
		blocks[i] = fit(strings.Join(lines, "\n"), cells[i].W, cells[i].H)
	}
	row := func(a, b string) string {
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		out := make([]string, len(al))
		for i := range al {
			out[i] = al[i] + " " + bl[i]
		}
		return strings.Join(out, "\n")
	}
	o.cache = fit(row(blocks[0], blocks[1])+"\n"+row(blocks[2], blocks[3]), o.w, o.h)
	o.drawAt = c.now()
}

// chartWindow is the window the charts show now: fitted to the data until they fill it.
func chartWindow(c *common) timeWindow {
	var first time.Time
	if c.s.hist != nil && c.s.hist.first != 0 {
		first = time.Unix(c.s.hist.first, 0)
	}
	return fittedWindow(c.now(), chartWindows[c.s.window], first)
}

func padLegend(lines []string, h int) []string {
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines
}

// valueMax is the largest value among bins; bounds do not count.
func valueMax(bins []bin) float64 {
	m := 0.0
	for _, b := range bins {
		if b.Kind == valueKind {
			m = math.Max(m, b.V)
		}
	}
	return m
}

// legend is a chart's title and its series with their latest values, wrapped to at most three
// lines rather than cut.
func (o *overview) legend(def chartDef, width int) []string {
	c, st := o.c, &o.c.styles
	items := []string{st.Title.Render(def.title)}
	for i, id := range def.series {
		if id == serPrefixHit && !exportsPrefixCache(c) {
			continue
		}
		ss := st.series(i)
		var last sample
		if id < len(c.s.last) {
			last = c.s.last[id]
		}
		mark, v := ss.Mark, def.unit.value(math.NaN())
		switch last.Kind {
		case valueKind:
			v = def.unit.value(last.V)
		case upperBound:
			v = "≤" + def.unit.value(last.V)
		case lowerBound:
			v = "≥" + def.unit.value(last.V)
		case noSample:
		}
		if st.NoColor {
			mark = ss.Glyph
		}
		if last.Kind == upperBound || last.Kind == lowerBound {
			mark = string(boundTick) // the chart has only a tick at the bound for it
		}
		items = append(items, ss.Style.Render(mark+" "+seriesName(c, id))+" "+st.Value.Render(v))
	}
	// A note goes last, in the first of its forms that leaves every item whole in three lines;
	// none when even the shortest does not.
	var notes []string
	switch def.unit {
	case unitMs:
		n, span := c.s.live.TTFT.N, fmtSpan(c.deps.LiveWindow)
		notes = []string{fmt.Sprintf("client n=%d/%s", n, span), fmt.Sprintf("n=%d/%s", n, span), fmt.Sprintf("n=%d", n)}
	case unitTokPerSec:
	case unitPercent:
		if tok, _ := c.s.capacity(); tok > 0 {
			notes = []string{"of " + commas(tok) + " tok", "of " + siNumber(float64(tok)) + " tok"}
		}
	case unitRequests:
	}
	const maxLines = 3
	for _, note := range notes {
		with := append(items[:len(items):len(items)], st.Muted.Render(note))
		if len(wrapItems(with, "  ", width, math.MaxInt)) <= maxLines {
			return wrapItems(with, "  ", width, maxLines)
		}
	}
	return wrapItems(items, "  ", width, maxLines)
}
