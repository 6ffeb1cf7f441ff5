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
	due := &rampDue{due: make([]time.Time, 4)}
	for i := 0; i < 4; i++ {
		due.add(Result{Index: i, Intended: at(i + 1)})
	}
	// Rates 1, 2, 3, 4 for the four requests: each whole rate when its request is sent.
	got := due.events(Ramp{Strategy: RampLinear, StartRPS: 1, EndRPS: 4}, t0)
	assert.Equal(t, []RampEvent{{1, t0}, {2, at(2)}, {3, at(3)}, {4, at(4)}}, got)

	// A jump past several whole rates gives each of them, at the same time.
	due = &rampDue{due: []time.Time{at(1), at(2)}}
	got = due.events(Ramp{Strategy: RampLinear, StartRPS: 1, EndRPS: 4}, t0)
	assert.Equal(t, []RampEvent{{1, t0}, {2, at(2)}, {3, at(2)}, {4, at(2)}}, got)

	b, err := json.Marshal(rampEventsJSON(got[:2]))
	require.NoError(t, err)
	assert.Equal(t, `[{"rps":1,"timestamp":"2026-01-01T12:00:00"},{"rps":2,"timestamp":"2026-01-01T12:00:02"}]`, string(b))
	assert.Equal(t, "2026-01-01T12:00:00.123456", pyISOTime(t0.Add(123456789*time.Nanosecond)), "microseconds, as Python keeps")
}
