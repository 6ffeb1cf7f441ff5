package tui

import (
	"math"
	"time"

	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
	"github.com/vllmtop/vllmtop/themes"
)

// common is what the root shares with every panel, as soft-serve's Common: the collaborators,
// the styles, the clock and the dashboard's state. The root owns it and alone changes it (in
// Update); panels read it when they draw.
type common struct {
	deps   Deps
	styles Styles
	theme  themes.Theme
	now    func() time.Time
	s      state
}

// state is what the dashboard knows: the server's side, the load's side and the controls.
type state struct {
	server server.Status
	loader loadgen.LoaderStats
	live   loadgen.WindowStats // the client's percentiles over the live window

	snap       *scrape.Snapshot // the latest scrape
	fast, slow *scrape.Window   // since the previous scrape; over the live window
	srvErr     string           // the last scrape's error, "" after a good one

	// Load controls, as set here.
	concurrency int
	rate        float64
	rateMode    bool
	paused      bool   // by the user (space)
	autoPause   string // why the dashboard paused the load itself ("" when it did not)
	// ownRestart is set when the dashboard restarted the server itself, until the scrape
	// windows no longer span the restart: the restart is no verdict then.
	ownRestart  bool
	longPrompts bool
	workloads   [2]string // short, long
	prefixOn    bool      // the prefix-caching demo's shared system prompt

	// --gpu-memory-utilization: what the server runs with, and what the next restart uses.
	util, pendingUtil float64
	logged            capacity.Logged // the KV cache the latest run to log it logged
	phase             phase

	epoch int                  // the current epoch
	runs  []loadgen.EpochStats // the load's epochs, oldest first, taken once a second
	notes map[int]*epochNote   // the dashboard's side of each epoch, by number

	hist      *history
	last      []sample    // the samples of the last recorded second, for the legends
	marks     []epochMark // where epochs began, for the charts' rules
	window    int         // index in chartWindows
	lastTok   int64       // output tokens received at the last second, for the client's rate
	lastTokAt time.Time

	status    string // the footer's message
	statusBad bool
	statusAt  time.Time // when status was set: a plain message gives way to the verdict after statusHold

	tune tuneState // the SLO search or utilisation sweep, and their curves

	fleet    fleetState         // fleet mode: the rows and the row drilled into
	verdicts []diagnose.Verdict // the verdicts on the one server watched, after each scrape
	held     *diagnose.Tracker  // holds them for diagnose.DefaultHold, so the header does not flap
}

// epochNote is what the dashboard saw during one epoch: the server's capacity and
// preemptions, the workload, and how long the load was paused (not counted in its rates).
type epochNote struct {
	util     float64
	kvTokens int
	maxConc  float64
	preempt  float64
	workload string
	paused   time.Duration
	pausedAt time.Time // when a pause still under way began; zero otherwise
	tokens0  int64     // output tokens the client had received when it began
	warmup   bool      // a tuning probe's warm-up, folded away in Runs
	// scored is what a tuning probe measured, taken when it reached its count: the epoch runs
	// on until the next one begins, and the requests that end meanwhile are not the probe's.
	scored *loadgen.EpochStats
}

const maxMarks = 200

func (c *common) setStatus(msg string, bad bool) {
	c.s.status, c.s.statusBad, c.s.statusAt = msg, bad, c.now()
}

// note is epoch n's note, made when missing.
func (s *state) note(n int) *epochNote {
	e, ok := s.notes[n]
	if !ok {
		e = &epochNote{}
		s.notes[n] = e
	}
	return e
}

// model is the first model of the latest scrape.
func (s *state) model() *scrape.Model {
	if s.snap == nil || len(s.snap.Models) == 0 {
		return nil
	}
	return &s.snap.Models[0]
}

// rates is the first model's rates over w (fast or slow), nil when unknown.
func rates(w *scrape.Window) *scrape.Rates {
	if w == nil || w.Restarted || len(w.Models) == 0 {
		return nil
	}
	return &w.Models[0].Total
}

// capacity is the server's KV cache as it reports it (its log, else vllm:cache_config_info):
// the capacity report's figures, without its predictions.
func (s *state) capacity() (tokens int, conc float64) {
	r := capacity.Build(s.knownCapacity())
	if r.KVTokens.Source.Reported() {
		tokens = r.KVTokens.V
	}
	if r.MaxConcurrency.Source.Reported() {
		conc = r.MaxConcurrency.V
	}
	return tokens, conc
}

// active is how long run i of s.runs had the load running: from its start to the next one's
// (or now), less the time it was paused.
func (s *state) active(i int, now time.Time) time.Duration {
	e := s.runs[i]
	start := e.Start
	if start.IsZero() {
		start = e.First
	}
	end := now
	if i+1 < len(s.runs) && !s.runs[i+1].Start.IsZero() {
		end = s.runs[i+1].Start
	}
	d := end.Sub(start)
	if n, ok := s.notes[e.Epoch]; ok {
		d -= n.paused
		if !n.pausedAt.IsZero() {
			d -= now.Sub(n.pausedAt)
		}
	}
	return max(d, 0)
}

// shownRun is run i as Runs, its comparison and the export show it, with its span: a tuning
// probe's figures are those it was scored on, over their own span, so that Runs and Curves
// agree on every probe.
func (s *state) shownRun(i int, now time.Time) (loadgen.EpochStats, time.Duration) {
	e := s.runs[i]
	if n, ok := s.notes[e.Epoch]; ok && n.scored != nil {
		return *n.scored, n.scored.Duration()
	}
	return e, s.active(i, now)
}

// runIndex is the index in s.runs of epoch n, or -1.
func (s *state) runIndex(n int) int {
	for i, e := range s.runs {
		if e.Epoch == n {
			return i
		}
	}
	return -1
}

// quantile is a server quantile as a chart sample: a value, or only a bound when the
// quantile fell in the histogram's first bucket (at most its edge) or in +Inf (at least the
// last finite edge). Seconds become milliseconds.
func quantile(d *scrape.Dist, name string) sample {
	if d == nil || !(d.Count > 0) {
		return sample{}
	}
	v := d.P50
	switch name {
	case "p90":
		v = d.P90
	case "p99":
		v = d.P99
	}
	if !v.OK {
		return sample{}
	}
	for _, n := range d.InFirstBucket {
		if n == name {
			return sample{V: d.FirstBound * 1000, Kind: upperBound}
		}
	}
	for _, n := range d.Saturated {
		if n == name {
			return sample{V: v.V * 1000, Kind: lowerBound}
		}
	}
	return value(v.V * 1000)
}

// msOf is a client quantile in milliseconds, NaN without samples.
func msOf(d time.Duration, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return float64(d) / float64(time.Millisecond)
}

// setRuns takes the load's epochs as they are now. The load keeps a bounded number, so old ones
// drop off the front: their notes go with them.
func (s *state) setRuns(runs []loadgen.EpochStats) {
	s.runs = runs
	kept := map[int]bool{s.epoch: true}
	for _, e := range runs {
		kept[e.Epoch] = true
	}
	for n := range s.notes {
		if !kept[n] {
			delete(s.notes, n)
		}
	}
}

// beginEpoch records that the load started epoch n at now: its note (with the utilisation the
// server runs at and the workload), the rule on the charts, and a pause under way carried into
// it. It is the one place an epoch starts here.
func (c *common) beginEpoch(n int, util float64) {
	s, now := &c.s, c.now()
	old := s.note(s.epoch)
	pausedAt := old.pausedAt
	if !old.pausedAt.IsZero() {
		old.paused += now.Sub(old.pausedAt)
		old.pausedAt = time.Time{}
	}
	s.epoch = n
	s.notes[n] = &epochNote{util: util, workload: s.workloadName(), pausedAt: pausedAt}
	if c.deps.Load != nil {
		s.notes[n].tokens0 = c.deps.Load.Stats().TokensReceived
	}
	if !pausedAt.IsZero() {
		s.notes[n].pausedAt = now
	}
	s.marks = append(s.marks, epochMark{At: now, N: n})
	if len(s.marks) > maxMarks {
		s.marks = s.marks[len(s.marks)-maxMarks:]
	}
	if c.deps.Load != nil {
		s.setRuns(c.deps.Load.Epochs())
	}
}

func (s *state) workloadName() string {
	if s.longPrompts {
		return s.workloads[1]
	}
	return s.workloads[0]
}

// pauseChanged notes when the load stopped or started again, so paused time is left out of
// the epoch's rates.
func (c *common) pauseChanged(paused bool) {
	n := c.s.note(c.s.epoch)
	now := c.now()
	switch {
	case paused && n.pausedAt.IsZero():
		n.pausedAt = now
	case !paused && !n.pausedAt.IsZero():
		n.paused += now.Sub(n.pausedAt)
		n.pausedAt = time.Time{}
	}
}
