package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/promtool"
)

// dashboardQuery is one target expression of a Grafana dashboard, copied into testdata.
type dashboardQuery struct {
	panel, ref, expr string
}

func readQueries(t *testing.T, name string) []dashboardQuery {
	t.Helper()
	f, err := os.Open(filepath.Join("../../../testdata", name))
	require.NoError(t, err)
	defer f.Close()
	var out []dashboardQuery
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		require.Len(t, parts, 3, line)
		out = append(out, dashboardQuery{parts[0], parts[1], parts[2]})
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}

// freePort asks the kernel for a free loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs Debian's prometheus scraping target every scrape interval, on
// loopback, with its data in a temporary directory; it is stopped when the test ends.
func startPrometheus(t *testing.T, target string, interval time.Duration) promv1.API {
	t.Helper()
	bin := promtool.Need(t, "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n      - targets: ['%s']\n",
		model.Duration(interval), model.Duration(interval), target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "prometheus ready")
	client, err := api.NewClient(api.Config{Address: url})
	require.NoError(t, err)
	return promv1.NewAPI(client)
}

// expectedEmpty lists the dashboard queries that real vLLM also leaves empty under this load,
// with the reason: the simulator has no KV connector and takes no multi-modal input, so the
// external and multi-modal cache counters never move and the "> 0" guard on their query
// rate leaves nothing to divide by, exactly as on a vLLM without a connector or images.
var expectedEmpty = map[string]string{
	"Cache hit rates/B": "external prefix cache: no KV connector configured, its queries rate is 0",
	"Cache hit rates/C": "multi-modal cache: text-only requests, its queries rate is 0",
}

// TestGrafanaDashboardsOnPrometheus runs Debian's prometheus against the simulator under load
// and evaluates every expression of vLLM's two Grafana dashboards: each returns data, but for
// the two that real vLLM leaves empty too (expectedEmpty). With le formatted Go-style, the
// "TTFT SLO" panel (le="1.0") stayed empty. It also checks the live /metrics with promtool.
func TestGrafanaDashboardsOnPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts prometheus; skipped with -short")
	}
	const interval = 250 * time.Millisecond
	s := startServerClock(t, nil, "--sim-speed", "4", "--max-model-len", "4096")
	prom := startPrometheus(t, strings.TrimPrefix(s.URL, "http://"), interval)

	// Load: streamed and whole completions and chats, a 400 and a 405, until the test ends.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	bodies := []string{
		`{"prompt":"Tell me about schedulers","max_tokens":24,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":"A shared system prompt about paged attention and prefix caching. Question one","max_tokens":16}`,
		`{"prompt":"A shared system prompt about paged attention and prefix caching. Question two","max_tokens":16,"ignore_eos":true}`,
	}
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				path, body := "/v1/completions", bodies[(i+n)%len(bodies)]
				if n%4 == 3 {
					path, body = "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi there"}],"max_tokens":12,"stream":true}`
				}
				if n%9 == 8 {
					body = `{"prompt":"x","max_tokens":99999}` // 400
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	t.Cleanup(func() { stop(); wg.Wait() })
	if resp, err := http.Get(s.URL + "/v1/completions"); err == nil { // a 405
		resp.Body.Close()
	}

	// Wait until Prometheus holds a few seconds of scrapes and every family has data.
	require.Eventually(t, func() bool {
		v, _, _, err := prom.Query(context.Background(), `count_over_time(vllm:generation_tokens_total[4s]) >= 12 and rate(vllm:generation_tokens_total[2s]) > 0`, time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) == 1
	}, 60*time.Second, 100*time.Millisecond, "prometheus scraped the simulator under load")

	vars := strings.NewReplacer("$__rate_interval", "2s", "$__range", "4s", "$job", ".*", "$instance", ".*",
		"$ttft_slo", "1.0", "$tpot_slo", "0.1", "$model_name", "Qwen/Qwen3-0.6B")
	now := time.Now()
	evaluated, total := 0, 0
	for _, file := range []string{"vllm-grafana-overview-promql.txt", "vllm-grafana-prometheus-grafana-promql.txt"} {
		queries := readQueries(t, file)
		total += len(queries)
		for _, q := range queries {
			expr := q.expr
			if file == "vllm-grafana-overview-promql.txt" {
				// The overview's variables are multi-value regexes, "All" by default.
				expr = strings.ReplaceAll(expr, `model_name=~"$model_name"`, `model_name=~".*"`)
			}
			expr = vars.Replace(expr)
			key := q.panel + "/" + q.ref
			v, warnings, _, err := prom.Query(context.Background(), expr, now)
			require.NoError(t, err, "%s: %s", key, expr)
			assert.Empty(t, warnings, key)
			n := samples(v)
			evaluated++
			if reason, ok := expectedEmpty[key]; ok {
				assert.Zero(t, n, "%s is expected empty (%s)", key, reason)
				continue
			}
			assert.Positive(t, n, "%s returns no data: %s", key, expr)
		}
	}
	assert.Equal(t, total, evaluated, "every expression of both dashboards")
	assert.Equal(t, 84+27, total)

	// The SLO panel reads the bucket vLLM writes as le="1.0"; the Go-style le="1" is absent.
	v, _, _, err := prom.Query(context.Background(), `count(vllm:time_to_first_token_seconds_bucket{le="1"})`, now)
	require.NoError(t, err)
	assert.Zero(t, samples(v), `no le="1" series`)

	// promtool on the live /metrics: no warning the real 0.25.1 capture does not also get.
	tool := promtool.Need(t, "promtool")
	resp, err := http.Get(s.URL + "/metrics")
	require.NoError(t, err)
	live, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	capture, err := os.ReadFile("../../../testdata/vllm-0.25.1-metrics-opt-125m-tp2-idle.prom")
	require.NoError(t, err)
	real := promtool.Warnings(t, tool, string(capture))
	for _, w := range promtool.Warnings(t, tool, string(live)) {
		if strings.HasPrefix(w, "vllm:") && strings.HasSuffix(w, "metric names should not contain ':'") {
			continue // every vllm: family gets it, the ones newer than the capture too
		}
		assert.Contains(t, real, w, "promtool warns about the simulator only")
	}
}

// samples counts the series or points of a query result.
func samples(v model.Value) int {
	switch x := v.(type) {
	case model.Vector:
		return len(x)
	case model.Matrix:
		return len(x)
	case *model.Scalar:
		return 1
	}
	return 0
}
