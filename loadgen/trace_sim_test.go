package loadgen_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim"
)

var simT0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// simVocab is the simulator's calibrated vocabulary for /v1/completions, as CalibrateVocab
// finds it: the candidate words its tokenizer makes one token, and no overhead (it adds no BOS).
func simVocab() *loadgen.Vocab {
	v := &loadgen.Vocab{Checked: true}
	for _, w := range loadgen.EstimatedVocab().Words {
		if sim.CountTokens(w) == 1 && sim.CountTokens(" "+w) == 1 {
			v.Words = append(v.Words, w)
		}
	}
	return v
}

// expectedHits is what a prefix cache must serve each request of a trace sent one at a time,
// from the trace alone. A prompt of the server's form is lead tokens every prompt shares (a
// chat template's head), its words, then the rest of the form's overhead; word p is
// (hash_ids[p/traceBlock], p%traceBlock). A request reuses the longest prefix it shares with
// an earlier prompt, of which the cache holds the full engine blocks, and vLLM always
// computes the last prompt token, so at most len-1 tokens hit.
func expectedHits(entries []loadgen.TraceEntry, traceBlock, engineBlock, lead, overhead int) []int {
	hits := make([]int, len(entries))
	for i, e := range entries {
		best := 0
		for _, prev := range entries[:i] {
			shared := 0
			for k := 0; k < len(e.HashIDs) && k < len(prev.HashIDs) && e.HashIDs[k] == prev.HashIDs[k]; k++ {
				shared = k + 1
			}
			words, prevWords := e.InputLen-overhead, prev.InputLen-overhead
			common := 0
			switch {
			case shared == 0:
			case shared*traceBlock >= words && words == prevWords:
				common = e.InputLen // the same prompt
			default:
				common = lead + min(shared*traceBlock, words, prevWords)
			}
			best = max(best, min(common, prev.InputLen/engineBlock*engineBlock))
		}
		hits[i] = min(best, e.InputLen-1) / engineBlock * engineBlock
	}
	return hits
}

// engineTransport serves each request on the simulated engine to its end as it starts, on
// the engine's own time, and hands the result back at once (async: at the answer's end on
// clock); serve sees each prompt with the clock's time.
type engineTransport struct {
	engine *sim.Engine
	clock  *loadgen.VirtualClock
	async  bool
	serve  func(p loadgen.Prompt, at time.Time, seq *sim.Sequence)
	now    time.Time // the engine's
}

func (e *engineTransport) Start(_ context.Context, p loadgen.Prompt, watch loadgen.TokenSink, _ func(time.Duration), done func(loadgen.Result)) {
	at := e.clock.Now()
	seq, err := e.engine.Add(sim.Request{Prompt: sim.Tokenize(p.Text), MaxTokens: p.OutputTokens, IgnoreEOS: true, Arrival: at})
	if err != nil {
		done(loadgen.Result{Start: at, Error: loadgen.ErrHTTP400, ErrorMessage: err.Error()})
		return
	}
	e.now = maxTime(e.now, at)
	var answer []int
	for steps := 0; !seq.Finished() && steps < 100000; steps++ {
		r := e.engine.Step(e.now)
		if r.Idle {
			e.now = r.NextReady
			continue
		}
		for _, o := range r.Outputs {
			answer = append(answer, o.Token)
		}
		e.now = r.End
	}
	e.serve(p, at, seq)
	res := loadgen.Result{Start: at, TTFT: seq.Times.FirstToken.Sub(at), E2EL: seq.Times.Finished.Sub(at), Status: 200,
		PromptTokens: len(seq.Prompt), OutputTokens: seq.Outputs, Chunks: seq.Outputs}
	if !e.async {
		done(res)
		return
	}
	e.clock.At(e.now, func() { // the answer has arrived
		if watch != nil {
			watch.Token(sim.Detokenize(answer), e.now)
		}
		done(res)
	})
}

func (e *engineTransport) TokensReceived() int64 { return 0 }

// tracedSource notes each arrival it hands on.
type tracedSource struct {
	src  loadgen.ArrivalSource
	read []loadgen.Arrival
}

func (s *tracedSource) Next() (loadgen.Arrival, error) {
	a, err := s.src.Next()
	if err == nil {
		s.read = append(s.read, a)
	}
	return a, err
}

// replayOnEngine replays a trace on the simulated engine in virtual time, serving each
// request to its end before the next is added (so every earlier prompt is in the cache), and
// returns the entries, the tokens each request found in the prefix cache, and the engine.
func replayOnEngine(t *testing.T, trace io.Reader, traceBlock int, cfg sim.Config) ([]loadgen.TraceEntry, []int, *sim.Engine) {
	t.Helper()
	setup, err := sim.Resolve(cfg, nil)
	require.NoError(t, err)
	engine := sim.NewEngine(setup)
	prompts := loadgen.NewTracePrompts(simVocab(), loadgen.TracePromptConfig{BlockSize: traceBlock, IgnoreEOS: true, Seed: 5})
	schedule, err := loadgen.NewSchedule(loadgen.NewMooncakeReader(trace, "trace.jsonl", loadgen.MooncakeOptions{BlockSize: traceBlock}),
		loadgen.ScheduleConfig{Prompt: prompts.Prompt, Speedup: 10})
	require.NoError(t, err)
	src := &tracedSource{src: schedule}
	clock := loadgen.NewVirtualClock(simT0)
	var entries []loadgen.TraceEntry
	var hits []int
	tr := &engineTransport{engine: engine, clock: clock, serve: func(p loadgen.Prompt, at time.Time, seq *sim.Sequence) {
		a := src.read[len(entries)] // one at a time, in the trace's order
		assert.Equal(t, simT0.Add(a.Entry.Timestamp/10), at, "line %d sent at its trace time", a.Entry.Line)
		require.Len(t, seq.Prompt, a.Entry.InputLen, "line %d: the prompt has the trace's length", a.Entry.Line)
		assert.Equal(t, a.Entry.OutputLen, seq.Outputs, "line %d: output length from the trace", a.Entry.Line)
		entries = append(entries, a.Entry)
		hits = append(hits, seq.CachedTokens)
	}}
	require.NoError(t, loadgen.NewRunner(nil, loadgen.RunnerConfig{Arrivals: src, Transport: tr, Clock: clock}).Run(context.Background()))
	return entries, hits, engine
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// blocks100 is a trace with a block size of 100 tokens, which a 16-token engine block does
// not divide: the hits round down. It shares, repeats and extends prefixes.
const blocks100 = `{"timestamp": 0, "input_length": 250, "output_length": 4, "hash_ids": [1, 2, 3]}
{"timestamp": 10, "input_length": 300, "output_length": 4, "hash_ids": [1, 2, 3]}
{"timestamp": 20, "input_length": 420, "output_length": 2, "hash_ids": [1, 2, 3, 4, 5]}
{"timestamp": 30, "input_length": 199, "output_length": 1, "hash_ids": [1, 9]}
{"timestamp": 40, "input_length": 100, "output_length": 3, "hash_ids": [1]}
{"timestamp": 50, "input_length": 512, "output_length": 8, "hash_ids": [7, 8, 9, 10, 11, 12]}
{"timestamp": 60, "input_length": 420, "output_length": 2, "hash_ids": [1, 2, 3, 4, 5]}
`

func TestSimulatorPrefixHitsMatchTheTracesHashIDs(t *testing.T) {
	sample, err := os.ReadFile("../testdata/mooncake-sample.jsonl")
	require.NoError(t, err)
	cases := []struct {
		name                    string
		trace                   string
		traceBlock, engineBlock int
	}{
		{"Mooncake sample, 512-token blocks, engine blocks of 16", string(sample), 512, 16},
		{"Mooncake sample, engine blocks of 32", string(sample), 512, 32},
		{"100-token trace blocks: hits round down to 16", blocks100, 100, 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entries, hits, engine := replayOnEngine(t, strings.NewReader(tc.trace), tc.traceBlock,
				sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", BlockSize: tc.engineBlock})
			want := expectedHits(entries, tc.traceBlock, tc.engineBlock, 0, 0)
			assert.Equal(t, want, hits, "prefix-cache hits, request by request")
			total := 0
			for _, h := range want {
				total += h
			}
			assert.Positive(t, total, "the trace shares prefixes")
			assert.EqualValues(t, total, engine.Counters().PrefixHits)
		})
	}
	// The expectations are not trivially met: the sample's sharing, worked by hand.
	entries, hits, _ := replayOnEngine(t, strings.NewReader(string(sample)), 512, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100"})
	require.Len(t, entries, 10)
	assert.Equal(t, []int{
		0,    // [0 1 2]
		1024, // [0 1 3]: two blocks of the first
		1392, // [0 1 2 4 5 6]: the first whole, 1400 tokens, of which 87 full engine blocks
		0,    // [7 8]
		2032, // [0 1 2 4]: all its 2048 tokens are line 3's, but the last is computed: 2047, down to 2032
		0,    // [9 10]
		2592, // [0 1 2 4 5 6 11]: line 3 whole (2600), 162 engine blocks
		0,    // [12]
		688,  // [7 8] again: line 4 whole (700, 43 blocks), not its 1024
		512,  // [0 13]: the shared system block
	}, hits)

	// With prefix caching off nothing hits.
	_, off, engine := replayOnEngine(t, strings.NewReader(string(sample)), 512, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", PrefixCaching: sim.Off})
	assert.Equal(t, make([]int, 10), off)
	assert.Zero(t, engine.Counters().PrefixHits)
}

// turnOnEngine is one turn as the engine served it.
type turnOnEngine struct {
	loadgen.Result
	computed int // prompt tokens the engine computed: those the prefix cache did not hold
}

// playOnEngine plays the first n conversations of convs on the engine in virtual time, one
// after another, the history holding the answers the engine generated, and returns each
// conversation's turns.
func playOnEngine(t *testing.T, engine *sim.Engine, convs loadgen.Conversations, n int) [][]turnOnEngine {
	t.Helper()
	var computed []int
	clock := loadgen.NewVirtualClock(simT0)
	tr := &engineTransport{engine: engine, clock: clock, async: true, serve: func(_ loadgen.Prompt, _ time.Time, seq *sim.Sequence) {
		computed = append(computed, len(seq.Prompt)-seq.CachedTokens)
	}}
	var rec loadgen.Recorder
	load := &loadgen.ConversationLoad{Conversations: convs, Count: n, Dialogue: loadgen.DialogueConfig{Vocab: simVocab(), IgnoreEOS: true},
		Think: loadgen.ThinkTime{Mean: 3 * time.Second}}
	r := loadgen.NewRunner(nil, loadgen.RunnerConfig{Conversations: load, Concurrency: 1, Transport: tr, Clock: clock, Sinks: []func(loadgen.Result){rec.Add}})
	require.NoError(t, r.Run(context.Background()))
	var all [][]turnOnEngine
	for i, res := range rec.Results() {
		if res.Turn == 1 {
			all = append(all, nil)
		}
		all[len(all)-1] = append(all[len(all)-1], turnOnEngine{Result: res, computed: computed[i]})
	}
	return all
}

func TestMultiTurnLaterTurnsHitThePrefixCache(t *testing.T) {
	convs, err := loadgen.NewSyntheticConversations(loadgen.SyntheticConversationConfig{
		Turns: 4, InputLen: 48, OutputLen: 32, SystemLen: 256, PrefixLen: 1024, Seed: 3}, simVocab())
	require.NoError(t, err)
	run := func(caching sim.Toggle) [][]turnOnEngine {
		setup, err := sim.Resolve(sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", PrefixCaching: caching}, nil)
		require.NoError(t, err)
		return playOnEngine(t, sim.NewEngine(setup), convs, 3)
	}
	on, off := run(sim.On), run(sim.Off)
	var flatOn, flatOff []loadgen.Result
	for i := range on {
		require.Len(t, on[i], 4)
		require.Len(t, off[i], 4)
		for turn := 1; turn < 4; turn++ {
			prev, cur := on[i][turn-1], on[i][turn]
			assert.Greater(t, cur.PromptTokens, prev.PromptTokens+prev.OutputTokens, "conversation %d turn %d carries the history", i, turn+1)
			// At least every full block of the previous turn's prompt was cached.
			assert.LessOrEqual(t, cur.computed, cur.PromptTokens-prev.PromptTokens/16*16, "conversation %d turn %d", i, turn+1)
			assert.Less(t, cur.TTFT, on[i][0].TTFT, "conversation %d: turn %d beats turn 1 with prefix caching", i, turn+1)
			assert.Less(t, cur.TTFT, off[i][turn].TTFT, "conversation %d turn %d: faster with caching than without", i, turn+1)
			assert.Equal(t, cur.PromptTokens, off[i][turn].computed, "without caching the whole prompt is computed")
			assert.GreaterOrEqual(t, off[i][turn].TTFT, off[i][0].TTFT, "without caching a longer prompt is never faster")
		}
		for k := range on[i] {
			flatOn = append(flatOn, on[i][k].Result)
			flatOff = append(flatOff, off[i][k].Result)
		}
	}
	// Later conversations find the shared system prompt (256 tokens, 16 blocks) in the
	// cache, and nothing of the first one's own prefix.
	assert.Equal(t, on[0][0].PromptTokens, on[0][0].computed, "the very first turn hits nothing")
	assert.Equal(t, 256, on[1][0].PromptTokens-on[1][0].computed)
	assert.Equal(t, 256, on[2][0].PromptTokens-on[2][0].computed)

	firstOn, laterOn := loadgen.SummarizeTurnGroups(flatOn, []float64{50})
	firstOff, laterOff := loadgen.SummarizeTurnGroups(flatOff, []float64{50})
	t.Logf("TTFT p50: caching on turn 1 %.2f ms, turns 2+ %.2f ms; off %.2f ms, %.2f ms",
		firstOn.TTFT.Median, laterOn.TTFT.Median, firstOff.TTFT.Median, laterOff.TTFT.Median)
	assert.Less(t, laterOn.TTFT.Median, firstOn.TTFT.Median)
	assert.GreaterOrEqual(t, laterOff.TTFT.Median, firstOff.TTFT.Median)
}

// counterSum adds a counter's samples in a Prometheus text exposition.
func counterSum(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			require.NoError(t, err)
			sum += v
		}
	}
	require.NoError(t, sc.Err())
	return sum
}

// TestTraceReplayOverHTTPOnTheSimulator replays the sample through the client against a
// served simulator, on both endpoints: the server counts the trace's exact lengths, and its
// prefix-cache hits are the trace's.
func TestTraceReplayOverHTTPOnTheSimulator(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		lead     int // template tokens before the text: <|im_start|> user \n
	}{{loadgen.EndpointCompletions, 0}, {loadgen.EndpointChat, 3}} {
		t.Run(tc.endpoint, func(t *testing.T) {
			url := startSim(t, "Qwen/Qwen3-0.6B", "--sim-gpu", "H100", "--sim-speed", "50")
			c, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: url, Endpoint: tc.endpoint})
			require.NoError(t, err)
			vocab, err := loadgen.CalibrateVocab(context.Background(), c)
			require.NoError(t, err)
			prompts := loadgen.NewTracePrompts(vocab, loadgen.TracePromptConfig{IgnoreEOS: true})
			schedule, err := loadgen.NewSchedule(loadgen.NewMooncakeReader(openTestdata(t, "mooncake-sample.jsonl"), "mooncake-sample.jsonl", loadgen.MooncakeOptions{}),
				loadgen.ScheduleConfig{Prompt: prompts.Prompt, Speedup: 100})
			require.NoError(t, err)
			before := counterSum(t, url, "vllm:prefix_cache_hits_total")
			src := &tracedSource{src: schedule}
			var rec loadgen.Recorder
			// One request at a time, so each finds every earlier prompt in the cache.
			r := loadgen.NewRunner(c, loadgen.RunnerConfig{Arrivals: src, MaxConcurrency: 1, Sinks: []func(loadgen.Result){rec.Add}})
			require.NoError(t, r.Run(context.Background()))
			results := rec.Results()
			require.Len(t, results, 10)
			sort.Slice(results, func(i, j int) bool { return results[i].Index < results[j].Index })
			var entries []loadgen.TraceEntry
			for i, res := range results {
				a := src.read[i]
				require.True(t, res.OK(), "line %d: %s %s", a.Entry.Line, res.Error, res.ErrorMessage)
				assert.Equal(t, a.Entry.InputLen, res.PromptTokens, "line %d: the server counts the trace's input length", a.Entry.Line)
				assert.Equal(t, a.Entry.OutputLen, res.OutputTokens, "line %d", a.Entry.Line)
				entries = append(entries, a.Entry)
			}
			want := 0
			for _, h := range expectedHits(entries, 512, 16, tc.lead, vocab.Overhead) {
				want += h
			}
			assert.Positive(t, want)
			assert.Equal(t, float64(want), counterSum(t, url, "vllm:prefix_cache_hits_total")-before, "the server's prefix-cache hits")
		})
	}
}

func openTestdata(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open("../testdata/" + name)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}
