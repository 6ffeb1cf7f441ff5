package loadgen_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/loadgen"
)

func TestParseSLO(t *testing.T) {
	ok := []struct {
		in   string
		want loadgen.SLO
	}{
		{"p99_ttft_ms<=500", loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}},
		{"p99_ttft_ms<=500, p99_tpot_ms<50", loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}, {Metric: "p99_tpot_ms", Op: "<", Target: 50}}},
		{"output_throughput>=1000", loadgen.SLO{{Metric: "output_throughput", Op: ">=", Target: 1000}}},
		{"p99.9_e2el_ms>2.5,", loadgen.SLO{{Metric: "p99.9_e2el_ms", Op: ">", Target: 2.5}}},
	}
	for _, c := range ok {
		got, err := loadgen.ParseSLO(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	for _, bad := range []string{"", ",", "p99_ttft_ms=500", "p99_ttft_ms<=x", "<=500", "P99 TTFT<=5", "p99_ttft_ms<=inf", "p99_ttft_ms<=NaN"} {
		_, err := loadgen.ParseSLO(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseSLOParamsAsVLLM(t *testing.T) {
	// vLLM's --sla-params file: a list of constraint sets, each searched for on its own.
	path := filepath.Join(t.TempDir(), "sla.json")
	require.NoError(t, os.WriteFile(path, []byte(`[{"p99_ttft_ms": "<=500", "p99_tpot_ms": "<=50"}, {"p99_e2el_ms": "<2000"}]`), 0o644))
	slos, err := loadgen.ParseSLOParams(path)
	require.NoError(t, err)
	require.Len(t, slos, 2)
	assert.Equal(t, "p99_ttft_ms<=500.00, p99_tpot_ms<=50.00", slos[0].Text(", "), "in the file's order, printed as vLLM's as_text")
	assert.Equal(t, "p99_e2el_ms<2000.00", slos[1].Text("-"))
	assert.Equal(t, []float64{99, 99}, slos[0].Percentiles())

	one, err := loadgen.ParseSLOParams(`{"p90_ttft_ms": ">= 1"}`)
	require.NoError(t, err, "a JSON string, one object")
	assert.Equal(t, loadgen.SLO{{Metric: "p90_ttft_ms", Op: ">=", Target: 1}}, one[0])

	for _, bad := range []string{`[]`, `[{}]`, `{"p99_ttft_ms": 500}`, `{"p99_ttft_ms": "==500"}`, `[1]`, `{`, `{"p99_ttft_ms": "<=-5"}`, filepath.Join(t.TempDir(), "missing.json")} {
		_, err := loadgen.ParseSLOParams(bad)
		assert.Error(t, err, "%q", bad)
	}
	ge, err := loadgen.ParseSLOParams(`{"output_throughput": ">=-1"}`)
	require.NoError(t, err, "a lower bound below 0 is always met, and harmless")
	assert.Equal(t, -1.0, ge[0][0].Target)
	_, err = loadgen.ParseSLOParams(`{"p99_ttft_ms": "=>500"}`)
	assert.ErrorContains(t, err, "valid operators are <, <=, >, >=")
	// Truncated, or with something after: not read as the JSON it starts with.
	for _, bad := range []string{`{"p99_ttft_ms": "<=100"`, `{"p99_ttft_ms": "<=100"} trailing`, `[{"p99_ttft_ms": "<=100"}`} {
		_, err := loadgen.ParseSLOParams(bad)
		assert.ErrorContains(t, err, "--sla-params: not valid JSON", "%q", bad)
	}
}

func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"p99_ttft_ms<=500", `{"p99_ttft_ms": "<=500"}`, `[{"a": ">1", "b": "<2"}]`, "x<", "<<=", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if slo, err := loadgen.ParseSLO(s); err == nil {
			require.NotEmpty(t, slo)
			for _, c := range slo {
				require.False(t, math.IsNaN(c.Target) || math.IsInf(c.Target, 0))
				require.Contains(t, []string{"<", "<=", ">", ">="}, c.Op)
			}
		}
		if strings.HasPrefix(strings.TrimSpace(s), "[") || strings.HasPrefix(strings.TrimSpace(s), "{") {
			if slos, err := loadgen.ParseSLOParams(s); err == nil {
				require.NotEmpty(t, slos)
			}
		}
	})
}

func TestCriterionMarginAsVLLM(t *testing.T) {
	cases := []struct {
		op     string
		actual float64
		met    bool
	}{
		{"<=", 500, true}, {"<=", 500.01, false}, {"<", 500, false}, {"<", 499.9, true},
		{">=", 10, true}, {">=", 9.99, false}, {">", 10, false}, {">", 10.01, true},
	}
	for _, c := range cases {
		crit := loadgen.Criterion{Metric: "m", Op: c.op, Target: map[bool]float64{true: 500, false: 10}[strings.HasPrefix(c.op, "<")]}
		assert.Equal(t, c.met, crit.Margin(c.actual) <= 0, "%v %s", c.actual, crit)
	}
}

// latencyAt is a server whose p99 TTFT grows linearly with the load and whose runs sustain a
// concurrency of value (Little: throughput x mean E2E).
func latencyAt(perUnit float64, calls *[]int) loadgen.ProbeFunc {
	return func(_ context.Context, v int, _ string) ([]loadgen.ResultDoc, error) {
		*calls = append(*calls, v)
		return []loadgen.ResultDoc{{
			{Key: "p99_ttft_ms", Value: loadgen.PyFloat(perUnit * float64(v))},
			{Key: "request_throughput", Value: loadgen.PyFloat(float64(v))},
			{Key: "mean_e2el_ms", Value: loadgen.PyFloat(1000)},
		}}, nil
	}
}

func TestSearchSLOAsServeSLA(t *testing.T) {
	slo := loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}
	var calls []int
	var heard []int
	res, err := loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 200},
		latencyAt(10, &calls), func(p loadgen.SLOProbe) { heard = append(heard, p.Value) })
	require.NoError(t, err)
	// Everything at once (200, fails); Little's guess is 200 too, already known; bisection of
	// [0, 200] down to one step.
	assert.Equal(t, []int{200, 100, 50, 75, 62, 56, 53, 51}, calls)
	assert.Equal(t, calls, heard)
	assert.Equal(t, 50, res.Knee, "10 ms a unit: 50 is the last to meet 500 ms")
	assert.Equal(t, []string{"max", "bisect", "bisect", "bisect", "bisect", "bisect", "bisect", "bisect"}, phases(res))
	assert.Equal(t, "Maximum max_concurrency for SLA: 50", loadgen.KneeLine(loadgen.SLOConcurrency, res.Knee))

	// A guess below the knee doubles until a probe fails, then bisects between.
	calls = nil
	guessLow := func(ctx context.Context, v int, phase string) ([]loadgen.ResultDoc, error) {
		docs, err := latencyAt(10, &calls)(ctx, v, phase)
		docs[0] = docs[0].Set("request_throughput", loadgen.PyFloat(7))
		return docs, err
	}
	res, err = loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLORate, SLO: slo}, guessLow, nil)
	require.NoError(t, err)
	assert.Equal(t, []int{65536, 7, 14, 28, 56, 42, 49, 52, 50, 51}, calls)
	assert.Equal(t, 50, res.Knee)
	assert.Equal(t, "Maximum request_rate for SLA: 50 req/s.", loadgen.KneeLine(loadgen.SLORate, res.Knee))
	assert.Equal(t, []int{7, 14, 28, 42, 49, 50, 51, 52, 56, 65536}, values(res.ByValue()))

	// Met with everything at once: nothing more to search.
	calls = nil
	res, err = loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 40}, latencyAt(10, &calls), nil)
	require.NoError(t, err)
	assert.Equal(t, []int{40}, calls)
	assert.Equal(t, 40, res.Knee)

	// Never met: the knee is 0, after probing 1.
	calls = nil
	res, err = loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 64}, latencyAt(1000, &calls), nil)
	require.NoError(t, err)
	assert.Equal(t, 0, res.Knee)
	assert.Contains(t, calls, 1)
	assert.NotContains(t, calls, 0, "never a probe of 0")
}

func TestSearchSLOStopsOnErrors(t *testing.T) {
	slo := loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}
	var calls []int
	boom := errors.New("interrupted")
	failSecond := func(ctx context.Context, v int, phase string) ([]loadgen.ResultDoc, error) {
		docs, _ := latencyAt(10, &calls)(ctx, v, phase)
		if len(calls) == 2 {
			return docs, boom // what finished is kept
		}
		return docs, nil
	}
	res, err := loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 200}, failSecond, nil)
	assert.ErrorIs(t, err, boom)
	assert.Len(t, res.Probes, 2)
	assert.Equal(t, 0, res.Knee, "100 failed, nothing passed yet")

	missing := func(context.Context, int, string) ([]loadgen.ResultDoc, error) {
		return []loadgen.ResultDoc{{{Key: "p50_ttft_ms", Value: loadgen.PyFloat(1)}}}, nil
	}
	_, err = loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo}, missing, nil)
	assert.ErrorContains(t, err, `SLA metric "p99_ttft_ms" is not in the results`)
}

func phases(r loadgen.SLOResult) []string {
	var out []string
	for _, p := range r.Probes {
		out = append(out, p.Phase)
	}
	return out
}

func values(ps []loadgen.SLOProbe) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.Value)
	}
	return out
}

func TestSummaryCSVAsPandas(t *testing.T) {
	docs := []loadgen.ResultDoc{
		{{Key: "date", Value: "20260101-000000"}, {Key: "max_concurrency", Value: nil}, {Key: "request_rate", Value: "inf"},
			{Key: "output_throughput", Value: loadgen.PyFloat(100)}, {Key: "failures_by_class", Value: map[string]int{"http_400": 2}}},
		{{Key: "date", Value: "20260101-000001"}, {Key: "label", Value: "a,b"}, {Key: "output_throughput", Value: loadgen.PyFloat(0.5)}},
	}
	docs[0] = docs[0].Set("max_concurrency", 8).Set("run_number", 0)
	var b bytes.Buffer
	require.NoError(t, loadgen.WriteSummaryCSV(&b, docs))
	rows, err := csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, []string{"", "date", "max_concurrency", "request_rate", "output_throughput", "failures_by_class", "run_number", "label"}, rows[0])
	assert.Equal(t, []string{"0", "20260101-000000", "8", "inf", "100.0", "{'http_400': 2}", "0", ""}, rows[1])
	assert.Equal(t, []string{"1", "20260101-000001", "", "", "0.5", "", "", "a,b"}, rows[2])
}

func TestSaveSLOLayoutAsServeSLA(t *testing.T) {
	dir := t.TempDir()
	s := loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}}
	p := loadgen.SLOProbe{Value: 8, Docs: []loadgen.ResultDoc{{{Key: "max_concurrency", Value: 8}, {Key: "run_number", Value: 0}}}}
	require.NoError(t, loadgen.SaveSLOProbe(dir, s.Variable, p))
	all, err := loadgen.SaveSLOResult(dir, s, loadgen.SLOResult{Probes: []loadgen.SLOProbe{p}, Knee: 8})
	require.NoError(t, err)
	assert.Len(t, all, 1)
	for _, name := range []string{"max_concurrency=8/run=0.json", "max_concurrency=8/summary.json", "SLA--p99_ttft_ms<=500.00.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.True(t, json.Valid(b), name)
	}
	assert.Equal(t, "a_b__c", loadgen.SanitizeFilename("a/b..c\x1b"))
}

func TestSearchSLOFromAStart(t *testing.T) {
	slo := loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}
	var calls []int
	res, err := loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 200, Start: 8},
		latencyAt(10, &calls), nil)
	require.NoError(t, err)
	// No probe at everything-at-once: doubling from 8 to the first failure, then bisection.
	assert.Equal(t, []int{8, 16, 32, 64, 48, 56, 52, 50, 51}, calls)
	assert.Equal(t, 50, res.Knee)

	// A start that fails bisects below it; a top that passes is probed, not assumed to fail.
	calls = nil
	res, err = loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 200, Start: 80},
		latencyAt(10, &calls), nil)
	require.NoError(t, err)
	assert.Equal(t, []int{80, 40, 60, 50, 55, 52, 51}, calls)
	assert.Equal(t, 50, res.Knee)
	calls = nil
	res, err = loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 40, Start: 16},
		latencyAt(10, &calls), nil)
	require.NoError(t, err)
	assert.Equal(t, []int{16, 32, 40}, calls)
	assert.Equal(t, 40, res.Knee)
}

func TestSearchSLOWithATolerance(t *testing.T) {
	slo := loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}
	var calls []int
	res, err := loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 1000, Start: 8, Tolerance: 0.1},
		latencyAt(10, &calls), nil)
	require.NoError(t, err)
	// [32, 64] narrows to [48, 56] (8 above 48: more than 10%), then to [48, 52] (4: within).
	assert.Equal(t, []int{8, 16, 32, 64, 48, 56, 52}, calls)
	assert.Equal(t, 48, res.Knee, "the largest value that passed, within the tolerance of the true knee (50)")
}

// A discarded probe is made again and never scored: here the server "restarts" during the
// second and third calls, whose p99 (a bad one, 10x) would have put the knee far too low.
func TestSearchSLORetriesDiscardedProbes(t *testing.T) {
	slo := loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}
	var calls []int
	var heard []loadgen.SLODiscard
	n := 0
	flaky := func(ctx context.Context, v int, phase string) ([]loadgen.ResultDoc, error) {
		n++
		if n == 2 || n == 3 {
			docs, _ := latencyAt(100, &calls)(ctx, v, phase)
			return docs, loadgen.Discard("the server was restarting")
		}
		return latencyAt(10, &calls)(ctx, v, phase)
	}
	s := loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 200, OnDiscard: func(d loadgen.SLODiscard) { heard = append(heard, d) }}
	res, err := loadgen.SearchSLO(context.Background(), s, flaky, nil)
	require.NoError(t, err)
	assert.Equal(t, 50, res.Knee, "the knee of the good probes")
	assert.Equal(t, []int{200, 100, 100, 100, 50, 75, 62, 56, 53, 51}, calls, "100 made three times")
	assert.Equal(t, []int{200, 100, 50, 75, 62, 56, 53, 51}, values(res.Probes), "each value scored once")
	require.Len(t, res.Discarded, 2)
	assert.Equal(t, loadgen.SLODiscard{Value: 100, Phase: "bisect", Try: 2, Reason: "the server was restarting"}, res.Discarded[1])
	assert.Equal(t, res.Discarded, heard)

	// Always discarded: the value could not be measured, after 1 + 2 tries.
	calls, n = nil, 0
	down := func(ctx context.Context, v int, phase string) ([]loadgen.ResultDoc, error) {
		calls = append(calls, v)
		return nil, loadgen.Discard("unreachable: no answer within 5s")
	}
	res, err = loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 200}, down, nil)
	var um *loadgen.UnmeasuredError
	require.ErrorAs(t, err, &um)
	assert.Equal(t, 3, um.Tries)
	assert.Equal(t, "max_concurrency=200 could not be measured: 3 probes discarded, the last as unreachable: no answer within 5s", err.Error())
	assert.Empty(t, res.Probes, "nothing scored")
	assert.Equal(t, []int{200, 200, 200}, calls)

	// Retries below 0: one try.
	calls = nil
	_, err = loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLOConcurrency, SLO: slo, Max: 200, Retries: -1}, down, nil)
	require.ErrorAs(t, err, &um)
	assert.Len(t, calls, 1)
}

// A probe whose server fell behind fails however good its latencies read: above 40 req/s the
// fake server's short windows all meet the SLO, but it serves no more than 40.
func TestSearchSLOFailsAProbeTheServerDidNotKeepUpWith(t *testing.T) {
	slo := loadgen.SLO{{Metric: "p99_ttft_ms", Op: "<=", Target: 500}}
	var calls []int
	behind := func(ctx context.Context, v int, phase string) ([]loadgen.ResultDoc, error) {
		docs, err := latencyAt(1, &calls)(ctx, v, phase) // 1 ms a request: every probe passes
		if v > 40 {
			return docs, &loadgen.UnsustainedError{Reason: fmt.Sprintf("served 40 of %d req/s", v)}
		}
		return docs, err
	}
	res, err := loadgen.SearchSLO(context.Background(), loadgen.SLOSearch{Variable: loadgen.SLORate, SLO: slo, Max: 200, Start: 8}, behind, nil)
	require.NoError(t, err)
	assert.Equal(t, 40, res.Knee, "the last rate it kept up with")
	for _, p := range res.Probes {
		if p.Value > 40 {
			assert.False(t, p.Passed(), "%d req/s", p.Value)
			assert.Equal(t, fmt.Sprintf("served 40 of %d req/s", p.Value), p.Unsustained)
			assert.NotEmpty(t, p.Docs, "its measurements are kept")
		} else {
			assert.True(t, p.Passed())
			assert.Empty(t, p.Unsustained)
		}
	}
}
