package scrape

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seriesPerEngine is how many series (sample lines) manyEngines writes for each (model,
// engine): six counters and gauges and a histogram of eight buckets, sum and count.
const seriesPerEngine = 6 + 8 + 2

// seriesExposition writes a vLLM-like /metrics body with models × engines (model, engine) pairs,
// seriesPerEngine series each; scale multiplies every counter, so two bodies make a window.
func seriesExposition(models, engines int, scale float64) []byte {
	var b bytes.Buffer
	b.Grow(models * engines * seriesPerEngine * 80)
	each := func(typ, name string, line func(model, engine int)) {
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, typ)
		for m := range models {
			for e := range engines {
				line(m, e)
			}
		}
	}
	labels := func(m, e int) string { return fmt.Sprintf(`engine="%d",model_name="model-%d"`, e, m) }
	each("gauge", "vllm:num_requests_running", func(m, e int) {
		fmt.Fprintf(&b, "vllm:num_requests_running{%s} %d\n", labels(m, e), (m+e)%7)
	})
	each("gauge", "vllm:num_requests_waiting", func(m, e int) { fmt.Fprintf(&b, "vllm:num_requests_waiting{%s} 1\n", labels(m, e)) })
	each("gauge", "vllm:kv_cache_usage_perc", func(m, e int) { fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{%s} 0.25\n", labels(m, e)) })
	for _, c := range []string{"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:num_preemptions_total"} {
		each("counter", c, func(m, e int) { fmt.Fprintf(&b, "%s{%s} %g\n", c, labels(m, e), 100*scale) })
	}
	h := "vllm:time_to_first_token_seconds"
	each("histogram", h, func(m, e int) {
		l := labels(m, e)
		for i, le := range []string{"0.001", "0.01", "0.05", "0.1", "0.5", "1.0", "5.0", "+Inf"} {
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"%s\"} %g\n", h, l, le, float64(i+1)*10*scale)
		}
		fmt.Fprintf(&b, "%s_sum{%s} %g\n%s_count{%s} %g\n", h, l, 4*scale, h, l, 80*scale)
	})
	return b.Bytes()
}

// windowOf parses two expositions one second apart.
func windowOf(t testing.TB, models, engines int) (prev, cur Snapshot) {
	t.Helper()
	var err error
	prev, err = Parse(bytes.NewReader(seriesExposition(models, engines, 1)))
	require.NoError(t, err)
	cur, err = Parse(bytes.NewReader(seriesExposition(models, engines, 2)))
	require.NoError(t, err)
	cur.Time = prev.Time.Add(time.Second)
	return prev, cur
}

// TestCompareIsLinear counts Compare's steps (every model and engine it visits, looks up or
// indexes) for 10× more series, with many models and with many engines, in the same order in
// both snapshots (positions match) and in another (a map is built): linear means 10× the
// steps, and more than 12× fails. Counting steps cannot flake the way timing would.
func TestCompareIsLinear(t *testing.T) {
	for _, shape := range []struct {
		name    string
		scale   func(n int) (models, engines int)
		reorder bool // the earlier snapshot lists its series in another order
	}{
		{"models", func(n int) (int, int) { return n, 1 }, false},
		{"engines", func(n int) (int, int) { return 1, n }, false},
		{"models in another order", func(n int) (int, int) { return n, 1 }, true},
		{"engines in another order", func(n int) (int, int) { return 1, n }, true},
	} {
		t.Run(shape.name, func(t *testing.T) {
			steps := func(n int) int {
				m, e := shape.scale(n)
				prev, cur := windowOf(t, m, e)
				if shape.reorder {
					slices.Reverse(prev.Models)
					for i := range prev.Models {
						slices.Reverse(prev.Models[i].Engines)
					}
				}
				var work tally
				w := compare(&prev, &cur, &work)
				// The window is right, not only cheap.
				var engines int
				for _, mw := range w.Models {
					engines += len(mw.Engines)
					for _, er := range mw.Engines {
						require.True(t, er.PromptTokensPerSec.OK)
						assert.InDelta(t, 100, er.PromptTokensPerSec.V, 1e-9)
					}
				}
				require.Equal(t, n, engines)
				return work.n
			}
			small, large := steps(200), steps(2000)
			ratio := float64(large) / float64(small)
			t.Logf("%d steps for 200 (model, engine) pairs, %d for 2000: %.2fx", small, large, ratio)
			assert.LessOrEqual(t, ratio, 12.0, "Compare must stay linear in the number of series")
		})
	}
}

// BenchmarkCompareSeries measures Compare over 10,000 and 100,000 series, spread over many
// models (one engine each) or over many engines of one model. Linear: the 100,000 case costs
// about 10× the 10,000 case.
func BenchmarkCompareSeries(b *testing.B) {
	for _, shape := range []string{"models", "engines"} {
		for _, series := range []int{10_000, 100_000} {
			pairs := series / seriesPerEngine
			models, engines := pairs, 1
			if shape == "engines" {
				models, engines = 1, pairs
			}
			b.Run(fmt.Sprintf("%s/series=%d", shape, series), func(b *testing.B) {
				prev, cur := windowOf(b, models, engines)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					Compare(&prev, &cur)
				}
			})
		}
	}
}

// BenchmarkParseSeries measures parsing and mapping 10,000 and 100,000 series.
func BenchmarkParseSeries(b *testing.B) {
	for _, series := range []int{10_000, 100_000} {
		body := seriesExposition(series/seriesPerEngine, 1, 1)
		b.Run(fmt.Sprintf("series=%d", series), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Parse(bytes.NewReader(body)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A model with one engine takes its total from the engine's own window instead of summing
// one engine: the result must be what the sum gives.
func TestOneEngineTotalIsTheEngineWindow(t *testing.T) {
	prev := load(t, "vllm-v1-metrics-qwen3-30b-specdecode.prom")
	cur := load(t, "vllm-v1-metrics-qwen3-30b-specdecode.prom")
	cur.Time = prev.Time.Add(2 * time.Second)
	require.Len(t, cur.Models, 1)
	require.Len(t, cur.Models[0].Engines, 1)
	e := &cur.Models[0].Engines[0].Stats
	for _, v := range []*Value{&e.PromptTokens, &e.GenerationTokens, &e.RequestsFinished, &e.PrefixCacheQueries,
		&e.SpecDecodeDrafts, &e.SpecDecodeDraftTokens, &e.SpecDecodeAcceptedTokens} {
		require.True(t, v.OK)
		v.V += 40
	}
	e.PrefixCacheHits.V += 10
	for k := range e.FinishedByReason {
		e.FinishedByReason[k] += 3
	}
	w := Compare(&prev, &cur)
	mw := w.Models[0]
	pe, ce := &prev.Models[0].Engines[0].Stats, &cur.Models[0].Engines[0].Stats
	want := totalRates([]*Stats{pe}, []*Stats{ce}, mw.Engines, 2*time.Second, nil)
	assert.Equal(t, want, mw.Total)
	assert.True(t, mw.Total.SpecDecodeMeanAcceptanceLength.OK)
	assert.True(t, mw.Total.PrefixCacheHitRate.OK)
	if mw.Total.FinishedByReason != nil {
		mw.Total.FinishedByReason["x"] = 1
		assert.NotContains(t, mw.Engines[0].FinishedByReason, "x", "the total's map is its own")
	}
}

// The metrics report finds each model's window at its position or, in another order, by name:
// the text is the same either way.
func TestWriteTextFindsEveryWindow(t *testing.T) {
	prev, cur := windowOf(t, 4, 2)
	w := Compare(&prev, &cur)
	now := time.Now()
	var inOrder, reordered bytes.Buffer
	WriteText(&inOrder, "http://h/metrics", &cur, &w, now)
	slices.Reverse(w.Models)
	WriteText(&reordered, "http://h/metrics", &cur, &w, now)
	assert.Equal(t, inOrder.String(), reordered.String())
	assert.Equal(t, 4, strings.Count(inOrder.String(), "\nwindow "), inOrder.String())
}
