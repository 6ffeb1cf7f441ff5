package tui

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// simCapacity is the simulator's capacity model for a simulator command line, as the
// dashboard's wiring gives it.
func simCapacity(args ...string) func(float64, capacity.Workload) (capacity.Report, error) {
	return func(u float64, w capacity.Workload) (capacity.Report, error) {
		a := server.EditArgs(args, server.SetGPUMemoryUtilization(u))
		return serve.CapacityReport(a, func(string) string { return "" }, w)
	}
}

func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type fakeSupervisor struct {
	mu       sync.Mutex
	events   chan server.Event
	status   server.Status
	restarts [][]server.ArgEdit
	stopped  bool
	killed   bool
	// restartHook, when set, sees each restart's edits after it is recorded; its error is
	// the restart's.
	restartHook func([]server.ArgEdit) error
}

func newFakeSupervisor() *fakeSupervisor {
	return &fakeSupervisor{events: make(chan server.Event, 64), status: server.Status{
		State: server.Ready, Run: 1, PID: 4242,
		Args: []string{"/tmp/go-build3411/b001/exe/vllmtop", "sim", "meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.92", "--port", "41234"},
		URL:  "http://127.0.0.1:41234", GPUMemoryUtilization: 0.92, ModelGiB: 14.99, KVCacheGiB: 54.2, KVCacheTokens: 464720, KVCacheBlocks: 29045,
		MaxConcurrency: 3.55, MaxModelLen: 131072, StartedAt: t0.Add(-time.Minute), ReadyAt: t0.Add(-50 * time.Second),
	}}
}

func (f *fakeSupervisor) Events() <-chan server.Event { return f.events }
func (f *fakeSupervisor) Status() server.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}
func (f *fakeSupervisor) setStatus(change func(*server.Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.status)
}
func (f *fakeSupervisor) Restart(_ context.Context, edits ...server.ArgEdit) error {
	f.mu.Lock()
	f.restarts = append(f.restarts, edits)
	hook := f.restartHook
	f.mu.Unlock()
	if hook != nil {
		return hook(edits)
	}
	return nil
}
func (f *fakeSupervisor) Stop(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	return nil
}
func (f *fakeSupervisor) Kill() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = true
	return nil
}

// fakeLoad records the dashboard's calls; its statistics are real loadgen types the tests feed.
type fakeLoad struct {
	mu          sync.Mutex
	concurrency int
	rate        float64
	paused      bool
	pauses      int
	cancels     int // CancelInFlight's calls
	epoch       int
	watches     []*loadgen.Watched
	workload    loadgen.Workload
	finished    int64
	queued      int64 // started in rate mode beyond what finished: the fake server fell behind
	tokens      int64
	short, long loadgen.Workload
	prefix      []bool // SharedPrefix's calls
	live        *loadgen.Live
	epochs      *loadgen.Epochs
	now         func() time.Time
}

func newFakeLoad(now func() time.Time) *fakeLoad {
	f := &fakeLoad{concurrency: 4, finished: 120, live: loadgen.NewLive(loadgen.LiveSlots(0), 600, t0), epochs: loadgen.NewEpochs(100),
		short: &loadgen.Fixed{P: loadgen.Prompt{Text: "short", InputTokens: 256, OutputTokens: 128}},
		long:  &loadgen.Fixed{P: loadgen.Prompt{Text: "long", InputTokens: 4096, OutputTokens: 128}}, now: now}
	f.begin("")
	return f
}

// begin starts an epoch as loadgen.Session does. f.mu is held.
func (f *fakeLoad) begin(label string) int {
	f.epochs.Begin(f.epoch, loadgen.LoaderStats{Concurrency: f.concurrency, Rate: f.rate}.Settings(), label, f.now())
	return f.epoch
}

func (f *fakeLoad) SetConcurrency(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.concurrency, f.rate = n, 0
	f.epoch++
	return f.begin("")
}
func (f *fakeLoad) SetRate(r float64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rate = r
	f.epoch++
	return f.begin("")
}
func (f *fakeLoad) Mark(label string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch++
	return f.begin(label)
}
func (f *fakeLoad) UseLongPrompts(on bool) (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.workload = f.short
	if on {
		f.workload = f.long
	}
	f.epoch++
	return f.workload.Name(), f.begin("")
}
func (f *fakeLoad) SharedPrefix(on bool) (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	base := "random 256 in / 128 out" // Deps.Workload's
	if f.workload != nil {
		base = f.workload.Name()
	}
	f.prefix = append(f.prefix, on)
	f.epoch++
	name := base + ", prefix off"
	if on {
		name = base + ", prefix on"
	}
	return name, f.begin("")
}
func (f *fakeLoad) Pause() {
	f.mu.Lock()
	f.paused = true
	f.pauses++
	f.mu.Unlock()
}
func (f *fakeLoad) Resume() { f.mu.Lock(); f.paused = false; f.mu.Unlock() }

func (f *fakeLoad) CancelInFlight() { f.mu.Lock(); f.cancels++; f.mu.Unlock() }
func (f *fakeLoad) isPaused() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused
}
func (f *fakeLoad) Stats() loadgen.LoaderStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return loadgen.LoaderStats{Concurrency: f.concurrency, Rate: f.rate, Paused: f.paused, Epoch: f.epoch, InFlight: f.concurrency,
		Started: f.finished + int64(f.concurrency) + f.queued, Finished: f.finished, TokensReceived: f.tokens}
}
func (f *fakeLoad) Watch() *loadgen.Watched {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &loadgen.Watched{}
	f.watches = append(f.watches, w)
	return w
}
func (f *fakeLoad) Tick(now time.Time) loadgen.Point { return f.live.Tick(now) }
func (f *fakeLoad) Window() loadgen.WindowStats      { return f.live.Window() }
func (f *fakeLoad) Epochs() []loadgen.EpochStats     { return f.epochs.All() }

// result is a request that finished at the fake clock: the same to the live window and the
// epochs, as the session's sinks see it.
func (f *fakeLoad) result(r loadgen.Result) {
	f.mu.Lock()
	r.Epoch = f.epoch
	f.tokens += int64(r.OutputTokens)
	f.finished++
	f.mu.Unlock()
	f.live.Add(r)
	f.epochs.Add(r)
}

// fakeScraper serves exposition(k) on its k-th scrape, stamped with the fake clock.
type fakeScraper struct {
	mu   sync.Mutex
	k    int
	ttft float64 // the TTFT every request of the next scrape has, in seconds
	spec bool
	// prefix adds vLLM's prefix-cache counters: a quarter of the prompt tokens hit.
	prefix bool
	err    error
	now    func() time.Time
	start  float64 // process_start_time_seconds
	util   string  // cache_config_info's gpu_memory_utilization ("0.92" when empty)
}

func (f *fakeScraper) Scrape(context.Context) (scrape.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return scrape.Snapshot{}, f.err
	}
	f.k++
	body := exposition(f.k, f.ttft, f.start, f.spec) + prefixExposition(f.k, f.prefix)
	if f.util != "" {
		body = strings.Replace(body, `gpu_memory_utilization="0.92"`, `gpu_memory_utilization="`+f.util+`"`, 1)
	}
	snap, err := scrape.Parse(strings.NewReader(body))
	snap.Time = f.now()
	return snap, err
}

// exposition is a vLLM /metrics text after k seconds of a steady load of 3 requests a second
// (256 prompt tokens, 128 out): counters and histograms grow by the second, so two scrapes
// make a window. Every queue time is in the first bucket (at most 0.3 s: a bound, not a value).
func exposition(k int, ttft, start float64, spec bool) string {
	if ttft == 0 {
		ttft = 0.035
	}
	n := 3 * k
	l := `{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"}`
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running%s 4", l)
	w("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting%s %d", l, k%3)
	w("# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc%s %g", l, 0.2+0.01*float64(k%20))
	w("# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total%s %d", l, 256*n)
	w("# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total%s %d", l, 128*n)
	w("# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total%s %d", l, k/10)
	hist := func(name string, bounds []float64, v float64) {
		w("# TYPE vllm:%s histogram", name)
		for _, ub := range bounds {
			c := 0
			if v <= ub {
				c = n
			}
			w(`vllm:%s_bucket{engine="0",le="%g",model_name="meta-llama/Llama-3.1-8B-Instruct"} %d`, name, ub, c)
		}
		w(`vllm:%s_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} %d`, name, n)
		w("vllm:%s_count%s %d\nvllm:%s_sum%s %g", name, l, n, name, l, float64(n)*v)
	}
	hist("time_to_first_token_seconds", []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1}, ttft)
	hist("request_queue_time_seconds", []float64{0.3, 0.5, 0.8, 1, 1.5, 2}, 0.004)
	// The TTFT is the queue, the prefill and a few ms of the API server's, as in vLLM: a
	// slower TTFT is a longer prefill here.
	hist("request_prefill_time_seconds", []float64{0.3, 0.5, 0.8, 1, 1.5, 2}, max(0.021, ttft-0.014))
	if spec {
		w("# TYPE vllm:spec_decode_num_drafts counter\nvllm:spec_decode_num_drafts_total%s %d", l, 100*k)
		w("# TYPE vllm:spec_decode_num_draft_tokens counter\nvllm:spec_decode_num_draft_tokens_total%s %d", l, 300*k)
		w("# TYPE vllm:spec_decode_num_accepted_tokens counter\nvllm:spec_decode_num_accepted_tokens_total%s %d", l, 210*k)
	}
	w(`# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",engine="0",gpu_memory_utilization="0.92",kv_cache_max_concurrency="3.55",kv_cache_size_tokens="464720",num_gpu_blocks="29045"} 1.0`)
	w("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %g", start)
	return b.String()
}

// prefixExposition is vLLM's prefix-cache counters for exposition(k): 64 of each request's
// 256 prompt tokens found in the cache; "" when off.
func prefixExposition(k int, on bool) string {
	if !on {
		return ""
	}
	l := `{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"}`
	return fmt.Sprintf("# TYPE vllm:prefix_cache_queries counter\nvllm:prefix_cache_queries_total%s %d\n"+
		"# TYPE vllm:prefix_cache_hits counter\nvllm:prefix_cache_hits_total%s %d\n", l, 256*3*k, l, 64*3*k)
}

type testDeps struct {
	sup   *fakeSupervisor
	load  *fakeLoad
	scr   *fakeScraper
	deps  Deps
	clock *time.Time
}

func newTestDeps(t *testing.T) testDeps {
	t.Helper()
	clock := t0
	now := func() time.Time { return clock }
	sup, load := newFakeSupervisor(), newFakeLoad(now)
	scr := &fakeScraper{now: now, start: float64(t0.Add(-2 * time.Minute).Unix())}
	d := Deps{
		Mode: ModeSimulator, Target: "vllmtop sim meta-llama/Llama-3.1-8B-Instruct", Supervisor: sup, Load: load, Scraper: scr,
		Capacity: &capacity.Model{
			At: func(u float64) (int, float64, error) {
				return int(u * 505000), u * 3.86, nil
			},
			Plan: simCapacity("meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "H100-SXM-80GB"),
		},
		Now: now, InitialUtil: 0.92, InitialConc: 4, Theme: "dark", Workload: "random 256 in / 128 out",
		Workloads: [2]capacity.Workload{{PromptTokens: 256, OutputTokens: 128}, {PromptTokens: 4096, OutputTokens: 128}},
	}
	return testDeps{sup: sup, load: load, scr: scr, deps: d, clock: &clock}
}
