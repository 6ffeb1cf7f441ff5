package loadgen

import (
	"context"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var replayT0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func schedule(t *testing.T, r TraceReader, cfg ScheduleConfig) *Schedule {
	t.Helper()
	if cfg.Prompt == nil {
		cfg.Prompt = NewTracePrompts(EstimatedVocab(), TracePromptConfig{IgnoreEOS: true}).Prompt
	}
	s, err := NewSchedule(r, cfg)
	require.NoError(t, err)
	return s
}

func allArrivals(t *testing.T, s *Schedule) []Arrival {
	t.Helper()
	var out []Arrival
	for {
		a, err := s.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, a)
	}
}

func TestScheduleTimesAreTheTracesDividedBySpeedup(t *testing.T) {
	for _, speedup := range []float64{1, 2, 0.5, 1000} {
		s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sample.jsonl"), "m", MooncakeOptions{}), ScheduleConfig{Speedup: speedup})
		arrivals := allArrivals(t, s)
		require.Len(t, arrivals, 10)
		for i, a := range arrivals {
			assert.Equal(t, i, a.Index)
			want := time.Duration(math.Round(float64(a.Entry.Timestamp) / speedup))
			assert.Equal(t, want, a.At, "speedup %g, line %d", speedup, a.Entry.Line)
			assert.Equal(t, a.Entry.InputLen, a.Prompt.InputTokens)
			assert.Equal(t, a.Entry.OutputLen, a.Prompt.OutputTokens)
			assert.False(t, a.AfterPrevious)
		}
	}
	// BurstGPT's clock starts at midnight of its first day: the replay starts at the first row.
	s := schedule(t, NewBurstGPTReader(openFixture(t, "burstgpt-sample.csv"), "b", BurstGPTOptions{}), ScheduleConfig{Speedup: 2})
	var at []time.Duration
	for _, a := range allArrivals(t, s) {
		at = append(at, a.At)
	}
	// GPT-4 rows at 11, 24, 31, 46 and 58 s, at twice the speed, from the first.
	assert.Equal(t, []time.Duration{0, 6500 * time.Millisecond, 10 * time.Second, 17500 * time.Millisecond, 23500 * time.Millisecond}, at)
}

func TestScheduleMalformedLinesStopOrAreSkipped(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-malformed.jsonl"), "mooncake-malformed.jsonl", MooncakeOptions{}), ScheduleConfig{})
	_, err := s.Next()
	require.NoError(t, err)
	_, err = s.Next()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mooncake-malformed.jsonl:2: ", "stops at the first bad line")

	var skipped []string
	s = schedule(t, NewMooncakeReader(openFixture(t, "mooncake-malformed.jsonl"), "mooncake-malformed.jsonl", MooncakeOptions{}),
		ScheduleConfig{SkipMalformed: true, OnSkip: func(err error) { skipped = append(skipped, err.Error()) }})
	arrivals := allArrivals(t, s)
	require.Len(t, arrivals, 2)
	assert.Equal(t, 1, arrivals[0].Entry.Line)
	assert.Equal(t, 17, arrivals[1].Entry.Line)
	assert.Equal(t, []int{0, 1}, []int{arrivals[0].Index, arrivals[1].Index}, "indexes count arrivals, not lines")
	assert.Equal(t, 120*time.Millisecond, arrivals[1].At, "from the first line, at 10 ms")
	assert.Equal(t, 15, s.Skipped())
	require.Len(t, skipped, 15)
	assert.Equal(t, "mooncake-malformed.jsonl:15: no timestamp: a replay needs one on every line (or a session_id and delay)", skipped[13])
	assert.Equal(t, "mooncake-malformed.jsonl:16: timestamp 5ms is before the previous line's 10ms: the trace must be sorted by time", skipped[14])
}

func TestScheduleLimitAndBadSpeedups(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sample.jsonl"), "m", MooncakeOptions{}), ScheduleConfig{Limit: 3})
	assert.Len(t, allArrivals(t, s), 3)
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1), 1e-300, 1e9} {
		_, err := NewSchedule(NewMooncakeReader(strings.NewReader(""), "m", MooncakeOptions{}), ScheduleConfig{Speedup: bad, Prompt: func(int, TraceEntry) Prompt { return Prompt{} }})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--trace-speedup must be a number from 0.001 to 1e+06")
	}
}

func TestScheduleSessions(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sessions.jsonl"), "s", MooncakeOptions{}), ScheduleConfig{Speedup: 2})
	arrivals := allArrivals(t, s)
	require.Len(t, arrivals, 6)
	type view struct {
		session string
		turn    int
		after   bool
		at      time.Duration
		delay   time.Duration
	}
	var got []view
	for _, a := range arrivals {
		got = append(got, view{a.Session, a.Turn, a.AfterPrevious, a.At, a.Delay})
	}
	assert.Equal(t, []view{
		{"chat-a", 1, false, 0, 0},
		{"chat-b", 1, false, 125 * time.Millisecond, 0},
		{"chat-a", 2, true, 0, time.Second},
		{"chat-b", 2, true, 0, 750 * time.Millisecond},
		{"chat-a", 3, true, 0, 250 * time.Millisecond},
		{"", 0, false, 1500 * time.Millisecond, 0},
	}, got, "delays are trace time too: sped up")
	assert.Equal(t, "Summarise the last quarter's incident reports in three bullet points.", arrivals[1].Prompt.Text)
}

// jumpClock is a virtual clock whose sleeps move it forward at once; one goroutine uses it.
type jumpClock struct{ now time.Time }

func (c *jumpClock) Now() time.Time { return c.now }
func (c *jumpClock) SleepUntil(ctx context.Context, t time.Time) error {
	if t.After(c.now) {
		c.now = t
	}
	return ctx.Err()
}

type sendEvent struct {
	a        Arrival
	intended time.Time
	now      time.Time
	finished func()
}

func TestReplaySendsAtTheTracesTimes(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sample.jsonl"), "m", MooncakeOptions{}), ScheduleConfig{Speedup: 4})
	clock := &jumpClock{now: replayT0}
	var sent []sendEvent
	err := Replay(context.Background(), s, clock, func(_ context.Context, a Arrival, intended time.Time, finished func()) {
		sent = append(sent, sendEvent{a: a, intended: intended, now: clock.Now()})
		finished()
	})
	require.NoError(t, err)
	require.Len(t, sent, 10)
	for _, ev := range sent {
		want := replayT0.Add(ev.a.Entry.Timestamp / 4)
		assert.Equal(t, want, ev.intended, "line %d", ev.a.Entry.Line)
		assert.Equal(t, want, ev.now, "sent exactly when intended (virtual clock: 0 error)")
	}
}

func TestReplayKeepsIntendedTimesWhenTheSenderIsLate(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sample.jsonl"), "m", MooncakeOptions{}), ScheduleConfig{})
	clock := &jumpClock{now: replayT0}
	var late []time.Duration
	require.NoError(t, Replay(context.Background(), s, clock, func(_ context.Context, a Arrival, intended time.Time, finished func()) {
		assert.Equal(t, replayT0.Add(a.At), intended)
		late = append(late, clock.Now().Sub(intended))
		clock.now = clock.now.Add(time.Second) // a concurrency cap held the request for a second
		finished()
	}))
	// Lines at 0, 0, 120, 388, 1502, 1503, 2750, 2750, 4096, 6001.5 ms, each send taking 1 s.
	assert.Equal(t, []time.Duration{0, time.Second, 1880 * time.Millisecond, 2612 * time.Millisecond, 2498 * time.Millisecond,
		3497 * time.Millisecond, 3250 * time.Millisecond, 4250 * time.Millisecond, 3904 * time.Millisecond, 2998500 * time.Microsecond}, late,
		"lateness shows against the intended time, not hidden by a shifted schedule")
}

// fakeClock is a virtual clock that only the test moves: sleepers wait for advance.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers map[chan struct{}]time.Time
}

func newFakeClock(t time.Time) *fakeClock {
	return &fakeClock{now: t, sleepers: map[chan struct{}]time.Time{}}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return ctx.Err()
	}
	ch := make(chan struct{})
	c.sleepers[ch] = t
	c.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.sleepers, ch)
		c.mu.Unlock()
		return ctx.Err()
	}
}

func (c *fakeClock) sleeping() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}

func (c *fakeClock) advance(to time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = to
	for ch, t := range c.sleepers {
		if !t.After(to) {
			close(ch)
			delete(c.sleepers, ch)
		}
	}
}

func TestReplaySessionTurnsWaitForThePreviousAnswer(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sessions.jsonl"), "s", MooncakeOptions{}), ScheduleConfig{})
	clock := newFakeClock(replayT0)
	sends := make(chan sendEvent, 10)
	done := make(chan error, 1)
	go func() {
		done <- Replay(context.Background(), s, clock, func(_ context.Context, a Arrival, intended time.Time, finished func()) {
			sends <- sendEvent{a: a, intended: intended, now: clock.Now(), finished: finished}
		})
	}()
	next := func(session string, turn int, intended time.Duration) sendEvent {
		t.Helper()
		select {
		case ev := <-sends:
			assert.Equal(t, session, ev.a.Session)
			assert.Equal(t, turn, ev.a.Turn)
			assert.Equal(t, replayT0.Add(intended), ev.intended, "%s turn %d", session, turn)
			assert.Equal(t, ev.intended, ev.now, "sent when intended")
			return ev
		case <-time.After(10 * time.Second):
			t.Fatalf("no send of %s turn %d", session, turn)
			return sendEvent{}
		}
	}
	waitSleeping := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return clock.sleeping() == n }, 10*time.Second, time.Millisecond)
	}
	at := func(d time.Duration) { clock.advance(replayT0.Add(d)) }
	ms := time.Millisecond

	a1 := next("chat-a", 1, 0)
	waitSleeping(1) // the replay waits for chat-b at 250 ms
	at(100 * ms)
	a1.finished() // chat-a's first answer at 100 ms: its second turn goes at 100 + 2000 ms
	at(250 * ms)
	b1 := next("chat-b", 1, 250*ms)
	waitSleeping(2) // chat-a turn 2 at 2100 ms, the unsessioned line at 3000 ms
	at(400 * ms)
	b1.finished() // chat-b turn 2 at 400 + 1500 ms
	waitSleeping(3)
	at(1900 * ms)
	b2 := next("chat-b", 2, 1900*ms)
	b2.finished()
	at(2100 * ms)
	a2 := next("chat-a", 2, 2100*ms)
	at(2200 * ms)
	a2.finished() // chat-a turn 3 at 2200 + 500 ms
	waitSleeping(2)
	at(2700 * ms)
	a3 := next("chat-a", 3, 2700*ms)
	at(3000 * ms)
	last := next("", 0, 3000*ms)
	a3.finished()
	last.finished()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("replay did not end")
	}
}

func TestReplayStopsWithTheContextAndTheSource(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sample.jsonl"), "m", MooncakeOptions{}), ScheduleConfig{})
	clock := newFakeClock(replayT0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sent := 0
	go func() {
		done <- Replay(ctx, s, clock, func(_ context.Context, _ Arrival, _ time.Time, finished func()) { sent++; finished() })
	}()
	require.Eventually(t, func() bool { return clock.sleeping() == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 2, sent, "the two lines at 0 ms, then the wait for 120 ms ended")
	case <-time.After(10 * time.Second):
		t.Fatal("replay did not stop")
	}

	s = schedule(t, NewMooncakeReader(openFixture(t, "mooncake-malformed.jsonl"), "mooncake-malformed.jsonl", MooncakeOptions{}), ScheduleConfig{})
	err := Replay(context.Background(), s, &jumpClock{now: replayT0}, func(_ context.Context, _ Arrival, _ time.Time, finished func()) { finished() })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mooncake-malformed.jsonl:2:")

	broken := NewMooncakeReader(io.MultiReader(strings.NewReader(`{"timestamp": 0, "input_length": 5}`+"\n"), failingReader{}), "f", MooncakeOptions{})
	s = schedule(t, broken, ScheduleConfig{SkipMalformed: true})
	err = Replay(context.Background(), s, &jumpClock{now: replayT0}, func(_ context.Context, _ Arrival, _ time.Time, finished func()) { finished() })
	assert.ErrorContains(t, err, "disk on fire", "a read error ends even a skipping replay")
}
