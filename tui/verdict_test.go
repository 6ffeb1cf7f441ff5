package tui

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

var kvVerdict = diagnose.Verdict{Rule: "kv-bound", Severity: diagnose.Warning, Subject: "http://127.0.0.1:8000",
	Text:  "http://127.0.0.1:8000's KV cache is 94% full with 3 waiting: requests wait for KV memory; raise --gpu-memory-utilization, lower --max-num-seqs, or try --kv-cache-dtype fp8",
	Flags: []string{"--gpu-memory-utilization", "--max-num-seqs", "--kv-cache-dtype fp8"},
	Limit: diagnose.LimitKV, Advice: "raise --gpu-memory-utilization (now 0.9)",
	Evidence: []diagnose.Evidence{{Name: "kv_cache_usage", Value: 0.94, Unit: "%", Threshold: "≥ 90%"}, {Name: "waiting", Value: 3, Threshold: "≥ 1"}}}

func TestVerdictLineKeepsTheFlagToChangeAtEveryWidth(t *testing.T) {
	wide := verdictLine(kvVerdict, 200)
	assert.Equal(t, kvVerdict.Line(), wide, "the footer's line is diagnose's, where it fits")
	assert.Equal(t, diagnose.LimitKV+" · kv_cache_usage 94% (≥ 90%), waiting 3 (≥ 1) · raise --gpu-memory-utilization (now 0.9)", wide)
	for w := len(diagnose.LimitKV + " · --gpu-memory-utilization"); w <= 200; w++ {
		line := verdictLine(kvVerdict, w)
		require.LessOrEqual(t, lipgloss.Width(line), w)
		assert.Contains(t, line, "--gpu-memory-utilization", "width %d", w)
		assert.True(t, strings.HasPrefix(line, diagnose.LimitKV), "width %d: %q", w, line)
	}
	assert.Equal(t, diagnose.LimitKV+" · kv_cache_usage 94% (≥ 90%) · raise --gpu-memory-utilization (now 0.9)", verdictLine(kvVerdict, 90),
		"the first figure stays with the advice where both do not fit")
	assert.Equal(t, diagnose.LimitKV+" · kv_cache_usage 94% · --gpu-memory-utilization", verdictLine(kvVerdict, 60),
		"narrower: the first figure and the flag")
	noAdvice := kvVerdict
	noAdvice.Limit, noAdvice.Advice = "", ""
	assert.Equal(t, "kv-bound · kv_cache_usage 94% (≥ 90%), waiting 3 (≥ 1) · change --gpu-memory-utilization, --max-num-seqs, --kv-cache-dtype fp8",
		verdictLine(noAdvice, 200), "without a limit and advice: the rule and its flags")
}

func TestSingleServerFooterSaysTheVerdictsEvidenceAndFlag(t *testing.T) {
	for _, w := range []int{80, 120, 200} {
		d := newDriver(t, w, 24)
		d.second()
		d.m.c.s.verdicts = []diagnose.Verdict{kvVerdict}
		d.m.header.Update(refreshMsg{})
		lines := strings.Split(d.view(), "\n")
		foot := lines[len(lines)-1]
		assert.Contains(t, foot, diagnose.LimitKV+" · kv_cache_usage 94%", "width %d", w)
		assert.Contains(t, d.view(), "DEGRADED kv-bound", "width %d: the header names the rule", w)
		assert.Contains(t, foot, "--gpu-memory-utilization", "width %d", w)
		assert.Contains(t, foot, "? help", "width %d", w)
	}
}

func TestHeaderKeepsStateLoadCountsTokensAndVerdictAt80(t *testing.T) {
	d := newDriver(t, 80, 24)
	for i := 0; i < 5; i++ {
		d.requests(3, 40*time.Millisecond)
		d.second()
	}
	head := strings.Split(d.view(), "\n")[:2]
	assert.Contains(t, head[0], "ready")
	assert.Contains(t, head[0], "KV ")
	for _, want := range []string{"load closed C=", " done", "0 failed", "tok/s", "HEALTHY"} {
		assert.Contains(t, head[1], want)
	}
	assert.LessOrEqual(t, lipgloss.Width(head[1]), 80)
}

func TestALoadWhoseRequestsFailIsNeverHealthy(t *testing.T) {
	d := sized(t)
	d.second()
	for i := 0; i < 24; i++ {
		d.td.load.result(loadgen.Result{Start: d.td.clock.Add(-time.Second), Error: loadgen.ErrHTTP5xx})
	}
	d.second()
	head := strings.Split(d.view(), "\n")[1]
	assert.Contains(t, head, "FAILING http_5xx")
	assert.NotContains(t, head, "HEALTHY")

	// A few failures among many successes are not a failing load.
	d2 := sized(t)
	d2.second()
	d2.requests(20, 40*time.Millisecond)
	for i := 0; i < 6; i++ {
		d2.td.load.result(loadgen.Result{Start: d2.td.clock.Add(-time.Second), Error: loadgen.ErrHTTP5xx})
	}
	d2.second()
	assert.NotContains(t, d2.view(), "FAILING")
}

func TestTopClassIsTheCommonest(t *testing.T) {
	assert.Equal(t, "http_5xx", topClass(map[loadgen.ErrorClass]int{loadgen.ErrHTTP5xx: 7, loadgen.ErrConnect: 2}))
	assert.Equal(t, "", topClass(nil))
}

func TestHelpSaysWhatTheHeaderDropsAt80(t *testing.T) {
	d := newDriver(t, 80, 24)
	d.second()
	d.press("?")
	v := strings.Join(strings.Fields(d.view()), " ")
	assert.Contains(t, v, "when the line runs out of room, uptime, util")
	assert.Contains(t, v, "averages since the epoch began")
	assert.Contains(t, v, "flag to change")
}

func TestRateModeStartsAtTheCurrentThroughput(t *testing.T) {
	d := sized(t)
	for i := 0; i < 10; i++ {
		d.requests(7, 40*time.Millisecond)
		d.second()
	}
	d.press("r")
	require.True(t, d.m.c.s.rateMode)
	assert.Equal(t, 7.0, td(d).rate, "the open loop keeps the load the closed loop had, in req/s rounded")
	assert.Equal(t, 0.4, startRate(&state{live: loadgen.WindowStats{RequestsPerSec: 0.37}, rate: 1}, time.Time{}))
	assert.Equal(t, 1.0, startRate(&state{rate: 1}, time.Time{}), "nothing finished yet: the last rate")
}

func TestNarrowHeaderKeepsACompactVerdictAndTheFooterTurnsToIt(t *testing.T) {
	d := newDriver(t, 80, 24)
	d.second()
	q := kvVerdict
	q.Rule = "queue-bound"
	a := kvVerdict
	a.Rule, a.Severity = "admission-bound", diagnose.Warning
	d.m.c.s.verdicts = []diagnose.Verdict{kvVerdict, q, a}
	d.m.header.Update(refreshMsg{})
	head := strings.Split(d.view(), "\n")[1]
	assert.Contains(t, head, "DEGRADED ")
	assert.Contains(t, head, " +2", "the rules that did not fit are counted")
	assert.Contains(t, head, "tok/s")

	d.m.c.setStatus("load: C=5", false)
	lines := strings.Split(d.view(), "\n")
	assert.Contains(t, lines[len(lines)-1], "load: C=5", "a fresh message shows first")
	*d.td.clock = d.td.clock.Add(statusHold)
	lines = strings.Split(d.view(), "\n")
	assert.Contains(t, lines[len(lines)-1], "--gpu-memory-utilization", "then the verdict's flag")
}

func TestVerdictLineSaysAFlagThatIsTheLimitOnce(t *testing.T) {
	v := diagnose.Verdict{Rule: "batch-token-bound", Severity: diagnose.Warning, Limit: diagnose.LimitBatched, Flags: []string{diagnose.LimitBatched},
		Advice:   "raise --max-num-batched-tokens (now 8192), or lower --max-num-seqs so fewer prompts share each step",
		Evidence: []diagnose.Evidence{{Name: "waiting", Value: 5, Threshold: "≥ 1"}}}
	line := verdictLine(v, 60)
	assert.Equal(t, 1, strings.Count(line, "--max-num-batched-tokens"), "%q", line)
	assert.Equal(t, "--max-num-batched-tokens · waiting 5 (≥ 1)", line)
}

func TestRequestRateFlagStartsInRateMode(t *testing.T) {
	d := newDriver(t, 160, 40, func(deps *Deps) { deps.InitialRate = 4 })
	d.second()
	head := strings.Split(d.view(), "\n")[1]
	assert.Contains(t, head, "load open rate 4/s", "the header says the mode the load runs in")
	d.press("+")
	assert.Equal(t, 5.0, td(d).rate, "+ raises the rate, not a concurrency")
	assert.Contains(t, d.view(), "rate 5/s")
}

func TestRateCapIsInTheHeader(t *testing.T) {
	d := newDriver(t, 160, 40, func(deps *Deps) { deps.InitialRate, deps.RateCap = math.Inf(1), 2 })
	d.second()
	head := strings.Split(d.view(), "\n")[1]
	assert.Contains(t, head, "load open rate inf/s ≤2 in flight", "as vllm bench serve, a rate with --max-concurrency is capped")
	d.press("+")
	assert.Contains(t, d.view(), "rate inf/s already sends every request at once")
	d.press("-")
	assert.False(t, math.IsInf(td(d).rate, 1), "- leaves inf for the rate the server answers")
	assert.Greater(t, td(d).rate, 0.0)
}
