package sim

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzHFConfig: whatever a config.json holds, sizing a model from it returns an error or a
// model with positive, finite dimensions; it never panics.
func FuzzHFConfig(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "hf-configs", "*", "config.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no config seeds: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"num_hidden_layers":1e308,"hidden_size":-1,"num_attention_heads":0}`))
	f.Add([]byte(`{"text_config":{"text_config":{"text_config":null}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxHFConfigBytes {
			return
		}
		m, err := ModelFromHFConfig("fuzz/model", data)
		if err != nil {
			return
		}
		if m.NumLayers <= 0 || m.HiddenSize <= 0 || m.NumFullAttentionLayers() < 0 {
			t.Fatalf("a model without layers or width: %+v", m)
		}
		if p := m.Params; math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
			t.Fatalf("parameters %v", p)
		}
	})
}
