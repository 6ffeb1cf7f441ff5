package tui

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

const benchServeEnv = "VLLMTOP_FLEET_BENCH_SERVE"

// TestFleetBenchServer is the benchmark's child process, not a test: with the variable set it
// serves that many endpoints, each a real vLLM capture in turn, prints their addresses and
// serves until its standard input closes. Apart from the dashboard, its CPU is not counted.
func TestFleetBenchServer(t *testing.T) {
	n := 0
	if _, err := fmt.Sscan(os.Getenv(benchServeEnv), &n); err != nil || n <= 0 {
		t.Skip("the fleet benchmark's child process")
	}
	var bodies [][]byte
	for _, name := range []string{"vllm-0.24-single-engine-rust-vllmtop.prom", "vllm-metrics-synthetic-multiprocess-dp2.txt",
		"vllm-v1-metrics-qwen3-30b-specdecode.prom", "vllm-0.25.1-metrics-opt-125m-tp2-idle.prom"} {
		body, err := os.ReadFile(filepath.Join("..", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		body := bodies[i%len(bodies)]
		go func() {
			_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				_, _ = w.Write(body)
			}))
		}()
		fmt.Println("ADDR", ln.Addr().String())
	}
	_, _ = bufio.NewReader(os.Stdin).ReadString(0) // until the parent closes it
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFleetView200 runs the dashboard's fleet mode against 200 endpoints served by a
// child process, as vllmtop runs it: the Direct source at fleet.IntervalFor(200) in its own
// goroutines, its rows read in commands, the UI ticking as the dashboard does in fleet mode, with the Fleet view drawn and
// the screen built on every message. One op is one refresh interval of wall time; cpu-s/min
// is this process's CPU (user and system) per minute of it.
//
//	go test ./tui/ -run '^$' -bench 'Fleet(View|Source)200' -benchtime 4x
func BenchmarkFleetView200(b *testing.B) { benchFleetView(b, true) }

// BenchmarkFleetSource200 is the same without the UI: the source's scrapes alone, to tell
// the dashboard's share from the library's.
func BenchmarkFleetSource200(b *testing.B) { benchFleetView(b, false) }

func benchFleetView(b *testing.B, ui bool) {
	const n = 200
	child := exec.Command(os.Args[0], "-test.run=^TestFleetBenchServer$")
	child.Env = append(os.Environ(), benchServeEnv+"="+fmt.Sprint(n))
	stdin, _ := child.StdinPipe()
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = child.Wait() })
	var eps []fleet.Endpoint
	sc := bufio.NewScanner(out)
	for len(eps) < n && sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			eps = append(eps, fleet.Endpoint{Name: fmt.Sprintf("gpu-%03d", len(eps)), URL: "http://" + addr})
		}
	}
	if len(eps) < n {
		b.Fatalf("the child served %d endpoints", len(eps))
	}
	interval := fleet.IntervalFor(n)
	src, err := fleet.NewDirect(fleet.DirectConfig{Endpoints: eps, Interval: interval})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := src.Refresh(ctx); err != nil { // connections made, baselines taken
		b.Fatal(err)
	}
	m := New(Deps{Mode: ModeAttach, Theme: "dark", FleetDeps: FleetDeps{Fleet: src}})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	msgs := make(chan tea.Msg, 1)
	go func() {
		for ui && ctx.Err() == nil {
			msgs <- waitFleetEvery(src, diagnose.Facts{}, fleetGap(n))()
		}
	}()
	go func() { _ = src.Run(ctx) }()
	ticker := time.NewTicker(uiIntervalFor(m.c.deps))
	defer ticker.Stop()
	b.ResetTimer()
	cpu0, wall0 := processCPU(), time.Now()
	end := wall0.Add(time.Duration(b.N) * interval)
	reads := 0
	for now := time.Now(); now.Before(end); now = time.Now() {
		select {
		case msg := <-msgs:
			m.Update(msg)
			reads++
		case at := <-ticker.C:
			if ui {
				m.Update(uiTickMsg{gen: m.tickGen, at: at})
			}
		}
		if ui {
			_ = m.View()
		}
	}
	cpu, wall := processCPU()-cpu0, time.Since(wall0)
	b.StopTimer()
	if f := src.Fleet(diagnose.Facts{}); f.Up != n {
		b.Fatalf("%d of %d endpoints up", f.Up, n)
	}
	b.ReportMetric(cpu.Seconds()/wall.Minutes(), "cpu-s/min")
	b.ReportMetric(float64(reads)/wall.Minutes(), "reads/min")
	b.ReportMetric(interval.Seconds(), "interval-s")
}
