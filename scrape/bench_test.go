package scrape

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkParse measures parse + map of whole vLLM scrapes of about 60 KB (the bar is 2 ms
// per scrape).
func BenchmarkParse(b *testing.B) {
	for _, name := range []string{
		"vllm-v1-metrics-qwen3-30b-specdecode.prom",   // 58 KB, V1 with spec decode
		"vllm-0.24-single-engine-rust-vllmtop.prom",   // 67 KB, V1 under load
		"vllm-metrics-synthetic-multiprocess-dp2.txt", // 72 KB, two engines
	} {
		body, err := os.ReadFile(filepath.Join(testdataDir, name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
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

// BenchmarkCompare measures the window math over two scrapes.
func BenchmarkCompare(b *testing.B) {
	prev := load(b, "vllm-metrics-synthetic-multiprocess-dp2.txt")
	cur := prev
	cur.Time = prev.Time.Add(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		Compare(&prev, &cur)
	}
}
