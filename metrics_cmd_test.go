package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/refused"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// serveBodies answers /metrics with the bodies in turn (the last one repeats).
func serveBodies(t *testing.T, bodies ...[]byte) *httptest.Server {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		i := min(int(n.Add(1))-1, len(bodies)-1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(bodies[i])
	}))
	t.Cleanup(srv.Close)
	return srv
}

func metrics(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"metrics"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// noWait makes --window return at once (the snapshots then sit microseconds apart).
func noWait(t *testing.T) {
	t.Helper()
	old := waitWindow
	waitWindow = func(context.Context, time.Duration) error { return nil }
	t.Cleanup(func() { waitWindow = old })
}

func noKeyEnv(t *testing.T) {
	t.Setenv("VLLM_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
}

func assertFits(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "line too wide: %q", line)
	}
}

func TestMetricsTable(t *testing.T) {
	noKeyEnv(t)
	srv := serveBodies(t, readFixture(t, "vllm-v1-metrics-qwen3-30b-specdecode.prom"))
	code, out, errOut := metrics(t, srv.URL) // base URL: /metrics is added
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
	t.Log("\n" + out)
	for _, want := range []string{
		srv.URL + "/metrics  (vllm, up ",
		"model          qwen3-30b-tq",
		"engines        1 (engine 0)",
		"requests       running 1, waiting 2",
		"KV cache       0.1 % used of 444,608 tokens",
		"preemptions    0 since start",
		"prefix cache   30.5 % hit since start (5,819,712 of 19,106,864 tokens)",
		"tokens         prompt 19,045,253, generation 6,723,875 since start",
		"finished       52,043 since start: stop 51,319, length 724",
		"spec decode    39.8 % of draft tokens accepted since start",
		"latency        mean since start: TTFT 72.6 s,",
		"capacity       444,608 KV tokens, 6,947 blocks of 64,\n               GPU memory 0.9 (configured)",
		"unmapped       ",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "window", "no window without --window")
	assertFits(t, out)
}

func TestMetricsEveryFixtureFits(t *testing.T) {
	noKeyEnv(t)
	noWait(t)
	files, err := filepath.Glob("testdata/*.prom")
	require.NoError(t, err)
	files = append(files, "testdata/vllm-metrics-synthetic-multiprocess-dp2.txt", "testdata/vllm-metrics-synthetic-single-process.txt")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			srv := serveBodies(t, readFixture(t, filepath.Base(f)))
			code, out, errOut := metrics(t, "--window", "1s", srv.URL+"/metrics")
			require.Equal(t, 0, code, errOut)
			assertFits(t, out)
		})
	}
}

func TestMetricsEnginesAndOtherServers(t *testing.T) {
	noKeyEnv(t)
	srv := serveBodies(t, readFixture(t, "vllm-metrics-synthetic-multiprocess-dp2.txt"))
	_, out, _ := metrics(t, srv.URL)
	assert.Contains(t, out, "engines        2 (engines 0, 1)")
	assert.Contains(t, out, "KV cache       0.0 % used (capacity-weighted over engines) of 2,443,552 tokens")
	assert.Contains(t, out, "  engine     running   waiting       KV   prompt tok      gen tok")
	assert.Contains(t, out, "  0                0         0    0.0 %          100          100")
	assert.Contains(t, out, "  1                0         0    0.0 %            0            0")
	assert.Contains(t, out, "capacity       2,443,552 KV tokens, 152,722 blocks of 16,\n               max concurrency 59.66x, GPU memory 0.92 (configured)")

	srv = serveBodies(t, readFixture(t, "tgi-metrics-payload.prom"))
	_, out, _ = metrics(t, srv.URL)
	assert.Contains(t, out, "(tgi)")
	assert.Contains(t, out, "model          (no model label)")
	assert.Contains(t, out, "finished       111 since start: error 2, success 109")

	srv = serveBodies(t, readFixture(t, "sglang-v0.4-metrics-llama-3.1-8b-loaded-docs.prom"))
	_, out, _ = metrics(t, srv.URL)
	assert.Contains(t, out, "(sglang)")
	assert.Contains(t, out, "requests       running 162, waiting 2,826")
	assert.Contains(t, out, "KV cache       28.0 % used")

	srv = serveBodies(t, readFixture(t, "triton-23.11-trtllm-metrics-nv_trt_llm-docs.prom"))
	code, out, _ := metrics(t, srv.URL)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "no vLLM, SGLang or TGI metrics; 5 families (see --json or --raw)")
	assert.Contains(t, out, "--disable-log-stats")
}

// later makes a second scrape of the 0.24 capture: 12 more requests finished, 10 on stop and
// 2 on length, each with a TTFT of 0.2 s (in the (0.1, 0.25] bucket).
func later(t *testing.T) []byte {
	t.Helper()
	s := string(readFixture(t, "vllm-0.24-single-engine-rust-vllmtop.prom"))
	s = strings.NewReplacer(
		`finished_reason="stop",model_name="example-org/example-model-27B"} 91.0`, `finished_reason="stop",model_name="example-org/example-model-27B"} 101.0`,
		`finished_reason="length",model_name="example-org/example-model-27B"} 0.0`, `finished_reason="length",model_name="example-org/example-model-27B"} 2.0`,
	).Replace(s)
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		add := 0.0
		switch {
		case strings.HasPrefix(line, "vllm:time_to_first_token_seconds_bucket"):
			le := line[strings.Index(line, `le="`)+4:]
			bound, err := strconv.ParseFloat(le[:strings.IndexByte(le, '"')], 64)
			require.NoError(t, err)
			if bound >= 0.25 {
				add = 12
			}
		case strings.HasPrefix(line, "vllm:time_to_first_token_seconds_count"):
			add = 12
		case strings.HasPrefix(line, "vllm:time_to_first_token_seconds_sum"):
			add = 12 * 0.2
		}
		if add != 0 {
			i := strings.LastIndexByte(line, ' ')
			v, err := strconv.ParseFloat(strings.TrimSpace(line[i+1:]), 64)
			require.NoError(t, err)
			line = line[:i+1] + strconv.FormatFloat(v+add, 'g', -1, 64) + "\n"
		}
		b.WriteString(line)
	}
	return []byte(b.String())
}

func TestMetricsWindow(t *testing.T) {
	noKeyEnv(t)
	noWait(t)
	first := readFixture(t, "vllm-0.24-single-engine-rust-vllmtop.prom")
	srv := serveBodies(t, first, later(t))
	code, out, errOut := metrics(t, "--window", "5s", srv.URL)
	require.Equal(t, 0, code, errOut)
	t.Log("\n" + out)
	assert.Contains(t, out, "window         over the last ")
	assert.Contains(t, out, "(stop 10, length 2)")
	assert.Contains(t, out, "prefix cache   off (enable_prefix_caching=False)")
	assert.Contains(t, out, "  latency               p50        p90        p99       mean     count")
	// 12 TTFTs, all in (0.1, 0.25]: p50 = 0.1 + 0.15 × 6/12.
	assert.Contains(t, out, "  TTFT               175 ms     235 ms     248 ms     200 ms        12")
	assertFits(t, out)

	srv = serveBodies(t, first, later(t))
	code, out, errOut = metrics(t, "--window", "5s", "--json", srv.URL)
	require.Equal(t, 0, code, errOut)
	var got struct {
		Snapshot struct {
			Models []struct {
				Total struct {
					RequestsFinished float64 `json:"requests_finished"`
				} `json:"total"`
			} `json:"models"`
		} `json:"snapshot"`
		Window struct {
			Restarted bool `json:"restarted"`
			Models    []struct {
				Total struct {
					FinishedByReason map[string]float64 `json:"finished_by_reason"`
					TTFT             struct {
						Count float64 `json:"count"`
						P50   float64 `json:"p50"`
					} `json:"ttft_seconds"`
				} `json:"total"`
			} `json:"models"`
		} `json:"window"`
		Verdicts json.RawMessage `json:"verdicts"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, byte('['), got.Verdicts[0], "verdicts is a list, empty when healthy: %s", got.Verdicts)
	assert.Equal(t, 103.0, got.Snapshot.Models[0].Total.RequestsFinished, "the second scrape")
	assert.False(t, got.Window.Restarted)
	assert.Equal(t, map[string]float64{"stop": 10, "length": 2, "abort": 0, "error": 0, "repetition": 0}, got.Window.Models[0].Total.FinishedByReason)
	assert.Equal(t, 12.0, got.Window.Models[0].Total.TTFT.Count)
	assert.InDelta(t, 0.175, got.Window.Models[0].Total.TTFT.P50, 1e-12)

	// A restarted server: the second scrape's counters are lower.
	srv = serveBodies(t, later(t), first)
	_, out, _ = metrics(t, "--window", "5s", srv.URL)
	assert.Contains(t, out, ": the server restarted, so no rates")
}

func TestMetricsJSONAndRaw(t *testing.T) {
	noKeyEnv(t)
	srv := serveBodies(t, readFixture(t, "vllm-0.24-single-engine-rust-vllmtop.prom"))
	code, out, errOut := metrics(t, "--json", srv.URL)
	require.Equal(t, 0, code, errOut)
	var snap struct {
		Backend string `json:"backend"`
		Models  []struct {
			Name  string `json:"name"`
			Total struct {
				PromptTokens float64 `json:"prompt_tokens"`
				Waiting      *float64
			} `json:"total"`
		} `json:"models"`
		Capacity struct {
			KVCacheTokens float64 `json:"kv_cache_tokens"`
		} `json:"capacity"`
		Unmapped []struct {
			Name string `json:"name"`
		} `json:"unmapped"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &snap))
	assert.Equal(t, "vllm", snap.Backend)
	assert.Equal(t, "example-org/example-model-27B", snap.Models[0].Name)
	assert.Equal(t, 3763908.0, snap.Models[0].Total.PromptTokens)
	assert.Equal(t, 342803.0, snap.Capacity.KVCacheTokens)
	assert.NotEmpty(t, snap.Unmapped)

	code, out, errOut = metrics(t, "--raw", srv.URL)
	require.Equal(t, 0, code, errOut)
	var raw []struct {
		Name    string            `json:"name"`
		Type    string            `json:"type"`
		Metrics []json.RawMessage `json:"metrics"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	names := map[string]string{}
	for _, f := range raw {
		names[f.Name] = f.Type
	}
	assert.Equal(t, "COUNTER", names["vllm:prompt_tokens_total"])
	assert.Equal(t, "GAUGE", names["vllm:prompt_tokens_created"], "the raw dump keeps everything")
}

func TestMetricsAPIKey(t *testing.T) {
	var gotAuth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth.Store(r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer right-key" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"Unauthorized"}`)
			return
		}
		_, _ = io.WriteString(w, "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 4.0\n")
	}))
	defer srv.Close()

	noKeyEnv(t)
	code, _, errOut := metrics(t, srv.URL)
	assert.Equal(t, 1, code)
	assert.Equal(t, "vllmtop metrics: "+srv.URL+"/metrics: HTTP 401 Unauthorized; the server wants an API key (--api-key, or OPENAI_API_KEY or VLLM_API_KEY)\n", errOut)
	assert.Equal(t, "", gotAuth.Load())

	code, _, errOut = metrics(t, "--api-key", "wrong-secret", srv.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "the server refused the API key")
	assert.NotContains(t, errOut, "wrong-secret", "never print the key")

	code, out, _ := metrics(t, "--api-key", "right-key", srv.URL)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "running 4")

	t.Setenv("VLLM_API_KEY", "right-key")
	code, _, _ = metrics(t, srv.URL)
	assert.Equal(t, 0, code, "VLLM_API_KEY as the last fallback")

	t.Setenv("OPENAI_API_KEY", "wrong-secret")
	code, _, _ = metrics(t, srv.URL)
	assert.Equal(t, 1, code, "OPENAI_API_KEY comes before VLLM_API_KEY, as for every command")
	assert.Equal(t, "Bearer wrong-secret", gotAuth.Load())

	code, _, _ = metrics(t, "--api-key", "right-key", srv.URL)
	assert.Equal(t, 0, code, "the flag wins over the environment")
}

func TestMetricsTLS(t *testing.T) {
	noKeyEnv(t)
	body := readFixture(t, "vllm-metrics-synthetic-single-process.txt")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	defer srv.Close()

	code, _, errOut := metrics(t, srv.URL)
	assert.Equal(t, 1, code)
	assert.Equal(t, "vllmtop metrics: "+srv.URL+"/metrics: TLS: x509: certificate signed by unknown authority; "+
		"trust its CA with --ca-file, or skip verification with --insecure\n", errOut)

	code, out, errOut := metrics(t, "--insecure", srv.URL)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "model          Qwen/Qwen3-0.6B")

	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	code, _, errOut = metrics(t, "--ca-file", ca, srv.URL)
	assert.Equal(t, 0, code, errOut)
}

func TestMetricsErrors(t *testing.T) {
	noKeyEnv(t)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><body><h1>Sign in</h1></body></html>")
	}))
	defer html.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // answers nothing until the client leaves
	}))
	defer slow.Close()
	goneURL := "http://" + refused.Addr(t)
	ok := serveBodies(t, readFixture(t, "vllm-metrics-synthetic-single-process.txt"))

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"HTML page", []string{html.URL}, 1,
			html.URL + `/metrics: not Prometheus text: got text/html starting "<!DOCTYPE html><html><body><h1>Sign in</…"`},
		{"404", []string{ok.URL + "/v1/metrics"}, 1,
			ok.URL + "/v1/metrics: HTTP 404 Not Found (404 page not found); no metrics at this path"},
		{"connection refused", []string{goneURL}, 1,
			goneURL + "/metrics: connection refused; is the server running, on this host and port?"},
		{"slow server", []string{"--timeout", "100ms", slow.URL}, 1,
			slow.URL + "/metrics: timed out after 100ms waiting for a response; the server is slow or stuck"},
		{"no URL", nil, 2, "no URL given"},
		{"two URLs", []string{ok.URL, ok.URL}, 2, "one URL only"},
		{"bad scheme", []string{"ftp://h/metrics"}, 2, "scheme must be http or https"},
		{"negative window", []string{"--window", "-5s", ok.URL}, 2, "--window must be positive"},
		{"bad duration", []string{"--window", "five", ok.URL}, 2, `invalid value "five" for --window`},
		{"zero timeout", []string{"--timeout", "0s", ok.URL}, 2, "--timeout must be positive"},
		{"raw and json", []string{"--raw", "--json", ok.URL}, 2, "pick one"},
		{"raw and window", []string{"--raw", "--window", "1s", ok.URL}, 2, "drop --window"},
		{"unknown flag", []string{"--bogus", ok.URL}, 2, "unknown flag: --bogus"},
		{"missing CA file", []string{"--ca-file", "/no/such/ca.pem", ok.URL}, 2, "CA file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := metrics(t, tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.want)
			assert.True(t, strings.HasPrefix(errOut, "vllmtop metrics: "), errOut)
			if tt.code == 1 {
				assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			}
		})
	}

	code, out, _ := metrics(t, "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: vllmtop metrics URL")
	assert.Contains(t, out, "--window")
}

func TestMetricsWindowWithoutPrefixLookupsSaysSo(t *testing.T) {
	noKeyEnv(t)
	noWait(t)
	idle := readFixture(t, "vllm-0.25.1-metrics-opt-125m-tp2-idle.prom")
	srv := serveBodies(t, idle, idle)
	code, out, errOut := metrics(t, "--window", "5s", srv.URL)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "prefix cache   no lookups in the window", "not a hit rate of --")
	assert.NotContains(t, out, "-- hit")
}

// A server that exports no engine metrics (vLLM with --disable-log-stats: HTTP metrics alone)
// gives no verdict rather than a clean bill of health.
func TestMetricsWindowWithoutEngineMetrics(t *testing.T) {
	noKeyEnv(t)
	noWait(t)
	body := []byte("# TYPE http_requests_total counter\nhttp_requests_total{handler=\"/v1/completions\",method=\"POST\",status=\"2xx\"} 3\n")
	o := hostileRun(t, "metrics", "--window", "1s", serveBodies(t, body, body).URL)
	assert.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "Verdicts\n  none: no engine metrics to judge")
	assert.NotContains(t, o.stdout, "HEALTHY")
}
