package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A long prefill is GEMM-bound, so where vLLM multiplies FP8 weights in FP8 (compute
// capability 8.9 on) it takes about half the 16-bit time; where Marlin widens them to 16 bits
// (Ampere), or the weights are a 4-bit weight-only format, it does not
// (docs/calibration.md#fp8-gemms).
func TestFP8GEMMsRunAtTheFP8PeakOnFP8Cards(t *testing.T) {
	prefill := func(model, gpu, quantization string) float64 {
		t.Helper()
		s, err := Resolve(Config{Model: model, GPU: gpu, Quantization: quantization, MaxModelLen: 16384}, nil)
		require.NoError(t, err)
		return NewStepModel(s).GPUSeconds([]Work{{Q: 8192}})
	}
	for _, tc := range []struct {
		name, model, gpu, quantization string
		fast                           bool
	}{
		{"FP8 checkpoint on H100", "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "H100", "", true},
		{"online FP8 on L4", "meta-llama/Llama-3.1-8B-Instruct", "L4", "fp8", true},
		{"FP8 checkpoint on A100 (Marlin)", "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "A100-SXM-80GB", "", false},
		{"AWQ on H100 (weight-only)", "Qwen/Qwen2.5-7B-Instruct-AWQ", "H100", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := "meta-llama/Llama-3.1-8B-Instruct"
			if tc.model == "Qwen/Qwen2.5-7B-Instruct-AWQ" {
				base = "Qwen/Qwen2.5-7B-Instruct"
			}
			ratio := prefill(tc.model, tc.gpu, tc.quantization) / prefill(base, tc.gpu, "")
			t.Logf("8,192-token prefill, quantized / 16-bit: %.2f", ratio)
			if tc.fast {
				// Half the GEMMs' time; the 16-bit attention and LM head keep it above 0.5.
				assert.InDelta(t, 0.55, ratio, 0.1, "the GEMMs run at the FP8 peak")
			} else {
				assert.InDelta(t, 1, ratio, 0.08, "the GEMMs run at the 16-bit peak")
			}
		})
	}
}
