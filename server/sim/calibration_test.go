package sim

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type loadFigures struct {
	itlP50     time.Duration
	itlMean    time.Duration
	throughput float64 // output tokens per second over the run
}

func measure(t *testing.T, cfg Config, total, conc, in, out int) loadFigures {
	t.Helper()
	h := newRun(t, cfg)
	h.closedLoop(t, total, conc, func(i int) Request {
		return Request{Prompt: fixedPrompt(in, i), MaxTokens: out, IgnoreEOS: true}
	})
	var gaps []time.Duration
	var sum time.Duration
	first, last := h.done[0].Times.Arrival, h.done[0].Times.Finished
	tokens := 0
	for _, s := range h.done {
		ts := h.tokens[s]
		for i := 1; i < len(ts); i++ {
			gaps = append(gaps, ts[i].Sub(ts[i-1]))
			sum += ts[i].Sub(ts[i-1])
		}
		tokens += s.Outputs
		if s.Times.Arrival.Before(first) {
			first = s.Times.Arrival
		}
		if s.Times.Finished.After(last) {
			last = s.Times.Finished
		}
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return loadFigures{
		itlP50:     gaps[len(gaps)/2],
		itlMean:    sum / time.Duration(len(gaps)),
		throughput: float64(tokens) / last.Sub(first).Seconds(),
	}
}

// TestCalibrationL4Qwen05B compares with a published sweep of vLLM on one L4 serving
// Qwen2.5-0.5B-Instruct (util 0.6, 256 in / 128 out, closed loop; sim-model.md section 3).
func TestCalibrationL4Qwen05B(t *testing.T) {
	for _, tc := range []struct {
		conc       int
		itlP50MS   float64
		throughput float64
	}{
		{1, 5.1, 168},
		{8, 5.5, 1312},
		{32, 7.1, 3773},
	} {
		t.Run(fmt.Sprintf("C=%d", tc.conc), func(t *testing.T) {
			f := measure(t, Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.6}, max(16, 6*tc.conc), tc.conc, 256, 128)
			t.Logf("ITL p50 %.2f ms (measured %.1f), throughput %.0f tok/s (measured %.0f)", f.itlP50.Seconds()*1e3, tc.itlP50MS, f.throughput, tc.throughput)
			within(t, tc.itlP50MS, f.itlP50.Seconds()*1e3, 0.10, "ITL p50 ms")
			within(t, tc.throughput, f.throughput, 0.10, "output tokens/s")
		})
	}
}

// TestCalibrationA100Llama8B: one A100-40GB decoding Llama-3.1-8B at C=1 (1024 in / 128 out)
// runs at about 75 tokens/s (sim-model.md section 3).
func TestCalibrationA100Llama8B(t *testing.T) {
	f := measure(t, Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "A100-SXM-40GB", MaxModelLen: 8192}, 4, 1, 1024, 128)
	decode := 1 / f.itlMean.Seconds()
	t.Logf("decode %.1f tok/s, ITL %.2f ms, output throughput %.1f tok/s", decode, f.itlMean.Seconds()*1e3, f.throughput)
	within(t, 75, decode, 0.10, "decode tokens/s")
}

// TestCalibrationH200StepTimes compares the GPU part of the step model with decode steps of
// Llama-3.1-8B measured on one H200 (sim-model.md 2.4, CUDA graphs).
func TestCalibrationH200StepTimes(t *testing.T) {
	s, err := Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H200"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sm := NewStepModel(s)
	grid := []struct {
		batch, ctx int
		ms         float64
	}{
		{1, 256, 4.97}, {1, 1024, 5.24},
		{8, 256, 5.14}, {8, 1024, 5.42}, {8, 4096, 6.53},
		{32, 256, 5.57}, {32, 1024, 6.25}, {32, 4096, 9.05},
		{64, 256, 5.92}, {64, 1024, 7.31}, {64, 4096, 13.05},
		{128, 256, 7.89}, {128, 1024, 10.78},
		{256, 256, 10.64}, {256, 1024, 17.16},
		// B=1 at 4096 (6.36 ms measured) is left out: torch SDPA does not split the KV at
		// batch 1, which vLLM's attention kernels do; sim-model.md calls it a known misfit.
	}
	for _, g := range grid {
		batch := make([]Work, g.batch)
		for i := range batch {
			batch[i] = Work{Q: 1, C: g.ctx}
		}
		got := sm.GPUSeconds(batch) * 1e3
		within(t, g.ms, got, 0.10, fmt.Sprintf("B=%d ctx=%d step ms", g.batch, g.ctx))
	}
	prefill := []struct {
		tokens int
		ms     float64
	}{{1024, 25.7}, {4096, 106.8}, {8192, 231.4}}
	for _, p := range prefill {
		got := sm.GPUSeconds([]Work{{Q: p.tokens}}) * 1e3
		within(t, p.ms, got, 0.10, fmt.Sprintf("prefill %d ms", p.tokens))
	}
}

// TestThroughputRisesWithConcurrency checks the shape a user expects from a sweep.
func TestThroughputRisesWithConcurrency(t *testing.T) {
	var prev float64
	for _, c := range []int{1, 4, 16, 64} {
		f := measure(t, Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100"}, 2*c+4, c, 512, 64)
		assert.Greater(t, f.throughput, prev, "C=%d", c)
		prev = f.throughput
	}
}
