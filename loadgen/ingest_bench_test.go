package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The ingest benchmarks stream from an unpaced SSE server in a child process (this test binary
// re-executed), so the CPU measured here is the client's alone. For 256, 1,024 and 4,096
// streams, each run prints the client's tokens a second (tok/s) and CPU time a token
// (cpu-ns/tok, user and system), the same for the raw reader (raw-tok/s, raw-cpu-ns/tok), and
// the one CPU over the other (cpu-x-raw):
//
//	go test -run '^$' -bench 'Ingest/' -benchtime 1x -count 3 ./loadgen/
//
// BenchmarkReadStream measures the client's own parsing work with no network at all.

func TestMain(m *testing.M) {
	if os.Getenv("LOADGEN_SSE_SERVER") != "" {
		sseServer()
		return
	}
	os.Exit(m.Run())
}

// sseServer answers every POST with LOADGEN_SSE_TOKENS vLLM-shaped chunks as fast as it can,
// 16 chunks a write (a write per chunk would measure the server's syscalls, not the client),
// or, with LOADGEN_SSE_PACE set, one chunk each pace after a prefill of LOADGEN_SSE_PREFILL. It prints its address, serves until stdin closes, then
// prints each request's receive and first-write times (keyed by a hash of the prompt).
func sseServer() {
	tokens, _ := strconv.Atoi(os.Getenv("LOADGEN_SSE_TOKENS"))
	pace, _ := time.ParseDuration(os.Getenv("LOADGEN_SSE_PACE"))
	prefill, _ := time.ParseDuration(os.Getenv("LOADGEN_SSE_PREFILL"))
	const batch = 16
	chunk, last, usage := ingestChunks(tokens)
	var mu sync.Mutex
	times := map[uint64][2]int64{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().String())
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			recv := time.Now().UnixNano()
			var req struct {
				Prompt string `json:"prompt"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			h := fnv.New64a()
			h.Write([]byte(req.Prompt))
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			rc := http.NewResponseController(w)
			if prefill > 0 {
				time.Sleep(prefill)
			}
			for i := 0; i < tokens; {
				n := batch
				if pace > 0 {
					n = 1
					if i > 0 {
						time.Sleep(pace)
					}
				}
				buf := make([]byte, 0, n*len(chunk))
				for k := 0; k < n && i < tokens; k++ {
					if i == tokens-1 {
						buf = append(buf, last...)
					} else {
						buf = append(buf, chunk...)
					}
					i++
				}
				if _, err := w.Write(buf); err != nil {
					return
				}
				_ = rc.Flush()
				if i <= n {
					first := time.Now().UnixNano()
					mu.Lock()
					times[h.Sum64()] = [2]int64{recv, first}
					mu.Unlock()
				}
			}
			_, _ = w.Write(usage)
		}))
	}()
	_, _ = io.Copy(io.Discard, os.Stdin)
	mu.Lock()
	defer mu.Unlock()
	_ = json.NewEncoder(os.Stdout).Encode(times)
}

// ingestChunks are the events of an unpaced stream of tokens as vLLM writes them: a content
// chunk, the last one (with its finish reason), and the usage chunk with [DONE].
func ingestChunks(tokens int) (chunk, last, usage []byte) {
	chunk = []byte(`data: {"id":"cmpl-9f1c2e7a5b3d4e60","object":"text_completion","created":1785000000,"model":"Qwen/Qwen3-0.6B","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}` + "\n\n")
	last = []byte(`data: {"id":"cmpl-9f1c2e7a5b3d4e60","object":"text_completion","created":1785000000,"model":"Qwen/Qwen3-0.6B","choices":[{"index":0,"text":" end","logprobs":null,"finish_reason":"length","stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}` + "\n\n")
	usage = []byte(fmt.Sprintf(`data: {"id":"cmpl-9f1c2e7a5b3d4e60","object":"text_completion","created":1785000000,"model":"Qwen/Qwen3-0.6B","choices":[],"usage":{"prompt_tokens":8,"total_tokens":%d,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", 8+tokens, tokens))
	return chunk, last, usage
}

// ingestBody is a whole unpaced stream of tokens.
func ingestBody(tokens int) []byte {
	chunk, last, usage := ingestChunks(tokens)
	body := bytes.Repeat(chunk, tokens-1)
	return append(append(body, last...), usage...)
}

// pieceReader returns its bytes n at a time, as a socket read would hand over a server's writes.
type pieceReader struct {
	b []byte
	n int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b[:min(len(r.b), r.n)])
	r.b = r.b[n:]
	return n, nil
}

// BenchmarkReadStream is the client's own work a token with no network and no scheduler: a
// canned stream read through the client's stream reader, and through the raw reader's loop,
// in 4,000-byte reads (the 16 chunks the unpaced server writes at a time).
func BenchmarkReadStream(b *testing.B) {
	const tokens = 2000
	body := ingestBody(tokens)
	b.Run("client", func(b *testing.B) {
		c, err := NewClient(ClientConfig{BaseURL: "http://127.0.0.1:1"})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu0 := cpuNow()
		for b.Loop() {
			res := Result{Start: time.Now()}
			st := &stream{c: c, res: &res, timer: NewRequestTimer(&res, tokens, nil), maxTokens: tokens, maxChunks: maxChunks(tokens)}
			stall := newStallTimer(time.Minute, func() {})
			err := c.read(&pieceReader{b: body, n: 4000}, st, stall)
			stall.timer.Stop()
			st.finish()
			if err != nil || !res.OK() || res.OutputTokens != tokens || len(res.ITLs) != tokens-1 {
				b.Fatalf("%v %s %s %d tokens", err, res.Error, res.ErrorMessage, res.OutputTokens)
			}
		}
		b.ReportMetric(float64((cpuNow()-cpu0).Nanoseconds())/float64(b.N*tokens), "cpu-ns/tok")
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		br := bufio.NewReaderSize(nil, 8<<10)
		cpu0 := cpuNow()
		for b.Loop() {
			br.Reset(&pieceReader{b: body, n: 4000})
			n := 0
			for {
				line, err := br.ReadSlice('\n')
				if bytes.HasPrefix(line, []byte("data: {")) {
					n++
				}
				if err != nil {
					break
				}
			}
			if n != tokens+1 {
				b.Fatalf("%d chunks", n)
			}
		}
		b.ReportMetric(float64((cpuNow()-cpu0).Nanoseconds())/float64(b.N*tokens), "cpu-ns/tok")
	})
}

type sseChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	url   string
}

func startSSEServer(b *testing.B, tokens int, pace, prefill time.Duration) *sseChild {
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "LOADGEN_SSE_SERVER=1", fmt.Sprintf("LOADGEN_SSE_TOKENS=%d", tokens),
		"LOADGEN_SSE_PACE="+pace.String(), "LOADGEN_SSE_PREFILL="+prefill.String())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	addr, err := out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	return &sseChild{cmd: cmd, stdin: stdin, out: out, url: "http://" + strings.TrimSpace(addr)}
}

// stop ends the child and returns, by prompt hash, when it received each request and wrote
// its first chunk.
func (c *sseChild) stop() map[uint64][2]int64 {
	c.stdin.Close()
	var times map[uint64][2]int64
	_ = json.NewDecoder(c.out).Decode(&times)
	_ = c.cmd.Wait()
	return times
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type uniqueWorkload struct{ n int }

func (u uniqueWorkload) Name() string { return "unique" }
func (u uniqueWorkload) Prompt(i int) Prompt {
	return Prompt{Text: "request " + strconv.Itoa(i), InputTokens: 8, OutputTokens: u.n, IgnoreEOS: true}
}

func promptHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func benchIngest(b *testing.B, streams, tokens int, pace, prefill time.Duration) {
	for b.Loop() {
		srv := startSSEServer(b, tokens, pace, prefill)
		c, err := NewClient(ClientConfig{BaseURL: srv.url})
		if err != nil {
			b.Fatal(err)
		}
		var rec Recorder
		w := uniqueWorkload{tokens}
		cfg := RunnerConfig{Workload: w, Concurrency: streams, NumRequests: streams, Sinks: []func(Result){rec.Add}}
		if pace > 0 {
			// Paced: an even open loop that keeps about `streams` requests in flight (each
			// lasts prefill + tokens x pace), after a warm-up that opens the connections.
			perRequest := prefill + time.Duration(tokens-1)*pace
			cfg.Concurrency = 0
			cfg.Rate = float64(streams) / perRequest.Seconds()
			cfg.Burstiness = math.Inf(1)
			cfg.NumRequests = 4 * streams
			cfg.Warmup = streams
		}
		r := NewRunner(c, cfg)
		ours := measureIngest(func() {
			if err := r.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
		c.hc.CloseIdleConnections()
		results := rec.Results()
		ours.tokens = len(results) * tokens

		// The same streams read by a minimal reader: POST, then count lines, nothing else.
		var raw ingestCost
		if pace == 0 {
			raw = measureIngest(func() { rawIngest(b, srv.url, streams, tokens) })
			raw.tokens = streams * tokens
		}
		times := srv.stop()

		var added, sendParts, recvParts []float64
		for _, res := range results {
			if !res.OK() || res.OutputTokens != tokens {
				b.Fatalf("request %d: %s %s, %d tokens", res.Index, res.Error, res.ErrorMessage, res.OutputTokens)
			}
			st, ok := times[promptHash(w.Prompt(res.Index).Text)]
			if !ok {
				b.Fatalf("no server times for request %d", res.Index)
			}
			// What the client adds to TTFT: its TTFT minus the server's own time to the first write.
			serverTTFT := time.Duration(st[1] - st[0])
			added = append(added, float64(res.TTFT-serverTTFT)/float64(time.Millisecond))
			if os.Getenv("INGEST_DEBUG") != "" {
				send := time.Duration(st[0] - res.Start.UnixNano())
				recv := time.Duration(res.Start.Add(res.TTFT).UnixNano() - st[1])
				sendParts = append(sendParts, float64(send)/1e6)
				recvParts = append(recvParts, float64(recv)/1e6)
			}
		}
		sort.Float64s(added)
		if len(sendParts) > 0 {
			sort.Float64s(sendParts)
			sort.Float64s(recvParts)
			fmt.Printf("send (client start -> server handler) p50 %.2f p99 %.2f ms; receive (server write -> client read) p50 %.2f p99 %.2f ms\n",
				Percentile(sendParts, 50), Percentile(sendParts, 99), Percentile(recvParts, 50), Percentile(recvParts, 99))
		}
		b.ReportMetric(ours.cpuPerToken(), "cpu-ns/tok")
		if pace == 0 {
			b.ReportMetric(ours.tokensPerSecond(), "tok/s")
			b.ReportMetric(raw.cpuPerToken(), "raw-cpu-ns/tok")
			b.ReportMetric(raw.tokensPerSecond(), "raw-tok/s")
			b.ReportMetric(ours.cpuPerToken()/raw.cpuPerToken(), "cpu-x-raw")
		} else {
			// Client-added TTFT only means something when the client is not saturated.
			b.ReportMetric(Percentile(added, 50), "ttft-added-p50-ms")
			b.ReportMetric(Percentile(added, 99), "ttft-added-p99-ms")
		}
	}
}

// ingestCost is what reading some tokens took: wall time, and this process's CPU time (user
// and system; the server is another process).
type ingestCost struct {
	wall, cpu time.Duration
	tokens    int
}

func (c ingestCost) tokensPerSecond() float64 { return float64(c.tokens) / c.wall.Seconds() }
func (c ingestCost) cpuPerToken() float64     { return float64(c.cpu.Nanoseconds()) / float64(c.tokens) }

// measureIngest times run. It starts from a collected heap and collects what run left before
// it stops, so that each reader pays for its own garbage and none of another's.
func measureIngest(run func()) ingestCost {
	runtime.GC()
	cpu0, t0 := cpuNow(), time.Now()
	run()
	wall := time.Since(t0)
	runtime.GC()
	return ingestCost{wall: wall, cpu: cpuNow() - cpu0}
}

// rawIngest reads the streams with nothing but a line count: the floor a client can reach.
func rawIngest(b *testing.B, url string, streams, tokens int) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}}
	defer hc.CloseIdleConnections()
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := fmt.Sprintf(`{"prompt":"raw %d","max_tokens":%d,"stream":true}`, i, tokens)
			resp, err := hc.Post(url+EndpointCompletions, "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReaderSize(resp.Body, 8<<10)
			n := 0
			for {
				line, err := br.ReadSlice('\n')
				if bytes.HasPrefix(line, []byte("data: {")) {
					n++
				}
				if err != nil {
					break
				}
			}
			if n < tokens {
				b.Errorf("raw reader got %d chunks", n)
			}
		}(i)
	}
	wg.Wait()
}

// BenchmarkIngest streams from the unpaced server at each number of streams, through the
// client as a benchmark runs it and through the raw reader, and reports for both the tokens a
// second and the CPU time a token (cpu-x-raw: the client's CPU a token over the raw
// reader's). About half a million tokens at each size.
func BenchmarkIngest(b *testing.B) {
	for _, tc := range []struct{ streams, tokens int }{{256, 2000}, {1024, 500}, {4096, 125}} {
		b.Run(fmt.Sprintf("streams=%d", tc.streams), func(b *testing.B) { benchIngest(b, tc.streams, tc.tokens, 0, 0) })
	}
}

// BenchmarkTTFTAdded256Streams paces 256 streams (50 ms prefill, 20 ms per token) and reports
// what the client adds to TTFT beyond the server's own time to its first write.
func BenchmarkTTFTAdded256Streams(b *testing.B) {
	benchIngest(b, 256, 50, 20*time.Millisecond, 50*time.Millisecond)
}
