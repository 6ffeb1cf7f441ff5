package fleet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/exposition"
	"github.com/vllmtop/vllmtop/internal/base/refused"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

func capture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	require.NoError(t, err)
	return string(b)
}

// fakeServer serves whatever body it was last given.
type fakeServer struct {
	*httptest.Server
	body atomic.Value
}

func serve(t testing.TB, body string) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.body.Store(body)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(f.body.Load().(string)))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) set(body string) { f.body.Store(body) }

// clock is a test's time: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

const model024 = `model_name="example-org/example-model-27B"`

func newDirect(t *testing.T, c *clock, eps ...fleet.Endpoint) *fleet.Direct {
	t.Helper()
	d, err := fleet.NewDirect(fleet.DirectConfig{Endpoints: eps, Interval: time.Second, Window: 10 * time.Second, Now: c.now, Timeout: 2 * time.Second})
	require.NoError(t, err)
	return d
}

func rowNamed(t *testing.T, f fleet.Fleet, name string) fleet.Row {
	t.Helper()
	for _, r := range f.Rows {
		if r.Name == name {
			return r
		}
	}
	require.Failf(t, "no row", "%q in %v", name, f.Rows)
	return fleet.Row{}
}

func TestDirectRowsAndWindow(t *testing.T) {
	base := capture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	dp := capture(t, "vllm-metrics-synthetic-multiprocess-dp2.txt")
	a, b := serve(t, base), serve(t, dp)
	c := newClock()
	d := newDirect(t, c, fleet.Endpoint{Name: "a", URL: a.URL}, fleet.Endpoint{Name: "b", URL: b.URL})
	ctx := context.Background()

	d.Refresh(ctx)
	f := d.Fleet(diagnose.Facts{})
	require.Len(t, f.Rows, 3, "a, and b's two engines")
	ra := rowNamed(t, f, "a")
	assert.Equal(t, fleet.StateUp, ra.State)
	assert.Equal(t, "example-org/example-model-27B", ra.Model)
	assert.Equal(t, scrape.Some(0), ra.Running, "a present zero")
	assert.False(t, ra.GenerationTokensPerSec.OK, "one scrape: no rate yet, never a made-up 0")
	assert.False(t, ra.TTFTP99.V.OK)
	assert.Empty(t, ra.EstimateLabel())
	assert.Equal(t, scrape.Some(1.78702152187e+09), ra.ProcessStart)
	assert.Equal(t, 2, rowNamed(t, f, "b e1").Engines)
	assert.False(t, rowNamed(t, f, "b e1").ProcessStart.OK, "multiprocess mode has no process_* families")
	assert.Equal(t, 2, f.Up)
	assert.Equal(t, 2, f.Endpoints)

	// Ten seconds of load on a.
	after := exposition.Add(base, "vllm:generation_tokens_total", 5000, model024)
	after = exposition.Set(after, "vllm:num_requests_running", 12, model024)
	after = exposition.Set(after, "vllm:kv_cache_usage_perc", 0.42, model024)
	after = exposition.Observe(after, "vllm:time_to_first_token_seconds", 0.3, 50, model024)
	after = exposition.Observe(after, "vllm:inter_token_latency_seconds", 0.02, 5000, model024)
	after = exposition.Add(after, "vllm:request_success_total", 5, `finished_reason="error"`)
	a.set(after)
	c.advance(10 * time.Second)
	d.Refresh(ctx)
	f = d.Fleet(diagnose.Facts{})
	ra = rowNamed(t, f, "a")
	assert.Equal(t, scrape.Some(12), ra.Running)
	assert.Equal(t, scrape.Some(500), ra.GenerationTokensPerSec)
	assert.Equal(t, scrape.Some(0.5), ra.ErrorsPerSec)
	assert.Equal(t, scrape.Some(0), ra.PreemptionsPerSec)
	require.True(t, ra.TTFTP99.V.OK)
	assert.InDelta(t, 0.3, ra.TTFTP99.V.V, 0.2, "p99 in the bucket that holds 0.3")
	assert.True(t, ra.ITLP99.V.OK)
	assert.Equal(t, "~10s est", ra.EstimateLabel())
	assert.Equal(t, 10.0, ra.WindowSeconds)
	top, ok := ra.Top()
	require.True(t, ok)
	assert.Equal(t, diagnose.RuleErrors, top.Rule)
	assert.Equal(t, top, f.Verdicts[0])

	// The history has both scrapes of the running gauge.
	pts := d.History().Series(ra.Key, fleet.MetricRunning)
	require.Len(t, pts, 2)
	assert.Equal(t, 12.0, pts[1].V)
}

func TestDirectDownStaleRestarted(t *testing.T) {
	base := capture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	up := serve(t, base)
	goneURL := "http://" + refused.Addr(t) // never answers
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	var hanging atomic.Bool
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hanging.Load() {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = w.Write([]byte(base))
	}))
	t.Cleanup(slow.Close)

	c := newClock()
	d, err := fleet.NewDirect(fleet.DirectConfig{Now: c.now, Interval: time.Second, Window: 10 * time.Second, Timeout: 100 * time.Millisecond,
		Endpoints: []fleet.Endpoint{{Name: "up", URL: up.URL}, {Name: "gone", URL: goneURL}, {Name: "slow", URL: slow.URL}}})
	require.NoError(t, err)
	ctx := context.Background()

	f := d.Fleet(diagnose.Facts{})
	for _, r := range f.Rows {
		assert.Equal(t, fleet.StateInit, r.State, "nothing scraped yet")
	}

	d.Refresh(ctx)
	f = d.Fleet(diagnose.Facts{})
	g := rowNamed(t, f, "gone")
	assert.Equal(t, fleet.StateDown, g.State)
	assert.Contains(t, g.StateDetail, "connection refused")
	assert.NotContains(t, g.StateDetail, "127.0.0.1", "the URL is in its own column")
	assert.Empty(t, g.NotExported, "nothing is known about a server never reached")
	top, _ := g.Top()
	assert.Equal(t, diagnose.RuleDown, top.Rule)
	assert.Equal(t, "gone is DOWN: "+g.StateDetail, top.Text)
	assert.Equal(t, fleet.StateUp, rowNamed(t, f, "slow").State)

	// slow stops answering within its timeout; up restarts (its process start time moves).
	hanging.Store(true)
	up.set(exposition.Add(base, "process_start_time_seconds", 600))
	c.advance(time.Second)
	d.Refresh(ctx)
	f = d.Fleet(diagnose.Facts{})
	s := rowNamed(t, f, "slow")
	assert.Equal(t, fleet.StateUp, s.State, "one missed scrape is not stale yet")
	assert.Contains(t, s.LastError, "timed out")
	r := rowNamed(t, f, "up")
	assert.Equal(t, fleet.StateRestarted, r.State)
	assert.Equal(t, "process start time moved", r.StateDetail)

	c.advance(3 * time.Second)
	d.Refresh(ctx)
	f = d.Fleet(diagnose.Facts{})
	s = rowNamed(t, f, "slow")
	assert.Equal(t, fleet.StateStale, s.State, "no good scrape for 4 intervals, and it times out")
	assert.True(t, s.Frozen)
	assert.Equal(t, scrape.Some(0), s.Running, "the last good numbers stay, flagged")
	assert.Equal(t, 4*time.Second, s.Age)
	top, _ = s.Top()
	assert.Equal(t, diagnose.RuleStale, top.Rule)
	assert.Equal(t, 1, f.Up, "only up is fresh")

	// up's server dies: it stays up for three intervals, then is DOWN with frozen numbers.
	up.Close()
	c.advance(time.Second)
	d.Refresh(ctx)
	assert.Equal(t, fleet.StateRestarted, rowNamed(t, d.Fleet(diagnose.Facts{}), "up").State)
	c.advance(3 * time.Second)
	d.Refresh(ctx)
	r = rowNamed(t, d.Fleet(diagnose.Facts{}), "up")
	assert.Equal(t, fleet.StateDown, r.State)
	assert.True(t, r.Frozen)
	assert.Contains(t, r.StateDetail, "connection refused")
}

func TestDirectRestartByCountersAndHold(t *testing.T) {
	base := capture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	s := serve(t, base)
	c := newClock()
	d := newDirect(t, c, fleet.Endpoint{URL: s.URL})
	ctx := context.Background()
	d.Refresh(ctx)
	s.set(exposition.Set(base, "vllm:prompt_tokens_total", 12, model024))
	c.advance(time.Second)
	d.Refresh(ctx)
	r := d.Fleet(diagnose.Facts{}).Rows[0]
	assert.Equal(t, fleet.StateRestarted, r.State)
	assert.Equal(t, "counters went back", r.StateDetail)
	assert.False(t, r.PromptTokensPerSec.OK, "no rate across a restart")
	assert.Equal(t, strings.TrimPrefix(s.URL, "http://"), r.Name, "unnamed endpoints are host:port")
	c.advance(fleet.DefaultRestartHold)
	d.Refresh(ctx)
	r = d.Fleet(diagnose.Facts{}).Rows[0]
	assert.Equal(t, fleet.StateUp, r.State, "RESTARTED is shown for the hold, then up")
	assert.True(t, r.PromptTokensPerSec.OK, "rates resume after the restart")
}

func TestDirectOtherBackends(t *testing.T) {
	sg, tgi := serve(t, capture(t, "sglang-v0.4-metrics-llama-3.1-8b-loaded-docs.prom")), serve(t, capture(t, "tgi-metrics-payload.prom"))
	c := newClock()
	d := newDirect(t, c, fleet.Endpoint{Name: "sgl", URL: sg.URL}, fleet.Endpoint{Name: "tgi", URL: tgi.URL})
	d.Refresh(context.Background())
	c.advance(time.Second)
	d.Refresh(context.Background())
	f := d.Fleet(diagnose.Facts{})
	sr := rowNamed(t, f, "sgl")
	assert.Equal(t, scrape.BackendSGLang, sr.Backend)
	assert.True(t, sr.KVCacheUsage.OK, "token_usage")
	assert.True(t, sr.Running.OK)
	assert.Contains(t, sr.NotExported, fleet.FieldPreemptions)
	tr := rowNamed(t, f, "tgi")
	assert.Equal(t, scrape.BackendTGI, tr.Backend)
	assert.True(t, tr.Waiting.OK, "tgi_queue_size")
	assert.False(t, tr.KVCacheUsage.OK)
	assert.Contains(t, tr.NotExported, fleet.FieldKVCacheUsage)
	// Every field a backend is said to export is present after two scrapes, or at least
	// not claimed missing; every field said missing is absent.
	for _, r := range []fleet.Row{sr, tr} {
		for _, fld := range r.NotExported {
			assert.False(t, r.Value(fld).OK, "%s: %s is listed as not exported but has a value", r.Name, fld)
		}
		for _, fld := range []fleet.Field{fleet.FieldRunning, fleet.FieldWaiting} {
			assert.True(t, r.Value(fld).OK, "%s exports %s", r.Name, fld)
		}
	}
}

func TestDirectHostileServer(t *testing.T) {
	base := capture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	evil := strings.ReplaceAll(base, "example-org/example-model-27B", "evil\x1b]0;pwned\x07\u202emodel")
	evil = exposition.Set(evil, "vllm:kv_cache_usage_perc", 7)
	evil = exposition.Set(evil, "vllm:num_requests_waiting", -3)
	s := serve(t, evil)
	d := newDirect(t, newClock(), fleet.Endpoint{Name: "x\x1b[2Jy", URL: s.URL})
	d.Refresh(context.Background())
	r := d.Fleet(diagnose.Facts{}).Rows[0]
	assert.Equal(t, "xy", r.Name, "escape sequences go whole")
	assert.Equal(t, "evilmodel", r.Model)
	assert.False(t, r.KVCacheUsage.OK, "a KV use of 700% is not believed")
	assert.False(t, r.Waiting.OK, "nor a negative queue")
}

func TestDirectImbalanceAcrossReplicas(t *testing.T) {
	base := capture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	busy := func(waiting float64) string {
		s := exposition.Set(base, "vllm:num_requests_running", 16, model024)
		s = exposition.Set(s, "vllm:kv_cache_usage_perc", 0.5, model024)
		return exposition.Set(s, "vllm:num_requests_waiting", waiting, model024)
	}
	a, b, cc := serve(t, busy(18)), serve(t, busy(1)), serve(t, busy(1))
	d := newDirect(t, newClock(), fleet.Endpoint{Name: "a", URL: a.URL}, fleet.Endpoint{Name: "b", URL: b.URL}, fleet.Endpoint{Name: "c", URL: cc.URL})
	d.Refresh(context.Background())
	f := d.Fleet(diagnose.Facts{})
	ra := rowNamed(t, f, "a")
	assert.True(t, ra.Imbalanced())
	var imb *diagnose.Verdict
	for i := range ra.Verdicts {
		if ra.Verdicts[i].Rule == diagnose.RuleImbalance {
			imb = &ra.Verdicts[i]
		}
	}
	require.NotNil(t, imb)
	assert.Contains(t, imb.Text, "a holds 18 of the 20 requests waiting across 3 replicas of example-org/example-model-27B")
	rb := rowNamed(t, f, "b")
	assert.False(t, rb.Imbalanced())

	fleet.SortBy(f.Rows, fleet.FieldWaiting)
	assert.Equal(t, "a", f.Rows[0].Name)
	assert.Len(t, fleet.Filter(f.Rows, "IMBALANCE"), 0, "the top verdict of a is admission-bound")
	assert.Len(t, fleet.Filter(f.Rows, "admission"), 1, "b and c have one request waiting and no window yet")
	assert.Len(t, fleet.Filter(f.Rows, strings.TrimPrefix(b.URL, "http://")), 1)
	assert.Len(t, fleet.Filter(f.Rows, "example-model"), 3)
}

// An endpoint's configured --max-num-seqs (the fleet config's max_num_seqs) turns "raise it
// if it is N" into the verdict it supports: at the cap, seq-bound; that endpoint's alone.
func TestDirectEndpointMaxNumSeqs(t *testing.T) {
	base := capture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	capped := exposition.Set(base, "vllm:num_requests_running", 16, model024)
	capped = exposition.Set(capped, "vllm:kv_cache_usage_perc", 0.2, model024)
	capped = exposition.Set(capped, "vllm:num_requests_waiting", 18, model024)
	a, b := serve(t, capped), serve(t, capped)
	d := newDirect(t, newClock(), fleet.Endpoint{Name: "a", URL: a.URL, MaxNumSeqs: 16}, fleet.Endpoint{Name: "b", URL: b.URL})
	d.Refresh(context.Background())
	f := d.Fleet(diagnose.Facts{})
	ra, rb := rowNamed(t, f, "a"), rowNamed(t, f, "b")
	top, ok := ra.Top()
	require.True(t, ok)
	assert.Equal(t, diagnose.RuleSeqBound, top.Rule)
	assert.Contains(t, top.Text, "running 16 = --max-num-seqs 16")
	top, ok = rb.Top()
	require.True(t, ok)
	assert.Equal(t, diagnose.RuleAdmissionBound, top.Rule, "b's cap is not known")
}

func TestDirectTapAndRun(t *testing.T) {
	base := capture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	s := serve(t, base)
	var mu sync.Mutex
	var tapped []string
	c := newClock() // states judged on a clock that stands still, so a busy machine cannot make it stale
	d, err := fleet.NewDirect(fleet.DirectConfig{Endpoints: []fleet.Endpoint{{Name: "a", URL: s.URL}}, Interval: 10 * time.Millisecond, Now: c.now,
		Tap: func(endpoint string, _ time.Time, body []byte) {
			mu.Lock()
			defer mu.Unlock()
			tapped = append(tapped, endpoint)
			assert.Equal(t, len(base), len(body))
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(tapped) >= 3
	}, 10*time.Second, 5*time.Millisecond, "scrapes on its interval")
	select {
	case <-d.Updated():
	case <-time.After(10 * time.Second):
		t.Fatal("no update signalled")
	}
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, fleet.StateUp, d.Fleet(diagnose.Facts{}).Rows[0].State)
	assert.Equal(t, base, string(d.LastBody("a")), "the whole body, for a drill-down")
	assert.Nil(t, d.LastBody("nobody"))
	assert.Equal(t, []string{"a"}, d.Endpoints())
}

func TestNewDirectErrors(t *testing.T) {
	_, err := fleet.NewDirect(fleet.DirectConfig{})
	assert.EqualError(t, err, "no endpoint to watch")
	_, err = fleet.NewDirect(fleet.DirectConfig{Endpoints: []fleet.Endpoint{{URL: "ftp://x"}}})
	assert.ErrorContains(t, err, "endpoint 1: bad URL")
	_, err = fleet.NewDirect(fleet.DirectConfig{Endpoints: []fleet.Endpoint{{Name: "a", URL: "h:1"}, {Name: "a", URL: "h:2"}}})
	assert.EqualError(t, err, `endpoint "a" is named twice`)
}

func TestIntervalFor(t *testing.T) {
	assert.Equal(t, time.Second, fleet.IntervalFor(1))
	assert.Equal(t, time.Second, fleet.IntervalFor(12))
	assert.Equal(t, 4*time.Second, fleet.IntervalFor(50))
	assert.Equal(t, 15*time.Second, fleet.IntervalFor(200))
}

func TestDirectSendsTheKeyAndNeverShowsIt(t *testing.T) {
	base := capture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	var got atomic.Value
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != "" { // endpoint a
			got.Store(r.Header.Get("Authorization"))
		}
		if r.Header.Get("Authorization") != "Bearer sk-fleet-1" {
			http.Error(w, `{"error":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(base))
	}))
	defer s.Close()
	u := strings.Replace(s.URL, "http://", "http://user:pw@", 1) + "/metrics?token=sk-fleet-1"
	d := newDirect(t, newClock(), fleet.Endpoint{Name: "a", URL: u, APIKey: "sk-fleet-1"}, fleet.Endpoint{Name: "b", URL: s.URL})
	d.Refresh(context.Background())
	f := d.Fleet(diagnose.Facts{})
	assert.Equal(t, "Bearer sk-fleet-1", got.Load())
	assert.Equal(t, fleet.StateUp, rowNamed(t, f, "a").State)
	rb := rowNamed(t, f, "b")
	assert.Equal(t, fleet.StateDown, rb.State)
	assert.Contains(t, rb.StateDetail, "401")
	for _, r := range f.Rows {
		for _, text := range []string{r.URL, r.StateDetail, r.LastError, r.Name} {
			assert.NotContains(t, text, "sk-fleet-1")
			assert.NotContains(t, text, "pw")
		}
	}
}

func TestDirectOtherExporterIsUp(t *testing.T) {
	s := serve(t, capture(t, "triton-23.11-trtllm-metrics-nv_trt_llm-docs.prom"))
	d := newDirect(t, newClock(), fleet.Endpoint{Name: "triton", URL: s.URL})
	d.Refresh(context.Background())
	r := d.Fleet(diagnose.Facts{}).Rows[0]
	assert.Equal(t, fleet.StateUp, r.State, "answers with metrics, none of them a row's")
	assert.Equal(t, scrape.BackendUnknown, r.Backend)
	assert.Equal(t, fleet.Fields, r.NotExported)
	assert.False(t, r.Running.OK)
}
