package loadgen

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRampEventsAreVLLMs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.Local)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	linear := Ramp{Strategy: RampLinear, StartRPS: 1, EndRPS: 4}
	due := newRampDue(linear, 4)
	for i := 0; i < 4; i++ {
		due.add(Result{Index: i, Intended: at(i + 1)})
	}
	// Rates 1, 2, 3, 4 for the four requests: each whole rate when its request is sent.
	got := due.events(t0)
	assert.Equal(t, []RampEvent{{1, t0}, {2, at(2)}, {3, at(3)}, {4, at(4)}}, got)

	// A jump past several whole rates gives each of them, at the same time.
	due = newRampDue(linear, 2)
	due.add(Result{Index: 0, Intended: at(1)})
	due.add(Result{Index: 1, Intended: at(2)})
	got = due.events(t0)
	assert.Equal(t, []RampEvent{{1, t0}, {2, at(2)}, {3, at(2)}, {4, at(2)}}, got)

	// A trillion prompts keep a few crossings, not a time each; the events stay bounded.
	huge := newRampDue(Ramp{Strategy: RampExponential, StartRPS: 1, EndRPS: 10}, 1e12)
	assert.Len(t, huge.crossings, 9)
	assert.Len(t, newRampDue(Ramp{Strategy: RampLinear, StartRPS: 1, EndRPS: 1 << 30}, 1e12).crossings, maxRampEvents)

	b, err := json.Marshal(rampEventsJSON(got[:2]))
	require.NoError(t, err)
	assert.Equal(t, `[{"rps":1,"timestamp":"2026-01-01T12:00:00"},{"rps":2,"timestamp":"2026-01-01T12:00:02"}]`, string(b))
	assert.Equal(t, "2026-01-01T12:00:00.123456", pyISOTime(t0.Add(123456789*time.Nanosecond)), "microseconds, as Python keeps")
}
