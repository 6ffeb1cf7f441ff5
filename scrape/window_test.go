package scrape

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var inf = math.Inf(1)

func h(bounds []float64, counts []float64, sum float64) *Histogram {
	out := &Histogram{Sum: sum}
	for i := range bounds {
		out.Buckets = append(out.Buckets, Bucket{UpperBound: bounds[i], Count: counts[i]})
	}
	out.Count = counts[len(counts)-1]
	return out
}

func TestRate(t *testing.T) {
	tests := []struct {
		name      string
		prev, cur Value
		elapsed   time.Duration
		want      Value
	}{
		{"steady", Some(100), Some(300), 10 * time.Second, Some(20)},
		{"sub-second window", Some(0), Some(5), 500 * time.Millisecond, Some(10)},
		{"no change is a real zero", Some(42), Some(42), time.Second, Some(0)},
		// Sad paths.
		{"counter reset (server restarted)", Some(1e6), Some(10), time.Second, Value{}},
		{"reset to zero", Some(5), Some(0), time.Second, Value{}},
		{"no previous reading", Value{}, Some(10), time.Second, Value{}},
		{"metric gone", Some(10), Value{}, time.Second, Value{}},
		{"no time passed", Some(1), Some(2), 0, Value{}},
		{"clock went backwards", Some(1), Some(2), -time.Second, Value{}},
		{"NaN", Some(math.NaN()), Some(2), time.Second, Value{}},
		{"+Inf", Some(1), Some(inf), time.Second, Value{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Rate(tt.prev, tt.cur, tt.elapsed))
		})
	}
}

// TestQuantile checks against histogram_quantile computed by hand: in the bucket where the
// rank q×N falls, start + (end−start) × (rank − below)/(in bucket), the first bucket starting
// at 0, and a rank in the +Inf bucket giving the highest finite bound.
func TestQuantile(t *testing.T) {
	// 10 observations ≤ 0.1, 20 in (0.1, 0.5], 10 in (0.5, 1], 10 above 1.
	cur := h([]float64{0.1, 0.5, 1, inf}, []float64{10, 30, 40, 50}, 60)
	tests := []struct {
		name      string
		q         float64
		prev, cur *Histogram
		want      Value
		saturated bool
	}{
		{"p50 in the second bucket", 0.5, nil, cur, Some(0.1 + 0.4*15/20), false},
		{"p10 in the first bucket starts at 0", 0.1, nil, cur, Some(0.05), false},
		{"rank on a bucket's upper edge", 0.8, nil, cur, Some(1), false},
		{"p90 in +Inf: the highest finite bound", 0.9, nil, cur, Some(1), true},
		{"p100 in +Inf", 1, nil, cur, Some(1), true},
		{"p0", 0, nil, cur, Some(0), false},
		{"q below 0", -0.5, nil, cur, Some(math.Inf(-1)), false},
		{"q above 1", 1.5, nil, cur, Some(inf), false},
		{"window: bucket deltas", 0.5,
			h([]float64{0.1, 0.5, 1, inf}, []float64{5, 10, 12, 12}, 10), cur,
			// deltas 5, 20, 28, 38: rank 19 falls in (0.1, 0.5] with 5 below and 15 inside.
			Some(0.1 + 0.4*(19.0-5)/15), false},
		{"window p99 saturates", 0.99,
			h([]float64{0.1, 0.5, 1, inf}, []float64{5, 10, 12, 12}, 10), cur, Some(1), true},
		{"everything in one finite bucket", 0.25, nil,
			h([]float64{1, 2, inf}, []float64{0, 4, 4}, 6), Some(1.25), false},
		{"non-monotonic counts are lifted, as PromQL does", 0.25, nil,
			h([]float64{1, 2, inf}, []float64{10, 8, 20}, 30), Some(0.5), false},
		// Two buckets with the same bound add up (PromQL sums series that differ only in
		// spelling of le): 4 ≤ 1 of 4, so rank 2 is half-way into the first bucket.
		{"duplicate bounds are merged", 0.5, nil,
			h([]float64{1, 1, inf}, []float64{2, 2, 4}, 3), Some(0.5), false},
		// Sad paths: no estimate.
		{"empty window", 0.5, cur, cur, Value{}, false},
		{"no observations at all", 0.5, nil, h([]float64{0.1, inf}, []float64{0, 0}, 0), Value{}, false},
		{"only the +Inf bucket", 0.5, nil, h([]float64{inf}, []float64{7}, 70), Value{}, false},
		{"no +Inf bucket", 0.5, nil, h([]float64{1, 2}, []float64{1, 2}, 2), Value{}, false},
		{"reset: count went down", 0.5, cur, h([]float64{0.1, 0.5, 1, inf}, []float64{1, 2, 3, 4}, 1), Value{}, false},
		{"reset in one bucket only", 0.5,
			h([]float64{0.1, 0.5, 1, inf}, []float64{11, 30, 40, 50}, 60),
			h([]float64{0.1, 0.5, 1, inf}, []float64{10, 31, 41, 51}, 61), Value{}, false},
		{"layout changed", 0.5, h([]float64{0.2, inf}, []float64{1, 1}, 0.1), cur, Value{}, false},
		{"missing histogram", 0.5, nil, nil, Value{}, false},
		{"NaN q", math.NaN(), nil, cur, Value{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Quantile(tt.q, tt.prev, tt.cur)
			assert.Equal(t, tt.want.OK, got.OK, "present")
			if tt.want.OK {
				assert.InDelta(t, tt.want.V, got.V, 1e-12)
			}
			if d, ok := Sub(tt.prev, tt.cur); ok && !math.IsNaN(tt.q) && tt.q >= 0 && tt.q <= 1 {
				_, pos := bucketQuantile(tt.q, d.Buckets)
				assert.Equal(t, tt.saturated, pos == inInf, "saturated")
			}
		})
	}
	// The caller's buckets are never modified.
	odd := h([]float64{1, 2, inf}, []float64{10, 8, 20}, 30)
	Quantile(0.5, nil, odd)
	assert.Equal(t, 8.0, odd.Buckets[1].Count)
}

func TestSummarize(t *testing.T) {
	prev := h([]float64{0.1, 0.5, 1, inf}, []float64{5, 10, 12, 12}, 10)
	cur := h([]float64{0.1, 0.5, 1, inf}, []float64{10, 30, 40, 50}, 60)
	d := Summarize(prev, cur)
	require.NotNil(t, d)
	assert.Equal(t, 38.0, d.Count)
	is(t, 50.0/38, d.Mean, "mean = Δsum/Δcount")
	is(t, 0.1+0.4*14/15, d.P50, "p50")
	is(t, 1, d.P90, "p90")
	assert.Equal(t, []string{"p90", "p99"}, d.Saturated)
	assert.Empty(t, d.InFirstBucket)
	assert.Equal(t, 0.1, d.FirstBound)

	// All in the lowest bucket: PromQL interpolates from 0; the summary says so.
	low := Summarize(nil, h([]float64{0.3, 0.5, inf}, []float64{10, 10, 10}, 0.02))
	require.NotNil(t, low)
	is(t, 0.15, low.P50, "p50 interpolated from 0")
	is(t, 0.002, low.Mean, "the mean is exact")
	assert.Equal(t, []string{"p50", "p90", "p99"}, low.InFirstBucket)
	assert.Equal(t, 0.3, low.FirstBound)

	empty := Summarize(cur, cur)
	require.NotNil(t, empty, "an empty window is a window")
	assert.Equal(t, 0.0, empty.Count)
	absent(t, empty.Mean, "mean")
	absent(t, empty.P50, "p50")
	assert.Nil(t, Summarize(cur, prev), "reset")
	assert.Nil(t, Summarize(nil, nil), "absent")
}

func TestPrefixCacheHitRate(t *testing.T) {
	st := func(q, h float64) *Stats { return &Stats{PrefixCacheQueries: Some(q), PrefixCacheHits: Some(h)} }
	is(t, 0.25, PrefixCacheHitRate(nil, st(400, 100)), "since start")
	is(t, 0.75, PrefixCacheHitRate(st(400, 100), st(800, 400)), "window: 300 of 400")
	is(t, 0, PrefixCacheHitRate(st(400, 100), st(800, 100)), "window with no hits")
	absent(t, PrefixCacheHitRate(st(400, 100), st(400, 100)), "no lookups in the window")
	absent(t, PrefixCacheHitRate(st(400, 100), st(10, 5)), "reset")
	absent(t, PrefixCacheHitRate(nil, &Stats{}), "no prefix-cache metrics")
	is(t, 1, PrefixCacheHitRate(st(400, 100), st(500, 300)), "clamped to 1 when counters disagree")
}

// exposition builds a small vLLM V1 scrape for two engines.
func exposition(start float64, e0, e1 [4]float64, ttft0, ttft1 [3]float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %g\n", start)
	for _, c := range []struct {
		name string
		i    int
	}{{"prompt_tokens_total", 0}, {"generation_tokens_total", 1}, {"prefix_cache_queries_total", 2}, {"prefix_cache_hits_total", 3}} {
		fmt.Fprintf(&b, "# TYPE vllm:%s counter\n", c.name)
		fmt.Fprintf(&b, "vllm:%s{engine=\"0\",model_name=\"m\"} %g\n", c.name, e0[c.i])
		fmt.Fprintf(&b, "vllm:%s{engine=\"1\",model_name=\"m\"} %g\n", c.name, e1[c.i])
	}
	b.WriteString("# TYPE vllm:time_to_first_token_seconds histogram\n")
	for e, c := range [][3]float64{ttft0, ttft1} {
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{engine=\"%d\",le=\"0.1\",model_name=\"m\"} %g\n", e, c[0])
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{engine=\"%d\",le=\"1.0\",model_name=\"m\"} %g\n", e, c[1])
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{engine=\"%d\",le=\"+Inf\",model_name=\"m\"} %g\n", e, c[2])
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_count{engine=\"%d\",model_name=\"m\"} %g\n", e, c[2])
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{engine=\"%d\",model_name=\"m\"} %g\n", e, c[2]*0.2)
	}
	return b.String()
}

func snap(t *testing.T, at time.Time, text string) *Snapshot {
	t.Helper()
	s, err := Parse(strings.NewReader(text))
	require.NoError(t, err)
	s.Time = at
	return &s
}

func TestCompare(t *testing.T) {
	t0 := time.Unix(1000, 0)
	prev := snap(t, t0, exposition(1, [4]float64{100, 50, 400, 100}, [4]float64{0, 0, 0, 0}, [3]float64{1, 2, 2}, [3]float64{0, 0, 0}))
	cur := snap(t, t0.Add(10*time.Second), exposition(1, [4]float64{600, 250, 800, 400}, [4]float64{100, 50, 100, 0}, [3]float64{9, 12, 12}, [3]float64{0, 4, 4}))
	w := Compare(prev, cur)
	assert.Equal(t, 10.0, w.ElapsedSeconds)
	assert.False(t, w.Restarted)
	require.Len(t, w.Models, 1)
	m := w.Models[0]
	require.Len(t, m.Engines, 2)
	e0, e1 := m.Engines[0], m.Engines[1]
	is(t, 50, e0.PromptTokensPerSec, "engine 0: 500 prompt tokens in 10 s")
	is(t, 20, e0.GenerationTokensPerSec, "engine 0 generation")
	is(t, 10, e1.PromptTokensPerSec, "engine 1")
	is(t, 60, m.Total.PromptTokensPerSec, "total")
	is(t, 25, m.Total.GenerationTokensPerSec, "total generation")
	is(t, 0.75, e0.PrefixCacheHitRate, "engine 0: 300 hits of 400 lookups")
	is(t, 0, e1.PrefixCacheHitRate, "engine 1: 0 of 100")
	is(t, 300.0/500, m.Total.PrefixCacheHitRate, "total: from summed deltas, not a mean of ratios")
	absent(t, m.Total.RequestsPerSec, "no request counter in this scrape")

	// TTFT: engine 0 gained 8 ≤ 0.1 s and 2 in (0.1, 1]; engine 1 gained 4 in (0.1, 1].
	require.NotNil(t, e0.TTFTSeconds)
	assert.Equal(t, 10.0, e0.TTFTSeconds.Count)
	is(t, 0.1*5/8, e0.TTFTSeconds.P50, "engine 0 p50")
	require.NotNil(t, m.Total.TTFTSeconds)
	assert.Equal(t, 14.0, m.Total.TTFTSeconds.Count)
	// Merged deltas: 8 ≤ 0.1, 14 ≤ 1. p50: rank 7 in the first bucket. p90: rank 12.6.
	is(t, 0.1*7/8, m.Total.TTFTSeconds.P50, "total p50")
	is(t, 0.1+0.9*(12.6-8)/6, m.Total.TTFTSeconds.P90, "total p90")
	is(t, 0.2, m.Total.TTFTSeconds.Mean, "total mean")

	t.Run("restart by process start time", func(t *testing.T) {
		// Every counter grew past its old value, but the process is a new one.
		next := snap(t, t0.Add(20*time.Second), exposition(2, [4]float64{700, 300, 900, 500}, [4]float64{200, 60, 200, 10}, [3]float64{9, 12, 12}, [3]float64{0, 4, 4}))
		w := Compare(cur, next)
		assert.True(t, w.Restarted)
		absent(t, w.Models[0].Total.PromptTokensPerSec, "no rate across a restart")
		absent(t, w.Models[0].Engines[0].PromptTokensPerSec, "per engine too")
		assert.Nil(t, w.Models[0].Total.TTFTSeconds)
	})
	t.Run("restart by a counter going down", func(t *testing.T) {
		next := snap(t, t0.Add(20*time.Second), exposition(1, [4]float64{5, 2, 10, 1}, [4]float64{100, 50, 100, 0}, [3]float64{0, 0, 0}, [3]float64{0, 4, 4}))
		w := Compare(cur, next)
		assert.True(t, w.Restarted)
		for _, e := range w.Models[0].Engines {
			absent(t, e.PromptTokensPerSec, "engine "+e.Engine)
		}
	})
	t.Run("one finish reason resets while the sum grows", func(t *testing.T) {
		a := snap(t, t0, "vllm:request_success_total{finished_reason=\"stop\",model_name=\"m\"} 100\nvllm:request_success_total{finished_reason=\"length\",model_name=\"m\"} 5\n")
		b := snap(t, t0.Add(time.Second), "vllm:request_success_total{finished_reason=\"stop\",model_name=\"m\"} 3\nvllm:request_success_total{finished_reason=\"length\",model_name=\"m\"} 200\n")
		w := Compare(a, b)
		assert.True(t, w.Restarted)
		absent(t, w.Models[0].Total.RequestsPerSec, "requests/s")
	})
	t.Run("requests and preemptions", func(t *testing.T) {
		a := snap(t, t0, "vllm:request_success_total{finished_reason=\"stop\",model_name=\"m\"} 100\nvllm:request_success_total{finished_reason=\"length\",model_name=\"m\"} 5\nvllm:num_preemptions_total{model_name=\"m\"} 3\n")
		b := snap(t, t0.Add(4*time.Second), "vllm:request_success_total{finished_reason=\"stop\",model_name=\"m\"} 110\nvllm:request_success_total{finished_reason=\"length\",model_name=\"m\"} 7\nvllm:num_preemptions_total{model_name=\"m\"} 4\n")
		w := Compare(a, b)
		r := w.Models[0].Total
		is(t, 3, r.RequestsPerSec, "12 requests in 4 s")
		assert.Equal(t, map[string]float64{"stop": 10, "length": 2}, r.FinishedByReason)
		is(t, 1, r.Preemptions, "preemptions in the window")
	})
	t.Run("engine appears", func(t *testing.T) {
		a := snap(t, t0, "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 1\n")
		b := snap(t, t0.Add(time.Second), "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 3\nvllm:prompt_tokens_total{engine=\"1\",model_name=\"m\"} 3\n")
		w := Compare(a, b)
		m := w.Models[0]
		is(t, 2, m.Engines[0].PromptTokensPerSec, "engine 0")
		absent(t, m.Engines[1].PromptTokensPerSec, "new engine has no window yet")
		absent(t, m.Total.PromptTokensPerSec, "so the total has none either")
	})
	t.Run("same instant", func(t *testing.T) {
		w := Compare(cur, cur)
		absent(t, w.Models[0].Total.PromptTokensPerSec, "no time passed")
	})
}
