package tui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
)

// The tuning runs: an SLO search over the load (S) and a sweep of --gpu-memory-utilization
// with a search at each value (W). The search itself is loadgen.SearchSLO, run in a goroutine
// of its own (the tuner); each probe it makes is a request to the UI, which sets the load,
// watches the probe's epochs once a second and answers with the measured epoch's statistics.
// The load and the restarts are thus driven from Update alone, as the keys drive them, and
// the tuner never touches them.

const (
	tuneIdle = iota
	tuneSearch
	tuneSweep
)

// maxCurves is how many curves are kept: the text plot's markers tell six apart.
const maxCurves = 6

func hasCurve(cs []tuneCurve, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

// tuneCurve is one server setting's probes: the curve panel's series.
type tuneCurve struct {
	Name   string // "util 0.90"
	Util   float64
	Probes []loadgen.SLOProbe // in the order they ran
	Knee   int                // the largest value that met the SLO (0: none, or no SLO)
	// Variable and SLO are the run's that drew the curve: a later run may search the other
	// variable, or for another SLO, and each curve keeps its own units and marks.
	Variable string
	SLO      loadgen.SLO
	Err      string // why the server did not start with this setting ("" when it did)
	// Unmeasured is true when Err says why the setting could not be measured (the server
	// started, but every probe of one value was discarded).
	Unmeasured bool
	// Seen is what the server showed while each value's scored probe measured, by value.
	Seen map[int]probeSeen
}

// errText is the setting's failure as the Curves panel says it.
func (cv tuneCurve) errText() string {
	if cv.Unmeasured {
		return "not measured: " + clean(cv.Err)
	}
	return "did not start: " + clean(cv.Err)
}

// tuneState is the dashboard's side of the tuning: what runs, the probe under way, the
// curves so far (kept after a stop) and the SLO being typed.
type tuneState struct {
	kind     int
	variable string // loadgen.SLOConcurrency or loadgen.SLORate
	slo      loadgen.SLO
	cancel   context.CancelFunc
	events   chan tea.Msg
	cur      *probeRun
	restart  chan tuneReply // the sweep's restart under way, answered when it is done
	curves   []tuneCurve
	touched  []int  // the curves of this run, by index in curves
	probes   int    // probes begun in this run
	discards int    // probes of this run discarded, not scored
	step     string // "util 0.90 (2/3)" during a sweep
	settings int    // how many server settings the run tries
	lastOK   string // the last finished probe, for the progress line
	progress string // the progress line of the run under way
	prompt   *string
	promptOf int // the run the prompt's SLO is for
	// asking holds the sweep's SLO while W asks before its first restart.
	asking *loadgen.SLO
	// origConc and origRate are the load before the run, set again when it ends without a knee.
	origConc int
	origRate float64
	// origUtil is the server's utilisation before a sweep, offered again when it ends.
	origUtil float64
	// downAfterRestart: the run's last restart failed, so the server is down.
	downAfterRestart bool
	// offerAfterRestart: a sweep ended during a restart; the way back is offered when it ends.
	offerAfterRestart bool
}

// probeRun is the probe the UI drives: a warm-up epoch, then the measured one.
type probeRun struct {
	value, n     int
	label        string
	warm, epoch  int // epoch is -1 during the warm-up
	since        time.Time
	reply        chan tuneReply
	warmTarget   int
	measureSince time.Time
	rate         bool // the value is a request rate
	// started and finished are the load's counts of requests when the measurement began: a
	// rate probe must finish about as many as it starts (keptUp).
	started, finished int64
	spoiled           string // why the probe cannot be scored ("" while it can): see probeHealth
	seen              probeSeen
}

// measureTarget is how many completed requests the probe measures: --probe-requests, and at
// least two of each slot, so that the quick requests of a high concurrency, which finish
// first, are not all it sees.
func (p *probeRun) measureTarget(cfg TuneConfig) int {
	if p.rate {
		return cfg.ProbeRequests
	}
	return max(cfg.ProbeRequests, 2*p.value)
}

type tuneReply struct {
	stats loadgen.EpochStats
	err   error
}

// Messages between the tuner and the UI.
type (
	tuneProbeReq struct {
		value int
		label string
		reply chan tuneReply
	}
	tuneRestartReq struct {
		util  float64
		reply chan tuneReply
	}
	tuneCurveMsg      struct{ curve tuneCurve }
	tuneUnmeasuredMsg struct{ why string } // the latest curve's setting could not be measured
	tuneDiscardMsg    struct{ d loadgen.SLODiscard }
	tuneProbeMsg      struct{ probe loadgen.SLOProbe } // of the latest curve
	tuneDoneMsg       struct{ err error }
)

// tuneKeys are the tuning's global keys.
type tuneKeys struct{ Search, Sweep, Export key.Binding }

func defaultTuneKeys() tuneKeys {
	return tuneKeys{
		Search: binding([]string{"S"}, "S", "SLO search (again: stop)"),
		Sweep:  binding([]string{"W"}, "W", "sweep gpu util (again: stop)"),
		Export: binding([]string{"E"}, "E", "export runs + curves"),
	}
}

// tuneKey handles the tuning's keys and, while a run is under way, refuses the keys that
// would change what it measures. ok is false for keys it leaves alone.
func (m *Model) tuneKey(msg tea.KeyMsg) (cmd tea.Cmd, ok bool) {
	c, t, k := m.c, &m.c.s.tune, m.keys
	tk := k.Tune
	switch {
	case key.Matches(msg, tk.Export):
		return m.export(), true
	case key.Matches(msg, tk.Search), key.Matches(msg, tk.Sweep):
		kind := tuneSearch
		if key.Matches(msg, tk.Sweep) {
			kind = tuneSweep
		}
		if t.kind != tuneIdle {
			m.stopTune()
			return nil, true
		}
		return m.startTune(kind), true
	}
	if t.kind == tuneIdle {
		return nil, false
	}
	for _, b := range k.tuneRefused() {
		if key.Matches(msg, b) {
			c.setStatus("a tuning run sets the load and the server now: S or W stops it (what finished is kept)", true)
			return nil, true
		}
	}
	if key.Matches(msg, k.Restart) && !panelHas(m.panels[m.active], msg) {
		c.setStatus("a tuning run sets the load and the server now: S or W stops it (what finished is kept)", true)
		return nil, true
	}
	return nil, false
}

// tuneRefused are the keys a tuning run refuses, as they would change what it measures
// (and enter, which restarts the server, unless a panel takes it).
func (k KeyMap) tuneRefused() []key.Binding {
	return []key.Binding{k.More, k.Less, k.Double, k.Halve, k.RateMode, k.Pause, k.PromptLen, k.UtilDown, k.UtilUp, k.UtilDownBig, k.UtilUpBig}
}

// startTune begins a search or a sweep, or asks for the SLO first.
func (m *Model) startTune(kind int) tea.Cmd {
	c, s := m.c, &m.c.s
	t := &s.tune
	switch {
	case c.deps.Load == nil:
		c.setStatus("no load to tune with", true)
		return nil
	case kind == tuneSweep && (c.deps.RestartDisabled || c.deps.Supervisor == nil):
		c.setStatus("attached: vllmtop cannot restart it, as it did not start it (S searches the load alone)", true)
		return nil
	case s.phase != phaseIdle:
		c.setStatus("wait for the restart under way, then start the run", true)
		return nil
	}
	slo := t.slo
	if slo == nil {
		slo = c.deps.SLO
	}
	if slo == nil && kind == tuneSearch {
		text := "p99_ttft_ms<=500"
		t.prompt, t.promptOf = &text, kind
		m.showPrompt()
		return nil
	}
	if kind == tuneSweep {
		// A sweep restarts the server once a setting: asked first, as a restart is.
		t.asking = &slo
		m.showAsk()
		return nil
	}
	return m.runTune(kind, slo)
}

// showAsk puts the sweep's question in the status line.
func (m *Model) showAsk() {
	// Short enough for an 80-column status line beside "? help · q quit".
	us := m.sweepUtils()
	span := joinUtils(us)
	if len(us) > 1 {
		span = joinUtils(us[:1]) + "–" + joinUtils(us[len(us)-1:])
	}
	m.c.setStatus(fmt.Sprintf("W: restart %d times, util %s? y/enter go · n/esc no", len(us), span), false)
}

// askKey answers the sweep's question.
func (m *Model) askKey(msg tea.KeyMsg) tea.Cmd {
	t, k := &m.c.s.tune, m.keys
	switch {
	case key.Matches(msg, k.Confirm):
		slo := *t.asking
		t.asking = nil
		return m.runTune(tuneSweep, slo)
	case key.Matches(msg, k.Cancel), key.Matches(msg, k.Tune.Sweep):
		t.asking = nil
		m.c.setStatus("sweep cancelled", false)
		return nil
	}
	m.showAsk()
	return nil
}

// showPrompt puts the SLO being typed in the status line.
func (m *Model) showPrompt() {
	m.c.setStatus("search SLO: "+*m.c.s.tune.prompt+"▏ enter starts · esc cancels", false)
}

// promptKey edits the SLO being typed, or answers the sweep's question.
func (m *Model) promptKey(msg tea.KeyMsg) tea.Cmd {
	c, t := m.c, &m.c.s.tune
	if t.asking != nil {
		return m.askKey(msg)
	}
	switch msg.Type {
	case tea.KeyEsc:
		t.prompt = nil
		c.setStatus("search cancelled", false)
		return nil
	case tea.KeyEnter:
		slo, err := loadgen.ParseSLO(*t.prompt)
		if err == nil {
			err = slo.CheckKeys(SLOKeys())
		}
		if err != nil {
			c.setStatus(clean(err.Error())+" (esc cancels)", true)
			return nil
		}
		t.prompt = nil
		return m.runTune(t.promptOf, slo)
	case tea.KeyBackspace:
		if r := []rune(*t.prompt); len(r) > 0 {
			*t.prompt = string(r[:len(r)-1])
		}
	case tea.KeyCtrlU:
		*t.prompt = ""
	case tea.KeyRunes, tea.KeySpace:
		if len(*t.prompt) < 200 {
			*t.prompt += string(msg.Runes)
		}
	}
	m.showPrompt()
	return nil
}

// runTune starts the tuner.
func (m *Model) runTune(kind int, slo loadgen.SLO) tea.Cmd {
	c, s := m.c, &m.c.s
	t := &s.tune
	cfg := c.deps.Tune.withDefaults()
	*t = tuneState{kind: kind, slo: slo, curves: t.curves, variable: loadgen.SLOConcurrency, origConc: s.concurrency, origRate: s.rate, origUtil: s.util}
	start := max(s.concurrency, 1)
	if s.rateMode {
		t.variable, start = loadgen.SLORate, max(int(math.Round(s.rate)), 1)
	}
	plan := tunePlan{variable: t.variable, slo: slo, max: cfg.Max, start: min(start, cfg.Max), tolerance: cfg.Tolerance}
	if kind == tuneSweep {
		plan.utils, plan.restart = m.sweepUtils(), true
		t.settings = len(plan.utils)
	} else {
		plan.utils = []float64{s.util}
	}
	if s.paused && s.autoPause == "" {
		s.paused = false
		c.deps.Load.Resume()
		c.pauseChanged(false)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel, t.events = cancel, make(chan tea.Msg, 64)
	go plan.run(ctx, t.events)
	what := "SLO search of " + t.variable + " for " + slo.Text(", ")
	if slo == nil {
		what = "load ladder"
	}
	if kind == tuneSweep {
		what = fmt.Sprintf("sweep of --gpu-memory-utilization %s, a %s at each", joinUtils(plan.utils), what)
	}
	c.setStatus(what+" started (S/W stops it)", false)
	return waitTune(t.events)
}

// sweepUtils are --sweep-utils, or the current utilisation and 0.05 either side.
func (m *Model) sweepUtils() []float64 {
	if u := m.c.deps.SweepUtils; len(u) > 0 {
		return u
	}
	cur := m.c.s.util
	if cur <= 0 {
		cur = 0.9
	}
	var out []float64
	for _, u := range []float64{cur - 0.05, cur, cur + 0.05} {
		u = math.Round(u*100) / 100
		if u >= 0.05 && u <= 0.98 {
			out = append(out, u)
		}
	}
	return out
}

func joinUtils(us []float64) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = fmt.Sprintf("%.2f", u)
	}
	return strings.Join(parts, ",")
}

// stopTune cancels the run; the tuner answers with tuneDoneMsg, and what finished stays.
func (m *Model) stopTune() {
	t := &m.c.s.tune
	if t.cancel == nil {
		return
	}
	t.cancel()
	if t.cur != nil {
		t.cur.reply <- tuneReply{err: context.Canceled}
		t.cur = nil
	}
	m.c.setStatus("stopping the tuning run: what finished is kept", false)
}

func waitTune(ch <-chan tea.Msg) tea.Cmd {
	return func() tea.Msg { return <-ch }
}

// tuneMsg handles the tuner's messages; ok is false for other messages.
func (m *Model) tuneMsg(msg tea.Msg) (cmd tea.Cmd, ok bool) {
	c, s := m.c, &m.c.s
	t := &s.tune
	switch msg := msg.(type) {
	case tuneProbeReq:
		t.probes++
		n := 0
		if t.variable == loadgen.SLORate {
			s.rate = float64(msg.value)
			n = c.deps.Load.SetRate(s.rate)
		} else {
			s.concurrency = msg.value
			n = c.deps.Load.SetConcurrency(msg.value)
		}
		c.beginEpoch(n, s.util)
		s.note(n).warmup = true
		t.cur = &probeRun{value: msg.value, n: t.probes, label: msg.label, warm: n, epoch: -1, since: c.now(), reply: msg.reply, rate: t.variable == loadgen.SLORate,
			warmTarget: max(c.deps.Tune.withDefaults().WarmupRequests, msg.value)}
		m.tuneProgress()
	case tuneRestartReq:
		if s.phase == phaseConfirming {
			s.phase = phaseIdle
		}
		if s.phase != phaseIdle {
			msg.reply <- tuneReply{err: errors.New("a restart or a stop is under way")}
			return waitTune(t.events), true
		}
		if s.paused {
			// A setting before this one failed to start and paused the load; this restart
			// resumes it when it succeeds.
			s.paused = false
			c.pauseChanged(false)
		}
		s.pendingUtil, t.restart = msg.util, msg.reply
		t.step = fmt.Sprintf("util %.2f", msg.util)
		return tea.Batch(m.startRestart(), waitTune(t.events)), true
	case tuneCurveMsg:
		t.addCurve(msg.curve)
	case tuneProbeMsg:
		if n := len(t.touched); n > 0 {
			cv := &t.curves[t.touched[n-1]]
			cv.Probes = append(cv.Probes, msg.probe)
			if t.slo != nil && msg.probe.Passed() && msg.probe.Value > cv.Knee {
				cv.Knee = msg.probe.Value
			}
			t.lastOK = m.probeText(msg.probe)
		}
	case tuneUnmeasuredMsg:
		if n := len(t.touched); n > 0 {
			cv := &t.curves[t.touched[n-1]]
			cv.Err, cv.Unmeasured = msg.why, true
		}
	case tuneDiscardMsg:
		t.discards++
		t.lastOK = fmt.Sprintf("%s discarded: %s", m.valueLabel(msg.d.Value), msg.d.Reason)
	case tuneDoneMsg:
		m.tuneDone(msg.err)
		return nil, true
	case exportDoneMsg:
		m.exported(msg)
		return nil, true
	default:
		return nil, false
	}
	return waitTune(t.events), true
}

// tuneRestarted answers the sweep's restart; ok is false when the restart was not the sweep's.
func (m *Model) tuneRestarted(err error) {
	t := &m.c.s.tune
	if t.restart != nil {
		t.restart <- tuneReply{err: err}
		t.restart = nil
		t.downAfterRestart = err != nil
	}
}

// addCurve starts the run's next curve. A setting searched again is a curve of its own
// ("util 0.90 (2)"): the earlier one stays. The oldest go beyond what the plot tells apart,
// trimmed before a run's first curve (touched holds indices) with room for all of the run's:
// a sweep's settings join the earlier curves.
func (t *tuneState) addCurve(cv tuneCurve) {
	room := 1
	if t.kind == tuneSweep {
		room = max(1, t.settings)
	}
	if len(t.touched) == 0 && len(t.curves)+room > maxCurves {
		keep := max(0, maxCurves-room)
		t.curves = append(t.curves[:0:0], t.curves[len(t.curves)-keep:]...)
	}
	cv.Variable, cv.SLO = t.variable, t.slo
	base := cv.Name
	for n := 2; hasCurve(t.curves, cv.Name); n++ {
		cv.Name = fmt.Sprintf("%s (%d)", base, n)
	}
	t.curves = append(t.curves, cv)
	t.touched = append(t.touched, len(t.curves)-1)
	if t.kind == tuneSweep {
		t.step = fmt.Sprintf("%s (%d/%d)", base, len(t.touched), t.settings)
	}
}

// tuneSecond moves the probe under way on: from the warm-up to the measurement, and from the
// measurement to its answer. It runs once a second, after the epochs were taken.
func (m *Model) tuneSecond(now time.Time) {
	c, s := m.c, &m.c.s
	p := s.tune.cur
	if p == nil {
		return
	}
	cfg := c.deps.Tune.withDefaults()
	why := m.serverHealth()
	if p.epoch < 0 && why != "" && now.Sub(p.since) < cfg.ProbeTimeout {
		// The warm-up waits for the server: a probe only measures a healthy one.
		m.tuneProgress()
		return
	}
	if why != "" && p.spoiled == "" {
		p.spoiled = why
	}
	if p.epoch < 0 && p.spoiled == "" {
		done := 0
		if i := s.runIndex(p.warm); i >= 0 {
			done = s.runs[i].Requests + s.runs[i].Failures
		}
		if done >= p.warmTarget || now.Sub(p.since) >= cfg.ProbeTimeout/3 {
			p.epoch = c.deps.Load.Mark(p.label)
			c.beginEpoch(p.epoch, s.util)
			p.measureSince = now
			p.started, p.finished = s.loader.Started, s.loader.Finished
		}
		m.tuneProgress()
		return
	}
	p.seen.observe(s)
	var st loadgen.EpochStats
	if i := s.runIndex(p.epoch); i >= 0 {
		st = s.runs[i]
	}
	timedOut := now.Sub(p.measureSince) >= cfg.ProbeTimeout
	long := !p.rate || now.Sub(p.measureSince) >= rateWindow(st)
	if st.Requests >= p.measureTarget(cfg) && long || timedOut || p.spoiled != "" {
		var err error
		switch why := probeHealth(p.spoiled, st); {
		case why != "":
			// Not scored: the tuner makes the probe again, or gives the value up.
			err = loadgen.Discard("%s", why)
		case st.Requests == 0:
			err = fmt.Errorf("%s: no request finished in %s", m.valueLabel(p.value), fmtSpan(cfg.ProbeTimeout))
		case p.rate:
			if why := keptUp(s.loader.Started-p.started, s.loader.Finished-p.finished, now.Sub(p.measureSince), c.deps.Burstiness); why != "" {
				err = &loadgen.UnsustainedError{Reason: why}
			}
		}
		var un *loadgen.UnsustainedError
		if err == nil || errors.As(err, &un) {
			scored := st
			s.note(p.epoch).scored = &scored
		}
		p.reply <- tuneReply{stats: st, err: err}
		s.tune.noteSeen(p)
		s.tune.cur = nil
	}
	m.tuneProgress()
}

// maxProbeLag is how far the client may fall behind its schedule in rate mode before a
// probe is discarded: its load was not the rate asked for.
const maxProbeLag = 50 * time.Millisecond

// rateProbeWindow is the least a rate probe measures, however many requests finish: a short
// window reads only the first requests of a queue, and its counts are too few to show one
// (over 10 s at 80 req/s, a shortfall shows beyond the counts' noise, keptUp's three standard
// deviations of some 1,600 counts' difference, from 15%).
const rateProbeWindow = 10 * time.Second

// rateWindow is how long a rate probe measures: rateProbeWindow, and at least three of its
// requests' median latency, so that the requests in flight at either end of the window (and
// their growth while the batch fills) are a small part of what it counts.
func rateWindow(st loadgen.EpochStats) time.Duration {
	return max(rateProbeWindow, 3*st.E2EL.P50)
}

// keptUp says how a rate probe's server fell behind its load, "" when it kept up: over the
// measured window it must finish about as many requests as the client started. An open loop
// above what the server serves queues the rest, and a short window reads the latencies of
// the queue's first requests; the queue only shows in the count. The probe fails when the
// shortfall is both more than a tenth of the starts and more than three standard deviations
// of the difference of two counts: the starts, gamma arrivals of shape burstiness (variance
// about starts/burstiness), and the finishes (about Poisson).
func keptUp(started, finished int64, window time.Duration, burstiness float64) string {
	if started <= 0 || window <= 0 {
		return ""
	}
	if !(burstiness > 0) {
		burstiness = 1
	}
	sd := math.Sqrt(float64(started)/burstiness + float64(finished))
	slack := math.Max(0.1*float64(started), 3*sd)
	if float64(finished) >= float64(started)-slack {
		return ""
	}
	sec := window.Seconds()
	return fmt.Sprintf("it finished %.1f req/s of the %.1f started over %s", float64(finished)/sec, float64(started)/sec, fmtSpan(window))
}

// maxProbeFailShare is the share of failed requests above which a probe is discarded.
const maxProbeFailShare = 0.05

// serverHealth says why a probe under way cannot be scored now ("" when it can): the
// server unreachable, restarting or exited, the load paused for it, or the client lagging.
func (m *Model) serverHealth() string {
	s := &m.c.s
	switch {
	case s.server.Unreachable != "":
		return "the server was unreachable (" + clean(s.server.Unreachable) + ")"
	case s.phase == phaseRestarting:
		return "the server was restarting"
	case s.server.State == server.Exited:
		return "the server exited"
	case s.autoPause != "":
		return "the load was paused: " + s.autoPause
	case s.tune.variable == loadgen.SLORate && s.loader.Lag > maxProbeLag:
		return "the client lagged its schedule by " + fmtDur(s.loader.Lag)
	}
	return ""
}

// probeHealth is why a finished probe is discarded: what spoiled it while it ran, or more
// than maxProbeFailShare of its requests failed.
func probeHealth(spoiled string, st loadgen.EpochStats) string {
	if spoiled != "" {
		return spoiled
	}
	if n := st.Requests + st.Failures; st.Failures > 0 && float64(st.Failures) > maxProbeFailShare*float64(n) {
		return fmt.Sprintf("%d of %d requests failed", st.Failures, n)
	}
	return ""
}

// tuneProgress is the status line of a run under way.
func (m *Model) tuneProgress() {
	c, t := m.c, &m.c.s.tune
	if t.kind == tuneIdle {
		return
	}
	// The status line has half a narrow screen: the words are few, the Curves panel has them all.
	parts := []string{"search"}
	if t.kind == tuneSweep {
		parts[0] = "sweep " + strings.TrimPrefix(t.step, "util ")
	}
	if p := t.cur; p != nil {
		stage := "warm-up"
		if p.epoch >= 0 {
			stage = "measuring"
			if i := c.s.runIndex(p.epoch); i >= 0 {
				stage = fmt.Sprintf("%d/%d", c.s.runs[i].Requests, p.measureTarget(c.deps.Tune.withDefaults()))
			}
		}
		parts = append(parts, fmt.Sprintf("#%d %s %s", p.n, m.valueLabel(p.value), stage))
	}
	if t.lastOK != "" {
		parts = append(parts, t.lastOK)
	}
	if n := len(t.touched); n > 0 && t.slo != nil {
		if lo, hi := bracket(t.curves[t.touched[n-1]].Probes); lo > 0 || hi > 0 {
			parts = append(parts, fmt.Sprintf("knee [%d,%s]", lo, orDash(hi > 0, fmt.Sprint(hi))))
		}
	}
	t.progress = strings.Join(parts, " · ")
	c.setStatus(t.progress, false)
}

// bracket is the largest passing value and the smallest failing one above it (0: none yet).
func bracket(probes []loadgen.SLOProbe) (lo, hi int) {
	for _, p := range probes {
		if p.Passed() {
			lo = max(lo, p.Value)
		}
	}
	for _, p := range probes {
		if !p.Passed() && p.Value > lo && (hi == 0 || p.Value < hi) {
			hi = p.Value
		}
	}
	return lo, hi
}

// probeText is a finished probe against the SLO's first bound in a few words:
// "C=16 212ms≤500ms" (the unit from the metric's name: p99_ttft_ms is in ms).
func (m *Model) probeText(p loadgen.SLOProbe) string {
	t := &m.c.s.tune
	metric := sloMetric(t.slo)
	unit := ""
	if strings.HasSuffix(metric, "_ms") {
		unit = "ms"
	}
	if p.Unsustained != "" {
		return m.valueLabel(p.Value) + " fell behind: " + p.Unsustained
	}
	v, _ := docNumber(p.Docs, metric)
	out := fmt.Sprintf("%s %s%s", m.valueLabel(p.Value), trimFloat(math.Round(v)), unit)
	if len(t.slo) > 0 {
		out += map[bool]string{true: "≤", false: ">"}[p.Passed()] + trimFloat(t.slo[0].Target) + unit
	}
	return out
}

func (m *Model) valueLabel(v int) string { return loadValue(m.c.s.tune.variable, v) }

// loadValue is a value of the load variable with its unit: "C=8" or "8 req/s".
func loadValue(variable string, v int) string {
	if variable == loadgen.SLORate {
		return fmt.Sprintf("%d req/s", v)
	}
	return fmt.Sprintf("C=%d", v)
}

// tuneDone ends the run: the load goes to the knee found (or back to where it was).
func (m *Model) tuneDone(err error) {
	c, s := m.c, &m.c.s
	t := &s.tune
	if t.cancel != nil {
		t.cancel()
	}
	if t.cur != nil {
		t.cur = nil
	}
	was := t.kind
	t.kind, t.cancel, t.restart = tuneIdle, nil, nil
	var knees []string
	knee := 0
	for _, i := range t.touched {
		if cv := t.curves[i]; cv.Knee > 0 {
			k := fmt.Sprintf("%s %s", cv.Name, m.valueLabel(cv.Knee))
			if cv.Knee >= c.deps.Tune.withDefaults().Max {
				k += " (the most tried)"
			}
			knees = append(knees, k)
			knee = cv.Knee
		}
	}
	msg := "tuning done"
	switch {
	case errors.Is(err, context.Canceled):
		msg = "tuning stopped"
	case err != nil:
		m.setLoadTo(0)
		msg = "tuning stopped: " + clean(err.Error())
		if was == tuneSweep {
			msg += m.offerUtilBack()
		}
		c.setStatus(msg, true)
		return
	}
	// A sweep's offer of the way back comes first: the status line cuts what follows it, and
	// three knees fill 120 columns.
	sep := ": "
	if was == tuneSweep {
		if offer := m.offerUtilBack(); offer != "" {
			msg, sep = msg+offer, " · "
		}
	}
	if len(knees) > 0 {
		msg += sep + "knee " + strings.Join(knees, ", ")
	} else if t.slo != nil {
		msg += sep + "no probe met " + t.slo.Text(", ")
	}
	if note := sweepNotTheLimit(t); was == tuneSweep && note != "" {
		msg += " · " + note
	}
	if was == tuneSearch && knee > 0 && err == nil {
		msg += " (" + strings.TrimSuffix(loadgen.KneeLine(t.variable, knee), ".") + "; load set to it)"
		m.setLoadTo(knee)
	} else {
		m.setLoadTo(0)
	}
	c.setStatus(msg+m.curvesHint(), false)
}

// offerUtilBack makes the utilisation the server ran at before a sweep the pending one when
// the sweep left the server at another, so the header shows both and the restart key goes
// back; it returns what the status line says of it.
func (m *Model) offerUtilBack() string {
	s := &m.c.s
	orig := s.tune.origUtil
	if s.phase == phaseRestarting {
		s.tune.offerAfterRestart = orig > 0
		return ""
	}
	down := s.tune.downAfterRestart || s.server.State == server.Exited && m.c.deps.Mode != ModeAttach
	if orig <= 0 || s.phase != phaseIdle || !down && math.Abs(s.util-orig) < 0.005 {
		return ""
	}
	s.pendingUtil = orig
	restart := "enter"
	if h := m.keys.Restart.Help().Key; h != "" {
		restart = h
	}
	if down {
		return fmt.Sprintf(" · server down: %s restarts it at %.2f", restart, orig)
	}
	return fmt.Sprintf(" · server left at util %.2f: %s restarts it at %.2f", s.util, restart, orig)
}

// setLoadTo sets the load to v of the run's variable, or back to where it was (v 0).
func (m *Model) setLoadTo(v int) {
	c, s := m.c, &m.c.s
	t := &s.tune
	n := 0
	if t.variable == loadgen.SLORate {
		s.rate = t.origRate
		if v > 0 {
			s.rate = float64(v)
		}
		n = c.deps.Load.SetRate(s.rate)
	} else {
		s.concurrency = t.origConc
		if v > 0 {
			s.concurrency = v
		}
		n = c.deps.Load.SetConcurrency(s.concurrency)
	}
	c.beginEpoch(n, s.util)
}

// sloMetric is the metric the curves plot: the SLO's first, or p99 TTFT.
func sloMetric(slo loadgen.SLO) string {
	if len(slo) > 0 {
		return slo[0].Metric
	}
	return "p99_ttft_ms"
}

// docNumber is the mean of a numeric key over docs.
func docNumber(docs []loadgen.ResultDoc, key string) (float64, bool) {
	sum, n := 0.0, 0
	for _, d := range docs {
		v, ok := d.Get(key)
		if !ok {
			continue
		}
		switch x := v.(type) {
		case loadgen.PyFloat:
			sum += float64(x)
		case float64:
			sum += x
		case int:
			sum += float64(x)
		default:
			continue
		}
		n++
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// tunePlan is what the tuner runs: for each utilisation (restarting the server first in a
// sweep), an SLO search, or a fixed ladder without an SLO.
type tunePlan struct {
	variable   string
	slo        loadgen.SLO
	max, start int
	tolerance  float64
	utils      []float64
	restart    bool
}

// ladder is the values tried without an SLO: a quarter of the start to four times it.
func (p tunePlan) ladder() []int {
	var out []int
	for _, v := range []int{p.start / 4, p.start / 2, p.start, p.start * 2, p.start * 4} {
		v = min(max(v, 1), p.max)
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// run is the tuner's goroutine. It asks the UI for each restart and probe through out and
// waits for the answer, and ends with tuneDoneMsg.
func (p tunePlan) run(ctx context.Context, out chan<- tea.Msg) {
	ask := func(req tea.Msg, reply chan tuneReply) tuneReply {
		out <- req
		select {
		case r := <-reply:
			return r
		case <-ctx.Done():
			return tuneReply{err: ctx.Err()}
		}
	}
	for _, util := range p.utils {
		name := fmt.Sprintf("util %.2f", util)
		if p.restart {
			reply := make(chan tuneReply, 1)
			if r := ask(tuneRestartReq{util: util, reply: reply}, reply); r.err != nil {
				if ctx.Err() != nil {
					out <- tuneDoneMsg{err: ctx.Err()}
					return
				}
				// A setting the server refuses is a result of the sweep: the next one is tried.
				out <- tuneCurveMsg{curve: tuneCurve{Name: name, Util: util, Err: r.err.Error()}}
				continue
			}
		}
		out <- tuneCurveMsg{curve: tuneCurve{Name: name, Util: util}}
		n := 0
		probe := func(ctx context.Context, v int, _ string) ([]loadgen.ResultDoc, error) {
			n++
			label := fmt.Sprintf("probe %d", n)
			if p.restart {
				label += " " + name
			}
			reply := make(chan tuneReply, 1)
			r := ask(tuneProbeReq{value: v, label: label, reply: reply}, reply)
			var un *loadgen.UnsustainedError
			if r.err != nil && !errors.As(r.err, &un) {
				return nil, r.err
			}
			// A probe the server fell behind is measured all the same, and fails.
			return []loadgen.ResultDoc{probeDoc(r.stats, p.variable, v, util, label)}, r.err
		}
		onProbe := func(pr loadgen.SLOProbe) { out <- tuneProbeMsg{probe: pr} }
		var err error
		if p.slo != nil {
			search := loadgen.SLOSearch{Variable: p.variable, SLO: p.slo, Max: p.max, Start: p.start, Tolerance: p.tolerance,
				OnDiscard: func(d loadgen.SLODiscard) { out <- tuneDiscardMsg{d: d} }}
			_, err = loadgen.SearchSLO(ctx, search, probe, onProbe)
		} else {
			for _, v := range p.ladder() {
				docs, perr := probe(ctx, v, "ladder")
				var un *loadgen.UnsustainedError
				pr := loadgen.SLOProbe{Value: v, Phase: "ladder", Docs: docs, Means: map[string]float64{}, Margin: math.NaN()}
				if errors.As(perr, &un) {
					pr.Unsustained, perr = un.Reason, nil // a result of the ladder, not its end
				}
				if err = perr; err != nil {
					break
				}
				onProbe(pr)
			}
		}
		var um *loadgen.UnmeasuredError
		if errors.As(err, &um) && p.restart && ctx.Err() == nil {
			// Every probe of one value was spoiled: the setting could not be measured, and
			// the sweep goes on.
			out <- tuneUnmeasuredMsg{why: um.Error()}
			continue
		}
		if err != nil {
			out <- tuneDoneMsg{err: err}
			return
		}
	}
	out <- tuneDoneMsg{}
}

// probeDoc is a probe's measured epoch as a result document, with vLLM's key names so the SLO's
// criteria (p99_ttft_ms, ...) read it and the export is the CLI's summary.csv form.
func probeDoc(e loadgen.EpochStats, variable string, value int, util float64, label string) loadgen.ResultDoc {
	f := func(x float64) loadgen.PyFloat { return loadgen.PyFloat(x) }
	dur := e.Duration().Seconds()
	rps, total := 0.0, 0.0
	if dur > 0 {
		rps, total = float64(e.Requests)/dur, float64(e.OutputTokens+e.PromptTokens)/dur
	}
	d := loadgen.ResultDoc{
		{Key: variable, Value: value},
		{Key: "gpu_memory_utilization", Value: f(util)},
		{Key: "label", Value: label},
		{Key: "epoch", Value: e.Epoch},
		{Key: "duration", Value: f(dur)},
		{Key: "completed", Value: e.Requests},
		{Key: "failed", Value: e.Failures},
		{Key: "total_input_tokens", Value: e.PromptTokens},
		{Key: "total_output_tokens", Value: e.OutputTokens},
		{Key: "request_throughput", Value: f(rps)},
		{Key: "output_throughput", Value: f(e.OutputTokensPerSec())},
		{Key: "total_token_throughput", Value: f(total)},
	}
	return append(d, quantileFields(e)...)
}

// curvesHint says which key shows the curve panel.
func (m *Model) curvesHint() string {
	measured := false
	for _, cv := range m.c.s.tune.curves {
		measured = measured || len(cv.Probes) > 0 || cv.Err != ""
	}
	if k := m.viewKey(curvesTab); k != "" && measured {
		return " · " + k + " shows the curves"
	}
	return ""
}

// SLOKeys are the keys a tuning probe's document has, what an SLO of S or W may read: the
// CLI's names for what a probe measures (it measures fewer quantiles than bench reports).
func SLOKeys() []string {
	var out []string
	for _, v := range []string{loadgen.SLOConcurrency, loadgen.SLORate} {
		for _, f := range probeDoc(loadgen.EpochStats{}, v, 0, 0, "") {
			switch f.Value.(type) {
			case loadgen.PyFloat, int:
				if !slices.Contains(out, f.Key) {
					out = append(out, f.Key)
				}
			}
		}
	}
	return out
}
