package tui

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/internal/textfmt"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/themes"
)

// View numbers.
const (
	viewOverview = iota
	viewStream
	viewLog
	viewRuns
	viewCapacity
	numViews
)

var viewNames = []string{"Overview", "Stream", "Log", "Runs", "Capacity"}

// Minimum terminal size; below it the dashboard shows a one-line notice.
const minWidth, minHeight = 60, 16

const maxLogLines = 5000

// epochNote is what the server side said during one epoch of the load (a row of the Runs
// view): the load itself numbers and describes its epochs.
type epochNote struct {
	util     float64
	kvTokens int
	maxConc  float64
	preempt  float64 // preemptions the server counted during the epoch
}

// Model is the dashboard's state. Update and View never block.
type Model struct {
	deps   Deps
	keys   KeyMap
	styles Styles
	theme  themes.Theme
	help   help.Model

	width, height int
	view          int
	showHelp      bool
	status        string // the last message for the status line
	statusBad     bool

	// Load controls.
	concurrency int
	rateMode    bool
	rate        float64
	paused      bool
	longPrompts bool

	// --gpu-memory-utilization: what the server runs with, and what the next restart uses.
	util, pendingUtil float64
	confirming        bool
	restarting        bool
	quitting          int // 1: stopping gracefully; 2: forced

	server       server.Status
	loader       loadgen.LoaderStats
	window       loadgen.WindowStats
	prev         *scrape.Snapshot
	cur          *scrape.Snapshot
	srv          scrape.Window
	srvErr       string
	eventsClosed bool

	tickGen, scrapeGen int
	ticks              int
	startedAt          time.Time
	lastTokens         int64     // tokens received at the last chart point
	lastPoint          time.Time // when that was

	charts []*chart
	// overview is the overview's body, composed when the charts are drawn: View runs after
	// every message, and stitching four charts cell by cell each time cost more than drawing them.
	overview string
	// runs are the load's epochs with their statistics, oldest first, taken once a second
	// (not per frame) and when one starts; notes hold the server's side of each, by number.
	runs   []loadgen.EpochStats
	notes  map[int]*epochNote
	epoch  int // the current epoch
	cursor int
	picked []int // the epochs chosen for comparison (at most 2)

	logLines []server.Line
	// logStyled holds each line of logLines truncated and styled, so new lines cost only
	// themselves; logDirty says the viewport needs them (refreshed at the tick, not per batch).
	logStyled   []string
	logDirty    bool
	logView     viewport.Model
	follow      bool
	filter      textinput.Model
	filtering   bool
	droppedLogs uint64

	watched   *loadgen.Watched
	watchView loadgen.WatchedView
}

// New builds the dashboard.
func New(d Deps) Model {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.ScrapeInterval <= 0 {
		d.ScrapeInterval = time.Second
	}
	th, ok := themes.ByName(d.Theme)
	if !ok {
		th, _ = themes.ByName(themes.Default)
	}
	m := Model{
		deps: d, keys: DefaultKeyMap(), theme: th, styles: NewStyles(th), help: help.New(),
		concurrency: max(d.InitialConc, 0), util: d.InitialUtil, pendingUtil: d.InitialUtil,
		paused: d.StartPaused, follow: true, startedAt: d.Now(), rate: 1,
	}
	m.help.Styles = m.styles.Help
	m.filter = textinput.New()
	m.filter.Prompt = "/"
	m.filter.Placeholder = "filter"
	m.logView = viewport.New(0, 0)
	m.charts = []*chart{
		newChart("TTFT", "ms", "p50", "p90", "p99", "srv p99", "queue p99"),
		newChart("Throughput", "/s", "client out tok/s", "server gen tok/s"),
		newChart("KV cache", "%", "used %"),
		newChart("Queue", "", "running", "waiting", "preempt/s"),
	}
	m.notes = map[int]*epochNote{}
	if d.Load != nil {
		m.epoch = d.Load.Stats().Epoch
		m.setRuns(d.Load.Epochs())
	}
	m.notes[m.epoch] = &epochNote{util: m.util}
	return m
}

// Init starts the tick chains and the server event reader.
func (m Model) Init() tea.Cmd {
	cmds := []tea.Cmd{uiTick(m.tickGen)}
	if m.deps.Scraper != nil {
		cmds = append(cmds, scheduleScrape(m.scrapeGen, 0))
	}
	if m.deps.Supervisor != nil {
		cmds = append(cmds, waitForServerEvents(m.deps.Supervisor.Events()))
	}
	if m.deps.Load != nil && m.paused {
		m.deps.Load.Pause()
	}
	return tea.Batch(cmds...)
}

func (m Model) loadSettings() string {
	if m.rateMode {
		return fmt.Sprintf("rate %s/s", trimFloat(m.rate))
	}
	return fmt.Sprintf("C=%d", m.concurrency)
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Update handles one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		m.redrawCharts()
		return m, nil
	case tea.KeyMsg:
		return m.handleKey(msg)
	case uiTickMsg:
		if msg.gen != m.tickGen {
			return m, nil
		}
		m.refresh(msg.at)
		return m, uiTick(m.tickGen)
	case scrapeTickMsg:
		if msg.gen != m.scrapeGen || m.deps.Scraper == nil {
			return m, nil
		}
		return m, scrapeCmd(m.deps.Scraper, m.deps.ScrapeInterval+2*time.Second)
	case scrapeResultMsg:
		if msg.err != nil {
			m.srvErr = textfmt.OneLine(msg.err.Error(), 0)
			// Old numbers must not be plotted as if they were current.
			m.srv, m.cur = scrape.Window{}, nil
		} else {
			m.srvErr = ""
			snap := msg.snap
			m.prev, m.cur = m.cur, &snap
			if m.prev != nil {
				m.srv = scrape.Compare(m.prev, m.cur)
				// Preemptions in the window (absent across a restart) add up per epoch.
				if mw := m.modelWindow(); mw != nil && mw.Total.Preemptions.OK && !m.restarting {
					m.note(m.epoch).preempt += mw.Total.Preemptions.V
				}
			}
		}
		return m, scheduleScrape(m.scrapeGen, m.deps.ScrapeInterval)
	case serverEventsMsg:
		return m.handleServerEvents(msg)
	case restartDoneMsg:
		m.restarting = false
		if m.quitting > 0 {
			return m, stopCmd(m.deps.Supervisor)
		}
		if msg.err != nil {
			// The server is down: load would only count refused connections.
			m.paused = true
			m.setStatus("restart failed: "+textfmt.OneLine(msg.err.Error(), 0)+" (load paused)", true)
			return m, nil
		}
		m.util = msg.util
		m.setStatus(fmt.Sprintf("restarted with --gpu-memory-utilization %.2f", msg.util), false)
		if m.deps.Load != nil && !m.paused {
			m.deps.Load.Resume()
		}
		return m, nil
	case stopDoneMsg:
		return m, tea.Quit
	}
	if m.filtering {
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		return m, cmd
	}
	return m, nil
}

func (m *Model) setStatus(s string, bad bool) { m.status, m.statusBad = s, bad }

// refresh pulls the state of the load and the server; once a second it closes a chart point.
func (m *Model) refresh(now time.Time) {
	m.ticks++
	if m.deps.Supervisor != nil {
		m.server = m.deps.Supervisor.Status()
		if u := m.server.GPUMemoryUtilization; m.util == 0 && u > 0 {
			m.util, m.pendingUtil = u, u
		}
	}
	if m.deps.Load != nil {
		m.loader = m.deps.Load.Stats()
	}
	if m.logDirty && m.view == viewLog {
		m.refreshLogView()
	}
	if m.watched != nil {
		v := m.watched.View(0)
		m.watchView = v
	}
	if m.ticks%4 != 0 {
		return
	}
	if m.deps.Load != nil {
		p := m.deps.Load.Tick(now)
		m.window = m.deps.Load.WindowCounts() // the header needs counts, not quantiles
		m.charts[0].push(now, msf(p.TTFT.P50, p.TTFT.N), msf(p.TTFT.P90, p.TTFT.N), msf(p.TTFT.P99, p.TTFT.N), m.serverP99TTFT(), m.serverP99Queue())
		m.charts[1].push(now, m.tokenRate(now, p.OutputTokensPerSec), m.serverGenRate())
	}
	if m.cur != nil {
		if mod := m.model(); mod != nil {
			m.charts[2].push(now, mod.Total.KVCacheUsage.Or(math.NaN())*100)
			pre := math.NaN()
			if mw := m.modelWindow(); mw != nil {
				pre = mw.Total.Preemptions.Or(math.NaN())
				if m.srv.ElapsedSeconds > 0 && !math.IsNaN(pre) {
					pre /= m.srv.ElapsedSeconds
				}
			}
			m.charts[3].push(now, mod.Total.Running.Or(math.NaN()), mod.Total.Waiting.Or(math.NaN()), pre)
		}
	} else if m.server.StatsTime.After(m.startedAt) {
		// No /metrics: the periodic log line still tells running, waiting and KV use.
		st := m.server.Stats
		m.charts[2].push(now, st.KVCacheUsagePercent)
		m.charts[3].push(now, float64(st.Running), float64(st.Waiting), math.NaN())
	}
	m.updateEpoch()
	if m.deps.Load != nil {
		m.setRuns(m.deps.Load.Epochs())
	}
	m.redrawCharts()
}

// tokenRate is the client's output tokens per second since the last point, counted as they
// arrive; without a counter it falls back to the tokens of requests that finished.
func (m *Model) tokenRate(now time.Time, fallback float64) float64 {
	tokens := m.loader.TokensReceived
	defer func() { m.lastTokens, m.lastPoint = tokens, now }()
	if tokens == 0 || m.lastPoint.IsZero() || !now.After(m.lastPoint) {
		return fallback
	}
	return float64(tokens-m.lastTokens) / now.Sub(m.lastPoint).Seconds()
}

// msf turns a quantile into milliseconds, NaN when there was no sample.
func msf(d time.Duration, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return float64(d) / float64(time.Millisecond)
}

// model is the first model of the latest scrape.
func (m *Model) model() *scrape.Model {
	if m.cur == nil || len(m.cur.Models) == 0 {
		return nil
	}
	return &m.cur.Models[0]
}

func (m *Model) modelWindow() *scrape.ModelWindow {
	if len(m.srv.Models) == 0 {
		return nil
	}
	return &m.srv.Models[0]
}

func (m *Model) serverP99TTFT() float64 {
	if mw := m.modelWindow(); mw != nil && mw.Total.TTFTSeconds != nil && mw.Total.TTFTSeconds.Count > 0 {
		return mw.Total.TTFTSeconds.P99.Or(math.NaN()) * 1000
	}
	return math.NaN()
}

func (m *Model) serverP99Queue() float64 {
	if mw := m.modelWindow(); mw != nil && mw.Total.QueueSeconds != nil && mw.Total.QueueSeconds.Count > 0 {
		return mw.Total.QueueSeconds.P99.Or(math.NaN()) * 1000
	}
	return math.NaN()
}

func (m *Model) serverGenRate() float64 {
	if mw := m.modelWindow(); mw != nil {
		return mw.Total.GenerationTokensPerSec.Or(math.NaN())
	}
	if m.server.StatsTime.After(m.startedAt) {
		return m.server.Stats.GenerationTokensPerSec
	}
	return math.NaN()
}

// capacity is what the header and the runs show: the logs first, then cache_config_info.
func (m *Model) capacity() (tokens int, conc float64) {
	tokens, conc = m.server.KVCacheTokens, m.server.MaxConcurrency
	if m.cur != nil {
		if tokens == 0 {
			tokens = int(m.cur.Capacity.KVCacheTokens.Or(0))
		}
		if conc == 0 {
			conc = m.cur.Capacity.MaxConcurrency.Or(0)
		}
	}
	return tokens, conc
}

func (m *Model) updateEpoch() {
	tok, conc := m.capacity()
	if e := m.note(m.epoch); tok > 0 && !m.restarting {
		e.kvTokens, e.maxConc = tok, conc
	}
}

// note is epoch n's server-side note, made when missing.
func (m *Model) note(n int) *epochNote {
	e, ok := m.notes[n]
	if !ok {
		e = &epochNote{}
		m.notes[n] = e
	}
	return e
}

// startEpoch records the epoch the load has just started (n): the server side's note, with the
// utilisation it runs at, and a marker on the charts. It is the one place an epoch starts here.
func (m *Model) startEpoch(n int, util float64) {
	m.epoch = n
	m.notes[n] = &epochNote{util: util}
	now := m.deps.Now()
	for _, c := range m.charts {
		c.markEpoch(now)
	}
	m.setRuns(m.deps.Load.Epochs())
}

// setRuns takes the load's epochs as the Runs view's rows. The load keeps a bounded number, so
// rows drop off the front: the cursor and the picked runs follow theirs, and the notes of
// dropped epochs go.
func (m *Model) setRuns(runs []loadgen.EpochStats) {
	if len(m.runs) > 0 && len(runs) > 0 {
		drop := 0
		for _, e := range m.runs {
			if e.Epoch < runs[0].Epoch {
				drop++
			}
		}
		m.cursor = max(m.cursor-drop, 0)
	}
	m.runs = runs
	kept := map[int]bool{m.epoch: true}
	for _, e := range runs {
		kept[e.Epoch] = true
	}
	picked := m.picked[:0]
	for _, p := range m.picked {
		if kept[p] {
			picked = append(picked, p)
		}
	}
	m.picked = picked
	for n := range m.notes {
		if !kept[n] {
			delete(m.notes, n)
		}
	}
}

func (m Model) handleServerEvents(msg serverEventsMsg) (tea.Model, tea.Cmd) {
	for _, ev := range msg.events {
		switch ev := ev.(type) {
		case server.StateChanged:
			switch ev.State {
			case server.Ready:
				m.setStatus("server ready", false)
			case server.Exited:
				if m.quitting == 0 && !m.restarting {
					// Load against a dead server would only count connection failures.
					if m.deps.Load != nil && !m.paused {
						m.deps.Load.Pause()
						m.paused = true
					}
					m.setStatus("server exited: "+ev.Exit.String()+" (load paused)", true)
				}
			case server.Unhealthy:
				m.setStatus("server unhealthy", true)
			}
		case server.LogBatch:
			m.droppedLogs += ev.Dropped
			m.logLines = append(m.logLines, ev.Lines...)
			for _, l := range ev.Lines {
				m.logStyled = append(m.logStyled, m.styleLogLine(l))
			}
			if over := len(m.logLines) - maxLogLines; over > 0 {
				m.logLines = append(m.logLines[:0:0], m.logLines[over:]...)
				m.logStyled = append(m.logStyled[:0:0], m.logStyled[over:]...)
			}
			m.logDirty = true
		}
	}
	if msg.closed {
		m.eventsClosed = true
		return m, nil
	}
	return m, waitForServerEvents(m.deps.Supervisor.Events())
}

func (m Model) handleKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	if key.Matches(msg, k.ForceQuit) || (m.quitting > 0 && key.Matches(msg, k.Quit)) {
		m.quitting = 2
		if m.deps.Supervisor != nil && !m.deps.RestartDisabled {
			_ = m.deps.Supervisor.Kill()
		}
		return m, tea.Quit
	}
	if m.filtering {
		switch msg.String() {
		case "enter", "esc":
			m.filtering = false
			m.filter.Blur()
			if msg.String() == "esc" {
				m.filter.SetValue("")
			}
			m.refreshLogView()
			return m, nil
		}
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		m.refreshLogView()
		return m, cmd
	}
	if m.confirming {
		switch {
		case key.Matches(msg, k.Restart), msg.String() == "y":
			m.confirming = false
			return m.startRestart()
		case key.Matches(msg, k.Cancel), msg.String() == "n":
			m.confirming = false
			m.pendingUtil = m.util
			m.setStatus("restart cancelled", false)
			return m, nil
		}
	}
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
	case key.Matches(msg, k.NextView):
		m.setView((m.view + 1) % numViews)
	case key.Matches(msg, k.View1):
		m.setView(viewOverview)
	case key.Matches(msg, k.View2):
		m.setView(viewStream)
	case key.Matches(msg, k.View3):
		m.setView(viewLog)
	case key.Matches(msg, k.View4):
		m.setView(viewRuns)
	case key.Matches(msg, k.View5):
		m.setView(viewCapacity)
	case key.Matches(msg, k.More):
		m.changeLoad(func(c int) int { return c + 1 }, func(r float64) float64 { return r + 1 })
	case key.Matches(msg, k.Less):
		m.changeLoad(func(c int) int { return max(c-1, 0) }, func(r float64) float64 { return math.Max(r-1, 0.5) })
	case key.Matches(msg, k.Double):
		m.changeLoad(func(c int) int { return max(c*2, 1) }, func(r float64) float64 { return r * 2 })
	case key.Matches(msg, k.Halve):
		m.changeLoad(func(c int) int { return c / 2 }, func(r float64) float64 { return math.Max(r/2, 0.125) })
	case key.Matches(msg, k.RateMode):
		m.rateMode = !m.rateMode
		if m.deps.Load != nil {
			n := 0
			if m.rateMode {
				n = m.deps.Load.SetRate(m.rate)
			} else {
				n = m.deps.Load.SetConcurrency(m.concurrency)
			}
			m.startEpoch(n, m.util)
		}
		m.setStatus("load: "+m.loadSettings(), false)
	case key.Matches(msg, k.Pause):
		m.paused = !m.paused
		if m.deps.Load != nil {
			if m.paused {
				m.deps.Load.Pause()
			} else {
				m.deps.Load.Resume()
			}
		}
		if m.paused {
			m.setStatus("load paused", false)
		} else {
			m.setStatus("load running: "+m.loadSettings(), false)
		}
	case key.Matches(msg, k.UtilDown):
		m.nudgeUtil(-0.01)
	case key.Matches(msg, k.UtilUp):
		m.nudgeUtil(0.01)
	case key.Matches(msg, k.UtilDownBig):
		m.nudgeUtil(-0.05)
	case key.Matches(msg, k.UtilUpBig):
		m.nudgeUtil(0.05)
	case key.Matches(msg, k.Restart):
		if m.view == viewRuns {
			break
		}
		if m.deps.RestartDisabled || m.deps.Supervisor == nil {
			m.setStatus("attached: this server was not started here, so it cannot be restarted", true)
			break
		}
		if m.restarting {
			m.setStatus("a restart is already under way", true)
			break
		}
		m.confirming = true
	case key.Matches(msg, k.Watch):
		if m.deps.Load != nil {
			m.watched = m.deps.Load.Watch()
			m.watchView = loadgen.WatchedView{}
			m.setStatus("watching the next request", false)
		}
	case key.Matches(msg, k.PromptLen):
		if m.deps.Load == nil {
			break
		}
		m.longPrompts = !m.longPrompts
		name, n := m.deps.Load.UseLongPrompts(m.longPrompts)
		m.setStatus("workload: "+name, false)
		m.watched = m.deps.Load.Watch()
		m.startEpoch(n, m.util)
	case key.Matches(msg, k.Theme):
		m.theme = themes.Next(m.theme.Name)
		m.styles = NewStyles(m.theme)
		m.help.Styles = m.styles.Help
		m.redrawCharts()
		m.restyleLog()
		m.refreshLogView()
	case key.Matches(msg, k.Up):
		m.scroll(-1)
	case key.Matches(msg, k.Down):
		m.scroll(1)
	case key.Matches(msg, k.Select):
		if m.view == viewRuns && len(m.runs) > 0 {
			m.pick(m.cursor)
		}
	case key.Matches(msg, k.Follow):
		if m.view == viewLog {
			m.follow = !m.follow
			m.refreshLogView()
		}
	case key.Matches(msg, k.Filter):
		if m.view == viewLog {
			m.filtering = true
			m.filter.Focus()
			return m, textinput.Blink
		}
	case key.Matches(msg, k.Cancel):
		m.showHelp = false
	}
	return m, nil
}

func (m *Model) setView(v int) {
	m.view = v
	if v == viewLog {
		m.refreshLogView()
	}
}

func (m *Model) changeLoad(conc func(int) int, rate func(float64) float64) {
	n := 0
	if m.rateMode {
		m.rate = rate(m.rate)
		if m.deps.Load != nil {
			n = m.deps.Load.SetRate(m.rate)
		}
	} else {
		m.concurrency = conc(m.concurrency)
		if m.deps.Load != nil {
			n = m.deps.Load.SetConcurrency(m.concurrency)
		}
	}
	m.setStatus("load: "+m.loadSettings(), false)
	if m.deps.Load != nil {
		m.startEpoch(n, m.util)
	}
}

func (m *Model) nudgeUtil(d float64) {
	if m.deps.RestartDisabled {
		m.setStatus("attached: the server's settings cannot be changed from here", true)
		return
	}
	base := m.pendingUtil
	if base == 0 {
		base = server.DefaultGPUMemoryUtilization
	}
	m.pendingUtil = math.Round(math.Min(math.Max(base+d, 0.05), 1)*100) / 100
	m.setStatus(fmt.Sprintf("pending --gpu-memory-utilization %.2f (enter restarts)", m.pendingUtil), false)
}

func (m Model) startRestart() (tea.Model, tea.Cmd) {
	m.restarting = true
	if m.deps.Load != nil {
		m.deps.Load.Pause()
	}
	// The new run's row starts now, so the capacity it reports lands in it.
	if m.deps.Load != nil {
		m.startEpoch(m.deps.Load.Mark("restart"), m.pendingUtil)
	}
	m.setStatus(fmt.Sprintf("restarting with --gpu-memory-utilization %.2f ...", m.pendingUtil), false)
	return m, restartCmd(m.deps.Supervisor, m.pendingUtil)
}

func (m Model) quit() (tea.Model, tea.Cmd) {
	if m.restarting {
		// Stopping now would race the restart's start; stop as soon as it is done.
		m.quitting = 1
		m.setStatus("stopping after the restart under way (q again or ctrl+c to force) ...", false)
		return m, nil
	}
	m.quitting = 1
	if m.deps.Load != nil {
		m.deps.Load.Pause()
	}
	if m.deps.Supervisor == nil || m.deps.RestartDisabled || m.eventsClosed {
		return m, tea.Quit
	}
	m.setStatus("stopping the server (q again or ctrl+c to force) ...", false)
	return m, stopCmd(m.deps.Supervisor)
}

func (m *Model) scroll(d int) {
	switch m.view {
	case viewRuns:
		m.cursor = min(max(m.cursor+d, 0), max(len(m.runs)-1, 0))
	case viewLog:
		m.follow = false
		if d < 0 {
			m.logView.ScrollUp(1)
		} else {
			m.logView.ScrollDown(1)
		}
	}
}

// pick chooses or unchooses the run in row i for the comparison; a third pick drops the oldest.
func (m *Model) pick(i int) {
	if i < 0 || i >= len(m.runs) {
		return
	}
	n := m.runs[i].Epoch
	for j, p := range m.picked {
		if p == n {
			m.picked = append(m.picked[:j], m.picked[j+1:]...)
			return
		}
	}
	m.picked = append(m.picked, n)
	if len(m.picked) > 2 {
		m.picked = m.picked[1:]
	}
}
