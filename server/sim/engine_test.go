package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func smallEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "Qwen/Qwen3-0.6B"
	}
	if cfg.GPU == "" {
		cfg.GPU = "H100"
	}
	s, err := Resolve(cfg, nil)
	require.NoError(t, err)
	// The scheduler's tests time requests by the fixed host costs alone; the API server's
	// event loop has its own tests (apiloop_test.go).
	s.HostProfile.InputLoopMS, s.HostProfile.InputLoopUSPerToken, s.HostProfile.OutputLoopUS = 0, 0, 0
	return NewEngine(s)
}

func add(t *testing.T, e *Engine, prompt []int, maxTokens int, at time.Time) *Sequence {
	t.Helper()
	s, err := e.Add(Request{Prompt: prompt, MaxTokens: maxTokens, IgnoreEOS: true, Arrival: at})
	require.NoError(t, err)
	return s
}

// stepAll runs steps until the engine has no work, jumping over idle gaps; it returns results
// copied out of the reused StepResult.
func stepAll(t *testing.T, e *Engine, now time.Time, limit int) (steps []StepResult, end time.Time) {
	t.Helper()
	for i := 0; e.HasWork(); i++ {
		require.Less(t, i, limit, "engine did not drain")
		r := e.Step(now)
		if r.Idle {
			require.False(t, r.NextReady.IsZero())
			now = r.NextReady
			continue
		}
		c := *r
		c.Outputs = append([]Output(nil), r.Outputs...)
		c.Finished = append([]*Sequence(nil), r.Finished...)
		steps = append(steps, c)
		now = r.End
	}
	return steps, now
}

func TestOneRequestStepByStep(t *testing.T) {
	e := smallEngine(t, Config{})
	s := add(t, e, fixedPrompt(100, 0), 5, t0)

	// The scheduler sees the request only after the API server's input cost.
	r := e.Step(t0)
	require.True(t, r.Idle)
	assert.Equal(t, t0.Add(12*time.Millisecond), r.NextReady)

	steps, _ := stepAll(t, e, r.NextReady, 100)
	require.Len(t, steps, 5, "one prefill step, then four decode steps")
	assert.Equal(t, 100, steps[0].PrefillTokens)
	assert.Equal(t, 0, steps[0].DecodeTokens)
	for _, st := range steps[1:] {
		assert.Equal(t, 1, st.DecodeTokens)
		assert.Equal(t, 0, st.PrefillTokens)
	}
	for i, st := range steps {
		require.Len(t, st.Outputs, 1)
		assert.Equal(t, i, st.Outputs[0].Index)
		if i > 0 {
			assert.Equal(t, st.Duration, st.Outputs[0].Gap, "back-to-back decode steps")
		} else {
			assert.Zero(t, st.Outputs[0].Gap)
		}
	}
	assert.True(t, steps[4].Outputs[0].Finished)
	assert.Equal(t, FinishLength, steps[4].Outputs[0].Reason)
	assert.Equal(t, 5, s.Outputs)
	assert.Equal(t, steps[0].End, s.Times.FirstToken)
	assert.Equal(t, steps[4].End, s.Times.Finished)
	assert.Equal(t, s.Times.Queued, s.Times.FirstScheduled, "an idle engine schedules at once")
	assert.Zero(t, e.BlocksUsed(), "a finished request frees its blocks")

	c := e.Counters()
	assert.EqualValues(t, 100, c.PromptTokens)
	assert.EqualValues(t, 5, c.GenerationTokens)
	assert.EqualValues(t, 1, c.FinishedByReason[FinishLength])
	assert.EqualValues(t, 5, c.Steps)
}

func TestChunkedPrefillOfALongPrompt(t *testing.T) {
	e := smallEngine(t, Config{MaxNumBatchedTokens: 2048})
	s := add(t, e, fixedPrompt(10000, 1), 3, t0)
	steps, _ := stepAll(t, e, t0, 100)
	var chunks []int
	for _, st := range steps {
		chunks = append(chunks, st.PrefillTokens)
	}
	assert.Equal(t, []int{2048, 2048, 2048, 2048, 1808, 0, 0}, chunks)
	assert.Empty(t, steps[3].Outputs, "no token until the last chunk")
	assert.Len(t, steps[4].Outputs, 1, "the first token comes with the last prefill chunk")
	assert.Equal(t, steps[4].End, s.Times.FirstToken)
	// Later chunks attend over the earlier ones, so they take longer than the first.
	assert.Greater(t, steps[4].Duration, steps[0].Duration*1808/2048)
	assert.Greater(t, steps[3].Duration, steps[0].Duration)
}

func TestChunkedPrefillSharesTheBudgetWithDecodes(t *testing.T) {
	e := smallEngine(t, Config{MaxNumBatchedTokens: 512})
	add(t, e, fixedPrompt(100, 2), 50, t0)
	now := t0.Add(time.Second)
	for i := 0; i < 3; i++ { // prefill, then two decodes
		now = e.Step(now).End
	}
	add(t, e, fixedPrompt(2000, 3), 5, t0)
	r := e.Step(now)
	assert.Equal(t, 1, r.DecodeTokens)
	assert.Equal(t, 511, r.PrefillTokens, "the running decode takes its token first; the prefill gets the rest")
}

func TestMaxNumSeqsRespected(t *testing.T) {
	e := smallEngine(t, Config{MaxNumSeqs: 4})
	for i := 0; i < 10; i++ {
		add(t, e, fixedPrompt(50, i), 8, t0)
	}
	steps, _ := stepAll(t, e, t0.Add(time.Second), 1000) // all visible to the scheduler
	assert.Equal(t, 4, steps[0].ScheduledSeqs)
	for _, st := range steps {
		assert.LessOrEqual(t, st.Running, 4)
		assert.LessOrEqual(t, st.ScheduledSeqs, 4)
	}
	assert.Equal(t, 6, steps[0].Waiting)
	assert.EqualValues(t, 10, e.Counters().FinishedByReason[FinishLength])
}

func TestPreemptionWhenBlocksRunOut(t *testing.T) {
	// 10 blocks, one of them vLLM's null block: 9 usable of 16 tokens each.
	e := smallEngine(t, Config{NumGPUBlocksOverride: 10, MaxModelLen: 128})
	require.Equal(t, 9, e.BlocksTotal())
	a := add(t, e, fixedPrompt(32, 10), 64, t0)
	b := add(t, e, fixedPrompt(32, 11), 64, t0)

	var firstPreemption int
	var victimsAtFirst []*Sequence
	now := t0.Add(time.Second) // both visible to the scheduler
	for step := 1; e.HasWork(); step++ {
		require.Less(t, step, 1000)
		aBefore, bBefore := a.Preemptions, b.Preemptions
		r := e.Step(now)
		if r.Idle {
			now = r.NextReady
			step--
			continue
		}
		now = r.End
		require.LessOrEqual(t, r.BlocksUsed, r.BlocksTotal)
		if r.Preempted > 0 && firstPreemption == 0 {
			firstPreemption = step
			if a.Preemptions > aBefore {
				victimsAtFirst = append(victimsAtFirst, a)
			}
			if b.Preemptions > bBefore {
				victimsAtFirst = append(victimsAtFirst, b)
			}
		}
	}
	// Both prefill 2 blocks in step 1 and grow a block every 16 tokens; at step 34 both need
	// their fifth block (10 > 9), and the newer request is the victim.
	assert.Equal(t, 34, firstPreemption)
	assert.Equal(t, []*Sequence{b}, victimsAtFirst)
	assert.Zero(t, a.Preemptions, "the older request is never preempted")
	assert.GreaterOrEqual(t, b.Preemptions, 1)
	assert.Equal(t, 64, a.Outputs)
	assert.Equal(t, 64, b.Outputs, "the preempted request resumes and completes")
	assert.Equal(t, FinishLength, b.Reason)
	assert.EqualValues(t, b.Preemptions, e.Counters().Preemptions)
	assert.Zero(t, e.BlocksUsed())
}

func TestPreemptionTakesTheNewestRunningRequest(t *testing.T) {
	// Three requests of 2 blocks each fill 6 of 8 usable blocks after prefill and grow
	// together; when the oldest needs a block and none is left, the newest goes.
	e := smallEngine(t, Config{NumGPUBlocksOverride: 9, MaxModelLen: 128})
	reqs := []*Sequence{
		add(t, e, fixedPrompt(32, 20), 40, t0),
		add(t, e, fixedPrompt(32, 21), 40, t0),
		add(t, e, fixedPrompt(32, 22), 40, t0),
	}
	now := t0.Add(time.Second)
	for e.HasWork() {
		r := e.Step(now)
		if r.Idle {
			now = r.NextReady
			continue
		}
		now = r.End
		if r.Preempted > 0 {
			break
		}
	}
	assert.Zero(t, reqs[0].Preemptions)
	assert.Zero(t, reqs[1].Preemptions)
	assert.Equal(t, 1, reqs[2].Preemptions)
	assert.Equal(t, 1, e.Waiting(), "the victim waits at the front of the queue")
	_, _ = stepAll(t, e, now, 10000)
	for _, s := range reqs {
		assert.Equal(t, 40, s.Outputs)
	}
}

func TestPrefixCachingSkipsCachedBlocks(t *testing.T) {
	prompt := fixedPrompt(64, 30)
	for _, tc := range []struct {
		name        string
		toggle      Toggle
		wantPrefill int
		wantHits    int64
	}{
		{"on", Default, 16, 48},
		{"off", Off, 64, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := smallEngine(t, Config{PrefixCaching: tc.toggle})
			add(t, e, prompt, 4, t0)
			_, now := stepAll(t, e, t0, 100)
			second := add(t, e, prompt, 4, now)
			steps, _ := stepAll(t, e, now, 100)
			// 4 full blocks match, but the last prompt token is always computed: 3 blocks hit.
			assert.Equal(t, tc.wantPrefill, steps[0].PrefillTokens)
			c := e.Counters()
			assert.Equal(t, tc.wantHits, c.PrefixHits)
			assert.Equal(t, int(tc.wantHits), second.CachedTokens)
			if tc.toggle != Off {
				assert.EqualValues(t, 128, c.PrefixQueries)
			} else {
				assert.Zero(t, c.PrefixQueries)
			}
			assert.Zero(t, e.BlocksUsed(), "cached blocks with no holder count as free")
		})
	}
}

func TestPrefixCacheSharesBlocksBetweenRunningRequests(t *testing.T) {
	e := smallEngine(t, Config{})
	shared := fixedPrompt(160, 40) // 10 blocks
	first := add(t, e, shared, 50, t0)
	r := e.Step(t0.Add(time.Second))
	require.Equal(t, 160, r.PrefillTokens)
	second := add(t, e, append(append([]int(nil), shared...), fixedPrompt(16, 41)...), 50, t0)
	r = e.Step(r.End)
	assert.Equal(t, 16+1, r.ScheduledTokens, "one decode for the first; only the new block for the second")
	assert.Equal(t, 160, second.CachedTokens)
	assert.Equal(t, 12, e.BlocksUsed(), "the first holds 11 blocks (10 of them shared); the second adds one of its own")
	require.True(t, e.Abort(first, r.End))
	assert.Equal(t, 11, e.BlocksUsed(), "shared blocks stay held by the second request")
}

func TestAbortFreesBlocksAtOnce(t *testing.T) {
	e := smallEngine(t, Config{PrefixCaching: Off})
	a := add(t, e, fixedPrompt(64, 50), 100, t0)
	b := add(t, e, fixedPrompt(64, 51), 100, t0)
	c := add(t, e, fixedPrompt(64, 52), 100, t0.Add(time.Hour)) // still waiting
	now := t0.Add(time.Second)
	for i := 0; i < 5; i++ {
		now = e.Step(now).End
	}
	require.Equal(t, 10, e.BlocksUsed(), "two requests of 69 tokens hold 5 blocks each")
	assert.True(t, e.Abort(a, now))
	assert.Equal(t, 5, e.BlocksUsed())
	assert.Equal(t, 1, e.Running())
	assert.True(t, e.Abort(c, now), "a waiting request can be aborted")
	assert.Equal(t, 0, e.Waiting())
	assert.False(t, e.Abort(a, now), "aborting twice does nothing")
	assert.Equal(t, FinishAbort, a.Reason)
	assert.True(t, a.Finished())
	steps, _ := stepAll(t, e, now, 1000)
	assert.Equal(t, 100, b.Outputs)
	for _, st := range steps {
		for _, o := range st.Outputs {
			assert.Equal(t, b, o.Seq, "aborted requests produce nothing more")
		}
	}
	assert.EqualValues(t, 2, e.Counters().FinishedByReason[FinishAbort])
	assert.Zero(t, e.BlocksUsed())
}

// AbortMany ends running and waiting requests in one pass, as Abort ends each, and leaves the
// others in their order.
func TestAbortManyIsAbortForEach(t *testing.T) {
	e := smallEngine(t, Config{PrefixCaching: Off})
	a := add(t, e, fixedPrompt(64, 50), 100, t0)
	b := add(t, e, fixedPrompt(64, 51), 100, t0)
	c := add(t, e, fixedPrompt(64, 52), 100, t0)
	late := []*Sequence{add(t, e, fixedPrompt(64, 53), 100, t0.Add(time.Hour)), add(t, e, fixedPrompt(64, 54), 100, t0.Add(time.Hour)),
		add(t, e, fixedPrompt(64, 55), 100, t0.Add(time.Hour))}
	now := t0.Add(time.Second)
	for i := 0; i < 5; i++ {
		now = e.Step(now).End
	}
	require.Equal(t, 3, e.Running())
	require.Equal(t, 3, e.Waiting())
	assert.Equal(t, 3, e.AbortMany([]*Sequence{a, late[1], c, late[1]}, now), "a sequence given twice counts once")
	assert.Equal(t, 1, e.Running())
	assert.Equal(t, 2, e.Waiting())
	assert.Equal(t, 5, e.BlocksUsed(), "b's blocks alone")
	for _, s := range []*Sequence{a, c, late[1]} {
		assert.Equal(t, FinishAbort, s.Reason)
		assert.True(t, s.Finished())
	}
	assert.Zero(t, e.AbortMany([]*Sequence{a, c}, now), "aborting twice does nothing")
	assert.EqualValues(t, 3, e.Counters().FinishedByReason[FinishAbort])
	assert.True(t, late[0].AddedBefore(late[2]))
	stepAll(t, e, now, 5000)
	assert.Equal(t, 100, b.Outputs)
	assert.Equal(t, 100, late[0].Outputs, "the waiting ones left run, in their order")
	assert.Equal(t, 100, late[2].Outputs)
	assert.Zero(t, e.BlocksUsed())
}

func TestRequestsThatCannotFitAreRejected(t *testing.T) {
	e := smallEngine(t, Config{MaxModelLen: 1000})
	_, err := e.Add(Request{Prompt: fixedPrompt(900, 0), MaxTokens: 200})
	var le *LengthError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "input_tokens", le.Param)
	assert.Equal(t, "This model's maximum context length is 1000 tokens. However, you requested 200 output tokens and your prompt contains 900 input tokens, for a total of 1100 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=900)", le.Message)

	_, err = e.Add(Request{Prompt: fixedPrompt(5, 0), MaxTokens: 50000})
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "max_tokens=50000 cannot be greater than max_model_len=max_total_tokens=1000. Please request fewer output tokens. (parameter=max_tokens, value=50000)", le.Message)

	_, err = e.Add(Request{Prompt: nil, MaxTokens: 5})
	assert.Error(t, err)
	assert.False(t, e.HasWork())
}

func TestOutputLengthsWithoutIgnoreEOS(t *testing.T) {
	e := smallEngine(t, Config{Seed: 7})
	var seqs []*Sequence
	for i := 0; i < 200; i++ {
		s, err := e.Add(Request{Prompt: fixedPrompt(20, i), MaxTokens: 300, MinTokens: 10, Arrival: t0})
		require.NoError(t, err)
		seqs = append(seqs, s)
	}
	stepAll(t, e, t0, 100000)
	stops, lengths := 0, 0
	for _, s := range seqs {
		assert.GreaterOrEqual(t, s.Outputs, 10, "min_tokens holds")
		assert.LessOrEqual(t, s.Outputs, 300)
		switch s.Reason {
		case FinishStop:
			stops++
			assert.Less(t, s.Outputs, 300)
		case FinishLength:
			lengths++
			assert.Equal(t, 300, s.Outputs)
		}
	}
	assert.Greater(t, stops, 100, "most requests stop on their own")
	assert.Greater(t, lengths, 5, "some hit max_tokens")

	// The same seed gives the same lengths.
	e2 := smallEngine(t, Config{Seed: 7})
	for i := 0; i < 200; i++ {
		s, _ := e2.Add(Request{Prompt: fixedPrompt(20, i), MaxTokens: 300, MinTokens: 10, Arrival: t0})
		assert.Equal(t, seqs[i].target, s.target)
	}
}

func TestJitterIsSeededAndBounded(t *testing.T) {
	durations := func(seed int64) []time.Duration {
		e := smallEngine(t, Config{Seed: seed, Jitter: 0.05})
		add(t, e, fixedPrompt(100, 0), 20, t0)
		steps, _ := stepAll(t, e, t0, 100)
		var d []time.Duration
		for _, s := range steps {
			d = append(d, s.Duration)
		}
		return d
	}
	a, b, c := durations(1), durations(1), durations(2)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
	plain := smallEngine(t, Config{})
	add(t, plain, fixedPrompt(100, 0), 20, t0)
	steps, _ := stepAll(t, plain, t0, 100)
	for i := 1; i < len(steps); i++ {
		assert.InDelta(t, float64(steps[i].Duration), float64(a[i]), 0.3*float64(steps[i].Duration))
	}
}

// Prefix caching is on by default from the V1 engine (0.8) and off before it, as V0's engine
// arguments had it; the flag turns it on for V0 too.
func TestPrefixCachingDefaultFollowsTheEngine(t *testing.T) {
	for _, c := range []struct {
		version string
		flag    Toggle
		want    bool
	}{
		{"0.7.3", Default, false},
		{"0.7.3", On, true},
		{"0.8.0", Default, true},
		{"0.8.0", Off, false},
		{DefaultVersion, Default, true},
	} {
		s, err := Resolve(Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "L4", VLLMVersion: c.version, PrefixCaching: c.flag}, nil)
		require.NoError(t, err, c.version)
		assert.Equal(t, c.want, s.PrefixCachingEnabled(), "%s %v", c.version, c.flag)
	}
}

// Under async scheduling vLLM picks the batch that follows a step when that step starts, so a
// request that arrives while a step runs misses the next one too; without it, it joins the next.
// After an idle gap it is scheduled at once either way.
func TestAsyncSchedulingAdmitsArrivalsOneStepLater(t *testing.T) {
	for _, tc := range []struct {
		name      string
		async     Toggle
		joinsStep int // the step (0 is the first) whose batch first holds the late request
	}{
		{"async scheduling", On, 2},
		{"--no-async-scheduling", Off, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := smallEngine(t, Config{AsyncScheduling: tc.async})
			add(t, e, fixedPrompt(100, 0), 8, t0)
			ready := e.Step(t0).NextReady
			first := e.Step(ready)
			require.False(t, first.Idle)
			// The second request reaches the scheduler in the middle of the first step, after
			// the API server's costs (the input cost and one request in flight).
			hostCost := e.queued + time.Duration(e.perActive)
			late := add(t, e, fixedPrompt(100, 1), 2, first.Start.Add(first.Duration/2-hostCost))
			require.Equal(t, first.Start.Add(first.Duration/2), late.Times.Queued)
			now := first.End
			starts := []time.Time{first.Start}
			for i := 1; i <= 2; i++ {
				r := e.Step(now)
				require.False(t, r.Idle)
				starts = append(starts, r.Start)
				assert.Equal(t, i >= tc.joinsStep, late.wasRun, "step %d", i)
				now = r.End
			}
			// vLLM takes a request in and chooses it at the same scheduling: the start of the
			// step it runs in, or under async scheduling of the step before. Its queue time,
			// from one to the other, is nil; the wait shows in the prefill time.
			chosen := starts[tc.joinsStep]
			if tc.async == On {
				chosen = starts[tc.joinsStep-1]
			}
			assert.Equal(t, chosen, late.Times.FirstScheduled)
			assert.Equal(t, chosen, late.Times.TakenIn)
		})
	}

	// When nothing runs on from the last step, vLLM chose no batch ahead: it waits for that
	// step and then schedules every request that has arrived, together.
	t.Run("a burst while the last request finishes", func(t *testing.T) {
		e := smallEngine(t, Config{AsyncScheduling: On})
		add(t, e, fixedPrompt(100, 0), 1, t0)
		first := e.Step(e.Step(t0).NextReady)
		require.False(t, first.Idle)
		mid := first.Start.Add(first.Duration / 2)
		a := add(t, e, fixedPrompt(100, 1), 4, mid.Add(-e.queued))
		b := add(t, e, fixedPrompt(100, 2), 4, mid.Add(-e.queued-time.Duration(e.perActive)))
		require.Equal(t, a.Times.Queued, b.Times.Queued)
		end := first.End // the engine reuses its StepResult
		r := e.Step(end)
		require.False(t, r.Idle)
		assert.True(t, a.wasRun && b.wasRun, "both join the step after the last request's")
	})

	// A request the token budget holds back is taken in at once and queues until a step has
	// room: the queue time is the steps it waited.
	t.Run("held back by the token budget", func(t *testing.T) {
		e := smallEngine(t, Config{AsyncScheduling: On, MaxNumBatchedTokens: 2048, MaxModelLen: 4096})
		add(t, e, fixedPrompt(2048, 0), 1, t0)
		second := add(t, e, fixedPrompt(2048, 1), 1, t0.Add(-time.Duration(e.perActive))) // reaches the engine with the first
		require.Equal(t, t0.Add(e.queued), second.Times.Queued)
		steps, _ := stepAll(t, e, t0, 10)
		require.Len(t, steps, 2, "one prompt a step")
		assert.Equal(t, steps[0].Start, second.Times.TakenIn)
		assert.Equal(t, steps[1].Start, second.Times.FirstScheduled, "chosen when the first step ended: nothing ran on")
		assert.Positive(t, second.Times.FirstScheduled.Sub(second.Times.TakenIn))
	})

	t.Run("after an idle gap", func(t *testing.T) {
		e := smallEngine(t, Config{AsyncScheduling: On})
		add(t, e, fixedPrompt(100, 0), 1, t0)
		_, end := stepAll(t, e, t0, 10)
		s := add(t, e, fixedPrompt(100, 1), 1, end.Add(time.Second))
		r := e.Step(s.Times.Queued)
		require.False(t, r.Idle)
		assert.True(t, s.wasRun, "nothing was in flight, so the scheduler took it at once")
	})
}

// Under priority scheduling the waiting queue is not in arrival order; every request that has
// reached the engine is taken in, even behind a higher-priority one that has not.
func TestTakeInFollowsArrivalNotQueueOrder(t *testing.T) {
	e := smallEngine(t, Config{SchedulingPolicy: PolicyPriority})
	early, err := e.Add(Request{Prompt: fixedPrompt(100, 0), MaxTokens: 1, Priority: 10, Arrival: t0})
	require.NoError(t, err)
	late, err := e.Add(Request{Prompt: fixedPrompt(100, 1), MaxTokens: 1, Priority: 0, Arrival: t0.Add(time.Second)})
	require.NoError(t, err)
	require.Equal(t, []*Sequence{late, early}, e.waiting, "the higher priority first")
	at := early.Times.Queued
	e.takeIn(at)
	assert.Equal(t, at, early.Times.TakenIn)
	assert.True(t, late.Times.TakenIn.IsZero(), "not at the engine yet")
	e.takeIn(late.Times.Queued)
	assert.Equal(t, late.Times.Queued, late.Times.TakenIn)
	assert.Equal(t, at, early.Times.TakenIn, "stamped once")
	assert.Empty(t, e.arriving)
}
