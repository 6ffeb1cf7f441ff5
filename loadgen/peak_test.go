package loadgen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPeakIsExactOverHalfOpenSpans(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var s spans
	// Four back-to-back slots of one request each: an end and the next start at one instant
	// do not overlap, so the peak stays 1, where one-second bins would count 4.
	for i := 0; i < 4; i++ {
		s.add(at(200*i), at(200*(i+1)))
	}
	assert.Equal(t, 1, s.peak())
	s.add(at(100), at(350)) // overlaps the first two
	s.add(at(150), at(160))
	assert.Equal(t, 3, s.peak())
	assert.Equal(t, 0, spans(nil).peak())
}

func TestRampRates(t *testing.T) {
	lin := Ramp{Strategy: RampLinear, StartRPS: 1, EndRPS: 11}
	assert.Equal(t, 1.0, lin.rate(0, 11))
	assert.Equal(t, 6.0, lin.rate(5, 11))
	assert.Equal(t, 11.0, lin.rate(10, 11))
	exp := Ramp{Strategy: RampExponential, StartRPS: 2, EndRPS: 32}
	assert.InDelta(t, 8.0, exp.rate(2, 5), 1e-9, "2 * 16^(2/4)")
	assert.Error(t, Ramp{Strategy: RampLinear, StartRPS: 0, EndRPS: 3}.Check())
	assert.NoError(t, exp.Check())
}
