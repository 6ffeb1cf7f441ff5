package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
)

// scheduleRecorder keeps the engine's delivery time of every output token, by request id.
type scheduleRecorder struct {
	mu   sync.Mutex
	ends map[string][]time.Time
}

func (s *scheduleRecorder) ObserveStep(r *sim.StepResult) {
	if r.Idle {
		return
	}
	s.mu.Lock()
	for _, o := range r.Outputs {
		s.ends[o.Seq.ID] = append(s.ends[o.Seq.ID], r.End)
	}
	s.mu.Unlock()
}

func (s *scheduleRecorder) ObserveEnded(*sim.Sequence) {}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPacing1000Streams serves 1,000 concurrent streams on the wall clock, paced by the
// engine, and compares every inter-token gap a client sees with the gap the engine scheduled.
// Clients and server share this process, so the CPU figure is an upper bound for the server.
//
//	go test -run XXX -bench Pacing -benchtime 1x ./server/sim/serve/
func BenchmarkPacing1000Streams(b *testing.B) {
	const tokens = 200
	streams := benchStreams
	for b.Loop() {
		opts, err := ParseArgs([]string{"Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "H100", "--max-model-len", "4096"}, noEnv)
		if err != nil {
			b.Fatal(err)
		}
		setup, err := sim.Resolve(opts.Engine, nil)
		if err != nil {
			b.Fatal(err)
		}
		srv := New(opts, setup, newScaledClock(1), nil)
		rec := &scheduleRecorder{ends: map[string][]time.Time{}}
		srv.drv.observers = append(srv.drv.observers, rec)
		written := map[string][]time.Time{}
		var wmu sync.Mutex
		srv.onWrite = func(id string, at time.Time) {
			wmu.Lock()
			written[id] = append(written[id], at)
			wmu.Unlock()
		}
		ctx, cancel := context.WithCancel(context.Background())
		srv.Start(ctx)
		hs := httptest.NewServer(srv.Handler())

		// The clients run in a child process (this test binary re-executed), as a load
		// generator would: the server's goroutines then do not share a Go runtime with 1,000
		// readers, and only the server's CPU is counted below.
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), "PACING_CLIENT_URL="+hs.URL, fmt.Sprintf("PACING_CLIENT_STREAMS=%d", streams), fmt.Sprintf("PACING_CLIENT_TOKENS=%d", tokens))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		cpu0, wall0 := cpuTime(), time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("client: %v", err)
		}
		var arrivals [][]time.Time
		if err := json.Unmarshal(out.Bytes(), &arrivals); err != nil {
			b.Fatalf("client output: %v", err)
		}
		wall, cpu := time.Since(wall0), cpuTime()-cpu0
		hs.Close()
		cancel()

		// Gap errors: what a client saw, and what the server wrote, against the engine's schedule.
		var clientErrs, serverErrs []time.Duration
		for i, ts := range arrivals {
			id := "cmpl-" + fmt.Sprint(i)
			ends, wrote := rec.ends[id], written[id]
			if len(ts) != tokens || len(ends) != tokens || len(wrote) != tokens {
				b.Fatalf("stream %d: %d tokens seen, %d written, %d scheduled", i, len(ts), len(wrote), len(ends))
			}
			for k := 1; k < tokens; k++ {
				sched := ends[k].Sub(ends[k-1])
				clientErrs = append(clientErrs, absDur(ts[k].Sub(ts[k-1])-sched))
				serverErrs = append(serverErrs, absDur(wrote[k].Sub(wrote[k-1])-sched))
			}
		}
		report := func(errs []time.Duration, name string) {
			sort.Slice(errs, func(i, j int) bool { return errs[i] < errs[j] })
			pct := func(p float64) float64 { return errs[int(p*float64(len(errs)-1))].Seconds() * 1e3 }
			b.ReportMetric(pct(0.50), name+"-p50-ms")
			b.ReportMetric(pct(0.99), name+"-p99-ms")
		}
		report(serverErrs, "server-gap-err")
		if os.Getenv("PACING_DEBUG") != "" {
			// Error by stream number (the write order within a step follows admission order).
			for q := 0; q < 4; q++ {
				var part []time.Duration
				for i := q * streams / 4; i < (q+1)*streams/4; i++ {
					id := "cmpl-" + fmt.Sprint(i)
					w, e := written[id], rec.ends[id]
					for k := 1; k < tokens; k++ {
						part = append(part, absDur(w[k].Sub(w[k-1])-e[k].Sub(e[k-1])))
					}
				}
				sort.Slice(part, func(i, j int) bool { return part[i] < part[j] })
				fmt.Printf("streams %d-%d: server gap err p50 %v p99 %v\n", q*streams/4, (q+1)*streams/4, part[len(part)/2], part[len(part)*99/100])
			}
			var lat []time.Duration
			for i := 0; i < streams; i += 100 {
				id := "cmpl-" + fmt.Sprint(i)
				lat = append(lat, written[id][100].Sub(rec.ends[id][100]))
			}
			fmt.Println("write minus scheduled end at token 100, every 100th stream:", lat)
		}
		report(clientErrs, "client-gap-err")
		b.ReportMetric(cpu.Seconds()/wall.Seconds(), "server-cpu-cores")
		b.ReportMetric(float64(streams*tokens)/wall.Seconds(), "tok/s")
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

var benchStreams = envInt("PACING_STREAMS", 1000)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	if url := os.Getenv("PACING_CLIENT_URL"); url != "" {
		pacingClient(url, envInt("PACING_CLIENT_STREAMS", 1), envInt("PACING_CLIENT_TOKENS", 1))
		return
	}
	os.Exit(m.Run())
}

// pacingClient opens the streams, notes when each chunk arrives, and prints the arrival times
// as JSON on stdout.
func pacingClient(url string, streams, tokens int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}
	arrivals := make([][]time.Time, streams)
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := fmt.Sprintf(`{"prompt":"stream %d says hello","max_tokens":%d,"ignore_eos":true,"stream":true}`, i, tokens)
			req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", fmt.Sprint(i))
			resp, err := client.Do(req)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			defer resp.Body.Close()
			r := bufio.NewReaderSize(resp.Body, 4096)
			ts := make([]time.Time, 0, tokens)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					break
				}
				if bytes.HasPrefix(line, []byte("data: {")) {
					ts = append(ts, time.Now())
				}
			}
			arrivals[i] = ts
		}(i)
	}
	wg.Wait()
	_ = json.NewEncoder(os.Stdout).Encode(arrivals)
}
