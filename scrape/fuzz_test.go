package scrape

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

// FuzzParse feeds arbitrary bytes to the parser and mapper. Properties: no panic; a parse
// error leaves nothing half-built; a snapshot always encodes as JSON; the window math over it
// never panics and never yields a negative rate or a quantile outside the bucket bounds.
// The seed corpus is every /metrics fixture in testdata, so `go test` runs them all.
func FuzzParse(f *testing.F) {
	for _, b := range hostileseed.Files(f, "metrics") {
		f.Add(b)
	}
	for _, pattern := range []string{"*.prom", "vllm-metrics-*.txt"} {
		files, err := filepath.Glob(filepath.Join(testdataDir, pattern))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} NaN\n"))
	f.Add([]byte("# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} -1\n"))
	f.Add([]byte("# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{engine=\"x\",kv_cache_size_tokens=\"1e400\"} 1\n"))
	f.Add([]byte("<html>"))

	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(bytes.NewReader(data))
		if err != nil {
			if s.Models != nil || s.Unmapped != nil {
				t.Fatalf("error with a partial snapshot: %v", err)
			}
			return
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("snapshot does not encode: %v", err)
		}
		prev := s
		cur := s
		cur.Time = prev.Time.Add(time.Second)
		w := Compare(&prev, &cur)
		if _, err := json.Marshal(w); err != nil {
			t.Fatalf("window does not encode: %v", err)
		}
		for _, m := range w.Models {
			for _, v := range []Value{m.Total.PromptTokensPerSec, m.Total.GenerationTokensPerSec, m.Total.RequestsPerSec} {
				if v.OK && !(v.V >= 0) {
					t.Fatalf("rate %v", v.V)
				}
			}
		}
		for _, m := range s.Models {
			for _, hf := range histFields {
				h := *hf.get(&m.Total)
				if h == nil || len(h.Buckets) < 2 {
					continue
				}
				for _, q := range []float64{0, 0.5, 0.99, 1} {
					v := Quantile(q, nil, h)
					if !v.OK || math.IsNaN(v.V) {
						continue
					}
					lo := math.Min(0, h.Buckets[0].UpperBound)
					hi := h.Buckets[len(h.Buckets)-2].UpperBound
					if v.V < lo || v.V > hi {
						t.Fatalf("%s q%v = %v outside [%v, %v]", hf.name, q, v.V, lo, hi)
					}
				}
			}
		}
	})
}
