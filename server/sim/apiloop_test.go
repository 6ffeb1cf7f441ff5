package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loopEngine is a small engine whose host has an API-server loop of known costs: 2 ms a
// request, 1 us a prompt token, 100 us an output.
func loopEngine(t *testing.T) *Engine {
	t.Helper()
	s, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100"}, nil)
	require.NoError(t, err)
	s.HostProfile.InputMSPerActiveRequest = 0
	s.HostProfile.InputLoopMS, s.HostProfile.InputLoopUSPerToken, s.HostProfile.OutputLoopUS = 2, 1, 100
	return NewEngine(s)
}

func TestAPIServerLoopTakesABurstOneRequestAtATime(t *testing.T) {
	e := loopEngine(t)
	fixed := e.queued
	for i := range 5 {
		s := add(t, e, fixedPrompt(100, i), 4, t0)
		// Each waits for the ones before it (2.1 ms each), then tokenizes its own 100 tokens.
		want := t0.Add(time.Duration(i)*2100*time.Microsecond + 100*time.Microsecond + fixed)
		assert.WithinDuration(t, want, s.Times.Queued, time.Microsecond, "request %d", i)
	}
}

func TestAPIServerLoopIdleBetweenSpacedArrivals(t *testing.T) {
	e := loopEngine(t)
	for i := range 5 {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		s := add(t, e, fixedPrompt(1000, i), 4, at)
		assert.WithinDuration(t, at.Add(time.Millisecond+e.queued), s.Times.Queued, time.Microsecond,
			"a request 10 ms after the last finds the loop idle: only its own tokenizing adds")
	}
}

func TestAPIServerLoopStreamsAStepsOutputsAfterItEnds(t *testing.T) {
	e := loopEngine(t)
	for i := range 4 {
		add(t, e, fixedPrompt(50, i), 8, t0)
	}
	steps, _ := stepAll(t, e, t0.Add(time.Second), 100) // all four reached the engine
	require.NotEmpty(t, steps)
	last := steps[len(steps)-1]
	require.Len(t, last.Outputs, 4)

	// Before the step's end the loop is free: an arrival then is not held by its outputs.
	early := add(t, e, fixedPrompt(50, 10), 1, last.End.Add(-time.Millisecond))
	assert.WithinDuration(t, last.End.Add(-time.Millisecond+50*time.Microsecond+e.queued), early.Times.Queued, time.Microsecond)
	// At the end the loop streams the four outputs (400 us) first, after the early request's
	// input (2.05 ms from a millisecond before the end).
	late := add(t, e, fixedPrompt(50, 11), 1, last.End)
	loopFree := last.End.Add(-time.Millisecond + 2050*time.Microsecond + 400*time.Microsecond)
	assert.WithinDuration(t, loopFree.Add(50*time.Microsecond+e.queued), late.Times.Queued, time.Microsecond)
}

func TestAPIServerLoopOffWithoutAnInputCost(t *testing.T) {
	e := smallEngine(t, Config{})
	for i := range 3 {
		s := add(t, e, fixedPrompt(100, i), 4, t0)
		assert.Equal(t, t0.Add(e.queued), s.Times.Queued)
	}
}

func TestAPIServerLoopStreamsAfterTheInputInProgress(t *testing.T) {
	e := loopEngine(t)
	add(t, e, fixedPrompt(50, 0), 8, t0)
	r := e.Step(e.Step(t0).NextReady)
	require.False(t, r.Idle)
	require.Len(t, r.Outputs, 1)
	end := r.End
	// A request arriving 1 ms before the end holds the loop for 2.05 ms: the step's output
	// is streamed after it, as the loop takes its work in the order it became ready.
	add(t, e, fixedPrompt(50, 1), 1, end.Add(-time.Millisecond))
	start, each := e.Streamed(end)
	assert.WithinDuration(t, end.Add(1050*time.Microsecond), start, time.Microsecond)
	assert.Equal(t, 100*time.Microsecond, each)

	// With the loop idle, streaming starts at the step's end.
	r = e.Step(end)
	require.False(t, r.Idle)
	start, _ = e.Streamed(r.End)
	assert.Equal(t, r.End, start)
}

// Requests still in the API server's hands are not in vLLM's scheduler: num_requests_waiting
// leaves them out, and the step's outputs are stamped when the loop takes them up.
func TestAPIServerLoopKeepsItsQueueOutOfTheSchedulersGauges(t *testing.T) {
	e := loopEngine(t)
	first := add(t, e, fixedPrompt(100, 0), 1, t0)
	for i := 1; i < 5; i++ {
		add(t, e, fixedPrompt(100, i), 4, t0)
	}
	r := e.Step(first.Times.Queued)
	require.False(t, r.Idle)
	assert.Zero(t, r.Running, "the first ran and finished with its one token")
	assert.Zero(t, r.Waiting, "the other four are still in the API server's input queue")
	assert.Equal(t, 4, e.Waiting())

	add(t, e, fixedPrompt(100, 9), 1, r.End.Add(-time.Microsecond)) // holds the loop past the end
	start, _ := e.Streamed(r.End)
	assert.True(t, start.After(r.End))
	assert.Equal(t, start, r.Streamed)
	require.Len(t, r.Finished, 1)
	assert.Equal(t, start, first.Times.Reported, "its one token was its last")
}

// --api-server-count: the API servers share every engine's load, so an engine's loop runs at
// APIServers / DataParallelSize times one server's speed; the default is one server before
// 0.15 and one per engine from it.
func TestAPIServersShareTheEnginesLoad(t *testing.T) {
	for _, c := range []struct {
		version       string
		dp, asc, want int
		share         float64
	}{
		{"0.19.0", 1, 0, 1, 1},
		{"0.19.0", 1, 4, 4, 0.25},
		{"0.19.0", 2, 0, 2, 1},
		{"0.14.1", 2, 0, 1, 2},
		{"0.14.1", 4, 2, 2, 2},
	} {
		s, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: c.version, DataParallelSize: c.dp, APIServerCount: c.asc}, nil)
		require.NoError(t, err)
		assert.Equal(t, c.want, s.APIServers(), "%+v", c)
		e := NewEngine(s)
		assert.Equal(t, nanoseconds(s.HostProfile.InputLoopMS*1e6*c.share), e.apiLoop.input, "%+v", c)
		assert.Equal(t, nanoseconds(s.HostProfile.OutputLoopUS*1e3*c.share), e.apiLoop.output, "%+v", c)
	}
	_, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", APIServerCount: -1}, nil)
	require.Error(t, err)
}

// A step with no outputs (a prefill chunk) gives the loop nothing to stream: its "streaming"
// starts at its end, not at an earlier step's.
func TestAPIServerLoopStepWithoutOutputs(t *testing.T) {
	l := apiServerLoop{input: time.Millisecond, output: time.Millisecond}
	l.stream(t0, t0.Add(10*time.Millisecond), 5)
	l.admit(t0.Add(time.Millisecond), 0, 0) // settles nothing: the step has not ended
	start, each := l.streamed(t0.Add(20 * time.Millisecond))
	assert.Equal(t, t0.Add(20*time.Millisecond), start, "the 10 ms step's job is not this step's")
	assert.Equal(t, time.Millisecond, each)
	assert.Equal(t, t0.Add(15*time.Millisecond), l.free, "the earlier job still ran, from its end")
}

// A request that arrives after a step's end may run the step's output job before the step's
// owner asks when streaming started: the answer is still the job's start.
func TestAPIServerLoopStreamedAfterALaterArrival(t *testing.T) {
	e := loopEngine(t)
	add(t, e, fixedPrompt(50, 0), 8, t0)
	r := e.Step(e.Step(t0).NextReady)
	require.False(t, r.Idle)
	end := r.End
	add(t, e, fixedPrompt(50, 1), 1, end.Add(-time.Millisecond))  // holds the loop to end + 1.05 ms
	add(t, e, fixedPrompt(50, 2), 1, end.Add(2*time.Millisecond)) // runs the step's job first
	start, _ := e.Streamed(end)
	assert.WithinDuration(t, end.Add(1050*time.Microsecond), start, time.Microsecond)
}

// vLLM processes a request's input once and fans its n choices out: only the first choice
// pays the loop, and the others reach the engine with it.
func TestAPIServerLoopChoicesShareOneInput(t *testing.T) {
	e := loopEngine(t)
	var seqs []*Sequence
	for c := range 4 {
		s, err := e.Add(Request{Prompt: fixedPrompt(100, 0), MaxTokens: 4, IgnoreEOS: true, N: 4, Choice: c, Arrival: t0})
		require.NoError(t, err)
		seqs = append(seqs, s)
	}
	for _, s := range seqs[1:] {
		assert.Equal(t, seqs[0].Times.Queued, s.Times.Queued)
	}
	next := add(t, e, fixedPrompt(100, 1), 4, t0)
	assert.WithinDuration(t, seqs[0].Times.Queued.Add(2100*time.Microsecond), next.Times.Queued, time.Microsecond,
		"the next request waits for one input, not four")
}

// With the API servers' time shared (here one server for two engines), the loop is half as
// fast for an engine's load, but a request's own tokenizing is still one server's.
func TestAPIServerLoopSharedKeepsARequestsOwnTokenizing(t *testing.T) {
	s, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: "0.14.1", DataParallelSize: 2}, nil)
	require.NoError(t, err)
	s.HostProfile.InputMSPerActiveRequest = 0
	s.HostProfile.InputLoopMS, s.HostProfile.InputLoopUSPerToken, s.HostProfile.OutputLoopUS = 2, 1, 100
	e := NewEngine(s)
	first := add(t, e, fixedPrompt(1000, 0), 4, t0)
	assert.WithinDuration(t, t0.Add(e.queued+time.Millisecond), first.Times.Queued, time.Microsecond, "1,000 tokens at 1 us each")
	second := add(t, e, fixedPrompt(1000, 1), 4, t0)
	assert.WithinDuration(t, t0.Add(e.queued+2*3*time.Millisecond+time.Millisecond), second.Times.Queued, time.Microsecond,
		"behind the first's 3 ms of loop time at half a server's speed")
}
