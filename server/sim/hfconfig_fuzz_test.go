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
	f.Add([]byte(`{"model_type":"gemma3_text","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":2,"head_dim":1,` +
		`"max_position_embeddings":268435456,"rope_scaling":{"rope_type":"linear","factor":1024},"rope_local_base_freq":1e4,` +
		`"partial_rotary_factor":0.01,"rope_parameters":{"rope_type":"yarn","factor":-3}}`))
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
		for _, r := range m.ropeTables() {
			if r.Positions < 1 || r.Positions > 1<<28 || r.RotaryDim < 1 || r.RotaryDim > m.HeadDim {
				t.Fatalf("rotary table %+v for head_dim %d", r, m.HeadDim)
			}
		}
	})
}
