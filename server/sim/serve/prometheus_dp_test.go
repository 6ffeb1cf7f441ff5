package serve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grafanaFiles are the dashboards' expressions in testdata: vLLM's generated Overview and
// Speculative Decoding and KV Cache dashboards and the legacy prometheus_grafana one.
var grafanaFiles = []string{"vllm-grafana-overview-promql.txt", "vllm-grafana-instances-promql.txt",
	"vllm-grafana-speculative-decoding-promql.txt", "vllm-grafana-prometheus-grafana-promql.txt",
	kvCacheFile}

const kvCacheFile = "vllm-grafana-kv-cache-promql.txt"

// dpExpectedEmpty adds the Instances dashboard's panels of features the simulated server does
// not run, empty on vLLM too: its series appear only with --enable-lora, or once a sleep-mode
// or weight-update operation has run.
var dpExpectedEmpty = map[string]string{
	"LoRA adapters/A": "vllm:lora_requests_info is exported only with --enable-lora",
	"Sleep mode and weight update operations (since process start)/A": "no sleep-mode or weight-update operation has run",
	"Sleep mode and weight update operations (since process start)/B": "no sleep-mode or weight-update operation has run",
	"Sleep mode and weight update operations (since process start)/C": "no sleep-mode or weight-update operation has run",
}

// loadUntilDone sends streamed and whole completions from three clients until the test ends.
func loadUntilDone(t *testing.T, url string) {
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	bodies := []string{
		`{"prompt":"Tell me about schedulers and schedulers and schedulers","max_tokens":24,"stream":true}`,
		`{"prompt":"A shared system prompt about paged attention. Question one","max_tokens":16}`,
		`{"messages":[{"role":"user","content":"Hi there"}],"max_tokens":12,"stream":true}`,
	}
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				body := bodies[(i+n)%len(bodies)]
				if n%3 == 2 {
					body = churnBody(i, n/3)
				}
				path := "/v1/completions"
				if strings.Contains(body, "messages") {
					path = "/v1/chat/completions"
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", url+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	t.Cleanup(func() { stop(); wg.Wait() })
}

// TestGrafanaDashboardsOnADataParallelSim: with --data-parallel-size 2 (and speculative
// decoding, which the Speculative Decoding dashboard needs, and --kv-cache-metrics on a small
// cache, which the KV Cache dashboard's residency panels need) every expression of the
// dashboards returns data on one real Prometheus, but for those real vLLM leaves empty too
// (expectedEmpty, dpExpectedEmpty, kvFamilyRules), and the per-engine panels have a series for
// each engine.
func TestGrafanaDashboardsOnADataParallelSim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts prometheus; skipped with -short")
	}
	const interval = 250 * time.Millisecond
	s := startServerClock(t, nil, "-dp", "2", "--sim-speed", "4", "--max-model-len", "1024",
		"--speculative-config", `{"method": "ngram", "num_speculative_tokens": 3}`,
		// The KV Cache dashboard's block residency panels: every block sampled, and evicted.
		"--enable-prefix-caching", "--kv-cache-metrics", "--kv-cache-metrics-sample", "1.0", "--num-gpu-blocks-override", "80")
	prom := startPrometheus(t, strings.TrimPrefix(s.URL, "http://"), interval)
	loadUntilDone(t, s.URL)
	require.Eventually(t, func() bool {
		v, _, _, err := prom.Query(context.Background(), `count_over_time(vllm:generation_tokens_total[4s]) >= 12 and rate(vllm:generation_tokens_total[2s]) > 0`, time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) == 2
	}, 60*time.Second, 100*time.Millisecond, "prometheus scraped both engines under load")
	require.Eventually(t, func() bool {
		v, _, _, err := prom.Query(context.Background(), `sum(rate(vllm:kv_block_lifetime_seconds_count[2s])) > 0 and sum(rate(vllm:kv_block_reuse_gap_seconds_count[2s])) > 0`, time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) == 1
	}, 60*time.Second, 100*time.Millisecond, "the churn evicts blocks, some of them after a hit")

	vars := strings.NewReplacer("$__rate_interval", "2s", "$__range", "4s", "$job", ".*", "$instance", ".*", "$engine", ".*",
		`model_name=~"$model_name"`, `model_name=~".*"`, "$ttft_slo", "1.0", "$tpot_slo", "0.1", "$model_name", "Qwen/Qwen3-0.6B")
	now := time.Now()
	data, total := 0, 0
	var excluded []string
	for _, file := range grafanaFiles {
		fileData, queries := data, readQueries(t, file)
		for _, q := range queries {
			total++
			key := q.panel + "/" + q.ref
			v, warnings, _, err := prom.Query(context.Background(), vars.Replace(q.expr), now)
			require.NoError(t, err, "%s: %s", key, q.expr)
			assert.Empty(t, warnings, key)
			n := samples(v)
			reason, ok := expectedEmpty[key]
			if r, dp := dpExpectedEmpty[key]; dp {
				reason, ok = r, true
			}
			if file == kvCacheFile {
				reason, ok = kvExpectedEmpty(q.expr)
			}
			if ok {
				assert.Zero(t, n, "%s is expected empty (%s)", key, reason)
				excluded = append(excluded, key+" ("+reason+")")
				continue
			}
			if assert.Positive(t, n, "%s returns no data: %s", key, q.expr) {
				data++
			}
			if strings.Contains(q.expr, "by (instance, engine)") {
				assert.Equal(t, 2, n, "%s: a series per engine", key)
			}
		}
		t.Logf("%s: %d of %d return data", file, data-fileData, len(queries))
	}
	assert.Equal(t, 84+36+17+27+76, total)
	// The TTFT SLO panel reads the bucket vLLM writes as le="1.0"; a Go-style le="1" would leave it empty.
	v, _, _, err := prom.Query(context.Background(), `count(vllm:time_to_first_token_seconds_bucket{le="1"})`, now)
	require.NoError(t, err)
	assert.Zero(t, samples(v), `no le="1" series`)
	t.Logf("Grafana on -dp 2: %d of %d expressions return data; %d excluded: %s", data, total, len(excluded), strings.Join(excluded, "; "))
}
