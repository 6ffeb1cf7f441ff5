package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/refused"
)

// gateServer streams one token per request once the test lets the request through.
type gateServer struct {
	*httptest.Server
	active  atomic.Int64
	peak    atomic.Int64
	arrived chan struct{}
	release chan struct{}
}

func newGateServer(t *testing.T) *gateServer {
	g := &gateServer{arrived: make(chan struct{}, 10000), release: make(chan struct{}, 10000)}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices when the client goes away
		n := g.active.Add(1)
		for {
			p := g.peak.Load()
			if n <= p || g.peak.CompareAndSwap(p, n) {
				break
			}
		}
		g.arrived <- struct{}{}
		select {
		case <-g.release:
		case <-r.Context().Done():
		}
		g.active.Add(-1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" hi\",\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"total_tokens\":4,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(g.Close)
	return g
}

// oneTokenServer streams one token to every request, with a usage chunk that counts
// promptTokens.
func oneTokenServer(t *testing.T, promptTokens int) *httptest.Server {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" hi\",\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"total_tokens\":%d,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n",
			promptTokens, promptTokens+1)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func (g *gateServer) waitArrivals(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-g.arrived:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d requests arrived", i, n)
		}
	}
}

func (g *gateServer) noMoreArrivals(t *testing.T) {
	t.Helper()
	select {
	case <-g.arrived:
		t.Fatal("a request started beyond the concurrency")
	default:
	}
}

func fixedWorkload() Workload {
	return &Fixed{P: Prompt{Text: "hello", InputTokens: 3, OutputTokens: 1}}
}

// runGated runs cfg (the fixed workload) against a gate server until the test ends; the
// context is cancelled before the server closes, so no handler is left waiting.
func runGated(t *testing.T, cfg RunnerConfig) (*gateServer, *Runner, <-chan error) {
	t.Helper()
	g := newGateServer(t)
	cfg.Workload = fixedWorkload()
	r := NewRunner(newTestClient(t, g.URL, EndpointCompletions), cfg)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { done <- r.Run(ctx) }()
	return g, r, done
}

func TestClosedLoopHoldsConcurrencyAndFollowsChanges(t *testing.T) {
	var rec Recorder
	g, r, done := runGated(t, RunnerConfig{Concurrency: 3, NumRequests: 12, Sinks: []func(Result){rec.Add}})

	g.waitArrivals(t, 3)
	g.noMoreArrivals(t)
	assert.Equal(t, 3, r.Stats().InFlight)

	r.SetConcurrency(5) // more slots start at once
	g.waitArrivals(t, 2)
	g.noMoreArrivals(t)

	r.SetConcurrency(1) // fewer slots: nothing starts until all 5 in flight have ended
	for i := 0; i < 4; i++ {
		g.release <- struct{}{}
	}
	require.Eventually(t, func() bool { return r.Stats().InFlight == 1 }, 5*time.Second, time.Millisecond)
	g.noMoreArrivals(t)
	g.release <- struct{}{}
	g.waitArrivals(t, 1)
	for i := 0; i < 20; i++ {
		g.release <- struct{}{}
	}
	require.NoError(t, <-done)
	assert.Equal(t, int64(5), g.peak.Load())
	res := rec.Results()
	assert.Len(t, res, 12)
	for _, x := range res {
		assert.True(t, x.OK(), x.ErrorMessage)
		assert.Equal(t, 1, x.OutputTokens)
		assert.Equal(t, 3, x.PromptTokens)
	}
	assert.Equal(t, 2, r.Stats().Epoch, "each load change starts an epoch")
}

func TestPauseAndResume(t *testing.T) {
	g, r, done := runGated(t, RunnerConfig{Concurrency: 2, NumRequests: 6})
	g.waitArrivals(t, 2)
	r.Pause()
	g.release <- struct{}{}
	g.release <- struct{}{}
	require.Eventually(t, func() bool { return r.Stats().InFlight == 0 }, 5*time.Second, time.Millisecond)
	g.noMoreArrivals(t)
	assert.True(t, r.Stats().Paused)
	r.Resume()
	g.waitArrivals(t, 2)
	for i := 0; i < 10; i++ {
		g.release <- struct{}{}
	}
	require.NoError(t, <-done)
	assert.EqualValues(t, 6, r.Stats().Finished)
}

// CancelInFlight ends the requests in flight as cancelled, neither failures nor results, and
// the load goes on: the requests started after it are not cut.
func TestCancelInFlightCutsOnlyTheRequestsInFlight(t *testing.T) {
	var rec Recorder
	g, r, done := runGated(t, RunnerConfig{Concurrency: 2, NumRequests: 4, Sinks: []func(Result){rec.Add}})
	g.waitArrivals(t, 2)
	r.CancelInFlight()
	g.waitArrivals(t, 2) // the two slots start again at once
	for i := 0; i < 10; i++ {
		g.release <- struct{}{}
	}
	require.NoError(t, <-done)
	var canceled, ok int
	for _, x := range rec.Results() {
		switch {
		case x.Error == ErrCanceled:
			canceled++
		case x.OK():
			ok++
		}
	}
	assert.Equal(t, 2, canceled, "the two in flight")
	assert.Equal(t, 2, ok, "the two after")
	tally := NewTally(Goodput{})
	for _, x := range rec.Results() {
		tally.Add(x)
	}
	assert.Zero(t, tally.Summary(time.Second, nil).Failed, "a cut request is no failure")
}

func TestOpenLoopRateAndCap(t *testing.T) {
	// A constant 200 req/s for 40 requests with a cap of 4 in flight against a server that
	// answers at once: the loader keeps the schedule and reports the wait when the cap binds.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" x\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer hs.Close()
	c := newTestClient(t, hs.URL, EndpointCompletions)
	var rec Recorder
	r := NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Rate: 200, Burstiness: inf(), MaxConcurrency: 4, NumRequests: 40, Sinks: []func(Result){rec.Add}})
	start := time.Now()
	require.NoError(t, r.Run(context.Background()))
	elapsed := time.Since(start)
	res := rec.Results()
	require.Len(t, res, 40)
	assert.GreaterOrEqual(t, elapsed, 195*time.Millisecond, "40 requests at 200/s take 200 ms")
	// Intended start times are evenly spaced 5 ms apart.
	first := res[0].Intended
	for _, x := range res {
		want := first.Add(time.Duration(x.Index-res[0].Index) * 5 * time.Millisecond)
		assert.WithinDuration(t, want, x.Intended, time.Microsecond, "request %d", x.Index)
		assert.True(t, x.OK())
	}
}

func inf() float64 { return math.Inf(1) }

func TestGammaInterArrivalMeans(t *testing.T) {
	for _, b := range []float64{0.5, 1, 4} {
		rng := newRNG(7)
		var sum float64
		const n = 20000
		for i := 0; i < n; i++ {
			sum += interArrival(rng, 10, b).Seconds()
		}
		assert.InDelta(t, 0.1, sum/n, 0.005, "mean gap 1/rate for burstiness %v", b)
	}
}

func TestStopsByDurationAndContext(t *testing.T) {
	g := newGateServer(t)
	c := newTestClient(t, g.URL, EndpointCompletions)
	var rec Recorder
	r := NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Concurrency: 2, Duration: 50 * time.Millisecond, Sinks: []func(Result){rec.Add}})
	done := make(chan error, 1)
	bg, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() { done <- r.Run(bg) }()
	g.waitArrivals(t, 2)
	// Run waits for in-flight requests after the duration ends; let every request finish.
	stopReleasing, releaserDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(releaserDone)
		for {
			select {
			case g.release <- struct{}{}:
			case <-stopReleasing:
				return
			}
		}
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("runner did not stop after its duration")
	}
	close(stopReleasing)
	<-releaserDone // else it may still release a request of the run below, which must be cut
	for len(g.release) > 0 {
		<-g.release
	}
	for len(g.arrived) > 0 {
		<-g.arrived
	}

	ctx, cancel := context.WithCancel(context.Background())
	r = NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Concurrency: 2, Sinks: []func(Result){rec.Add}})
	go func() { done <- r.Run(ctx) }()
	g.waitArrivals(t, 2)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("runner did not stop on cancel")
	}
	var canceled int
	for _, x := range rec.Results() {
		if x.Error == ErrCanceled {
			canceled++
		}
	}
	assert.Equal(t, 2, canceled, "in-flight requests end as canceled, not as failures")
}

func TestWatchFollowsOneRequest(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, tok := range []string{" one", " two", " three"} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":%q,\"finish_reason\":null}]}\n\n", tok)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer hs.Close()
	c := newTestClient(t, hs.URL, EndpointCompletions)
	r := NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Concurrency: 1, NumRequests: 3})
	w := r.Watch()
	require.NoError(t, r.Run(context.Background()))
	v := w.View(0)
	require.NotNil(t, v.Result)
	require.Len(t, v.Tokens, 3)
	assert.Equal(t, " two", v.Tokens[1].Text)
	assert.False(t, v.Started.IsZero())
	assert.Len(t, w.View(2).Tokens, 1, "View(from) returns only newer tokens")
}

func TestBadInputIsAFailureClassNeverAHang(t *testing.T) {
	// A port with nothing listening.
	dead := "http://" + refused.Addr(t)

	status := func(code int, body string) string {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			fmt.Fprint(w, body)
		}))
		t.Cleanup(hs.Close)
		return hs.URL
	}
	dies := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		conn, _, _ := http.NewResponseController(w).Hijack()
		conn.Close()
	}))
	defer dies.Close()
	truncated := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":null}]}\n\n")
	}))
	defer truncated.Close()
	stalls := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // never sends more
	}))
	defer stalls.Close()
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer empty.Close()

	cases := []struct {
		name string
		url  string
		want ErrorClass
		msg  string
	}{
		{"connection refused", dead, ErrConnect, "refused"},
		{"unknown model", status(404, "{\"error\":{\"message\":\"The model `x` does not exist.\",\"type\":\"NotFoundError\",\"param\":\"model\",\"code\":404}}"), ErrHTTP404, "The model `x` does not exist."},
		{"no key", status(401, `{"error":"Unauthorized"}`), ErrHTTP401, "HTTP 401: Unauthorized"},
		{"too long", status(400, `{"error":{"message":"This model's maximum context length is 10 tokens.","type":"BadRequestError","param":"input_tokens","code":400}}`), ErrHTTP400, "maximum context length"},
		{"rate limited", status(429, `slow down`), ErrHTTP429, "slow down"},
		{"server error", status(503, ``), ErrHTTP5xx, "HTTP 503"},
		{"server dies mid-stream", dies.URL, ErrReset, ""},
		{"stream ends early", truncated.URL, ErrTruncated, "before the response finished"},
		{"stream stalls", stalls.URL, ErrTimeout, "stall"},
		{"no output", empty.URL, ErrNoTokens, "without any output"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(ClientConfig{BaseURL: tc.url, StallTimeout: 100 * time.Millisecond, RequestTimeout: 5 * time.Second})
			require.NoError(t, err)
			start := time.Now()
			res := c.Do(context.Background(), Prompt{Text: "x", OutputTokens: 5}, nil)
			assert.Equal(t, tc.want, res.Error, res.ErrorMessage)
			assert.Contains(t, res.ErrorMessage, tc.msg)
			assert.Less(t, time.Since(start), 3*time.Second, "no hang")
		})
	}

	_, err := NewClient(ClientConfig{BaseURL: "localhost:8000"})
	assert.ErrorContains(t, err, "want http://host:port")
	_, err = NewClient(ClientConfig{BaseURL: "http://x", CAFile: "/nonexistent"})
	assert.ErrorContains(t, err, "CA file")
}

func TestAPIKeyIsSentAsBearer(t *testing.T) {
	var got string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer hs.Close()
	c, err := NewClient(ClientConfig{BaseURL: hs.URL, APIKey: "sk-secret"})
	require.NoError(t, err)
	res := c.Do(context.Background(), Prompt{Text: "x", OutputTokens: 1}, nil)
	require.True(t, res.OK())
	assert.Equal(t, "Bearer sk-secret", got)
	assert.Equal(t, "k1", APIKeyFromEnv(func(k string) string { return map[string]string{"OPENAI_API_KEY": "k1", "VLLM_API_KEY": "k2"}[k] }))
	assert.Equal(t, "k2", APIKeyFromEnv(func(k string) string { return map[string]string{"VLLM_API_KEY": "k2"}[k] }))
}

func TestRefusedConnectionsDoNotSpin(t *testing.T) {
	dead := "http://" + refused.Addr(t)
	c := newTestClient(t, dead, EndpointCompletions)
	var rec Recorder
	r := NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Concurrency: 2, Duration: 300 * time.Millisecond, Sinks: []func(Result){rec.Add}})
	require.NoError(t, r.Run(context.Background()))
	res := rec.Results()
	require.NotEmpty(t, res)
	assert.LessOrEqual(t, len(res), 2*(300/250+2), "each slot backs off after a refused connection")
	for _, x := range res {
		assert.Equal(t, ErrConnect, x.Error)
	}
}

// With RunnerConfig.ITL, each inter-token latency goes to it with the request's epoch as it
// arrives, and the results keep none: a long output's memory stays constant.
func TestITLsStreamToTheObserverNotTheResult(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, tok := range []string{" one", " two", " three", " four"} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":%q,\"finish_reason\":null}]}\n\n", tok)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer hs.Close()
	c := newTestClient(t, hs.URL, EndpointCompletions)
	var itls, kept atomic.Int64
	epochs := make(chan int, 100)
	r := NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Concurrency: 2, NumRequests: 5, Warmup: 1,
		ITL: func(epoch int, d time.Duration) {
			itls.Add(1)
			epochs <- epoch
			assert.GreaterOrEqual(t, d, time.Duration(0))
		},
		Sinks: []func(Result){func(res Result) { kept.Add(int64(len(res.ITLs))) }}})
	require.NoError(t, r.Run(context.Background()))
	assert.Equal(t, int64(5*3), itls.Load(), "three gaps for each of the five measured requests; the warm-up's are dropped")
	assert.Zero(t, kept.Load(), "results carry no ITLs")
	close(epochs)
	for e := range epochs {
		assert.Equal(t, 0, e)
	}

	res := c.Do(context.Background(), fixedWorkload().Prompt(0), nil)
	assert.Len(t, res.ITLs, 3, "Do keeps them in the result")
}

// The total input tokens are current vLLM's: each request's dataset length, replaced by the
// server's usage.prompt_tokens when its usage chunk carries one (a chat template counts).
func TestInputTokensAreTheServersUsage(t *testing.T) {
	c := newTestClient(t, oneTokenServer(t, 99).URL, EndpointCompletions)
	tally := NewTally(Goodput{})
	r := NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Concurrency: 1, NumRequests: 3, Sinks: []func(Result){tally.Add}})
	require.NoError(t, r.Run(context.Background()))
	assert.Equal(t, 3*99, tally.Summary(time.Second, nil).TotalInputTokens, "not 3 x the dataset's 3")
}

// ctxTransport records whether each request's context was already ended when it started.
type ctxTransport struct{ ended []bool }

func (c *ctxTransport) Start(ctx context.Context, _ Prompt, _ TokenSink, _ func(time.Duration), done func(Result)) {
	c.ended = append(c.ended, ctx.Err() != nil)
	done(Result{Error: ErrCanceled})
}
func (c *ctxTransport) TokensReceived() int64 { return 0 }

// A request the dispatcher decided on before a cut (its gate read before CancelInFlight) starts
// cancelled: it never reaches a server a restart is stopping. One decided after starts live.
func TestARequestDecidedBeforeACutStartsCancelled(t *testing.T) {
	tr := &ctxTransport{}
	r := NewRunner(nil, RunnerConfig{Workload: fixedWorkload(), Concurrency: 1, Transport: tr})
	l := &loadLoop{r: r}
	g := r.gate(time.Now())
	r.CancelInFlight()
	l.send(context.Background(), g, time.Time{})
	l.send(context.Background(), r.gate(time.Now()), time.Time{})
	assert.Equal(t, []bool{true, false}, tr.ended)
}
