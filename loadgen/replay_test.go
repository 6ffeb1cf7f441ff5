package loadgen

import (
	"context"
	"io"
	"math"
	"sort"
	"strings"
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

// scripted answers each request on a VirtualClock after the next of its delays (the last one
// repeats; none: at once), with one token, or with fail's error; it notes when each started.
type scripted struct {
	clock  *VirtualClock
	delays []time.Duration
	fail   ErrorClass
	onSend func()
	starts []time.Time
}

func (s *scripted) Start(_ context.Context, p Prompt, _ TokenSink, _ func(time.Duration), done func(Result)) {
	now := s.clock.Now()
	var d time.Duration
	if n := len(s.delays); n > 0 {
		d = s.delays[min(len(s.starts), n-1)]
	}
	s.starts = append(s.starts, now)
	if s.onSend != nil {
		s.onSend()
	}
	res := Result{Start: now, Status: 200, Chunks: 1, OutputTokens: max(p.OutputTokens, 1), TTFT: d, E2EL: d, Error: s.fail}
	if s.fail != ErrNone {
		res = Result{Start: now, Error: s.fail}
	}
	s.clock.At(now.Add(d), func() { done(res) })
}

func (s *scripted) TokensReceived() int64 { return 0 }

// replayOn runs cfg on a VirtualClock at replayT0 over a scripted transport answering after
// delays, and returns the results by start order, the transport and the run's error.
func replayOn(ctx context.Context, cfg RunnerConfig, delays ...time.Duration) ([]Result, *scripted, error) {
	clock := NewVirtualClock(replayT0)
	tr := &scripted{clock: clock, delays: delays}
	var rec Recorder
	cfg.Transport, cfg.Clock, cfg.Sinks = tr, clock, []func(Result){rec.Add}
	err := NewRunner(nil, cfg).Run(ctx)
	res := rec.Results()
	sort.SliceStable(res, func(i, j int) bool { return res[i].Start.Before(res[j].Start) })
	return res, tr, err
}

func TestReplaySendsAtTheTracesTimes(t *testing.T) {
	open := func() *Schedule {
		return schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sample.jsonl"), "m", MooncakeOptions{}), ScheduleConfig{Speedup: 4})
	}
	lines := allArrivals(t, open())
	res, _, err := replayOn(context.Background(), RunnerConfig{Arrivals: open()}, time.Millisecond)
	require.NoError(t, err)
	require.Len(t, res, 10)
	for _, r := range byIndex(res) {
		want := replayT0.Add(lines[r.Index].Entry.Timestamp / 4)
		assert.Equal(t, want, r.Intended, "line %d", lines[r.Index].Entry.Line)
		assert.Equal(t, want, r.Start, "sent exactly when intended (virtual clock: 0 error)")
	}
}

func TestReplayKeepsIntendedTimesWhenTheSenderIsLate(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sample.jsonl"), "m", MooncakeOptions{}), ScheduleConfig{})
	// One at a time, each taking a second: the cap holds each arrival until the one before ends.
	res, _, err := replayOn(context.Background(), RunnerConfig{Arrivals: s, MaxConcurrency: 1}, time.Second)
	require.NoError(t, err)
	var late []time.Duration
	for _, r := range byIndex(res) {
		late = append(late, r.QueueDelay())
	}
	// Lines at 0, 0, 120, 388, 1502, 1503, 2750, 2750, 4096, 6001.5 ms, each send taking 1 s.
	assert.Equal(t, []time.Duration{0, time.Second, 1880 * time.Millisecond, 2612 * time.Millisecond, 2498 * time.Millisecond,
		3497 * time.Millisecond, 3250 * time.Millisecond, 4250 * time.Millisecond, 3904 * time.Millisecond, 2998500 * time.Microsecond}, late,
		"lateness shows against the intended time, not hidden by a shifted schedule")
}

func TestReplaySessionTurnsWaitForThePreviousAnswer(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sessions.jsonl"), "s", MooncakeOptions{}), ScheduleConfig{})
	ms := time.Millisecond
	// By start: chat-a's first answer takes 100 ms (its second turn goes at 100 + 2000 ms),
	// chat-b's 150 ms (its second at 400 + 1500 ms), its second none, chat-a's second 100 ms
	// (its third at 2200 + 500 ms); the unsessioned line is at 3000 ms.
	res, _, err := replayOn(context.Background(), RunnerConfig{Arrivals: s}, 100*ms, 150*ms, 0, 100*ms, 0)
	require.NoError(t, err)
	type sent struct {
		turn     int
		intended time.Duration
	}
	var got []sent
	for _, r := range res {
		got = append(got, sent{r.Turn, r.Intended.Sub(replayT0)})
		assert.Equal(t, r.Intended, r.Start, "turn %d sent when intended", r.Turn)
	}
	assert.Equal(t, []sent{{1, 0}, {1, 250 * ms}, {2, 1900 * ms}, {2, 2100 * ms}, {3, 2700 * ms}, {0, 3000 * ms}}, got)
}

func TestReplayStopsWithTheContextAndTheSource(t *testing.T) {
	s := schedule(t, NewMooncakeReader(openFixture(t, "mooncake-sample.jsonl"), "m", MooncakeOptions{}), ScheduleConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	clock := NewVirtualClock(replayT0)
	tr := &scripted{clock: clock}
	seen := 0
	cfg := RunnerConfig{Arrivals: s, Transport: tr, Clock: clock, Sinks: []func(Result){func(Result) {
		if seen++; seen == 2 {
			cancel()
		}
	}}}
	assert.ErrorIs(t, NewRunner(nil, cfg).Run(ctx), context.Canceled)
	assert.Len(t, tr.starts, 2, "the two lines at 0 ms, then the wait for 120 ms ended")

	s = schedule(t, NewMooncakeReader(openFixture(t, "mooncake-malformed.jsonl"), "mooncake-malformed.jsonl", MooncakeOptions{}), ScheduleConfig{})
	_, _, err := replayOn(context.Background(), RunnerConfig{Arrivals: s})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mooncake-malformed.jsonl:2:")

	broken := NewMooncakeReader(io.MultiReader(strings.NewReader(`{"timestamp": 0, "input_length": 5}`+"\n"), failingReader{}), "f", MooncakeOptions{})
	_, _, err = replayOn(context.Background(), RunnerConfig{Arrivals: schedule(t, broken, ScheduleConfig{SkipMalformed: true})})
	assert.ErrorContains(t, err, "disk on fire", "a read error ends even a skipping replay")
}
