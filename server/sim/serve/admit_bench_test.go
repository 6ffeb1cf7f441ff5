package serve

import (
	"net/http"
	"strings"
	"testing"
)

func BenchmarkAdmit(b *testing.B) {
	plan, err := Prepare([]string{"Qwen/Qwen2.5-0.5B-Instruct"}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"model":"Qwen/Qwen2.5-0.5B-Instruct","prompt":"` + strings.Repeat("word ", 256) + `","max_tokens":16,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`)
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		if _, r := plan.Admit("/v1/completions", h, body); r != nil {
			b.Fatal(string(r.Body))
		}
	}
}
