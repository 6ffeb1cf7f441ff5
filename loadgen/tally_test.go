package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syntheticResults are n successful requests with lognormal-ish latencies and itls ITLs each,
// starting every 10 ms.
func syntheticResults(n, itls int, seed uint64) []Result {
	rng := rand.New(rand.NewPCG(seed, 1))
	t0 := time.Unix(1000, 0)
	out := make([]Result, n)
	for i := range out {
		ttft := time.Duration(math.Exp(rng.NormFloat64()*0.5+3.5) * float64(time.Millisecond))
		r := Result{Index: i, Start: t0.Add(time.Duration(i) * 10 * time.Millisecond), TTFT: ttft, PromptTokens: 100,
			OutputTokens: itls + 1, OutputFromUsage: true, ITLs: make([]time.Duration, itls)}
		r.Intended = r.Start
		e2el := ttft
		for k := range r.ITLs {
			r.ITLs[k] = time.Duration((5 + rng.ExpFloat64()*10) * float64(time.Millisecond))
			e2el += r.ITLs[k]
		}
		r.E2EL = e2el
		out[i] = r
	}
	return out
}

// TestTallyEstimatesPastTheBound feeds the same run to an exact tally and to one whose bound
// it passes: the counts, totals and peaks agree, the means and deviations agree to float
// precision, and the percentiles to HDR's three significant digits.
func TestTallyEstimatesPastTheBound(t *testing.T) {
	results := syntheticResults(2000, 50, 7)
	exact, est := NewTally(Goodput{TTFT: 40 * time.Millisecond}), NewTally(Goodput{TTFT: 40 * time.Millisecond})
	est.SetExactBytes(64 << 10)
	for _, r := range results {
		exact.Add(r)
		est.Add(r)
	}
	ps := []float64{50, 90, 99, 99.9}
	a, b := exact.Summary(30*time.Second, ps), est.Summary(30*time.Second, ps)
	require.False(t, a.Estimated)
	require.True(t, b.Estimated)
	assert.Nil(t, est.kept, "past the bound nothing per request is kept")
	assert.Equal(t, a.Completed, b.Completed)
	assert.Equal(t, a.TotalOutputTokens, b.TotalOutputTokens)
	assert.Equal(t, a.RequestGoodput, b.RequestGoodput)
	assert.Equal(t, a.MaxOutputTokensPerS, b.MaxOutputTokensPerS, "the origin is the first start in both")
	assert.Equal(t, a.MaxConcurrent, b.MaxConcurrent)
	for name, pair := range map[string][2]Dist{"ttft": {a.TTFT, b.TTFT}, "tpot": {a.TPOT, b.TPOT}, "itl": {a.ITL, b.ITL}, "e2el": {a.E2EL, b.E2EL}} {
		x, y := pair[0], pair[1]
		assert.Equal(t, x.N, y.N, name)
		assert.InEpsilon(t, x.Mean, y.Mean, 1e-9, name)
		assert.InEpsilon(t, x.Std, y.Std, 1e-6, name)
		assert.InEpsilon(t, x.Median, y.Median, 2e-3, name)
		for _, p := range ps {
			assert.InEpsilon(t, x.Percentiles[p], y.Percentiles[p], 5e-3, "%s p%v", name, p)
		}
	}
}

// TestTallyMemoryIsBounded adds 40,000 requests of 100 tokens (32 MB of ITLs if they were kept)
// to a tally with the default bound, and measures what stays on the heap.
func TestTallyMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("adds four million samples")
	}
	r := syntheticResults(1, 100, 3)[0]
	tally := NewTally(Goodput{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < 40000; i++ {
		r.Index = i
		r.Start = r.Start.Add(10 * time.Millisecond)
		tally.Add(r)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew %d KB", grew>>10)
	assert.Less(t, grew, int64(4<<20), "estimates and 1-s bins only")
	s := tally.Summary(time.Minute, []float64{99})
	assert.True(t, s.Estimated)
	assert.Equal(t, 40000*100, s.ITL.N)
	runtime.KeepAlive(tally)
}

func TestDetailSpillWritesRowsInRequestOrder(t *testing.T) {
	dir := t.TempDir()
	tally := NewTally(Goodput{})
	require.NoError(t, tally.EnableDetail(dir))
	t0 := time.Unix(1000, 0)
	// Finished out of order; index 3 never comes (the run was cut): 4 still gets written.
	for _, i := range []int{2, 0, 4, 1} {
		tally.Add(Result{Index: i, Start: t0.Add(time.Duration(i) * time.Second), TTFT: time.Duration(i+1) * time.Millisecond,
			PromptTokens: 10 + i, OutputTokens: 2, ITLs: []time.Duration{time.Duration(i) * time.Millisecond}, Text: fmt.Sprintf(" t%d\n\"", i)})
	}
	doc := ResultDoc{{"completed", 4}}
	doc = append(doc, tally.DetailFields()...)
	var buf bytes.Buffer
	require.NoError(t, doc.WriteIndented(&buf, "", "  "))
	var m map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &m), buf.String())
	assert.Equal(t, []any{10.0, 11.0, 12.0, 14.0}, m["input_lens"])
	assert.Equal(t, []any{0.001, 0.002, 0.003, 0.005}, m["ttfts"])
	assert.Equal(t, []any{[]any{0.0}, []any{0.001}, []any{0.002}, []any{0.004}}, m["itls"])
	assert.Equal(t, []any{0.0, 1.0, 2.0, 4.0}, m["start_times"])
	assert.Equal(t, []any{" t0\n\"", " t1\n\"", " t2\n\"", " t4\n\""}, m["generated_texts"])

	spills, _ := filepath.Glob(filepath.Join(dir, ".vllmtop-detail-*"))
	require.Len(t, spills, 1)
	require.NoError(t, tally.Close())
	_, err := os.Stat(spills[0])
	assert.True(t, os.IsNotExist(err), "Close removes the spill")
}

func TestWriteIndentedIsMarshalIndent(t *testing.T) {
	doc := ResultDoc{{"date", "x"}, {"label", nil}, {"rate", PyFloat(1)}, {"fails", map[string]int{"a": 1, "b": 2}},
		{"empty", map[string]int{}}, {"list", []int{1, 2}}, {"html", "<&>"}, {"date", "y"}}
	want, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	var got bytes.Buffer
	require.NoError(t, doc.WriteIndented(&got, "", "  "))
	assert.Equal(t, string(want), got.String())

	wantList, err := json.MarshalIndent([]ResultDoc{doc, doc}, "", "  ")
	require.NoError(t, err)
	got.Reset()
	require.NoError(t, writeDocs(&got, []ResultDoc{doc, doc}, true))
	assert.Equal(t, string(wantList)+"\n", got.String())
}
