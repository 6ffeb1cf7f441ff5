package tui

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
)

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
}

func newFakeSupervisor() *fakeSupervisor {
	return &fakeSupervisor{events: make(chan server.Event, 64), status: server.Status{
		State: server.Ready, Run: 1, PID: 4242, Args: []string{"vllmtop", "sim", "meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.92"},
		URL: "http://127.0.0.1:8000", GPUMemoryUtilization: 0.92, ModelGiB: 14.99, KVCacheGiB: 54.2, KVCacheTokens: 464720, MaxConcurrency: 3.55, MaxModelLen: 131072,
		StartedAt: t0.Add(-time.Minute), ReadyAt: t0.Add(-50 * time.Second),
	}}
}

func (f *fakeSupervisor) Events() <-chan server.Event { return f.events }
func (f *fakeSupervisor) Status() server.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}
func (f *fakeSupervisor) Restart(_ context.Context, edits ...server.ArgEdit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts = append(f.restarts, edits)
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
	epoch       int
	watches     int
	workload    loadgen.Workload
	finished    int64
	short, long loadgen.Workload
	live        *loadgen.Live
	epochs      *loadgen.Epochs
}

func newFakeLoad() *fakeLoad {
	f := &fakeLoad{concurrency: 4, finished: 120, live: loadgen.NewLive(60, 600, t0), epochs: loadgen.NewEpochs(100),
		short: &loadgen.Fixed{P: loadgen.Prompt{Text: "short", InputTokens: 256, OutputTokens: 128}},
		long:  &loadgen.Fixed{P: loadgen.Prompt{Text: "long", InputTokens: 4096, OutputTokens: 128}}}
	f.begin("")
	return f
}

// begin starts an epoch as loadgen.Session does. f.mu is held.
func (f *fakeLoad) begin(label string) int {
	f.epochs.Begin(f.epoch, loadgen.LoaderStats{Concurrency: f.concurrency, Rate: f.rate}.Settings(), label, t0)
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
func (f *fakeLoad) Pause()  { f.mu.Lock(); f.paused = true; f.mu.Unlock() }
func (f *fakeLoad) Resume() { f.mu.Lock(); f.paused = false; f.mu.Unlock() }
func (f *fakeLoad) Stats() loadgen.LoaderStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return loadgen.LoaderStats{Concurrency: f.concurrency, Rate: f.rate, Paused: f.paused, Epoch: f.epoch, InFlight: f.concurrency, Started: f.finished + int64(f.concurrency), Finished: f.finished}
}
func (f *fakeLoad) Watch() *loadgen.Watched {
	f.mu.Lock()
	f.watches++
	f.mu.Unlock()
	return &loadgen.Watched{}
}
func (f *fakeLoad) Tick(now time.Time) loadgen.Point  { return f.live.Tick(now) }
func (f *fakeLoad) WindowCounts() loadgen.WindowStats { return f.live.WindowCounts() }
func (f *fakeLoad) Epochs() []loadgen.EpochStats      { return f.epochs.All() }

type fakeScraper struct{ body string }

func (f fakeScraper) Scrape(context.Context) (scrape.Snapshot, error) {
	return scrape.Parse(stringsReader(f.body))
}

type testDeps struct {
	sup  *fakeSupervisor
	load *fakeLoad
	deps Deps
}

func newTestDeps(t *testing.T) testDeps {
	t.Helper()
	sup, load := newFakeSupervisor(), newFakeLoad()
	d := Deps{
		Mode: ModeSimulator, Target: "vllmtop sim meta-llama/Llama-3.1-8B-Instruct", Supervisor: sup, Load: load,
		Capacity: func(u float64) (int, float64, error) {
			return int(u * 505000), u * 3.86, nil
		},
		Now: func() time.Time { return t0 }, InitialUtil: 0.92, InitialConc: 4, Theme: "dark",
	}
	return testDeps{sup: sup, load: load, deps: d}
}
