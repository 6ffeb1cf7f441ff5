package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/themes"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// Model is the dashboard's root: the layout, the global keys, the tick and scrape chains, and
// the panels. Update and View never block.
type Model struct {
	c      *common
	keys   KeyMap
	panels []panel
	active int
	header *header
	footer *footer
	help   *helpView

	width, height int
	scr           screen
	showHelp      bool

	tickGen, scrapeGen int
	ticks              int
	snaps              []*scrape.Snapshot // the last scrapes, oldest first: a live window's worth
	scrapeBackoff      scrape.Backoff     // spaces the scrapes of a server that keeps failing
	eventsClosed       bool
	tabs               []tab // the views: tabs, after the Fleet view in fleet mode
}

// New builds the dashboard.
func New(d Deps) *Model {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.ScrapeInterval <= 0 {
		d.ScrapeInterval = time.Second
	}
	if d.LiveWindow <= 0 {
		d.LiveWindow = loadgen.DefaultLiveWindow
	}
	th, ok := themes.ByName(d.Theme)
	if !ok {
		th, _ = themes.ByName(themes.Default)
	}
	c := &common{deps: d, theme: th, styles: NewStyles(th, d.NoColor), now: d.Now}
	c.s = state{
		concurrency: max(d.InitialConc, 0), util: d.InitialUtil, pendingUtil: d.InitialUtil,
		paused: d.StartPaused, rate: 1, notes: map[int]*epochNote{}, window: defaultWindow,
		hist: newHistory(seriesAggregates()), workloads: [2]string{d.Workload, "long prompts"},
	}
	if d.InitialRate > 0 {
		c.s.rateMode, c.s.rate = true, d.InitialRate
	}
	if d.Load != nil {
		c.s.epoch = d.Load.Stats().Epoch
		c.s.setRuns(d.Load.Epochs())
	}
	c.s.notes[c.s.epoch] = &epochNote{util: d.InitialUtil, workload: d.Workload}
	if d.StartPaused {
		c.pauseChanged(true)
	} else if d.Load != nil && d.InitialConc == 0 && d.InitialRate <= 0 && d.Load.Stats().Replay != loadgen.ReplayTrace {
		c.setStatus("no load: --max-concurrency 0 sends nothing until + or ] starts it", false)
	}
	m := &Model{c: c, keys: DefaultKeyMap(), header: newHeader(c), footer: newFooter(c), help: newHelpView(c), tabs: tabsFor(d)}
	m.keys.Views = viewKeysOf(m.tabs)
	if d.Fleet != nil {
		m.keys.fleetOnly()
	}
	for _, t := range m.tabs {
		m.panels = append(m.panels, t.make(c))
	}
	return m
}

// Init starts the tick chains and the server event reader.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{uiTick(m.tickGen, uiIntervalFor(m.c.deps))}
	d := m.c.deps
	if d.Scraper != nil {
		cmds = append(cmds, scheduleScrape(m.scrapeGen, 0))
	}
	if d.Supervisor != nil {
		cmds = append(cmds, waitForServerEvents(d.Supervisor.Events()))
	}
	if d.Load != nil && m.c.s.paused {
		d.Load.Pause()
	}
	if d.Fleet != nil {
		cmds = append(cmds, waitFleet(d.Fleet, m.facts()))
	}
	return tea.Batch(cmds...)
}

// Update handles one message: the size first, then keys (global ones, then the active
// panel's), then the domain messages, which go to the state and then to the panels they are
// for, by name.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
		return m, nil
	case tea.KeyMsg:
		var cmds []tea.Cmd
		for _, k := range m.keysOf(msg) {
			cmd, quit := m.handleKey(k)
			cmds = append(cmds, cmd)
			if quit {
				break
			}
		}
		m.refreshActive(false)
		return m, tea.Batch(cmds...)
	case uiTickMsg:
		if msg.gen != m.tickGen {
			return m, nil
		}
		m.tick(msg.at)
		return m, uiTick(m.tickGen, uiIntervalFor(m.c.deps))
	case scrapeTickMsg:
		if msg.gen != m.scrapeGen || m.c.deps.Scraper == nil {
			return m, nil
		}
		var prev, old *scrape.Snapshot
		if n := len(m.snaps); n > 0 {
			prev, old = m.snaps[n-1], m.snaps[0]
		}
		if old == prev {
			old = nil
		}
		return m, scrapeCmd(m.c.deps.Scraper, m.c.deps.ScrapeInterval+2*time.Second, prev, old)
	case scrapeResultMsg:
		m.scraped(msg)
		return m, scheduleScrape(m.scrapeGen, m.nextScrape(msg.err))
	case serverEventsMsg:
		return m, m.serverEvents(msg)
	case restartDoneMsg:
		return m, m.restartDone(msg)
	case stopDoneMsg:
		return m, tea.Quit
	case fleetMsg:
		m.c.s.fleet.hold(m.c.now(), &msg.f)
		m.c.s.fleet.f, m.c.s.fleet.at = &msg.f, m.c.now()
		m.send(fleetTab.name, msg)
		m.header.Update(refreshMsg{})
		return m, waitFleetEvery(m.c.deps.Fleet, m.facts(), fleetGap(len(msg.f.Rows)))
	case drillMsg:
		return m, m.drillInto(msg.row)
	case recordDoneMsg:
		m.recorded(msg)
		return m, nil
	case panelMsg:
		return m, m.send(msg.to, msg.msg)
	}
	if cmd, ok := m.tuneMsg(msg); ok {
		m.refreshActive(false)
		return m, cmd
	}
	// Anything else is for no one: what a panel asked for comes back to it as a panelMsg.
	return m, nil
}

// keysOf splits a batched key message into its keys, unless the active panel is taking text.
func (m *Model) keysOf(msg tea.KeyMsg) []tea.KeyMsg {
	if c, ok := m.panels[m.active].(capturer); ok && c.Capturing() {
		return []tea.KeyMsg{msg}
	}
	return splitKeys(msg)
}

func (m *Model) resize(w, h int) {
	m.width, m.height = w, h
	m.scr = layout(w, h)
	if m.scr.TooSmall {
		return
	}
	m.header.SetSize(w, m.scr.Header.H)
	m.footer.SetSize(w, m.scr.Footer.H)
	m.help.SetSize(m.scr.Body.W, m.scr.Body.H)
	for _, p := range m.panels {
		p.SetSize(m.scr.Body.W, m.scr.Body.H)
	}
	m.refreshAll()
}

// refreshAll redraws every panel's cache (after a resize or a theme change); ticks redraw only
// the active one.
func (m *Model) refreshAll() {
	for _, p := range m.panels {
		p.Update(refreshMsg{second: true})
	}
	m.header.Update(refreshMsg{})
}

func (m *Model) refreshActive(second bool) {
	if m.scr.TooSmall || m.width == 0 {
		return
	}
	m.panels[m.active].Update(refreshMsg{second: second})
	m.header.Update(refreshMsg{})
}

// tick pulls the state of the server and the load; once a second it closes a point of the
// live window, records the charts' second and takes the epochs.
func (m *Model) tick(now time.Time) {
	c, s := m.c, &m.c.s
	m.ticks++
	if sup := c.deps.Supervisor; sup != nil {
		s.server = sup.Status()
		if u := s.server.GPUMemoryUtilization; s.util == 0 && u > 0 {
			s.util, s.pendingUtil = u, u
		}
		m.watchServer()
	}
	if c.deps.Load != nil {
		s.loader = c.deps.Load.Stats()
	}
	second := m.ticks%int(time.Second/uiIntervalFor(c.deps)) == 0
	if second {
		if c.deps.Load != nil {
			c.deps.Load.Tick(now)
			s.live = c.deps.Load.Window()
			s.setRuns(c.deps.Load.Epochs())
			m.tuneSecond(now)
		}
		m.updateNote()
		s.hist.push(now, recordSecond(c))
	}
	m.refreshActive(second)
}

// updateNote keeps the current epoch's capacity (outside a restart, when it is in flux).
func (m *Model) updateNote() {
	s := &m.c.s
	if tok, conc := s.capacity(); tok > 0 && s.phase != phaseRestarting {
		n := s.note(s.epoch)
		n.kvTokens, n.maxConc = tok, conc
		if n.util == 0 {
			n.util = s.util
		}
	}
}

// watchServer pauses the load while the server cannot be reached (load against it would only
// count refused connections) and resumes it when the server answers again.
func (m *Model) watchServer() {
	c, s := m.c, &m.c.s
	if c.deps.Load == nil || s.phase != phaseIdle && s.phase != phaseConfirming {
		return
	}
	why := ""
	switch {
	case s.server.Unreachable != "":
		why = "server unreachable: " + clean(s.server.Unreachable)
	case s.server.State == server.Exited && c.deps.Mode != ModeAttach:
		why = "server exited: " + clean(s.server.Exit.String())
	}
	switch {
	case why != "" && s.autoPause == "" && !s.paused:
		s.autoPause = why
		c.deps.Load.Pause()
		c.pauseChanged(true)
		c.setStatus(why+" (load paused)", true)
	case why == "" && s.autoPause != "" && s.server.State == server.Ready:
		s.autoPause = ""
		if !s.paused {
			c.deps.Load.Resume()
			c.pauseChanged(false)
			c.setStatus("server answers again: load resumed", false)
		}
	}
}

// nextScrape is the wait before the next scrape: longer while the server keeps failing (a
// large body that never parses is costly to re-read), except during a restart or a stop,
// whose end must be seen at once.
func (m *Model) nextScrape(err error) time.Duration {
	b := &m.scrapeBackoff
	b.Interval, b.Max = m.c.deps.ScrapeInterval, 8*m.c.deps.ScrapeInterval
	if p := m.c.s.phase; p == phaseRestarting || p == phaseStopping || p == phaseForced {
		err = nil
	}
	wait := b.Next(err)
	if wait > b.Interval && m.c.s.srvErr != "" {
		m.c.s.srvErr += fmt.Sprintf(" (next try in %v)", wait.Round(time.Second))
	}
	return wait
}

// scraped takes a finished scrape. Errors during a restart are expected (the server is down)
// and not shown as failures.
func (m *Model) scraped(msg scrapeResultMsg) {
	s := &m.c.s
	if msg.err != nil {
		s.srvErr = clean(msg.err.Error())
		// Old numbers must not be plotted as if they were current.
		s.snap, s.fast, s.slow = nil, nil, nil
		return
	}
	s.srvErr = ""
	s.snap, s.fast, s.slow = msg.snap, msg.fast, msg.slow
	m.judge()
	if u := msg.snap.Capacity.GPUMemoryUtilization; s.util == 0 && u.OK && u.V > 0 && u.V <= 1 {
		// Attached, or started without the flag: the server's configured utilisation is only
		// in cache_config_info (a fraction, as vLLM validates it; anything else is not taken).
		s.util, s.pendingUtil = u.V, u.V
		if n := s.note(s.epoch); n.util == 0 {
			n.util = u.V
		}
	}
	if r := rates(s.fast); r != nil && r.Preemptions.OK && s.phase != phaseRestarting {
		s.note(s.epoch).preempt += r.Preemptions.V
	}
	// The oldest kept is a live window before the next scrape, which is compared with it.
	keep := max(int(m.c.deps.LiveWindow/m.c.deps.ScrapeInterval), 1)
	m.snaps = append(m.snaps, msg.snap)
	if len(m.snaps) > keep {
		m.snaps = append(m.snaps[:0:0], m.snaps[len(m.snaps)-keep:]...)
	}
}

func (m *Model) serverEvents(msg serverEventsMsg) tea.Cmd {
	c, s := m.c, &m.c.s
	var lines logLinesMsg
	for _, ev := range msg.events {
		switch ev := ev.(type) {
		case server.StateChanged:
			switch {
			case s.phase == phaseRestarting || s.phase == phaseStopping || s.phase == phaseForced:
				// The restart or the stop says what is happening; its states are not news.
			case ev.State == server.Ready:
				c.setStatus("server ready", false)
			case ev.State == server.Unhealthy && s.autoPause == "":
				why := "/health does not answer 200"
				if ev.Err != nil {
					why = clean(ev.Err.Error())
				}
				c.setStatus("server unhealthy: "+why, true)
			case ev.State == server.Exited && c.deps.Mode != ModeAttach:
				s.server.State, s.server.Exit = ev.State, ev.Exit
				m.watchServer()
			}
		case server.LogBatch:
			lines.lines = append(lines.lines, ev.Lines...)
			lines.dropped += ev.Dropped
		}
	}
	if len(lines.lines) > 0 || lines.dropped > 0 {
		m.send(logTab, lines)
	}
	if msg.closed {
		m.eventsClosed = true
		return nil
	}
	return waitForServerEvents(c.deps.Supervisor.Events())
}

// handleKey handles one key; quit is true when the program is ending.
func (m *Model) handleKey(msg tea.KeyMsg) (cmd tea.Cmd, quit bool) {
	c, s, k := m.c, &m.c.s, m.keys
	if key.Matches(msg, k.ForceQuit) || (s.phase == phaseStopping && key.Matches(msg, k.Quit)) {
		return m.forceQuit(), true
	}
	if cp, ok := m.panels[m.active].(capturer); ok && cp.Capturing() {
		return m.toActive(msg), false
	}
	if s.tune.prompt != nil || s.tune.asking != nil {
		return m.promptKey(msg), false
	}
	if cmd, ok := m.modalKey(msg); ok {
		return cmd, false
	}
	if why := replayRefusal(k, s.loader.Replay, msg); why != "" {
		c.setStatus(why, true)
		return nil, false
	}
	if cmd, ok := m.tuneKey(msg); ok {
		return cmd, false
	}
	return m.globalKey(msg)
}

// modalKey handles the keys that answer what is on screen before the global ones: a restart
// to confirm, the help to close, a drill-down to leave, and the view keys.
func (m *Model) modalKey(msg tea.KeyMsg) (cmd tea.Cmd, ok bool) {
	c, s, k := m.c, &m.c.s, m.keys
	if m.showHelp && (key.Matches(msg, k.Help) || msg.Type == tea.KeyEsc) {
		m.showHelp = false // before the restart question: esc closes the help over it
		return nil, true
	}
	if s.phase == phaseConfirming {
		switch {
		case key.Matches(msg, k.Confirm):
			return m.startRestart(), true
		case key.Matches(msg, k.Cancel):
			s.phase, s.pendingUtil = phaseIdle, s.util
			c.setStatus("restart cancelled", false)
			return nil, true
		case !m.lookKey(msg):
			// The question holds the keys that change the load or the server: they must not
			// act while it waits, nor the question stay up over what they did. Looking
			// around (help, views, theme) and quitting go on.
			return nil, true
		}
	}
	if m.showHelp {
		// The help scrolls where its keys are more than the screen; the view behind it does not.
		switch msg.String() {
		case "down", "j":
			m.help.scroll(1)
			return nil, true
		case "up", "k":
			m.help.scroll(-1)
			return nil, true
		case "pgdown", "pgup":
			page := max(m.scr.Body.H-2, 1)
			if msg.String() == "pgup" {
				page = -page
			}
			m.help.scroll(page)
			return nil, true
		}
	}
	if msg.Type == tea.KeyEsc && s.fleet.drill != nil && !m.showHelp {
		m.leaveDrill()
		return nil, true
	}
	for i, v := range k.Views {
		if key.Matches(msg, v) {
			m.setView(i)
			return nil, true
		}
	}
	return nil, false
}

// globalKey handles the global keys; the active panel has the rest.
func (m *Model) globalKey(msg tea.KeyMsg) (cmd tea.Cmd, quit bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		cmd := m.quit()
		return cmd, m.c.s.phase == phaseForced
	case key.Matches(msg, k.Help):
		m.showHelp, m.help.top = !m.showHelp, 0
	case key.Matches(msg, k.NextView):
		m.setView((m.active + 1) % len(m.panels))
	case key.Matches(msg, k.PrevView):
		m.setView((m.active + len(m.panels) - 1) % len(m.panels))
	case key.Matches(msg, k.Restart) && !panelHas(m.panels[m.active], msg):
		m.askRestart()
	case key.Matches(msg, k.Record):
		return m.record(), false
	default:
		for _, a := range m.actions() {
			if key.Matches(msg, a.key) {
				a.do()
				return nil, false
			}
		}
		return m.toActive(msg), false
	}
	return nil, false
}

// action is a global key and what it does.
type action struct {
	key key.Binding
	do  func()
}

// actions are the global keys that set the load, the server's pending setting or the look.
func (m *Model) actions() []action {
	k := m.keys
	load := func(conc func(int) int, rate func(float64) float64) func() {
		return func() { m.changeLoad(conc, rate) }
	}
	util := func(d float64) func() { return func() { m.nudgeUtil(d) } }
	return []action{
		{k.More, load(func(c int) int { return c + 1 }, func(r float64) float64 { return r + 1 })},
		{k.Less, load(func(c int) int { return max(c-1, 0) }, func(r float64) float64 { return math.Max(r-1, 0.5) })},
		{k.Double, load(func(c int) int { return max(c*2, 1) }, func(r float64) float64 { return r * 2 })},
		{k.Halve, load(func(c int) int { return c / 2 }, func(r float64) float64 { return math.Max(r/2, 0.125) })},
		{k.RateMode, m.toggleRateMode}, {k.Pause, m.togglePause}, {k.PromptLen, m.togglePrompts}, {k.Prefix, m.togglePrefix},
		{k.UtilDown, util(-0.01)}, {k.UtilUp, util(0.01)}, {k.UtilDownBig, util(-0.05)}, {k.UtilUpBig, util(0.05)},
		{k.Theme, m.nextTheme}, {k.Canary, m.toggleCanary},
	}
}

// panelHas reports whether the panel has a key of its own for msg (which then wins over a
// global one that is only a shortcut, such as enter).
func panelHas(p panel, msg tea.KeyMsg) bool {
	for _, group := range p.FullHelp() {
		for _, b := range group {
			if key.Matches(msg, b) {
				return true
			}
		}
	}
	return false
}

func (m *Model) setView(i int) {
	m.active, m.showHelp = i, false
	m.panels[i].Update(refreshMsg{second: true})
}

func (m *Model) loadSettings() string {
	if m.c.s.rateMode {
		return fmt.Sprintf("rate %s/s", trimFloat(m.c.s.rate))
	}
	return fmt.Sprintf("C=%d", m.c.s.concurrency)
}

func (m *Model) changeLoad(conc func(int) int, rate func(float64) float64) {
	c, s := m.c, &m.c.s
	n := 0
	if s.rateMode && math.IsInf(s.rate, 1) {
		if !(rate(2) < 2) { // the key raises the rate: nothing is above inf
			c.setStatus("load: rate inf/s already sends every request at once", false)
			return
		}
		// Down from inf: to the rate the server is answering now.
		if s.rate = startRate(s, c.now()); math.IsInf(s.rate, 1) {
			s.rate = 1
		}
	} else if s.rateMode {
		s.rate = rate(s.rate)
	}
	if s.rateMode {
		if c.deps.Load != nil {
			n = c.deps.Load.SetRate(s.rate)
		}
	} else {
		s.concurrency = conc(s.concurrency)
		if c.deps.Load != nil {
			n = c.deps.Load.SetConcurrency(s.concurrency)
		}
	}
	c.setStatus("load: "+m.loadSettings(), false)
	if c.deps.Load != nil {
		c.beginEpoch(n, s.util)
	}
}

func (m *Model) toggleRateMode() {
	c, s := m.c, &m.c.s
	s.rateMode = !s.rateMode
	if s.rateMode {
		s.rate = startRate(s, c.now())
	}
	if c.deps.Load != nil {
		n := 0
		if s.rateMode {
			n = c.deps.Load.SetRate(s.rate)
		} else {
			n = c.deps.Load.SetConcurrency(s.concurrency)
		}
		c.beginEpoch(n, s.util)
	}
	c.setStatus("load: "+m.loadSettings(), false)
}

// startRate is the open loop's first rate: the closed loop's throughput now (over the live
// window, else the current epoch), rounded, so the switch keeps the load the server had; the
// last rate set where nothing has finished yet.
func startRate(s *state, now time.Time) float64 {
	rps := s.live.RequestsPerSec
	if i := s.runIndex(s.epoch); rps <= 0 && i >= 0 {
		if sec := s.active(i, now).Seconds(); sec >= 1 {
			rps = float64(s.runs[i].Requests) / sec
		}
	}
	switch {
	case rps >= 1:
		return math.Round(rps)
	case rps > 0:
		return max(math.Round(rps*10)/10, 0.1)
	}
	return s.rate
}

func (m *Model) togglePause() {
	c, s := m.c, &m.c.s
	s.paused = !s.paused
	if c.deps.Load != nil && s.autoPause == "" {
		if s.paused {
			c.deps.Load.Pause()
		} else {
			c.deps.Load.Resume()
		}
		c.pauseChanged(s.paused)
	}
	switch {
	case s.paused && s.autoPause != "":
		c.setStatus("load paused; "+s.autoPause+", so it could not run anyway", false)
	case s.paused:
		c.setStatus("load paused (space resumes)", false)
	case s.autoPause != "":
		c.setStatus(s.autoPause+": the load resumes when the server answers", true)
	default:
		c.setStatus("load running: "+m.loadSettings(), false)
	}
}

func (m *Model) togglePrompts() {
	if l := m.c.deps.Load; l != nil {
		m.toggleWorkload(&m.c.s.longPrompts, l.UseLongPrompts)
		m.send(streamTab, workloadMsg{long: m.c.s.longPrompts})
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (m *Model) nudgeUtil(d float64) {
	c, s := m.c, &m.c.s
	if c.deps.RestartDisabled {
		if c.deps.Mode == ModeAttach {
			c.setStatus("attached: the server's settings cannot be changed from here", true)
		} else {
			c.setStatus(noRestartReason(c.deps.Mode), true)
		}
		return
	}
	base := s.pendingUtil
	if base == 0 {
		base = server.DefaultGPUMemoryUtilization
	}
	s.pendingUtil = math.Round(math.Min(math.Max(base+d, 0.05), 1)*100) / 100
	c.setStatus(fmt.Sprintf("pending --gpu-memory-utilization %.2f (enter restarts)", s.pendingUtil), false)
}

// offeredKeys is the key map as the help and the footer offer it: without the keys that here
// only say they cannot work (they still say so when pressed): the canary without one, the utilisation,
// restart and sweep keys on a server vllmtop did not start, the load's during a trace replay,
// and the bundle without a recorder.
func (m *Model) offeredKeys() KeyMap {
	k, d := m.keys, m.c.deps
	off := func(bs ...*key.Binding) {
		for _, b := range bs {
			b.SetEnabled(false)
		}
	}
	if d.Canary == nil {
		off(&k.Canary)
	}
	if d.Recorder == nil {
		off(&k.Record)
	}
	if d.RestartDisabled || d.Supervisor == nil {
		off(&k.UtilDown, &k.UtilUp, &k.UtilDownBig, &k.UtilUpBig, &k.Restart, &k.Tune.Sweep)
	}
	if m.c.s.loader.Replay == loadgen.ReplayTrace {
		off(&k.More, &k.Less, &k.Double, &k.Halve, &k.RateMode, &k.PromptLen, &k.Prefix, &k.Tune.Search, &k.Tune.Sweep)
	}
	return k
}

// lookKey reports whether msg only changes what is shown, or quits: the keys the restart
// question lets through.
func (m *Model) lookKey(msg tea.KeyMsg) bool {
	k := m.keys
	for _, b := range append([]key.Binding{k.Quit, k.ForceQuit, k.Help, k.NextView, k.PrevView, k.Theme}, k.Views...) {
		if key.Matches(msg, b) {
			return true
		}
	}
	return false
}

// utilPending reports whether a utilisation other than the server's waits for a restart.
func utilPending(s *state) bool { return math.Abs(s.pendingUtil-s.util) >= 0.005 }

func (m *Model) askRestart() {
	c, s := m.c, &m.c.s
	switch {
	case c.deps.RestartDisabled || c.deps.Supervisor == nil:
		if c.deps.Mode == ModeAttach {
			c.setStatus("attached: this server was not started here, so it cannot be restarted", true)
		} else {
			c.setStatus(noRestartReason(c.deps.Mode), true)
		}
	case s.phase == phaseRestarting:
		c.setStatus("a restart is already under way", true)
	case s.phase == phaseIdle:
		s.phase = phaseConfirming
	}
}

func (m *Model) startRestart() tea.Cmd {
	c, s := m.c, &m.c.s
	s.phase = phaseRestarting
	if c.deps.Load != nil {
		c.deps.Load.Pause()
		// The restart cuts the requests in flight: cancelled here first, they are not counted
		// as the old run's failures, which they say nothing about.
		c.deps.Load.CancelInFlight()
		// The new run's row starts now, so the capacity it reports lands in it; its span
		// starts when the load resumes on the new server, not with the server's downtime.
		c.beginEpoch(c.deps.Load.Mark("restart"), s.pendingUtil)
		c.pauseChanged(true)
	}
	c.setStatus(fmt.Sprintf("restarting with --gpu-memory-utilization %.2f ...", s.pendingUtil), false)
	return restartCmd(c.deps.Supervisor, s.pendingUtil)
}

func (m *Model) restartDone(msg restartDoneMsg) tea.Cmd {
	c, s := m.c, &m.c.s
	defer m.tuneRestarted(msg.err)
	if s.phase == phaseStopping {
		return stopCmd(c.deps.Supervisor)
	}
	s.phase = phaseIdle
	// A sweep stopped while this restart ran offers the way back now.
	offer := s.tune.offerAfterRestart && s.tune.kind == tuneIdle
	s.tune.offerAfterRestart = false
	if msg.err != nil {
		// The server is down: load would only count refused connections.
		s.paused = true
		c.pauseChanged(true)
		status := "restart failed: " + clean(msg.err.Error()) + " (load paused)"
		if offer {
			s.tune.downAfterRestart = true
			status += m.offerUtilBack()
		}
		c.setStatus(status, true)
		return nil
	}
	s.util = msg.util
	s.autoPause = ""
	s.ownRestart = true
	status := fmt.Sprintf("restarted with --gpu-memory-utilization %.2f", msg.util)
	if offer {
		s.tune.downAfterRestart = false
		status += m.offerUtilBack()
	}
	c.setStatus(status, false)
	if c.deps.Load != nil && !s.paused {
		c.deps.Load.Resume()
		c.pauseChanged(false)
	}
	return nil
}

func (m *Model) quit() tea.Cmd {
	c, s := m.c, &m.c.s
	m.stopTune()
	restarting := s.phase == phaseRestarting
	s.phase = phaseStopping
	if c.deps.Load != nil {
		c.deps.Load.Pause()
	}
	if restarting {
		// Stopping now would race the restart's start; the stop follows the restart.
		c.setStatus("stopping after the restart under way (q again or ctrl+c to force) ...", false)
		return nil
	}
	if c.deps.Supervisor == nil || c.deps.RestartDisabled || m.eventsClosed {
		s.phase = phaseForced
		return tea.Quit
	}
	c.setStatus("stopping the load and the server (q again or ctrl+c to force) ...", false)
	return stopCmd(c.deps.Supervisor)
}

func (m *Model) forceQuit() tea.Cmd {
	c := m.c
	c.s.phase = phaseForced
	if c.deps.Supervisor != nil && !c.deps.RestartDisabled {
		_ = c.deps.Supervisor.Kill()
	}
	return tea.Quit
}

func (m *Model) nextTheme() {
	c := m.c
	c.theme = themes.Next(c.theme.Name)
	c.styles = NewStyles(c.theme, c.deps.NoColor)
	msg := "theme " + c.theme.Name
	if c.deps.NoColor {
		msg += " (NO_COLOR: no colours are drawn)"
	}
	c.setStatus(msg, false)
	for _, p := range m.panels {
		p.Update(restyleMsg{})
	}
	m.refreshAll()
}

// View stitches the cached parts: header, tab line, the active panel (or the help) and the
// footer.
func (m *Model) View() string {
	if m.width == 0 || m.height == 0 {
		return "vllmtop: starting ..."
	}
	if m.scr.TooSmall {
		// Wrapped: the size it needs is the part that must not be cut off.
		msg := fmt.Sprintf("terminal too small: %dx%d (vllmtop needs %dx%d)", m.width, m.height, minWidth, minHeight)
		lines := strings.Split(textfmt.Wrap(msg, m.width), "\n")
		for i := range lines {
			lines[i] = truncate(lines[i], m.width)
		}
		return strings.Join(lines[:min(len(lines), max(1, m.height))], "\n")
	}
	// Panels keep their views fitted to the body: measuring every line after every message
	// was the dashboard's largest cost.
	body := m.panels[m.active].View()
	if m.showHelp {
		body = fit(m.help.View(m.offeredKeys(), m.panels[m.active], m.tabs[m.active].name), m.scr.Body.W, m.scr.Body.H)
	}
	if body == "" {
		body = fit("", m.scr.Body.W, m.scr.Body.H)
	}
	parts := []string{
		m.header.View(),
		m.tabLine(),
		body,
		m.footer.View(m.offeredKeys(), m.panels[m.active]),
	}
	return strings.Join(parts, "\n")
}

// tabLine names the views with their keys, the active one marked (reverse and brackets
// without colour, so it shows on any terminal), and the chart window on the right.
func (m *Model) tabLine() string {
	st := &m.c.styles
	var b strings.Builder
	for i, t := range m.tabs {
		label := fmt.Sprintf(" %d %s ", i+1, t.name)
		if i == m.active {
			if st.NoColor {
				label = fmt.Sprintf("[%d %s]", i+1, t.name)
			}
			b.WriteString(st.TabOn.Render(label))
		} else {
			b.WriteString(st.Tab.Render(label))
		}
	}
	right := st.Muted.Render(fmt.Sprintf("window %s (z) · theme %s", windowText(m.c), m.c.theme.Name))
	line := b.String()
	if gap := m.width - lipgloss.Width(line) - lipgloss.Width(right); gap >= 2 {
		line += strings.Repeat(" ", gap) + right
	}
	return truncate(line, m.width)
}

// fmtSpan is a span of whole seconds, without the trailing zero parts: "10s", "1m", "3m11s",
// "1h", "1h30m", "2h00m05s".
func fmtSpan(d time.Duration) string {
	if d%time.Second != 0 || d < time.Second {
		return fmtDur(d)
	}
	h, m, sec := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0 && sec > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, sec)
	case h > 0 && m > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case h > 0:
		return fmt.Sprintf("%dh", h)
	case m > 0 && sec > 0:
		return fmt.Sprintf("%dm%02ds", m, sec) // 3m11s, not 191s
	case m > 0:
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%ds", sec)
}
