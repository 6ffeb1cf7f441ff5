package predict_test

import (
	"context"
	"io"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/predict"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// sentLog is a transport that notes each prompt as the scheduler hands it over, in order.
type sentLog struct {
	loadgen.Transport
	mu   sync.Mutex
	sent []string
}

func (l *sentLog) Start(ctx context.Context, p loadgen.Prompt, watch loadgen.TokenSink, itl func(time.Duration), done func(loadgen.Result)) {
	l.mu.Lock()
	l.sent = append(l.sent, p.Text)
	l.mu.Unlock()
	l.Transport.Start(ctx, p, watch, itl, done)
}

// sent is one request as the scheduler made it: its place, flags and, in an open loop or a
// replay, its intended send time from the first request's.
type sent struct {
	Index, Epoch, Turn int
	Warmup             bool
	Offset             time.Duration
}

// sequence runs cfg over tr on clk and returns the prompts in the order they were sent and
// the measured requests by index.
func sequence(t *testing.T, tr loadgen.Transport, clk loadgen.Clock, cfg loadgen.BenchConfig, timed bool) ([]string, []sent) {
	t.Helper()
	log := &sentLog{Transport: tr}
	var mu sync.Mutex
	var results []loadgen.Result
	cfg.Transport, cfg.Clock = log, clk
	cfg.Sinks = []func(loadgen.Result){func(r loadgen.Result) {
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
	}}
	run, err := loadgen.Bench(context.Background(), nil, cfg)
	require.NoError(t, err)
	require.NoError(t, run.Tally.Close())
	require.Nil(t, run.Stopped)
	sort.Slice(results, func(i, j int) bool { return results[i].Index < results[j].Index })
	var out []sent
	for _, r := range results {
		require.True(t, r.OK(), r.ErrorMessage)
		s := sent{Index: r.Index, Epoch: r.Epoch, Turn: r.Turn, Warmup: r.Warmup}
		if timed {
			s.Offset = r.Intended.Sub(results[0].Intended)
		}
		out = append(out, s)
	}
	return log.sent, out
}

// listTrace is a trace of timed arrivals of the workload's prompts.
func listTrace(w loadgen.Workload, ats ...time.Duration) func() (loadgen.ArrivalSource, error) {
	return func() (loadgen.ArrivalSource, error) {
		l := &arrivals{}
		for i, at := range ats {
			l.list = append(l.list, loadgen.Arrival{Index: i, At: at, Prompt: w.Prompt(i)})
		}
		return l, nil
	}
}

type arrivals struct{ list []loadgen.Arrival }

func (l *arrivals) Next() (loadgen.Arrival, error) {
	if len(l.list) == 0 {
		return loadgen.Arrival{}, io.EOF
	}
	a := l.list[0]
	l.list = l.list[1:]
	return a, nil
}

// The same benchmark flags make the same requests through both transports: the simulator
// over HTTP on the wall clock, and in-process on the virtual clock. One scheduler decides
// what is sent and when; only the transport differs.
func TestBothTransportsSendTheSameRequests(t *testing.T) {
	args := []string{"Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "H100", "--max-model-len", "2048"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	inst, err := serve.Start(context.Background(), append(args, "--sim-startup-seconds", "0"), noEnv, serve.WithListener(ln))
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Stop() })
	require.Eventually(t, inst.Ready, 5*time.Second, time.Millisecond)
	c, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: inst.URL()})
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	w := randomWorkload(t, c, 32, 4)
	v, err := loadgen.CalibrateVocab(context.Background(), c)
	require.NoError(t, err)
	convs, err := loadgen.NewSyntheticConversations(loadgen.SyntheticConversationConfig{Turns: 3, InputLen: 16, OutputLen: 4, RangeRatio: 0.5, Seed: 5}, v)
	require.NoError(t, err)

	for _, tc := range []struct {
		name  string
		cfg   loadgen.BenchConfig
		timed bool // intended send times are the schedule's, not the server's
		sends int  // requests sent, warm-ups included (0: as the schedule falls)
	}{
		{name: "closed loop", cfg: loadgen.BenchConfig{NumPrompts: 12, MaxConcurrency: 3}, sends: 12},
		{name: "warm-ups", cfg: loadgen.BenchConfig{NumPrompts: 6, MaxConcurrency: 2, Warmups: 4}, sends: 10},
		{name: "open loop, bursty", cfg: loadgen.BenchConfig{NumPrompts: 15, RequestRate: 40, Burstiness: 0.5, Seed: 9}, timed: true, sends: 15},
		{name: "open loop under a cap", cfg: loadgen.BenchConfig{NumPrompts: 12, RequestRate: 200, MaxConcurrency: 2, Seed: 4}, timed: true, sends: 12},
		// The arrivals nearest its end are at 316 and 550 ms: a loaded machine's lag moves none across.
		{name: "duration-bound", cfg: loadgen.BenchConfig{Duration: 430 * time.Millisecond, RequestRate: 30, Seed: 5}, timed: true, sends: 11},
		{name: "trace replay", cfg: loadgen.BenchConfig{MaxConcurrency: 2,
			Trace: listTrace(w, 0, 10*time.Millisecond, 10*time.Millisecond, 60*time.Millisecond, 61*time.Millisecond, 200*time.Millisecond)}, timed: true, sends: 6},
		{name: "multi-turn", cfg: loadgen.BenchConfig{MaxConcurrency: 2, Conversations: &loadgen.ConversationLoad{Conversations: convs, Count: 3,
			Dialogue: loadgen.DialogueConfig{Vocab: v, Answers: loadgen.AnswerStandIn, Seed: 5}, Think: loadgen.ThinkTime{Mean: 20 * time.Millisecond}}}, sends: 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Workload = w
			target := predict.New(plan(t, args...), loadgen.EndpointCompletions)
			virtualPrompts, virtual := sequence(t, target, target.Clock(), tc.cfg, tc.timed)
			wallPrompts, wall := sequence(t, c, nil, tc.cfg, tc.timed)
			require.NotEmpty(t, virtual)
			if tc.sends > 0 {
				require.Len(t, virtualPrompts, tc.sends)
			}
			if tc.cfg.Conversations != nil {
				// Conversations interleave as their answers come; each one's turns are the same.
				sort.Strings(virtualPrompts)
				sort.Strings(wallPrompts)
				for i := range virtual {
					virtual[i].Index, wall[i].Index = 0, 0
				}
				sort.Slice(virtual, func(i, j int) bool { return virtual[i].Turn < virtual[j].Turn })
				sort.Slice(wall, func(i, j int) bool { return wall[i].Turn < wall[j].Turn })
			}
			assert.Equal(t, virtualPrompts, wallPrompts, "the same prompts in the same order")
			assert.Equal(t, virtual, wall, "the same indexes, epochs, turns, warm-up flags and intended times")
		})
	}
}
