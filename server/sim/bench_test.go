package sim

import (
	"testing"
)

// BenchmarkVirtualRun10k runs 10,000 requests of 200 prompt and 128 output tokens at
// concurrency 256 in virtual time: the cost of simulating a whole benchmark.
func BenchmarkVirtualRun10k(b *testing.B) {
	prompts := make([][]int, 10000) // distinct prompts: no prefix-cache hits
	for i := range prompts {
		prompts[i] = fixedPrompt(200, i)
	}
	var tokens int64
	for b.Loop() {
		h := newRun(b, Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", MaxModelLen: 4096})
		h.keepTime = false
		h.closedLoop(b, 10000, 256, func(i int) Request {
			return Request{Prompt: prompts[i%len(prompts)], MaxTokens: 128, IgnoreEOS: true}
		})
		c := h.e.Counters()
		if c.GenerationTokens != 10000*128 {
			b.Fatalf("generated %d tokens", c.GenerationTokens)
		}
		tokens += c.ComputedTokens + c.GenerationTokens
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens), "ns/token")
}
