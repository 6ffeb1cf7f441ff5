package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dpBody is a data-parallel server's /metrics with each engine's queue and KV use.
func dpBody(running, waiting [2]int, kv [2]float64, gen [2]int) []byte {
	var b strings.Builder
	fam := func(name, typ string, v func(e int) string) {
		fmt.Fprintf(&b, "# HELP %s x\n# TYPE %s %s\n", name, name, typ)
		for e := range 2 {
			fmt.Fprintf(&b, "%s{engine=\"%d\",model_name=\"m\"} %s\n", name, e, v(e))
		}
	}
	fam("vllm:num_requests_running", "gauge", func(e int) string { return fmt.Sprint(running[e]) })
	fam("vllm:num_requests_waiting", "gauge", func(e int) string { return fmt.Sprint(waiting[e]) })
	fam("vllm:kv_cache_usage_perc", "gauge", func(e int) string { return fmt.Sprint(kv[e]) })
	fam("vllm:generation_tokens_total", "counter", func(e int) string { return fmt.Sprint(gen[e]) })
	return []byte(b.String())
}

func TestMetricsEngineRowsAndImbalance(t *testing.T) {
	noKeyEnv(t)
	srv := serveBodies(t, dpBody([2]int{3, 3}, [2]int{0, 0}, [2]float64{0.2, 0.25}, [2]int{10, 10}))
	code, out, _ := metrics(t, srv.URL)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "  0                3         0   20.0 %")
	assert.Contains(t, out, "  1                3         0   25.0 %")
	assert.Contains(t, out, "imbalance      engine 0 holds 3 of 6 requests (50 %, fair share 50 %),\n               KV use spread 5.0 points\n")
	assert.NotContains(t, out, "imbalanced")
	assertFits(t, out)

	// Engine 1 overloaded: most requests, a queue, a full cache.
	srv = serveBodies(t, dpBody([2]int{2, 40}, [2]int{0, 25}, [2]float64{0.1, 0.97}, [2]int{10, 10}))
	_, out, _ = metrics(t, srv.URL)
	assert.Contains(t, out, "imbalance      engine 1 holds 65 of 67 requests (97 %, fair share 50 %),\n               KV use spread 87.0 points: imbalanced\n")
	assertFits(t, out)

	// Over a window the verdicts name the engine that holds the queue.
	noWait(t)
	srv = serveBodies(t, dpBody([2]int{2, 40}, [2]int{0, 25}, [2]float64{0.1, 0.97}, [2]int{10, 10}),
		dpBody([2]int{2, 40}, [2]int{0, 25}, [2]float64{0.1, 0.97}, [2]int{20, 90}))
	_, out, _ = metrics(t, "--window", "1s", srv.URL)
	assert.Regexp(t, `warning imbalance: \S+ engine 1 holds 25 of the 25\n\s+requests waiting across 2 engines of m`, out)
	assert.Contains(t, out, "info kv-skew: KV use differs by 87 points across 2 engines of m")
}
