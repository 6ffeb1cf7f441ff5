package tui

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHistoryGapsStayGaps(t *testing.T) {
	h := newHistory([]aggregate{aggMean})
	for i := 0; i < 60; i++ {
		if i >= 20 && i < 30 {
			continue // ten seconds without data
		}
		h.push(t0.Add(time.Duration(i)*time.Second), []sample{value(float64(i))})
	}
	w := newTimeWindow(t0.Add(59*time.Second), time.Minute)
	bins := h.bins(0, w, 60)
	require.Len(t, bins, 60)
	for c, b := range bins {
		sec := c // one column a second
		switch {
		case sec < 1:
			// The window starts a second before the first sample.
		case sec >= 21 && sec < 31:
			assert.Equal(t, noSample, b.Kind, "column %d is a gap, not zero", c)
		case sec == 31:
			assert.Equal(t, valueKind, b.Kind)
			assert.False(t, b.Joined, "the line does not run through the gap")
		default:
			assert.Equal(t, valueKind, b.Kind, "column %d", c)
		}
	}
	assert.True(t, bins[40].Joined)
}

func TestHistoryColumnsNarrowerThanASecondJoin(t *testing.T) {
	h := newHistory([]aggregate{aggMean})
	for i := 0; i < 60; i++ {
		h.push(t0.Add(time.Duration(i)*time.Second), []sample{value(1)})
	}
	bins := h.bins(0, newTimeWindow(t0.Add(59*time.Second), time.Minute), 240)
	present := 0
	for _, b := range bins {
		if b.Kind == valueKind {
			present++
			if present > 1 {
				assert.True(t, b.Joined, "consecutive seconds join across empty columns")
			}
		}
	}
	assert.Equal(t, 60, present)
}

func TestHistoryFoldsAnHourIntoCoarseSlots(t *testing.T) {
	h := newHistory([]aggregate{aggMean, aggMax})
	for i := 0; i < 3600; i++ {
		h.push(t0.Add(time.Duration(i)*time.Second), []sample{value(float64(i % 10)), value(float64(i % 10))})
	}
	w := newTimeWindow(t0.Add(3599*time.Second), time.Hour)
	mean, top := h.bins(0, w, 360), h.bins(1, w, 360)
	assert.InDelta(t, 4.5, mean[200].V, 1e-9, "a rate's ten seconds are averaged")
	assert.InDelta(t, 9, top[200].V, 1e-9, "a quantile's ten seconds keep their worst")
	// The fine ring forgot the start of the hour; the coarse one did not.
	assert.Equal(t, valueKind, mean[2].Kind)
	fine := h.bins(0, newTimeWindow(t0.Add(3599*time.Second), 15*time.Minute), 900)
	assert.Equal(t, valueKind, fine[0].Kind)
}

func TestHistoryKeepsBoundsApart(t *testing.T) {
	h := newHistory([]aggregate{aggMax})
	h.push(t0, []sample{{V: 300, Kind: upperBound}})
	h.push(t0.Add(time.Second), []sample{value(40)})
	bins := h.bins(0, newTimeWindow(t0.Add(2*time.Second), 3*time.Second), 3)
	assert.Equal(t, noSample, bins[0].Kind)
	assert.Equal(t, upperBound, bins[1].Kind)
	assert.Equal(t, 300.0, bins[1].V)
	assert.Equal(t, valueKind, bins[2].Kind)
	assert.Equal(t, sample{}, value(math.NaN()), "NaN is no sample")
}
