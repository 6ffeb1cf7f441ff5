package predict_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/predict"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

func noEnv(string) string { return "" }

// plan resolves a simulator command line.
func plan(t testing.TB, args ...string) *serve.Plan {
	t.Helper()
	p, err := serve.Prepare(append(args, "--sim-startup-seconds", "0"), noEnv)
	require.NoError(t, err)
	return p
}

// randomWorkload builds random prompts of exact lengths for the target's tokenizer.
func randomWorkload(t testing.TB, tok loadgen.Tokenizer, in, out int) loadgen.Workload {
	t.Helper()
	v, err := loadgen.CalibrateVocab(context.Background(), tok)
	require.NoError(t, err)
	require.True(t, v.Checked)
	w, err := loadgen.NewRandom(loadgen.RandomConfig{InputLen: in, OutputLen: out, IgnoreEOS: true, Seed: 3}, v)
	require.NoError(t, err)
	return w
}

// sweep runs a concurrency sweep through loadgen.Sweep, against c or (c nil) the target v on its
// virtual clock, and returns each run's summary.
func sweep(t testing.TB, c *loadgen.Client, v *predict.Target, w loadgen.Workload, conc []int, n int) []loadgen.Summary {
	t.Helper()
	cfg := loadgen.SweepConfig{Workload: w, NumPrompts: n, Concurrency: conc, Rates: []float64{math.Inf(1)}, Burstiness: 1,
		Info: loadgen.RunInfo{Metrics: loadgen.PercentileMetrics, Percentiles: []float64{50, 99}}, FreshPrompts: true}
	if v != nil {
		cfg.Transport, cfg.Clock = v, v.Clock()
	}
	var out []loadgen.Summary
	require.NoError(t, loadgen.Sweep(context.Background(), c, cfg, func(r loadgen.SweepRun) { out = append(out, r.Summary) }))
	require.Len(t, out, len(conc))
	return out
}

// The virtual clock predicts what the wall-clock simulator measures over HTTP, within 2%: the
// same engine, prompts and statistics, without the waiting. The model is large enough (8B on an
// L4: steps of about 50 ms) that the loopback HTTP stack's millisecond is well under 2%. A busy
// machine can only slow the wall clock's side (on 2 shared cores, the whole suite at once adds
// some 2% to its TTFT at C=1), so a sweep that misses is made again, on fresh prompts, up to
// wallAttempts times; the prediction is the same each time, and the last attempt must agree.
func TestVirtualAgreesWithTheWallClock(t *testing.T) {
	const wallAttempts = 3
	args := []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--max-model-len", "4096"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	inst, err := serve.Start(context.Background(), append(args, "--sim-startup-seconds", "0"), noEnv, serve.WithListener(ln))
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Stop() })
	require.Eventually(t, inst.Ready, 5*time.Second, time.Millisecond)
	c, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: inst.URL()})
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)

	w := randomWorkload(t, c, 1536, 4)
	assert.Equal(t, w.Prompt(0), randomWorkload(t, predict.New(plan(t, args...), loadgen.EndpointCompletions), 1536, 4).Prompt(0),
		"the virtual tokenizer builds the same prompts")
	conc := []int{1, 4}
	for attempt := 1; ; attempt++ {
		prompts := loadgen.Offset(w, attempt*1000) // fresh: the wall server's prefix cache holds the last attempt's
		wall := sweep(t, c, nil, prompts, conc, 6)
		virtual := sweep(t, nil, predict.New(plan(t, args...), loadgen.EndpointCompletions), prompts, conc, 6)
		var misses []string
		near := func(what string, want, got float64) {
			t.Logf("attempt %d: %s: wall %.3f, virtual %.3f (%+.2f%%)", attempt, what, want, got, 100*(got-want)/want)
			if math.Abs(got-want) > 0.02*math.Abs(want) {
				misses = append(misses, what)
			}
		}
		for i, c := range conc {
			wl, vr := wall[i], virtual[i]
			require.Equal(t, wl.Completed, vr.Completed)
			require.Equal(t, wl.TotalOutputTokens, vr.TotalOutputTokens)
			near("mean TTFT at C="+itoa(c), wl.TTFT.Mean, vr.TTFT.Mean)
			near("mean TPOT at C="+itoa(c), wl.TPOT.Mean, vr.TPOT.Mean)
			near("mean E2EL at C="+itoa(c), wl.E2EL.Mean, vr.E2EL.Mean)
			near("output throughput at C="+itoa(c), wl.OutputThroughput, vr.OutputThroughput)
		}
		if len(misses) == 0 {
			return
		}
		if attempt == wallAttempts {
			t.Fatalf("after %d attempts, the virtual clock is more than 2%% off the wall clock's %v", attempt, misses)
		}
	}
}

// maxInFlight is the most requests in flight at once, from their start and end times.
func maxInFlight(rs []loadgen.Result) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range rs {
		edges = append(edges, edge{r.Start, 1}, edge{r.Start.Add(r.E2EL), -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta // an end frees its slot before a start takes it
		}
		return edges[i].at.Before(edges[j].at)
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

func itoa(n int) string { return strconv.Itoa(n) }

// bench makes one run on the target and returns it with every result its sinks heard (the
// target runs one request at a time: no lock is needed) and its summary.
func bench(t *testing.T, target *predict.Target, ctx context.Context, cfg loadgen.BenchConfig, ps ...float64) (loadgen.BenchRun, []loadgen.Result, loadgen.Summary, error) {
	t.Helper()
	var got []loadgen.Result
	cfg.Sinks = append(cfg.Sinks, func(r loadgen.Result) { got = append(got, r) })
	run, err := target.Bench(ctx, cfg)
	if run.Tally == nil {
		return run, got, loadgen.Summary{}, err
	}
	t.Cleanup(func() { _ = run.Tally.Close() })
	return run, got, run.Tally.Summary(run.Duration, ps), err
}

// What loadgen's wall-clock sweep test asked of the simulator, on the virtual clock: exact
// lengths, every request served, and throughput that rises with concurrency (never flaky, as
// nothing here depends on the machine's load).
func TestVirtualSweepOnTheSimulator(t *testing.T) {
	for _, endpoint := range []string{loadgen.EndpointCompletions, loadgen.EndpointChat} {
		t.Run(endpoint, func(t *testing.T) {
			target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"), endpoint)
			v, err := loadgen.CalibrateVocab(context.Background(), target)
			require.NoError(t, err)
			w, err := loadgen.NewRandom(loadgen.RandomConfig{InputLen: 128, OutputLen: 32, RangeRatio: 0.25, IgnoreEOS: true, Seed: 1}, v)
			require.NoError(t, err)
			var prev float64
			for _, conc := range []int{1, 8, 32} {
				_, results, s, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: loadgen.Offset(w, conc*1000), NumPrompts: 2*conc + 8, MaxConcurrency: conc}, 50, 99)
				require.NoError(t, err)
				assert.Zero(t, s.Failed, "C=%d: %v", conc, s.FailuresByClass)
				assert.Equal(t, 2*conc+8, s.Completed)
				assert.Equal(t, conc, maxInFlight(results), "the cap holds, and is reached")
				for _, res := range results {
					p := loadgen.Offset(w, conc*1000).Prompt(res.Index)
					assert.True(t, res.OutputFromUsage)
					assert.Equal(t, p.OutputTokens, res.OutputTokens, "ignore_eos: the server generates max_tokens")
					assert.Equal(t, p.InputTokens, res.PromptTokens, "prompts have the exact length the server counts")
					assert.Equal(t, res.OutputTokens, res.Chunks, "one token per chunk")
					assert.Len(t, res.ITLs, res.OutputTokens-1)
				}
				assert.Greater(t, s.OutputThroughput, prev, "throughput rises with concurrency (C=%d)", conc)
				prev = s.OutputThroughput
			}
		})
	}
}

// The open loop sends on loadgen's schedule; under a cap, arrivals wait on the client and the
// wait is measured.
func TestVirtualOpenLoop(t *testing.T) {
	target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"), loadgen.EndpointCompletions)
	w := &loadgen.Fixed{P: loadgen.Prompt{Text: "the model of the data", OutputTokens: 64, IgnoreEOS: true}}
	before := target.Now()
	_, results, s, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: 40, RequestRate: 5, Burstiness: 1, Seed: 7}, 50)
	require.NoError(t, err)
	require.Len(t, results, 40)
	byIndex := make([]loadgen.Result, 40)
	for _, r := range results {
		byIndex[r.Index] = r
	}
	// The schedule is the Runner's own (TestBothTransportsSendTheSameRequests holds it to the
	// wall clock's): seeded gaps from the start, each request sent when due.
	prev := before
	for _, r := range byIndex {
		assert.True(t, r.Intended.After(prev), "request %d comes a gap after the one before", r.Index)
		assert.Equal(t, r.Intended, r.Start, "no cap: sent when due")
		prev = r.Intended
	}
	assert.InDelta(t, 5, s.RequestThroughput, 2.5, "about the rate asked for")

	_, capped, cs, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: 40, RequestRate: 200, Burstiness: 1, MaxConcurrency: 2}, 50)
	require.NoError(t, err)
	assert.Equal(t, 40, cs.Completed)
	assert.Equal(t, 2, maxInFlight(capped))
	assert.Greater(t, cs.Queue.Mean, 100.0, "arrivals at 200/s wait for one of two slots (ms)")
}

// A request the server refuses fails as HTTP 400 and the run still ends, by count or by time;
// refusals in a row are spaced by the back-off, as a Runner spaces them.
func TestVirtualRefusedRequests(t *testing.T) {
	target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--max-model-len", "64"), loadgen.EndpointCompletions)
	w := &loadgen.Fixed{P: loadgen.Prompt{Text: "the model", OutputTokens: 100, IgnoreEOS: true}}
	run, results, s, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: 5, MaxConcurrency: 2})
	require.NoError(t, err)
	assert.Nil(t, run.Stopped, "five refusals are not the back-off's threshold")
	assert.Equal(t, 5, s.Failed)
	require.Len(t, results, 5)
	for i, r := range results {
		assert.Equal(t, loadgen.ErrHTTP400, r.Error)
		assert.Contains(t, r.ErrorMessage, "max_tokens=100 cannot be greater than max_model_len")
		if i > 0 {
			gap := r.Start.Sub(results[i-1].Start)
			assert.GreaterOrEqual(t, gap, (loadgen.DefaultBackoffBase<<(i-1))/2, "refusal %d waits the back-off after the one before", i)
		}
	}
	byTime, timed, _, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, Duration: time.Second, MaxConcurrency: 3})
	require.NoError(t, err)
	assert.Nil(t, byTime.Stopped)
	assert.NotEmpty(t, timed)
	assert.Less(t, len(timed), 15, "about 8 doublings of 10 ms fit in a second")
	assert.LessOrEqual(t, byTime.Duration, 1100*time.Millisecond)
}

// Refusals that reach the back-off's threshold stop a run early, in the closed loop and the
// open one alike, as loadgen.Bench's stop; with the back-off off every request is sent.
func TestVirtualStopsAfterRefusals(t *testing.T) {
	w := &loadgen.Fixed{P: loadgen.Prompt{Text: "the model", OutputTokens: 100, IgnoreEOS: true}}
	fast := loadgen.BackoffConfig{Base: time.Microsecond, Max: time.Microsecond}
	for name, cfg := range map[string]loadgen.BenchConfig{
		"closed": {Workload: w, NumPrompts: 200, MaxConcurrency: 4, Backoff: fast},
		"open":   {Workload: w, NumPrompts: 200, RequestRate: 1000, Burstiness: 1, Backoff: fast},
		"warmup": {Workload: w, NumPrompts: 10, Warmups: 80, Backoff: fast},
	} {
		t.Run(name, func(t *testing.T) {
			target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--max-model-len", "64"), loadgen.EndpointCompletions)
			run, results, s, err := bench(t, target, context.Background(), cfg)
			require.NoError(t, err)
			require.NotNil(t, run.Stopped)
			assert.Equal(t, loadgen.DefaultPauseAfter, run.Stopped.Streak.N)
			assert.Equal(t, map[loadgen.ErrorClass]int{loadgen.ErrHTTP400: loadgen.DefaultPauseAfter}, run.Stopped.Streak.ByClass)
			assert.Contains(t, run.Stopped.Error(), "stopped early: 50 requests in a row failed before any output (http_400 50; last: HTTP 400 Bad Request")
			if name == "warmup" {
				assert.Empty(t, results, "the warm-ups stopped: nothing was measured")
				assert.Zero(t, s.Failed+s.Completed)
				return
			}
			assert.Len(t, results, loadgen.DefaultPauseAfter, "nothing starts after the threshold")
			assert.Equal(t, loadgen.DefaultPauseAfter, s.Failed)
		})
	}
	target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--max-model-len", "64"), loadgen.EndpointCompletions)
	run, results, _, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: 200, MaxConcurrency: 4, Backoff: loadgen.BackoffConfig{Off: true}})
	require.NoError(t, err)
	assert.Nil(t, run.Stopped)
	assert.Len(t, results, 200)
}

// Warm-ups run first and are not measured; an ended context reports the requests in flight as
// canceled.
func TestVirtualWarmupsAndCancel(t *testing.T) {
	target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"), loadgen.EndpointCompletions)
	w := &loadgen.Fixed{P: loadgen.Prompt{Text: "the model of the data", OutputTokens: 16, IgnoreEOS: true}}
	before := target.Now()
	_, results, s, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: 4, MaxConcurrency: 4, Warmups: 3})
	require.NoError(t, err)
	require.Len(t, results, 4)
	assert.Equal(t, 4, s.Completed, "the tally counts the measured requests only")
	assert.True(t, results[0].Start.After(before), "the warm-ups ran first, on the same clock")

	results, s, err = benchCanceledAfterTen(t, target, w)
	assert.ErrorIs(t, err, context.Canceled)
	canceled := 0
	for _, r := range results {
		if r.Error == loadgen.ErrCanceled {
			canceled++
		}
	}
	// Those in flight when the tenth ended are canceled: the four slots less the one it freed,
	// less any that ended at the same moment (one chunk of the API server's streaming).
	assert.GreaterOrEqual(t, s.Completed, 10)
	assert.Len(t, results, 10+3)
	assert.Equal(t, len(results)-s.Completed, canceled)
	assert.Zero(t, s.Failed, "a cancel is not a failure")
}

// Goodput and --save-detailed come from the run's Tally, as loadgen.Bench's do.
func TestVirtualTallyGoodputAndDetail(t *testing.T) {
	target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"), loadgen.EndpointCompletions)
	w := &loadgen.Fixed{P: loadgen.Prompt{Text: "the model of the data", OutputTokens: 8, IgnoreEOS: true}}
	dir := t.TempDir()
	run, _, s, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: 6, MaxConcurrency: 2,
		Goodput: loadgen.Goodput{E2EL: time.Hour}, Detailed: true, DetailDir: dir}, 50)
	require.NoError(t, err)
	assert.InDelta(t, s.RequestThroughput, s.RequestGoodput, 1e-9, "every request meets an objective of an hour")
	doc := loadgen.ResultJSON(s, loadgen.RunInfo{}, run.Tally.DetailFields())
	v, ok := doc.Get("output_lens")
	require.True(t, ok)
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, "[8, 8, 8, 8, 8, 8]", string(raw))
	spill, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, spill, 1, "the arrays wait in DetailDir")
	require.NoError(t, run.Tally.Close())
	spill, _ = os.ReadDir(dir)
	assert.Empty(t, spill, "Close removes them")
}

// BenchmarkVirtualSweep is the prediction's cost: a 4-point concurrency sweep of 200 requests
// each (512 in, 128 out) on L4 + Qwen2.5-0.5B, per simulated request.
func BenchmarkVirtualSweep(b *testing.B) {
	p := plan(b, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4")
	w := randomWorkload(b, predict.New(p, loadgen.EndpointCompletions), 512, 128)
	b.ResetTimer()
	for range b.N {
		target := predict.New(p, loadgen.EndpointCompletions)
		sweep(b, nil, target, w, []int{1, 8, 32, 64}, 200)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*800), "ns/request")
}

// BenchmarkVirtualBurst is the cost per request of a burst sent at once (rate inf), thousands in
// flight: a step checks the clients' few contexts, not every request, so it grows linearly.
func BenchmarkVirtualBurst(b *testing.B) {
	p := plan(b, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4")
	w := randomWorkload(b, predict.New(p, loadgen.EndpointCompletions), 16, 4)
	for _, n := range []int{2000, 8000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for range b.N {
				target := predict.New(p, loadgen.EndpointCompletions)
				run, err := target.Bench(context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: n})
				if err != nil {
					b.Fatal(err)
				}
				_ = run.Tally.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/request")
		})
	}
}

// benchCanceledAfterTen sends w's prompt 100 times, four at a time, and cancels the run when
// the tenth request ends.
func benchCanceledAfterTen(t *testing.T, target *predict.Target, w loadgen.Workload) ([]loadgen.Result, loadgen.Summary, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	_, results, s, err := bench(t, target, ctx, loadgen.BenchConfig{Workload: w, NumPrompts: 100, MaxConcurrency: 4, Sinks: []func(loadgen.Result){func(loadgen.Result) {
		if seen++; seen == 10 {
			cancel()
		}
	}}})
	return results, s, err
}

// A request of n choices is one result however many engine sequences it holds: it ends when
// its last choice does, with the choices' tokens, and a cancel ends it once.
func TestVirtualChoicesAreOneRequest(t *testing.T) {
	target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"), loadgen.EndpointCompletions)
	cfg := loadgen.ClientConfig{Model: "Qwen/Qwen2.5-0.5B-Instruct", Extras: loadgen.RequestExtras{Body: map[string]any{"n": 3.0}}}
	target.Admit(loadgen.EndpointCompletions,
		func(p loadgen.Prompt) http.Header { return loadgen.RequestHeader(cfg, p) },
		func(p loadgen.Prompt) ([]byte, error) { return loadgen.RequestBody(cfg, p) })
	w := &loadgen.Fixed{P: loadgen.Prompt{Text: "the model of the data", OutputTokens: 16, IgnoreEOS: true}}
	_, results, s, err := bench(t, target, context.Background(), loadgen.BenchConfig{Workload: w, NumPrompts: 4, MaxConcurrency: 2})
	require.NoError(t, err)
	require.Len(t, results, 4)
	for _, r := range results {
		assert.Equal(t, 3*16, r.OutputTokens, "three choices of 16 tokens")
	}
	assert.Equal(t, 4, s.Completed)

	results, s, err = benchCanceledAfterTen(t, target, w)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, results, 10+3, "each canceled request ends once, whatever its choices")
	assert.GreaterOrEqual(t, s.Completed, 10, "the tenth, and any that ended with it in one chunk")
}

// The virtual clock starts at the wall clock's now, so a run's times (a ramp's
// rps_change_events) are not stamped with a fixed date.
func TestVirtualClockStartsNow(t *testing.T) {
	before := time.Now().Add(-time.Second)
	target := predict.New(plan(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"), loadgen.EndpointCompletions)
	assert.WithinRange(t, target.Now(), before, time.Now().Add(time.Second))
}
