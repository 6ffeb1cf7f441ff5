package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/refused"
)

// benchFakeServer streams two tokens and usage for every completion and counts the requests
// and the prompts it saw.
type benchFakeServer struct {
	*httptest.Server
	requests atomic.Int64
	prompts  chan string
}

func newBenchFakeServer(t *testing.T) *benchFakeServer {
	f := &benchFakeServer{prompts: make(chan string, 1000)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		var body struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.prompts <- body.Prompt
		w.Header().Set("Content-Type", "text/event-stream")
		for _, tok := range []string{"a", "b"} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"%s\",\"finish_reason\":null}]}\n\n", tok)
		}
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"total_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func newBenchClient(t *testing.T, url string) *Client {
	c, err := NewClient(ClientConfig{BaseURL: url, Model: "m"})
	require.NoError(t, err)
	return c
}

// numbered prompts tell which prompt indices a run used.
type numbered struct{}

func (numbered) Prompt(i int) Prompt { return Prompt{Text: fmt.Sprint(i), OutputTokens: 2} }
func (numbered) Name() string        { return "numbered" }

func TestBenchMeasuresOnlyAfterWarmups(t *testing.T) {
	f := newBenchFakeServer(t)
	c := newBenchClient(t, f.URL)
	var sunk atomic.Int64
	run, err := Bench(context.Background(), c, BenchConfig{Workload: numbered{}, NumPrompts: 10, Warmups: 3,
		RequestRate: math.Inf(1), MaxConcurrency: 2, Sinks: []func(Result){func(Result) { sunk.Add(1) }}})
	require.NoError(t, err)
	assert.Equal(t, int64(13), f.requests.Load())
	assert.Equal(t, 10, run.Tally.Count())
	assert.Equal(t, int64(10), sunk.Load(), "sinks see measured requests only")
	assert.Positive(t, run.Duration)
	close(f.prompts)
	var seen []string
	for p := range f.prompts {
		seen = append(seen, p)
	}
	// Warm-ups send the first measured prompt, as vLLM's send its test request, and come first.
	assert.Equal(t, []string{"0", "0", "0"}, seen[:3])
	assert.ElementsMatch(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, seen[3:])
	s := run.Tally.Summary(run.Duration, []float64{99})
	assert.Equal(t, 10, s.Completed)
	assert.Equal(t, 20, s.TotalOutputTokens)
}

func TestBenchOpenLoopAndLimits(t *testing.T) {
	f := newBenchFakeServer(t)
	c := newBenchClient(t, f.URL)
	run, err := Bench(context.Background(), c, BenchConfig{Workload: numbered{}, NumPrompts: 5, RequestRate: 1000, Burstiness: 1})
	require.NoError(t, err)
	assert.Equal(t, 5, run.Tally.Count())

	// Sad paths: no end, or everything at once with no count.
	_, err = Bench(context.Background(), c, BenchConfig{Workload: numbered{}, RequestRate: math.Inf(1)})
	assert.ErrorIs(t, err, ErrNoLimit)
	_, err = Bench(context.Background(), c, BenchConfig{Workload: numbered{}, Duration: time.Second, RequestRate: math.Inf(1)})
	assert.ErrorIs(t, err, ErrUnboundedConcurrency)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Bench(ctx, c, BenchConfig{Workload: numbered{}, NumPrompts: 5, MaxConcurrency: 1})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestOffsetShiftsPrompts(t *testing.T) {
	w := Offset(numbered{}, 100)
	assert.Equal(t, "105", w.Prompt(5).Text)
	assert.Equal(t, "numbered", w.Name())
	assert.Equal(t, numbered{}, Offset(numbered{}, 0))
}

func TestModelsAndHealth(t *testing.T) {
	var ready atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"served","root":"org/model","max_model_len":4096}]}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"Unauthorized"}`)
		}
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			ready.Store(true)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c, err := NewClient(ClientConfig{BaseURL: srv.URL, APIKey: "good"})
	require.NoError(t, err)
	models, err := c.Models(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []ModelCard{{ID: "served", Root: "org/model", MaxModelLen: 4096, Request: "served"}}, models)
	require.NoError(t, c.WaitHealthy(context.Background(), time.Millisecond))

	// Sad paths: a refused key, no server, a server that is not OpenAI-compatible.
	bad, _ := NewClient(ClientConfig{BaseURL: srv.URL})
	_, err = bad.Models(context.Background())
	var se *ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 401, se.Status)
	assert.Equal(t, srv.URL+"/v1/models: HTTP 401: Unauthorized", err.Error())

	goneURL := "http://" + refused.Addr(t)
	dead, _ := NewClient(ClientConfig{BaseURL: goneURL})
	_, err = dead.Models(context.Background())
	assert.Equal(t, "cannot reach "+goneURL+": connection refused", err.Error())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.Error(t, dead.WaitHealthy(ctx, 5*time.Millisecond))

	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html>\n<body>nope</body>\n</html>")
	}))
	defer html.Close()
	other, _ := NewClient(ClientConfig{BaseURL: html.URL})
	_, err = other.Models(context.Background())
	assert.Equal(t, html.URL+"/v1/models: HTTP 404: 404 Not Found", err.Error())
	assert.NotContains(t, err.Error(), "\n")
}

func TestProgressLine(t *testing.T) {
	p := NewProgress(1000, 0)
	for i := 0; i < 120; i++ {
		p.Add(Result{OutputTokens: 50})
	}
	for i := 0; i < 3; i++ {
		p.Add(Result{Error: ErrReset})
	}
	p.Add(Result{Error: ErrCanceled})
	p.Add(Result{Warmup: true})
	assert.Equal(t, "requests 123/1000, 3 failed, 500 tok/s, elapsed 12s", p.Line(12*time.Second))
	assert.Equal(t, "[##..................] requests 123/1000, 3 failed, 488 tok/s, elapsed 12s", p.Bar(12*time.Second+300*time.Millisecond))

	byTime := NewProgress(0, time.Minute)
	assert.Equal(t, "[##########..........] requests 0, 0 failed, 0 tok/s, elapsed 30s", byTime.Bar(30*time.Second))
}

func TestProgressStartAndStop(t *testing.T) {
	p := NewProgress(2, 0)
	p.Add(Result{OutputTokens: 1})
	var plain strings.Builder
	stop := p.Start(&plain, false)
	stop()
	stop()
	assert.True(t, strings.HasPrefix(plain.String(), "requests 1/2, 0 failed"), plain.String())
	assert.Equal(t, 1, strings.Count(plain.String(), "\n"))

	var term strings.Builder
	p.Start(&term, true)()
	assert.Equal(t, "\r\x1b[K", term.String(), "a terminal's bar is erased at stop")
}

// TestBenchStopsEarlyOnA401Storm: a server that refuses every request ends the run after the
// back-off's threshold, not after its hundred thousand prompts.
func TestBenchStopsEarlyOnA401Storm(t *testing.T) {
	srv := newStorm(t)
	c := newBenchClient(t, srv.URL)
	fast := BackoffConfig{Base: time.Microsecond, Max: 10 * time.Microsecond}
	run, err := Bench(context.Background(), c, BenchConfig{Workload: numbered{}, NumPrompts: 100000, MaxConcurrency: 4, Backoff: fast})
	require.NoError(t, err)
	defer run.Tally.Close()
	require.NotNil(t, run.Stopped)
	seen := srv.seen.Load()
	assert.LessOrEqual(t, seen, int64(DefaultPauseAfter+4))
	assert.Equal(t, int(seen), run.Tally.Count(), "every request sent is counted")
	assert.Regexp(t, `^stopped early: 5\d requests in a row failed before any output \(http_401 5\d; last: HTTP 401 Unauthorized: Invalid API key\)$`, run.Stopped.Error())

	// Warm-ups stop the same way, and the measured run is not made.
	srv.seen.Store(0)
	run, err = Bench(context.Background(), c, BenchConfig{Workload: numbered{}, NumPrompts: 10, Warmups: 1000, MaxConcurrency: 4, Backoff: fast})
	require.NoError(t, err)
	defer run.Tally.Close()
	require.NotNil(t, run.Stopped)
	assert.LessOrEqual(t, srv.seen.Load(), int64(DefaultPauseAfter+4))
	assert.Zero(t, run.Tally.Count())
}

func TestReportWordsAnEarlyStopInOneLine(t *testing.T) {
	srv := newStorm(t)
	cfg := sweepConfig()
	cfg.Concurrency, cfg.NumPrompts = []int{4, 8}, 100000
	cfg.Backoff = BackoffConfig{Base: time.Microsecond, Max: 10 * time.Microsecond}
	var warnings []string
	var out strings.Builder
	rep := &Report{Out: &out, Warn: func(m string) { warnings = append(warnings, m) }}
	var runs int
	require.NoError(t, Sweep(context.Background(), newBenchClient(t, srv.URL), cfg, func(r SweepRun) { runs++; rep.Add(r) }))
	require.NoError(t, rep.Close())
	assert.Equal(t, 1, runs, "the sweep stops at the run that stopped")
	assert.True(t, rep.Failed())
	require.Len(t, warnings, 1, "%q", warnings)
	assert.Regexp(t, `^stopped early: \d+ requests in a row failed before any output \(http_401 \d+; last: HTTP 401 Unauthorized: Invalid API key\); the sweep stops here$`, warnings[0])
	assert.Contains(t, out.String(), "Failed requests:", "the table still says what was sent")
}

func TestBenchInterruptedDuringWarmupsReportsAnEmptyRun(t *testing.T) {
	g := newGateServer(t)
	c := newTestClient(t, g.URL, EndpointCompletions)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-g.arrived // the first warm-up is under way
		cancel()
	}()
	var runs []SweepRun
	cfg := sweepConfig()
	cfg.Warmups, cfg.Concurrency = 5, []int{1} // one warm-up at a time: the cancel finds them under way
	err := Sweep(ctx, c, cfg, func(r SweepRun) { runs = append(runs, r) })
	assert.ErrorIs(t, err, context.Canceled)
	require.Len(t, runs, 1)
	assert.True(t, runs[0].Interrupted)
	assert.Zero(t, runs[0].Summary.Completed+runs[0].Summary.Failed)
}

// The ready check sends the first measured prompt before the run, unmeasured, as vllm bench
// serve's initial test run does.
func TestBenchReadyCheckSendsTheFirstPromptFirst(t *testing.T) {
	f := newBenchFakeServer(t)
	c := newBenchClient(t, f.URL)
	var notes []string
	run, err := Bench(context.Background(), c, BenchConfig{Workload: numbered{}, NumPrompts: 4, Warmups: 1,
		ReadyCheck: time.Minute, RequestRate: math.Inf(1), MaxConcurrency: 1, Note: func(s string) { notes = append(notes, s) }})
	require.NoError(t, err)
	assert.Equal(t, 4, run.Tally.Count())
	assert.Equal(t, []string{"Waiting for endpoint to become up in 60 seconds", "Initial test run completed.",
		"Warming up with 1 requests...", "Warmup run completed."}, notes, "vLLM's lines, in order")
	close(f.prompts)
	var seen []string
	for p := range f.prompts {
		seen = append(seen, p)
	}
	assert.Equal(t, []string{"0", "0", "0", "1", "2", "3"}, seen, "test run, warm-up, then the measured prompts")
}

// A server that refuses the test request is asked again every ReadyRetry until the check's
// time is up; then the run fails with vLLM's message and the last error, and measures nothing.
// On the virtual clock, so the retries take no wall time.
func TestBenchReadyCheckRetriesThenFails(t *testing.T) {
	var tries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tries.Add(1)
		http.Error(w, `{"error":{"message":"not ready"}}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	c := newBenchClient(t, srv.URL)
	clock := NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clock.Now()
	run, err := Bench(context.Background(), c, BenchConfig{Workload: numbered{}, NumPrompts: 4, ReadyCheck: 12 * time.Second,
		RequestRate: math.Inf(1), MaxConcurrency: 1, Clock: clock})
	var ite *InitialTestRunError
	require.ErrorAs(t, err, &ite)
	assert.Contains(t, err.Error(), "Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: ")
	assert.Contains(t, ite.Last, "503")
	assert.Nil(t, run.Tally)
	assert.Equal(t, int64(3), tries.Load(), "tries at 0, 5 and 10 s of a 12 s check")
	assert.Equal(t, 12*time.Second, clock.Now().Sub(start).Round(time.Second))
}

// A server that comes up during the check is measured as usual.
func TestBenchReadyCheckWaitsForTheServer(t *testing.T) {
	f := newBenchFakeServer(t)
	var tries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" { // the run's read of /metrics
			http.NotFound(w, r)
			return
		}
		if tries.Add(1) <= 2 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		f.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := newBenchClient(t, srv.URL)
	clock := NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	run, err := Bench(context.Background(), c, BenchConfig{Workload: numbered{}, NumPrompts: 2, ReadyCheck: time.Minute,
		RequestRate: math.Inf(1), MaxConcurrency: 1, Clock: clock})
	require.NoError(t, err)
	assert.Equal(t, 2, run.Tally.Count())
	assert.Equal(t, int64(5), tries.Load(), "two refusals, the test run, two measured")
}
