package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/recorder"
	"github.com/vllmtop/vllmtop/internal/app/simtest"
	"github.com/vllmtop/vllmtop/scrape"
)

// kvFull is the fixture with its KV cache nearly full and a queue: a KV-bound server.
func kvFull(t *testing.T) []byte {
	body := string(readFixture(t, "vllm-0.24-single-engine-rust-vllmtop.prom"))
	var out []string
	for _, l := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(l, "vllm:kv_cache_usage_perc{"):
			l = l[:strings.LastIndex(l, " ")] + " 0.97"
		case strings.HasPrefix(l, "vllm:num_requests_waiting{"):
			l = l[:strings.LastIndex(l, " ")] + " 12"
		}
		out = append(out, l)
	}
	return []byte(strings.Join(out, "\n"))
}

func TestMetricsWindowPrintsVerdicts(t *testing.T) {
	noWait(t)
	body := kvFull(t)
	srv := serveBodies(t, body)
	code, out, stderr := metrics(t, "--window", "5s", srv.URL)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "Verdicts")
	assert.Contains(t, out, "kv-bound", "the KV cache is 97% full with a queue")
	assert.Contains(t, out, "saw: ")
	assert.Contains(t, out, "change: --gpu-memory-utilization")

	code, out, _ = metrics(t, srv.URL)
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "Verdicts", "one scrape has no window to judge")
}

func TestMetricsBundleReplaysTheScrapes(t *testing.T) {
	body := kvFull(t)
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	b := recorder.Bundle{Created: t0.Add(time.Minute), Span: time.Minute, Settings: map[string]string{"target": "http://a"}}
	for i := 0; i < 3; i++ {
		b.Scrapes = append(b.Scrapes, recorder.Scrape{Endpoint: "gpu-1:8000", Time: t0.Add(time.Duration(i) * 10 * time.Second), Body: body})
	}
	path, err := recorder.Write(t.TempDir(), b)
	require.NoError(t, err)
	code, out, stderr := metrics(t, "--bundle", path)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "gpu-1:8000")
	assert.Contains(t, out, "kv-bound")
	code, _, stderr = metrics(t, "--bundle", path, "http://x")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no URL")
	code, _, stderr = metrics(t, "--bundle", path+".missing")
	assert.Equal(t, 1, code)
	assert.NotContains(t, strings.TrimSpace(stderr), "\n", "one line")
}

// TestMetricsWindowOnASimulatorAdmissionBound runs metrics --window against a simulator that
// admits two sequences under a load of eight: its verdict is admission-bound. The window
// ends when the server has finished a few more requests, not after a fixed wait.
func TestMetricsWindowOnASimulatorAdmissionBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulator under load; skipped with -short")
	}
	s := simtest.Start(t, "Qwen/Qwen3-0.6B", "--sim-speed", "10", "--max-model-len", "4096", "--max-num-seqs", "2")
	simtest.Load(t, s.URL, 16, 64, 256) // sixteen wanted, two admitted: a queue at every instant
	client, err := scrape.NewClient(s.URL)
	require.NoError(t, err)
	finished := func() float64 {
		snap, err := client.Scrape(context.Background())
		if err != nil || len(snap.Models) == 0 {
			return 0
		}
		return snap.Models[0].Total.RequestsFinished.Or(0)
	}
	require.Eventually(t, func() bool { return finished() >= 4 }, 30*time.Second, 20*time.Millisecond, "the load runs")
	old := waitWindow
	t.Cleanup(func() { waitWindow = old })
	waitWindow = func(ctx context.Context, _ time.Duration) error {
		start := finished()
		for finished() < start+6 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		return nil
	}
	// The gauges are one instant's: a run may see the queue empty between two requests.
	var out string
	require.Eventually(t, func() bool {
		code, o, stderr := metrics(t, "--window", "2s", "--timeout", "20s", s.URL)
		require.Equal(t, 0, code, stderr)
		out = o
		return strings.Contains(out, "admission-bound")
	}, 30*time.Second, 10*time.Millisecond, "admission-bound")
	assert.Contains(t, out, "Verdicts")
	assert.Contains(t, out, "change: --max-num-seqs")
}
