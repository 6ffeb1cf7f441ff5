package serve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/vlog"
)

// heapInuse is the heap in use after two collections (the second frees what the first's
// finalizers let go).
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A simulated day of load (a burst of streamed requests and a scrape every two virtual
// minutes, logs on) leaves the heap where it was after the first quarter: nothing a request,
// a log line or a scrape leaves behind accumulates.
func TestSoakHeapStaysFlat(t *testing.T) {
	day := 24 * time.Hour
	if testing.Short() {
		day = 2 * time.Hour
	}
	const every, burst = 2 * time.Minute, 6
	clock := sim.NewVirtualClock(t0)
	opts, err := ParseArgs([]string{"--max-num-seqs", "16"}, noEnv)
	require.NoError(t, err)
	setup, err := sim.Resolve(opts.Engine, nil)
	require.NoError(t, err)
	logs := vlog.New(io.Discard, io.Discard, clock.Now, 1, 2)
	srv := New(opts, setup, clock, logs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv.Start(ctx)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client := hs.Client()

	get := func(method, path, body string) {
		req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode, path)
	}
	const completion = `{"model":"Qwen/Qwen3-0.6B","prompt":"soak %d: tell me about paged attention","max_tokens":16,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
	rounds := int(day / every)
	var first uint64
	for i := range rounds {
		var wg sync.WaitGroup
		for j := range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				get("POST", "/v1/completions", strings.Replace(completion, "%d", string(rune('a'+j))+strings.Repeat("x", i%7), 1))
			}()
		}
		wg.Wait()
		get("GET", "/metrics", "")
		clock.Advance(every)
		if i == rounds/4 {
			first = heapInuse()
		}
	}
	last := heapInuse()
	t.Logf("%d requests over %v of virtual time: heap in use %d KiB after a quarter, %d KiB at the end", rounds*burst, day, first>>10, last>>10)
	assert.LessOrEqual(t, last, first+first/10+(1<<20), "the heap grows over a simulated day")
}
