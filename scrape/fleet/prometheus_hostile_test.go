package fleet

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// hostileDir holds the corpus of hostile answers.
var hostileDir = filepath.Join("..", "..", "testdata", "hostile", "prometheus")

// fakeProm answers every query and range query with answer (and status); the targets page
// lists nothing. It counts the range queries and records the Authorization headers seen.
type fakeProm struct {
	*httptest.Server
	ranges atomic.Int64
	auth   atomic.Value // string: the last Authorization header
}

func newFakeProm(t *testing.T, status int, answer func(w io.Writer, r *http.Request)) *fakeProm {
	t.Helper()
	f := &fakeProm{}
	f.auth.Store("")
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.auth.Store(r.Header.Get("Authorization"))
		if strings.HasSuffix(r.URL.Path, "/targets") {
			_, _ = io.WriteString(w, `{"status":"success","data":{"activeTargets":[]}}`)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/query_range") {
			f.ranges.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		answer(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func fileAnswer(t *testing.T, name string) func(io.Writer, *http.Request) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hostileDir, name))
	require.NoError(t, err)
	return func(w io.Writer, _ *http.Request) { _, _ = w.Write(b) }
}

func newTestProm(t *testing.T, url string, key string) *Prometheus {
	t.Helper()
	p, err := NewPrometheus(PrometheusConfig{URL: url, APIKey: key, Timeout: 5 * time.Second, Interval: time.Second})
	require.NoError(t, err)
	return p
}

// requireOneSafeLine checks an error that reaches the status line: one line, no control byte,
// bounded.
func requireOneSafeLine(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	assert.LessOrEqual(t, len(msg), maxErrorText+200, msg)
	for _, r := range msg {
		assert.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e', "control %U in %q", r, msg)
	}
}

// Every answer of the corpus is read without a panic; those that are no vector (or no matrix
// for the history) fail the round with one line naming what was wrong.
func TestPrometheusHostileAnswers(t *testing.T) {
	for _, tc := range []struct {
		file       string
		status     int
		refreshErr string // "" : the round succeeds
		historyErr string
	}{
		{"data-null.json", 200, "answer of type none (no data), want a vector", "answer of type none (no data), want a matrix"},
		{"data-missing.json", 200, "want a vector", "want a matrix"},
		{"data-array.json", 200, " query: ", "history"},
		{"matrix.json", 200, "answer of type matrix, want a vector", ""},
		{"scalar.json", 200, "answer of type scalar, want a vector", "answer of type scalar, want a matrix"},
		{"string.json", 200, `unexpected value type "string"`, `unexpected value type "string"`},
		{"vector-null-samples.json", 200, "", "answer of type vector, want a matrix"},
		{"vector-result-null.json", 200, "answers, but no target's up series matches the selector {job=\"vllm\"}", "want a matrix"},
		{"vector-result-object.json", 200, " query: ", "history"},
		{"matrix-null-series.json", 200, "want a vector", ""},
		{"not-json.txt", 200, " query: ", "history"},
		{"error-escapes.json", 500, " query: ", "history"},
		{"not-json.txt", 500, "server error", "history"},
	} {
		t.Run(fmt.Sprintf("%s %d", tc.file, tc.status), func(t *testing.T) {
			f := newFakeProm(t, tc.status, fileAnswer(t, tc.file))
			p := newTestProm(t, f.URL, "")
			ctx := context.Background()
			err := p.Backfill(ctx)
			if tc.historyErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.historyErr)
				requireOneSafeLine(t, err)
			}
			err = p.Refresh(ctx)
			if tc.refreshErr == "" {
				require.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.refreshErr)
			requireOneSafeLine(t, err)
			assert.Equal(t, err, p.Err())
			fl := p.Fleet(diagnose.Facts{})
			o, sum := fl.Summary()
			assert.Equal(t, diagnose.Failing, o, "a Prometheus that never answered is not HEALTHY")
			if strings.Contains(tc.refreshErr, "selector") {
				assert.Contains(t, sum, "Prometheus "+f.URL+" answers, but", "Prometheus is up: the selector names no fleet")
				return
			}
			assert.Contains(t, sum, "Prometheus "+f.URL+" is DOWN: ")
		})
	}
}

// NaN, ±Inf and absurd values are dropped, in the rows and in the history.
func TestPrometheusNaNAndInfDropped(t *testing.T) {
	inst := newFakeProm(t, 200, fileAnswer(t, "vector-nan-inf.json"))
	p := newTestProm(t, inst.URL, "")
	require.NoError(t, p.Refresh(context.Background()))
	fl := p.Fleet(diagnose.Facts{})
	require.Len(t, fl.Rows, 4)
	for _, r := range fl.Rows {
		assert.Equal(t, StateDown, r.State, "up is NaN, Inf or 1e308, never 1: %s", r.Name)
		for _, fd := range Fields {
			v := r.Value(fd)
			assert.False(t, v.OK && (math.IsNaN(v.V) || math.IsInf(v.V, 0) || v.V > 1e300), "%s %s = %v", r.Name, fd, v.V)
		}
	}

	rng := newFakeProm(t, 200, fileAnswer(t, "matrix-nan-inf.json"))
	p = newTestProm(t, rng.URL, "")
	require.NoError(t, p.Backfill(context.Background()))
	pts := p.History().Series(Key{Endpoint: "nan:8000", Model: "m", Engine: "0"}, MetricRunning)
	require.Len(t, pts, 1, "only the finite, believable point: %v", pts)
	assert.Equal(t, 2.0, pts[0].V)
}

// manySeries writes a vector (or a matrix) of n series, as fast as the client reads.
func manySeries(n int, matrix bool) func(io.Writer, *http.Request) {
	return func(w io.Writer, _ *http.Request) {
		kind, val := "vector", `"value":[1,"1"]`
		if matrix {
			kind, val = "matrix", `"values":[[1,"1"]]`
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"%s","result":[`, kind)
		for i := 0; i < n; i++ {
			if i > 0 {
				_, _ = io.WriteString(w, ",")
			}
			if _, err := fmt.Fprintf(w, `{"metric":{"instance":"h%d:8000","model_name":"m","engine":"0"},%s}`, i, val); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `]}}`)
	}
}

// 300,000 series (some 25 MB, under the byte cap) are refused while they arrive: the round
// fails at once, in bounded memory, instead of decoding a gigabyte of samples.
func TestPrometheusSeriesCap(t *testing.T) {
	for _, matrix := range []bool{false, true} {
		t.Run(fmt.Sprint("matrix=", matrix), func(t *testing.T) {
			f := newFakeProm(t, 200, manySeries(300_000, matrix))
			p := newTestProm(t, f.URL, "")
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			var err error
			if matrix {
				err = p.Backfill(context.Background())
			} else {
				err = p.Refresh(context.Background())
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			require.ErrorContains(t, err, fmt.Sprintf("over %d series", MaxSeries))
			requireOneSafeLine(t, err)
			assert.Less(t, elapsed, 10*time.Second)
			alloc := after.TotalAlloc - before.TotalAlloc
			assert.Less(t, alloc, uint64(200<<20), "allocated %d MB reading refused answers", alloc>>20)
		})
	}
	// Up to the cap, every series is a row.
	f := newFakeProm(t, 200, manySeries(MaxSeries, false))
	p := newTestProm(t, f.URL, "")
	require.NoError(t, p.Refresh(context.Background()))
	assert.Len(t, p.Fleet(diagnose.Facts{}).Rows, MaxSeries)
}

// Run does not read the history again after Backfill (the dashboard read it twice at start),
// and refreshes after.
func TestPrometheusBackfillsOnce(t *testing.T) {
	f := newFakeProm(t, 200, fileAnswer(t, "matrix.json"))
	p := newTestProm(t, f.URL, "")
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, p.Backfill(ctx))
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-p.Updated():
	case <-time.After(10 * time.Second):
		t.Fatal("no refresh")
	}
	cancel()
	<-done
	assert.Equal(t, int64(len(p.hq)), f.ranges.Load(), "one range query per charted metric")
}

// The failing cause stays on the status line until a good round; a good round clears it.
func TestPrometheusDownThenBack(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	good := fileAnswer(t, "vector-null-samples.json")
	f := newFakeProm(t, 200, func(w io.Writer, r *http.Request) {
		if fail.Load() {
			_, _ = io.WriteString(w, `{"status":"success","data":null}`)
			return
		}
		good(w, r)
	})
	p := newTestProm(t, f.URL, "")
	require.Error(t, p.Refresh(context.Background()))
	down := p.Fleet(diagnose.Facts{})
	_, sum := down.Summary()
	assert.Contains(t, sum, "is DOWN: ")
	assert.Contains(t, sum, "answer of type none (no data), want a vector")
	fail.Store(false)
	require.NoError(t, p.Refresh(context.Background()))
	fl := p.Fleet(diagnose.Facts{})
	_, sum = fl.Summary()
	assert.NotContains(t, sum, "Prometheus "+f.URL)
	assert.Equal(t, 1, fl.Endpoints)
}

// The key goes to the configured origin only: a redirect to another host (or port) arrives
// without it, and one from https to plain http is refused.
func TestPrometheusKeyStaysAtItsOrigin(t *testing.T) {
	var otherAuth atomic.Value
	otherAuth.Store("none")
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		otherAuth.Store(r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer other.Close()
	redirect := func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/query") {
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, `{"status":"success","data":{"activeTargets":[]}}`)
	}
	var promAuth atomic.Value
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		promAuth.Store(r.Header.Get("Authorization"))
		redirect(w, r)
	}))
	defer prom.Close()

	p := newTestProm(t, prom.URL, "s3cret-token")
	_ = p.Refresh(context.Background())
	assert.Equal(t, "Bearer s3cret-token", promAuth.Load(), "the configured origin gets the key")
	require.Positive(t, otherHits.Load(), "the redirect was followed")
	assert.Equal(t, "", otherAuth.Load(), "another host never gets the key")

	tlsProm := httptest.NewTLSServer(http.HandlerFunc(redirect))
	defer tlsProm.Close()
	otherHits.Store(0)
	p, err := NewPrometheus(PrometheusConfig{URL: tlsProm.URL, APIKey: "s3cret-token", Timeout: 5 * time.Second,
		RoundTripper: tlsProm.Client().Transport})
	require.NoError(t, err)
	err = p.Refresh(context.Background())
	require.ErrorContains(t, err, "refused: a redirect from https to http")
	assert.NotContains(t, err.Error(), "s3cret-token")
	requireOneSafeLine(t, err)
	assert.Zero(t, otherHits.Load(), "nothing is sent over plain http")
}

func TestSameOrigin(t *testing.T) {
	u := func(s string) *url.URL {
		v, err := url.Parse(s)
		require.NoError(t, err)
		return v
	}
	assert.True(t, sameOrigin(u("http://p:9090"), u("http://P:9090/api/v1/query")))
	assert.True(t, sameOrigin(u("https://p"), u("https://p:443/x")))
	assert.False(t, sameOrigin(u("http://p:9090"), u("http://p:9091/")))
	assert.False(t, sameOrigin(u("http://p:9090"), u("http://evil:9090/")))
	assert.False(t, sameOrigin(u("https://p"), u("http://p:443/")))
}

// A Prometheus that never answers costs one timeout a round, not one per query, and the
// state says so.
func TestPrometheusHangCostsOneTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFakeProm(t, 200, func(_ io.Writer, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for handlers
	p, err := NewPrometheus(PrometheusConfig{URL: f.URL, Timeout: 300 * time.Millisecond, MaxConcurrentQueries: 1})
	require.NoError(t, err)
	for _, round := range []func(context.Context) error{p.Backfill, p.Refresh} {
		start := time.Now()
		err := round(context.Background())
		require.ErrorContains(t, err, "context deadline exceeded")
		requireOneSafeLine(t, err)
		assert.Less(t, time.Since(start), 5*time.Second, "one query of 5 or 24 at a time, each timing out, would take 1.5 or 7 s")
	}
	fl := p.Fleet(diagnose.Facts{})
	_, sum := fl.Summary()
	assert.Contains(t, sum, "is DOWN: ")
}

// A selector Prometheus finds bad PromQL is the selector's fault, said so, not Prometheus DOWN.
func TestPrometheusRefusedSelector(t *testing.T) {
	f := newFakeProm(t, 400, func(w io.Writer, _ *http.Request) {
		_, _ = io.WriteString(w, `{"status":"error","errorType":"bad_data","error":"1:9: parse error: unexpected identifier \"nope\" in label matching"}`)
	})
	p, err := NewPrometheus(PrometheusConfig{URL: f.URL, Selector: `{job=nope}`, Timeout: 5 * time.Second, Interval: time.Second})
	require.NoError(t, err)
	err = p.Refresh(context.Background())
	assert.ErrorContains(t, err, "refused the query of the selector {job=nope}: 1:9: parse error")
	requireOneSafeLine(t, err)
	fl := p.Fleet(diagnose.Facts{})
	_, sum := fl.Summary()
	assert.Contains(t, sum, "Prometheus "+f.URL+" refused the query")
	assert.NotContains(t, sum, "is DOWN")
}
