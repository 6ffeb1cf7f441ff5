package loadgen

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vllm bench serve scales its drawn gaps so that the last of n requests is sent at n/rate.
func TestArrivalGapsEndAtNOverRate(t *testing.T) {
	for _, b := range []float64{1, 0.5, 3} {
		for seed := int64(0); seed < 5; seed++ {
			gaps := ArrivalGaps(10, 4, b, seed)
			require.Len(t, gaps, 10)
			var sum time.Duration
			for _, g := range gaps {
				assert.GreaterOrEqual(t, g, time.Duration(0))
				sum += g
			}
			assert.Equal(t, 2500*time.Millisecond, sum, "burstiness %g seed %d", b, seed)
		}
	}
	assert.Nil(t, ArrivalGaps(10, 0, 1, 0), "no rate, no schedule")
	assert.NotEqual(t, ArrivalGaps(10, 4, 1, 1), ArrivalGaps(10, 4, 1, 2), "the draw follows the seed")
	// A trillion requests at a rate are drawn as they go, not held (the runner draws a gap
	// for each request past the schedule).
	assert.Len(t, ArrivalGaps(MaxScaledArrivals, 1e6, 1, 0), MaxScaledArrivals)
	assert.Nil(t, ArrivalGaps(1e12, 10, 1, 0), "more than MaxScaledArrivals: no schedule drawn ahead")
}

func TestBenchAtARateSendsTheLastRequestAtNOverRate(t *testing.T) {
	f := newBenchFakeServer(t)
	c := newBenchClient(t, f.URL)
	clock := NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clock.Now()
	var mu sync.Mutex
	var last time.Time
	sink := func(r Result) {
		mu.Lock()
		defer mu.Unlock()
		if r.Intended.After(last) {
			last = r.Intended
		}
	}
	for _, seed := range []int64{1, 7} {
		last = time.Time{}
		run, err := Bench(context.Background(), c, BenchConfig{Workload: numbered{}, NumPrompts: 8, RequestRate: 4, Burstiness: 1,
			Seed: seed, Clock: clock, Sinks: []func(Result){sink}})
		require.NoError(t, err)
		require.NoError(t, run.Tally.Close())
		assert.Equal(t, 2*time.Second, last.Sub(start), "seed %d: the 8th request at 8/4 s", seed)
		start = clock.Now()
	}
}
