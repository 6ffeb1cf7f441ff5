package loadgen

import (
	"slices"
	"testing"
	"time"
)

func TestRequestTimerMeasuresFromTimedChunks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	cases := []struct {
		name    string
		usage   int // -1: no usage
		chunks  []int
		wantOut int
	}{
		{"counted chunks", -1, []int{1, 1, 1}, 3},
		{"multi-token chunks", -1, []int{1, 3, 2}, 6},
		{"usage replaces the count", 9, []int{1, 1, 1}, 9},
	}
	for _, tc := range cases {
		res := Result{Start: t0, PromptTokens: 5}
		m := NewRequestTimer(&res, 10, nil)
		for i, n := range tc.chunks {
			m.Content(ms(100+10*i), n)
		}
		if tc.usage >= 0 {
			m.Usage(7, tc.usage)
		}
		m.End(ms(150))
		want := []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}
		switch {
		case res.TTFT != 100*time.Millisecond, res.E2EL != 150*time.Millisecond, !slices.Equal(res.ITLs, want):
			t.Errorf("%s: TTFT %v E2EL %v ITLs %v", tc.name, res.TTFT, res.E2EL, res.ITLs)
		case res.Chunks != 3, res.OutputTokens != tc.wantOut, res.OutputFromUsage != (tc.usage >= 0):
			t.Errorf("%s: %d chunks, %d tokens, from usage %v", tc.name, res.Chunks, res.OutputTokens, res.OutputFromUsage)
		case tc.usage >= 0 && res.PromptTokens != 7, tc.usage < 0 && res.PromptTokens != 5:
			t.Errorf("%s: prompt tokens %d", tc.name, res.PromptTokens)
		}
	}
}

func TestRequestTimerHandsITLsToItsSink(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []time.Duration
	res := Result{Start: t0}
	m := NewRequestTimer(&res, 1<<30, func(d time.Duration) { got = append(got, d) })
	m.Content(t0.Add(time.Second), 1)
	m.Content(t0.Add(3*time.Second), 1)
	m.End(time.Time{})
	if res.ITLs != nil || !slices.Equal(got, []time.Duration{2 * time.Second}) || res.E2EL != 0 || res.TTFT != time.Second {
		t.Errorf("ITLs %v, sink %v, E2EL %v, TTFT %v", res.ITLs, got, res.E2EL, res.TTFT)
	}
	res = Result{}
	NewRequestTimer(&res, 1<<30, nil)
	if cap(res.ITLs) != maxITLPrealloc {
		t.Errorf("preallocated %d ITLs for max_tokens 2^30", cap(res.ITLs))
	}
}
