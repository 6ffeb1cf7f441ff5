package loadgen

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSampleTraceDrawsUniformlyInOnePass(t *testing.T) {
	build := NewTracePrompts(EstimatedVocab(), TracePromptConfig{IgnoreEOS: true}).Prompt
	open := func() TraceReader {
		return NewBurstGPTReader(openFixture(t, "burstgpt-sample.csv"), "burstgpt-sample.csv", BurstGPTOptions{})
	}
	all, err := SampleTrace(open(), "burstgpt", 0, 1, build, false, nil)
	require.NoError(t, err)
	require.Equal(t, 5, all.Len(), "n <= 0: every GPT-4 row, in file order")
	assert.Equal(t, 3, all.Entry(0).Line)
	assert.Equal(t, all.Entry(0), all.Entry(5), "cycles")

	counts := map[int]int{}
	for seed := range int64(400) {
		s, err := SampleTrace(open(), "burstgpt", 2, seed, build, false, nil)
		require.NoError(t, err)
		require.Equal(t, 2, s.Len())
		assert.NotEqual(t, s.Entry(0).Line, s.Entry(1).Line, "without replacement")
		counts[s.Entry(0).Line]++
		counts[s.Entry(1).Line]++
	}
	// Each of the 5 rows is drawn with probability 2/5: 160 of 400 draws.
	for line, n := range counts {
		assert.InDelta(t, 160, n, 45, "line %d", line)
	}
	assert.Len(t, counts, 5)

	again, _ := SampleTrace(open(), "burstgpt", 2, 7, build, false, nil)
	same, _ := SampleTrace(open(), "burstgpt", 2, 7, build, false, nil)
	assert.Equal(t, again.Prompt(0), same.Prompt(0), "the seed decides")
	p := again.Prompt(1)
	assert.Equal(t, again.Entry(1).InputLen, p.InputTokens)
	assert.Equal(t, again.Entry(1).OutputLen, p.OutputTokens)
	assert.NotEqual(t, again.Prompt(1).Text, again.Prompt(3).Text, "a row drawn twice gets two prompts of its own")
	assert.Equal(t, "burstgpt (2 requests)", again.Name())
}

func TestSampleTraceMalformedAndEmpty(t *testing.T) {
	build := NewTracePrompts(EstimatedVocab(), TracePromptConfig{}).Prompt
	_, err := SampleTrace(NewMooncakeReader(openFixture(t, "mooncake-malformed.jsonl"), "mooncake-malformed.jsonl", MooncakeOptions{}), "m", 10, 1, build, false, nil)
	assert.ErrorContains(t, err, "mooncake-malformed.jsonl:2:")
	skipped := 0
	s, err := SampleTrace(NewMooncakeReader(openFixture(t, "mooncake-malformed.jsonl"), "mooncake-malformed.jsonl", MooncakeOptions{}), "m", 10, 1, build, true, func(error) { skipped++ })
	require.NoError(t, err)
	assert.Equal(t, 4, s.Len(), "lines without or out of time are fine without a schedule")
	assert.Equal(t, 13, skipped)
	_, err = SampleTrace(NewBurstGPTReader(strings.NewReader("Timestamp,Model,Request tokens,Response tokens\n1,ChatGPT,5,5\n"), "b.csv", BurstGPTOptions{}), "b.csv", 10, 1, build, false, nil)
	assert.ErrorContains(t, err, "b.csv has no usable requests")
	_, err = SampleTrace(NewMooncakeReader(io.MultiReader(strings.NewReader(`{"timestamp": 0, "input_length": 5}`+"\n"), failingReader{}), "f", MooncakeOptions{}), "f", 10, 1, build, true, nil)
	assert.ErrorContains(t, err, "disk on fire")
}

func TestFromIntended(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := Result{Intended: at, Start: at.Add(40 * time.Millisecond), TTFT: 100 * time.Millisecond, E2EL: time.Second}
	got := FromIntended(r)
	assert.Equal(t, 140*time.Millisecond, got.TTFT)
	assert.Equal(t, 1040*time.Millisecond, got.E2EL)
	assert.Equal(t, r.Start, got.Start)
	assert.Equal(t, got, FromIntended(got), "applied once")
	onTime := Result{Intended: at, Start: at, TTFT: time.Millisecond}
	o := FromIntended(onTime)
	assert.Equal(t, onTime.TTFT, o.TTFT)
	assert.True(t, o.FromIntended)
}

func TestOpenTrace(t *testing.T) {
	r, err := OpenTrace("burstgpt", openFixture(t, "burstgpt-sample.csv"), "b.csv", TraceOptions{BurstGPT: BurstGPTOptions{Model: "*"}})
	require.NoError(t, err)
	entries, _ := readAll(t, r)
	assert.Len(t, entries, 8)
	r, err = OpenTrace("mooncake", openFixture(t, "mooncake-sample.jsonl"), "m.jsonl", TraceOptions{})
	require.NoError(t, err)
	entries, _ = readAll(t, r)
	assert.Len(t, entries, 10)
	_, err = OpenTrace("sharegpt", strings.NewReader(""), "x", TraceOptions{})
	assert.ErrorContains(t, err, `unknown trace format "sharegpt" (want burstgpt or mooncake)`)
}
