package diagnose

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A verdict whose evidence is NaN or Inf still encodes, and comes back the same.
func TestEvidenceJSONKeepsNonFiniteValues(t *testing.T) {
	for _, v := range []float64{0.97, 0, math.NaN(), math.Inf(1), math.Inf(-1), 1e308} {
		in := Verdict{Rule: "kv-bound", Evidence: []Evidence{{Name: "kv_cache_usage", Value: v, Unit: "%", Threshold: "≥ 90%"}}}
		b, err := json.Marshal(in)
		require.NoError(t, err, "value %v", v)
		var out Verdict
		require.NoError(t, json.Unmarshal(b, &out), "%s", b)
		require.Len(t, out.Evidence, 1)
		got := out.Evidence[0]
		assert.Equal(t, "kv_cache_usage", got.Name)
		assert.Equal(t, "≥ 90%", got.Threshold)
		if math.IsNaN(v) {
			assert.True(t, math.IsNaN(got.Value), "%s", b)
			assert.Contains(t, string(b), `"non_finite":"NaN"`)
		} else {
			assert.Equal(t, v, got.Value, "%s", b)
		}
	}
}
