package tui

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
)

// tuneRig runs the dashboard's commands as the program would, off the test goroutine, and
// feeds their messages back to Update; the clock moves only when the test says so. Its fake
// server's p99 TTFT is perC per request in flight.
type tuneRig struct {
	*driver
	pending chan tea.Msg
	perC    time.Duration
	// keyAt, when set, is called before each second; it may press keys.
	keyAt func(sec int)
}

func newTuneRig(t *testing.T, edit ...func(*Deps)) *tuneRig {
	edit = append([]func(*Deps){func(d *Deps) {
		d.Tune = TuneConfig{ProbeRequests: 10, WarmupRequests: 4, Max: 128}
	}}, edit...)
	return &tuneRig{driver: newDriver(t, 120, 40, edit...), pending: make(chan tea.Msg, 64), perC: 10 * time.Millisecond}
}

// exec runs cmd (and the commands of a batch) in goroutines, as Bubble Tea does.
func (r *tuneRig) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				r.exec(c)
			}
			return
		}
		if msg != nil {
			r.pending <- msg
		}
	}()
}

func (r *tuneRig) press(k string) { r.exec(r.send(keyMsg(k))) }

// finishRequests completes a second's requests at the load's concurrency.
func (r *tuneRig) finishRequests() {
	st := r.td.load.Stats()
	c := st.Concurrency
	if st.Rate > 0 {
		c = int(st.Rate) // in rate mode the fake server slows with the rate
	}
	ttft := time.Duration(c) * r.perC
	done := min(max(c, 1), 24) // the fake server finishes 24 requests a second at most
	for range done {
		r.td.load.result(loadgen.Result{Start: r.td.clock.Add(-time.Second), TTFT: ttft, E2EL: time.Second, OutputTokens: 100, PromptTokens: 200})
	}
	if st.Rate > 0 && c > done {
		r.td.load.mu.Lock()
		r.td.load.queued += int64(c - done) // the rest of the second's requests wait
		r.td.load.mu.Unlock()
	}
}

// runUntilIdle plays the run out: messages as they come; when none is waiting and a probe
// is under way, a second of requests. It returns the seconds it played.
func (r *tuneRig) runUntilIdle(maxSeconds int) int {
	r.t.Helper()
	sec := 0
	for {
		select {
		case msg := <-r.pending:
			r.exec(r.send(msg))
			continue
		default:
		}
		s := &r.m.c.s
		if s.tune.kind == tuneIdle && s.tune.restart == nil {
			return sec
		}
		if s.tune.cur == nil {
			// The tuner is thinking or a restart is under way: its message will come.
			select {
			case msg := <-r.pending:
				r.exec(r.send(msg))
			case <-time.After(10 * time.Second):
				r.t.Fatalf("no message from the tuner (status %q)", s.status)
			}
			continue
		}
		require.Less(r.t, sec, maxSeconds, "the run ends")
		if r.keyAt != nil {
			r.keyAt(sec)
		}
		r.finishRequests()
		r.second()
		sec++
	}
}

func TestSLOSearchKeyFindsTheKnee(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) { d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 505}} })
	r.press("S")
	require.Equal(t, tuneSearch, r.m.c.s.tune.kind)
	assert.Contains(t, r.m.c.s.status, "SLO search of max_concurrency for p99_ttft_ms<=505.00")
	var progress []string
	r.keyAt = func(int) { progress = append(progress, r.m.c.s.status) }
	r.runUntilIdle(400)
	// The status line follows the probe (its number, value and stage), the last result against
	// the SLO and the knee's bracket.
	assert.Contains(t, progress, "search · #1 C=4 warm-up")
	assert.Contains(t, progress, "search · #2 C=8 8/16 · C=4 40ms≤505ms · knee [4,–]")
	assert.Contains(t, progress, "search · #6 C=48 0/96 · C=64 643ms>505ms · knee [32,64]")
	assert.Contains(t, progress, "search · #9 C=50 0/100 · C=52 520ms>505ms · knee [48,52]")

	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 1)
	cv := tn.curves[0]
	// 10 ms a request in flight: 50 is the last concurrency within 505 ms (the histograms
	// keep two significant digits: a bound on a figure would be a coin toss).
	assert.Equal(t, 50, cv.Knee)
	var values []int
	for _, p := range cv.Probes {
		values = append(values, p.Value)
	}
	// From the load's C=4: doubling to the first failure, then bisection until the knee is
	// known within 5% ([50, 52]).
	assert.Equal(t, []int{4, 8, 16, 32, 64, 48, 56, 52, 50}, values)
	assert.Contains(t, r.m.c.s.status, "knee util 0.92 C=50")
	assert.Contains(t, r.m.c.s.status, "Maximum max_concurrency for SLA: 50")
	assert.Equal(t, 50, r.td.load.Stats().Concurrency, "the load is left at the knee")

	// Each probe is a labelled epoch with enough requests, its warm-up a separate one.
	labels := map[string]int{}
	for _, e := range r.m.c.s.runs {
		if strings.HasPrefix(e.Label, "probe ") {
			labels[e.Label] = e.Requests
		}
	}
	require.Len(t, labels, len(values))
	for l, n := range labels {
		assert.GreaterOrEqual(t, n, 10, l)
	}
	p := cv.Probes[len(cv.Probes)-1]
	ttft, _ := docNumber(p.Docs, "p99_ttft_ms")
	assert.InDelta(t, 500, ttft, 6, "the probe's p99 is the measured epoch's, not the warm-up's")

	r.m.show("Runs")
	out := r.view()
	assert.Contains(t, out, "(probe 9)", "Runs shows the probes")
	assert.Contains(t, out, "or a probe's warm-up folded away", "and folds their warm-ups")
	r.m.show(curvesTab)
	out = r.view()
	assert.Contains(t, out, "knee C=50")
	assert.Contains(t, out, "SLO p99_ttft_ms<=505")
}

func TestSLOSearchPromptsForTheSLOAndStopsKeepingWhatFinished(t *testing.T) {
	r := newTuneRig(t)
	r.press("S")
	require.NotNil(t, r.m.c.s.tune.prompt, "no --sla: the search asks for one")
	assert.Contains(t, r.view(), "search SLO: p99_ttft_ms<=500▏ enter starts · esc cancels")
	r.send(tea.KeyMsg{Type: tea.KeyBackspace})
	r.send(tea.KeyMsg{Type: tea.KeyBackspace})
	r.send(tea.KeyMsg{Type: tea.KeyBackspace})
	r.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	r.send(tea.KeyMsg{Type: tea.KeyEnter})
	assert.True(t, r.m.c.s.statusBad, "a bad SLO is refused: %q", r.m.c.s.status)
	assert.NotEqual(t, phaseStopping, r.m.c.s.phase, "q typed in the prompt does not quit")
	r.send(tea.KeyMsg{Type: tea.KeyBackspace})
	r.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("200")})
	r.exec(r.send(tea.KeyMsg{Type: tea.KeyEnter}))
	require.Equal(t, tuneSearch, r.m.c.s.tune.kind)
	assert.Equal(t, "p99_ttft_ms<=200.00", r.m.c.s.tune.slo.Text(","))

	// Load keys are refused while it runs; S again stops it after two probes.
	r.keyAt = func(int) {
		if len(r.m.c.s.tune.curves) == 1 && len(r.m.c.s.tune.curves[0].Probes) == 2 && r.m.c.s.tune.kind != tuneIdle {
			r.press("+")
			assert.Contains(t, r.m.c.s.status, "S or W stops it")
			r.press("S")
		}
	}
	r.runUntilIdle(200)
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 1)
	assert.Len(t, tn.curves[0].Probes, 2, "the finished probes are kept")
	assert.Equal(t, 8, tn.curves[0].Knee, "C=8 (80 ms) met 200 ms")
	assert.Contains(t, r.m.c.s.status, "tuning stopped")
	assert.Equal(t, 4, r.td.load.Stats().Concurrency, "a stopped search sets the load back")
}

func TestUtilSweepRestartsPerValueAndStops(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 110}}
		d.SweepUtils = []float64{0.80, 0.85, 0.90}
	})
	// More memory, more KV: the fake server's latency per request falls with the util.
	r.keyAt = func(int) {
		u := r.td.sup.Status().GPUMemoryUtilization
		r.perC = time.Duration((1.0 - u) * 100 * float64(time.Millisecond))
		// Stop during the third setting's first probe.
		if len(r.m.c.s.tune.touched) == 3 && r.m.c.s.tune.kind != tuneIdle {
			r.press("W")
		}
	}
	r.td.sup.restartHook = func(edits []server.ArgEdit) error {
		u := server.GPUMemoryUtilization(server.EditArgs([]string{"vllm", "serve", "m"}, edits...))
		r.td.sup.setStatus(func(s *server.Status) { s.GPUMemoryUtilization = u })
		return nil
	}
	r.press("W")
	assert.Equal(t, tuneIdle, r.m.c.s.tune.kind, "W asks before its first restart")
	assert.Equal(t, "W: restart 3 times, util 0.80–0.90? y/enter go · n/esc no", r.m.c.s.status)
	assert.LessOrEqual(t, len([]rune(r.m.c.s.status)), 80-len([]rune("? help · q quit"))-3, "the question whole at 80 columns")
	r.press("+")
	assert.Equal(t, tuneIdle, r.m.c.s.tune.kind, "other keys leave the question")
	r.press("esc")
	assert.Equal(t, "sweep cancelled", r.m.c.s.status)
	assert.Empty(t, r.td.sup.restarts)
	r.press("W")
	r.press("enter")
	require.Equal(t, tuneSweep, r.m.c.s.tune.kind)
	r.runUntilIdle(600)

	require.Len(t, r.td.sup.restarts, 3, "one restart per value reached")
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 3)
	// 20 ms a request at 0.80: 5 in flight meet 110 ms; 15 ms at 0.85: 7.
	assert.Equal(t, 5, tn.curves[0].Knee)
	assert.Equal(t, 7, tn.curves[1].Knee)
	assert.Empty(t, tn.curves[2].Probes, "stopped before the third setting's first probe finished")
	assert.Contains(t, r.m.c.s.status, "tuning stopped")
	assert.Contains(t, r.m.c.s.status, "server left at util 0.90: enter restarts it at 0.92", "the sweep does not hide where it left the server")
	assert.Equal(t, 0.92, r.m.c.s.pendingUtil, "the header shows the way back")
	found := false
	for _, e := range r.m.c.s.runs {
		if strings.HasPrefix(e.Label, "probe ") && strings.HasSuffix(e.Label, " util 0.85") {
			found = true
		}
	}
	assert.True(t, found, "the sweep's runs are labelled with util and probe")
}

func TestUtilSweepStoppedBeforeAProbeDoesNotPointAtCurves(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 110}}
		d.SweepUtils = []float64{0.80, 0.85}
	})
	r.keyAt = func(int) {
		if r.m.c.s.tune.kind != tuneIdle {
			r.press("W") // during the first setting's first probe
		}
	}
	r.td.sup.restartHook = func(edits []server.ArgEdit) error {
		u := server.GPUMemoryUtilization(server.EditArgs([]string{"vllm", "serve", "m"}, edits...))
		r.td.sup.setStatus(func(s *server.Status) { s.GPUMemoryUtilization = u })
		return nil
	}
	r.press("W")
	r.press("enter")
	r.runUntilIdle(60)
	st := r.m.c.s.status
	assert.Contains(t, st, "tuning stopped")
	assert.NotContains(t, st, "shows the curves", "no probe finished: the Curves view has nothing to show")
	assert.Contains(t, st, "server left at util 0.80: enter restarts it at 0.92")
	assert.Contains(t, r.view(), "0.80→0.92", "the header shows the pending utilisation")
}

func TestSLOSearchOverTheRateInRateMode(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) { d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 205}} })
	r.press("r") // rate mode at 1 req/s
	r.press("S")
	r.runUntilIdle(400)
	tn := &r.m.c.s.tune
	assert.Equal(t, loadgen.SLORate, tn.variable)
	require.Len(t, tn.curves, 1)
	assert.Equal(t, 20, tn.curves[0].Knee, "10 ms a request a second: 20 req/s is the last within 205 ms")
	assert.Contains(t, r.m.c.s.status, "Maximum request_rate for SLA: 20 req/s; load set to it")
	assert.Equal(t, 20.0, r.td.load.Stats().Rate, "the load is left at the knee's rate")
	v, ok := tn.curves[0].Probes[0].Docs[0].Get(loadgen.SLORate)
	require.True(t, ok)
	assert.Equal(t, 1, v, "from the current rate")
}

// A utilisation the server does not start with is noted, and the sweep goes on.
func TestUtilSweepGoesOnPastASettingThatDoesNotStart(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 65}}
		d.SweepUtils = []float64{0.05, 0.90}
	})
	r.td.sup.restartHook = func(edits []server.ArgEdit) error {
		if server.GPUMemoryUtilization(server.EditArgs([]string{"vllm", "serve", "m"}, edits...)) < 0.1 {
			return errors.New("the server exited: ValueError: No available memory for the cache blocks")
		}
		return nil
	}
	r.press("W")
	r.press("y")
	r.runUntilIdle(300)
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 2)
	assert.Contains(t, tn.curves[0].Err, "No available memory")
	assert.Empty(t, tn.curves[0].Probes)
	assert.Equal(t, 6, tn.curves[1].Knee, "the load resumed after the next restart")
	assert.False(t, r.m.c.s.paused)
	r.m.show(curvesTab)
	assert.Contains(t, r.view(), "util 0.05  did not start: the server exited: ValueError")
}

// Without an SLO the sweep runs a short ladder of concurrencies at each setting: curves, no knee.
func TestUtilSweepWithoutAnSLORunsALadder(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) { d.SweepUtils = []float64{0.85, 0.90} })
	r.press("W")
	r.press("enter")
	assert.Contains(t, r.m.c.s.status, "a load ladder at each")
	r.runUntilIdle(300)
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 2)
	for _, cv := range tn.curves {
		var values []int
		for _, p := range cv.Probes {
			values = append(values, p.Value)
		}
		assert.Equal(t, []int{1, 2, 4, 8, 16}, values, "a quarter of C=4 to four times it")
		assert.Zero(t, cv.Knee)
	}
	assert.Len(t, r.td.sup.restarts, 2)
	assert.Equal(t, 4, r.td.load.Stats().Concurrency, "the load is set back")
	chart := tuneChart(tn)
	assert.Empty(t, chart.SLOLabel, "no SLO line")
	assert.Equal(t, "p99_ttft_ms", chart.YLabel)
	assert.Len(t, chart.Series[1].Points, 5)
}

func TestUtilSweepIsRefusedWhenAttached(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) { d.Mode, d.RestartDisabled = ModeAttach, true })
	r.press("W")
	assert.Equal(t, tuneIdle, r.m.c.s.tune.kind)
	assert.Contains(t, r.m.c.s.status, "cannot restart it")
	assert.LessOrEqual(t, len([]rune(r.m.c.s.status)), 120-len([]rune("? help · q quit"))-3, "whole on a 120-column status line")
}

func TestExportWritesRunsAndCurves(t *testing.T) {
	dir := t.TempDir()
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 65}}
		d.ExportDir = dir
	})
	r.press("S")
	r.runUntilIdle(200)
	require.Equal(t, 6, r.m.c.s.tune.curves[0].Knee)
	r.press("E")
	msg := <-r.pending
	r.send(msg)
	assert.Contains(t, r.m.c.s.status, "exported "+filepath.Join(dir, "vllmtop-{runs,tuning}-20261130-12"))
	assert.Regexp(t, `-\d{8}-\d{6}\.\{csv,json\}$`, r.m.c.s.status)

	files, err := filepath.Glob(filepath.Join(dir, "vllmtop-*"))
	require.NoError(t, err)
	require.Len(t, files, 4, "runs and tuning, each as CSV and JSON")
	runsCSV := readCSV(t, files, "runs", ".csv")
	assert.Equal(t, len(r.m.c.s.runs)+1, len(runsCSV), "a header and a row per run")
	assert.Equal(t, []string{"", "epoch", "start", "settings", "label"}, runsCSV[0][:5])

	tuning := readCSV(t, files, "tuning", ".csv")
	col := map[string]int{}
	for i, h := range tuning[0] {
		col[h] = i
	}
	require.Contains(t, col, "p99_ttft_ms")
	require.Contains(t, col, "max_concurrency")
	assert.Len(t, tuning, len(r.m.c.s.tune.curves[0].Probes)+1)
	assert.Equal(t, "4", tuning[1][col["max_concurrency"]], "the first probe is the load's C=4")
	assert.Equal(t, "True", tuning[1][col["slo_met"]])

	var js struct {
		Curves []exportCurve     `json:"curves"`
		Probes []json.RawMessage `json:"probes"`
	}
	b, err := os.ReadFile(pick(t, files, "tuning", ".json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &js))
	require.Len(t, js.Curves, 1)
	assert.Equal(t, 6, js.Curves[0].Knee)
	assert.Equal(t, "p99_ttft_ms<=65.00", js.Curves[0].SLO)
	var runs []map[string]any
	b, err = os.ReadFile(pick(t, files, "runs", ".json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &runs))
	assert.Len(t, runs, len(r.m.c.s.runs))

	// A second export in the same second does not overwrite the first.
	r.press("E")
	r.send(<-r.pending)
	assert.True(t, r.m.c.s.statusBad)
	assert.Contains(t, r.m.c.s.status, "export failed")
}

func pick(t *testing.T, files []string, kind, ext string) string {
	for _, f := range files {
		if strings.Contains(filepath.Base(f), "-"+kind+"-") && strings.HasSuffix(f, ext) {
			return f
		}
	}
	t.Fatalf("no %s%s file in %v", kind, ext, files)
	return ""
}

func readCSV(t *testing.T, files []string, kind, ext string) [][]string {
	f, err := os.Open(pick(t, files, kind, ext))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows
}

// demoTune is a finished sweep of two utilisations for the golden views: p99 TTFT rises
// with the load, faster with less KV cache.
func demoTune() tuneState {
	slo := loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}
	t := tuneState{slo: slo, variable: loadgen.SLOConcurrency}
	for i, util := range []float64{0.85, 0.90} {
		cv := tuneCurve{Name: fmt.Sprintf("util %.2f", util), Util: util, Variable: t.variable, SLO: slo}
		for _, c := range []int{8, 16, 32, 64, 48, 40} {
			ttft := time.Duration(40+c*c/(3+i)) * time.Millisecond
			e := loadgen.EpochStats{Epoch: 10 + len(cv.Probes), Requests: 48, OutputTokens: 48 * 128, PromptTokens: 48 * 256,
				First: t0, Last: t0.Add(time.Duration(48*1000/c) * time.Millisecond),
				TTFT: loadgen.Quantiles{P50: ttft / 2, P90: ttft * 8 / 10, P99: ttft, N: 48}}
			doc := probeDoc(e, t.variable, c, util, fmt.Sprintf("%s probe %d", cv.Name, len(cv.Probes)+1))
			p := loadgen.SLOProbe{Value: c, Phase: "bracket", Docs: []loadgen.ResultDoc{doc}, Means: map[string]float64{},
				Margin: slo[0].Margin(float64(ttft) / float64(time.Millisecond))}
			cv.Probes = append(cv.Probes, p)
			if p.Passed() && c > cv.Knee {
				cv.Knee = c
			}
		}
		t.curves = append(t.curves, cv)
		t.touched = append(t.touched, i)
	}
	return t
}

// A search at a setting already plotted adds a curve: a stopped search never replaces a
// finished one.
func TestSearchingASettingAgainKeepsItsCurve(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) { d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 65}} })
	r.press("S")
	r.runUntilIdle(200)
	r.keyAt = func(int) {
		if tn := &r.m.c.s.tune; tn.kind != tuneIdle && len(tn.touched) == 1 && len(tn.curves[tn.touched[0]].Probes) == 1 {
			r.press("S")
		}
	}
	r.press("S")
	r.runUntilIdle(200)
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 2)
	assert.Equal(t, "util 0.92", tn.curves[0].Name)
	assert.Equal(t, 6, tn.curves[0].Knee)
	assert.Equal(t, "util 0.92 (2)", tn.curves[1].Name)
	assert.Len(t, tn.curves[1].Probes, 1)
}

// A sweep after a search adds its curves beside the search's: nothing measured is dropped
// from Curves or the export.
func TestUtilSweepKeepsTheCurvesOfAnEarlierSearch(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 65}}
		d.SweepUtils = []float64{0.90}
	})
	r.press("S")
	r.runUntilIdle(200)
	r.press("W")
	r.press("enter")
	r.runUntilIdle(400)
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 2)
	assert.Equal(t, "util 0.92", tn.curves[0].Name, "the search's curve")
	assert.Equal(t, 6, tn.curves[0].Knee)
	assert.Equal(t, "util 0.90", tn.curves[1].Name, "the sweep's")
	assert.NotEmpty(t, tn.curves[1].Probes)
}

// Sweeps and searches together keep at most the six curves the plot's markers tell apart: a
// sweep makes room for all of its settings before its first curve.
func TestCurvesStayWithinWhatThePlotTellsApart(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 65}}
		d.SweepUtils = []float64{0.85, 0.90, 0.95}
	})
	for range 3 {
		r.press("W")
		r.press("enter")
		r.runUntilIdle(900)
		require.LessOrEqual(t, len(r.m.c.s.tune.curves), maxCurves)
	}
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, maxCurves)
	// The first sweep's curves went to make room, so the newest takes their names again.
	assert.Equal(t, []string{"util 0.85 (2)", "util 0.90 (2)", "util 0.95 (2)", "util 0.85", "util 0.90", "util 0.95"},
		[]string{tn.curves[0].Name, tn.curves[1].Name, tn.curves[2].Name, tn.curves[3].Name, tn.curves[4].Name, tn.curves[5].Name})
	seen := map[string]bool{}
	for _, cv := range tn.curves {
		assert.False(t, seen[cv.Name], "one name a curve")
		seen[cv.Name] = true
	}
}

// BenchmarkCurvesView is the cost of drawing the Curves panel at 200x60 with two curves:
// it is drawn once a second while it is the active view.
func BenchmarkCurvesView(b *testing.B) {
	m := New(Deps{Theme: "dark"})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	m.c.s.tune = demoTune()
	p := m.panels[m.view(curvesTab)]
	b.ReportAllocs()
	for b.Loop() {
		p.Update(refreshMsg{second: true})
	}
}

// The server stops answering during the first probe: that probe is discarded, never scored,
// and made again once the server answers; the search then ends as it would have.
func TestSLOSearchDiscardsAProbeTakenWhileTheServerWasUnreachable(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) { d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 505}} })
	r.press("S")
	var progress []string
	r.keyAt = func(sec int) {
		switch sec {
		case 2:
			require.GreaterOrEqual(t, r.m.c.s.tune.cur.epoch, 0, "the first probe is measuring")
			r.td.sup.setStatus(func(st *server.Status) { st.Unreachable, st.State = "no answer within 5s", server.Unhealthy })
		case 4:
			r.td.sup.setStatus(func(st *server.Status) { st.Unreachable, st.State = "", server.Ready })
		}
		progress = append(progress, r.m.c.s.status)
	}
	r.runUntilIdle(400)
	tn := &r.m.c.s.tune
	assert.Equal(t, 1, tn.discards)
	assert.Contains(t, progress, "search · #2 C=4 warm-up · C=4 discarded: the server was unreachable (no answer within 5s)", "the retry waits for the server")
	require.Len(t, tn.curves, 1)
	var values []int
	for _, p := range tn.curves[0].Probes {
		values = append(values, p.Value)
	}
	assert.Equal(t, []int{4, 8, 16, 32, 64, 48, 56, 52, 50}, values, "C=4 scored once, from the retry")
	assert.Equal(t, 50, tn.curves[0].Knee)
}

// A setting whose probes are all spoiled could not be measured: the sweep says so and goes on.
func TestUtilSweepMarksASettingThatCouldNotBeMeasured(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 65}}
		d.SweepUtils = []float64{0.85, 0.90}
		d.Tune.ProbeTimeout = 6 * time.Second // how long a warm-up waits for the server
	})
	r.keyAt = func(int) {
		// Down for as long as the first setting lasts.
		down := len(r.m.c.s.tune.touched) == 1
		r.td.sup.setStatus(func(st *server.Status) {
			st.Unreachable, st.State = "", server.Ready
			if down {
				st.Unreachable, st.State = "no answer within 5s", server.Unhealthy
			}
		})
	}
	r.press("W")
	r.press("enter")
	r.runUntilIdle(600)
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 2)
	assert.Equal(t, "max_concurrency=4 could not be measured: 3 probes discarded, the last as the server was unreachable (no answer within 5s)", tn.curves[0].Err)
	assert.Empty(t, tn.curves[0].Probes)
	assert.Equal(t, 6, tn.curves[1].Knee, "the next setting is measured")
	r.m.show(curvesTab)
	assert.Contains(t, r.view(), "util 0.85  not measured: max_concurrency=4 could not be measured")
}

// sweepRig is a utilisation sweep over utils against an SLO of 110 ms, whose fake server gets
// faster as the utilisation grows; restart sees each restart's utilisation first, and its error
// fails the restart, which otherwise sets the server's utilisation.
func sweepRig(t *testing.T, utils []float64, restart func(r *tuneRig, u float64) error) *tuneRig {
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 110}}
		d.SweepUtils = utils
	})
	r.keyAt = func(int) {
		u := r.td.sup.Status().GPUMemoryUtilization
		r.perC = time.Duration((1.0 - u) * 100 * float64(time.Millisecond))
	}
	r.td.sup.restartHook = func(edits []server.ArgEdit) error {
		u := server.GPUMemoryUtilization(server.EditArgs([]string{"vllm", "serve", "m"}, edits...))
		if err := restart(r, u); err != nil {
			return err
		}
		r.td.sup.setStatus(func(s *server.Status) { s.GPUMemoryUtilization = u })
		return nil
	}
	return r
}

// A sweep whose restart leaves the server down says so, and offers the way back.
func TestUtilSweepEndingWithTheServerDown(t *testing.T) {
	r := sweepRig(t, []float64{0.80, 0.99}, func(r *tuneRig, u float64) error {
		if u > 0.95 {
			r.td.sup.setStatus(func(s *server.Status) { s.State = server.Exited })
			return errors.New("exit status 1")
		}
		return nil
	})
	r.press("W")
	r.press("enter")
	r.runUntilIdle(600)
	st := r.m.c.s.status
	assert.Contains(t, st, "server down: enter restarts it at 0.92")
	assert.NotContains(t, st, "server left at util")
	// The offer comes before the knees, which at three settings fill 120 columns.
	assert.True(t, strings.HasPrefix(st, "tuning done · server down: enter restarts it at 0.92 · knee "), st)
	assert.Equal(t, 0.92, r.m.c.s.pendingUtil)

	// The default sweep tries the current value before the one above it: when that fails, the
	// server was last up at the original value, and is down all the same.
	r = sweepRig(t, nil, func(r *tuneRig, u float64) error {
		if u > 0.95 {
			return errors.New("exit status 1")
		}
		return nil
	})
	r.press("W")
	r.press("enter")
	r.runUntilIdle(900)
	assert.Contains(t, r.m.c.s.status, "server down: enter restarts it at 0.92")
	assert.Equal(t, 0.92, r.m.c.s.pendingUtil, "enter goes back, not to the value that failed")
}

// A sweep stopped while one of its restarts runs offers the way back once that restart ends.
func TestUtilSweepStoppedDuringARestart(t *testing.T) {
	r := sweepRig(t, []float64{0.80, 0.85}, func(r *tuneRig, u float64) error {
		if u == 0.85 {
			r.pending <- keyMsg("W") // while the restart is under way
		}
		return nil
	})
	r.press("W")
	r.press("enter")
	r.runUntilIdle(600)
	for r.m.c.s.phase != phaseIdle { // the restart's end may come after the sweep's
		select {
		case msg := <-r.pending:
			r.exec(r.send(msg))
		case <-time.After(10 * time.Second):
			t.Fatalf("the restart does not end (status %q)", r.m.c.s.status)
		}
	}
	assert.Equal(t, tuneIdle, r.m.c.s.tune.kind)
	assert.Contains(t, r.m.c.s.status, "server left at util 0.85: enter restarts it at 0.92")
	assert.Equal(t, 0.92, r.m.c.s.pendingUtil)

	// Where the sweep's end is handled before the restart's, the restart's end offers it.
	s := &r.m.c.s
	s.phase, s.util, s.pendingUtil = phaseRestarting, 0.85, 0
	assert.Empty(t, r.m.offerUtilBack(), "nothing to offer while the restart runs")
	r.m.restartDone(restartDoneMsg{util: 0.90})
	assert.Equal(t, "restarted with --gpu-memory-utilization 0.90 · server left at util 0.90: enter restarts it at 0.92", s.status)
	assert.Equal(t, 0.92, s.pendingUtil)
	s.phase, s.pendingUtil = phaseRestarting, 0
	r.m.offerUtilBack()
	r.m.restartDone(restartDoneMsg{util: 0.95, err: errors.New("exit status 1")})
	assert.Contains(t, s.status, "restart failed: exit status 1 (load paused) · server down: enter restarts it at 0.92")
}

// A probe's epoch runs on until the next one begins, and the requests that end meanwhile were
// not measured: Runs shows what the probe was scored on, so that it agrees with Curves and the
// export on every probe, pass or fail.
func TestRunsShowWhatAProbeWasScoredOn(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) { d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 505}} })
	r.press("S")
	r.runUntilIdle(400)
	s := &r.m.c.s
	p := s.tune.curves[0].Probes[0]
	n, ok := docNumber(p.Docs, "epoch")
	require.True(t, ok)
	completed, _ := docNumber(p.Docs, "completed")
	for i := 0; i < 7; i++ {
		r.td.load.epochs.Add(loadgen.Result{Epoch: int(n), Start: r.td.clock.Add(-time.Second), TTFT: 2 * time.Second,
			E2EL: 3 * time.Second, OutputTokens: 100, PromptTokens: 200})
	}
	r.second()
	i := s.runIndex(int(n))
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, int(completed)+7, s.runs[i].Requests, "the epoch took the late requests")
	e, span := s.shownRun(i, *r.td.clock)
	assert.Equal(t, int(completed), e.Requests)
	assert.Equal(t, e.Duration(), span, "rates over the probe's own span, as its document's")
	r.m.show("Runs")
	var line string
	for _, l := range strings.Split(r.view(), "\n") {
		if strings.Contains(l, "(probe 1)") {
			line = l
		}
	}
	require.NotEmpty(t, line, "Runs lists probe 1")
	ttft, _ := docNumber(p.Docs, "p99_ttft_ms")
	assert.Contains(t, line, fmt.Sprintf(" %d ", int(completed)), "the probe's count")
	assert.Contains(t, line, fmt.Sprintf("%.0fms", ttft), "the probe's p99")
	assert.NotContains(t, line, "2.00s", "not the late requests' TTFT")
}

// A search of the rate after one of the concurrency keeps each curve in its own units: the
// first still reads C, the second req/s, on screen and in the export.
func TestEachCurveKeepsItsOwnLoadVariable(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) {
		d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 205}}
		d.ExportDir = t.TempDir()
	})
	r.press("S")
	r.runUntilIdle(400)
	r.press("r")
	r.press("S")
	r.runUntilIdle(400)
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 2)
	assert.Equal(t, loadgen.SLOConcurrency, tn.curves[0].Variable)
	assert.Equal(t, loadgen.SLORate, tn.curves[1].Variable)
	assert.NotContains(t, r.m.c.s.status, ".;", "the knee line's full stop does not end up before the semicolon")
	r.press("6")
	v := r.view()
	assert.Contains(t, v, "knee C=20", "the concurrency search's knee keeps its unit")
	assert.Contains(t, v, "knee 20 req/s")
	assert.Contains(t, v, "numbers: C or req/s")

	r.press("E")
	r.send(<-r.pending)
	files, err := filepath.Glob(filepath.Join(r.m.c.deps.ExportDir, "vllmtop-tuning-*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	var js struct {
		Curves []exportCurve `json:"curves"`
	}
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &js))
	require.Len(t, js.Curves, 2)
	assert.Equal(t, loadgen.SLOConcurrency, js.Curves[0].Variable)
	assert.Equal(t, loadgen.SLORate, js.Curves[1].Variable)
}

// A rate the server cannot serve fails its probe however short its latencies read: the fake
// server finishes 24 requests a second and queues the rest, while its TTFT (10 ms a request a
// second) would meet the SLO up to 100 req/s.
func TestRateProbeTheServerFellBehindFails(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) { d.SLO = loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 1000}} })
	r.press("r")
	r.press("S")
	r.runUntilIdle(600)
	tn := &r.m.c.s.tune
	require.Len(t, tn.curves, 1)
	knee := tn.curves[0].Knee
	assert.GreaterOrEqual(t, knee, 24, "it keeps up with 24 req/s")
	assert.LessOrEqual(t, knee, 31, "a few req/s above 24 are within the counts' noise over 10 s, 32 is not")
	behind := 0
	for _, p := range tn.curves[0].Probes {
		if p.Value >= 32 {
			behind++
			assert.False(t, p.Passed(), "%d req/s", p.Value)
			assert.Contains(t, p.Unsustained, "req/s of the", "%d req/s", p.Value)
		}
	}
	assert.Positive(t, behind, "some probe went past what the server serves")
	r.press("6")
	assert.Contains(t, r.view(), "✗ fell behind")
}

func TestKeptUp(t *testing.T) {
	for _, tc := range []struct {
		started, finished int64
		behind            bool
	}{
		{830, 649, true},  // 83 req/s asked, 64.9 served over 10 s
		{620, 145, true},  // 62 asked, 14.5 served
		{830, 800, false}, // within a tenth
		{40, 29, false},   // a short count: 11 behind is within three standard deviations (24.9)
		{40, 10, true},
		{100, 60, true}, // 40 behind: more than 3 x sqrt(100 + 60)
		{0, 0, false},
	} {
		why := keptUp(tc.started, tc.finished, 10*time.Second, 1)
		assert.Equal(t, tc.behind, why != "", "%d started, %d finished: %q", tc.started, tc.finished, why)
	}
	assert.Empty(t, keptUp(100, 60, 10*time.Second, 0.5), "burstier arrivals: the starts vary more by chance")
	assert.Equal(t, "it finished 64.9 req/s of the 83.0 started over 10s", keptUp(830, 649, 10*time.Second, 1))
}

// A rate ladder without an SLO goes past a rate the server fell behind: the probe is a result
// on its curve, and the sweep tries every setting.
func TestRateLadderGoesOnPastARateTheServerFellBehind(t *testing.T) {
	r := newTuneRig(t, func(d *Deps) { d.SweepUtils = []float64{0.85, 0.90} })
	r.press("r") // rate mode at 1 req/s
	for range 3 {
		r.press("+")
	}
	r.press("]")
	r.press("]") // 16 req/s: the ladder runs 4, 8, 16, 32 and 64, the last two past what it serves
	r.press("W")
	r.press("enter")
	r.runUntilIdle(900)
	tn := &r.m.c.s.tune
	assert.Contains(t, r.m.c.s.status, "tuning done")
	require.Len(t, tn.curves, 2, "both settings were tried")
	for _, cv := range tn.curves {
		var values []int
		behind := 0
		for _, p := range cv.Probes {
			values = append(values, p.Value)
			if p.Unsustained != "" {
				behind++
			}
		}
		assert.Equal(t, []int{4, 8, 16, 32, 64}, values, cv.Name)
		assert.Positive(t, behind, "%s: the fake server serves 24 req/s", cv.Name)
	}
}
