package fleet_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchFleet serves n endpoints, each a real capture (single engine, data parallel, spec
// decode, an idle TP=2 server, in turn), behind its own httptest server.
func benchFleet(b *testing.B, n int) []fleet.Endpoint {
	var bodies [][]byte
	for _, name := range []string{"vllm-0.24-single-engine-rust-vllmtop.prom", "vllm-metrics-synthetic-multiprocess-dp2.txt",
		"vllm-v1-metrics-qwen3-30b-specdecode.prom", "vllm-0.25.1-metrics-opt-125m-tp2-idle.prom"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	eps := make([]fleet.Endpoint, n)
	for i := range eps {
		body := bodies[i%len(bodies)]
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write(body)
		}))
		b.Cleanup(s.Close)
		eps[i] = fleet.Endpoint{Name: fmt.Sprintf("gpu-%03d", i), URL: s.URL}
	}
	return eps
}

// BenchmarkFleetRefresh is one refresh of a 200-endpoint fleet at a 1 s interval: every
// endpoint scraped (HTTP, parse, restart check, window), then the rows and verdicts built.
// cpu-s/min is the process's CPU per refresh times 60, what a dashboard refreshing every
// second spends per minute; it includes the 200 in-process servers' side of HTTP.
func BenchmarkFleetRefresh(b *testing.B) {
	eps := benchFleet(b, 200)
	clock := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	d, err := fleet.NewDirect(fleet.DirectConfig{Endpoints: eps, Interval: time.Second, Now: func() time.Time { return clock }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	d.Refresh(ctx) // connections open, baselines present
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		clock = clock.Add(time.Second)
		d.Refresh(ctx)
		f := d.Fleet(diagnose.Facts{})
		if len(f.Rows) < 200 || f.Up != 200 {
			b.Fatalf("%d rows, %d up", len(f.Rows), f.Up)
		}
	}
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(cpu.Seconds()/float64(b.N)*60, "cpu-s/min")
}

// BenchmarkFleetRows is the rows and verdicts alone, for 200 endpoints already scraped:
// what a UI pays per frame.
func BenchmarkFleetRows(b *testing.B) {
	eps := benchFleet(b, 200)
	d, err := fleet.NewDirect(fleet.DirectConfig{Endpoints: eps, Interval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	d.Refresh(context.Background())
	d.Refresh(context.Background())
	b.ReportAllocs()
	for b.Loop() {
		if f := d.Fleet(diagnose.Facts{}); len(f.Rows) < 200 {
			b.Fatal(len(f.Rows))
		}
	}
}

// BenchmarkFleetFetchOnly is the floor under BenchmarkFleetRefresh: the same 200 bodies
// fetched over HTTP (client and in-process server) and nothing else.
func BenchmarkFleetFetchOnly(b *testing.B) {
	eps := benchFleet(b, 200)
	clients := make([]*scrape.Client, len(eps))
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	for i, ep := range eps {
		c, err := scrape.NewClient(ep.URL, scrape.WithHTTPClient(hc))
		if err != nil {
			b.Fatal(err)
		}
		clients[i] = c
	}
	ctx := context.Background()
	fetchAll := func() {
		var wg sync.WaitGroup
		sem := make(chan struct{}, fleet.DefaultMaxConcurrent)
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if _, _, err := c.Fetch(ctx); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	fetchAll()
	cpu0 := processCPU()
	for b.Loop() {
		fetchAll()
	}
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(cpu.Seconds()/float64(b.N)*60, "cpu-s/min")
}
