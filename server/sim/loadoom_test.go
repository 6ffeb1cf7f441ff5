package sim

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 14B model in bfloat16 does not fit a 24 GB card: torch fails on one of a layer's tensors,
// and the figures it reports add up (what is free and what the process holds make the card).
func TestWeightsThatDoNotFitFailOnATensor(t *testing.T) {
	for _, v := range []string{"0.20.0", "0.28.0"} {
		_, err := Resolve(Config{Model: "Qwen/Qwen2.5-14B-Instruct", GPU: "A10G", MaxModelLen: 4096, GPUMemoryUtilization: 0.9, VLLMVersion: v}, nil)
		var se *StartupError
		require.ErrorAs(t, err, &se, v)
		assert.Equal(t, LoadOOM, se.Kind)
		assert.Equal(t, "torch.OutOfMemoryError", se.Exception)
		m := regexp.MustCompile(`^CUDA out of memory\. Tried to allocate ([0-9.]+) MiB\. GPU 0 has a total capacity of 22\.06 GiB of which ([0-9.]+) MiB is free\. Including non-PyTorch memory, this process has ([0-9.]+) GiB memory in use\.$`).FindStringSubmatch(se.Message)
		require.NotNil(t, m, se.Message)
		tried, free, inUse := atof(t, m[1]), atof(t, m[2]), atof(t, m[3])
		// Qwen2.5-14B's layer: QKV 70 MiB, o_proj 50, gate_up 270, down 135 (hidden 5,120, MLP 13,824).
		assert.Contains(t, []float64{70, 50, 270, 135}, tried)
		assert.Less(t, free, tried, "the tensor that failed did not fit")
		assert.InDelta(t, 22.06, inUse+free/1024, 0.01, "free and in use make the card")
		if v == "0.20.0" {
			// The V1 model runner logs its advice around torch's message, and that is the error a user sees.
			assert.Equal(t, loadAdvice+" (original error: "+se.Message+")", se.LoggedError)
			assert.Equal(t, se.LoggedError, se.Error())
		} else {
			assert.Empty(t, se.LoggedError, "the V2 model runner lets torch's error through")
			assert.Equal(t, "torch.OutOfMemoryError: "+se.Message, se.Error())
		}
	}
}

// Weights that fit beside the CUDA context load; the same weights on a card with less free
// memory do not, and a quantized build sizes its tensors from its own bytes.
func TestLoadFitsWhereTheWeightsFit(t *testing.T) {
	_, err := Resolve(Config{Model: "Qwen/Qwen2.5-14B-Instruct", GPU: "L40S", MaxModelLen: 4096}, nil)
	require.NoError(t, err)
	_, err = Resolve(Config{Model: "Qwen/Qwen2.5-14B-Instruct", GPU: "L40S", MaxModelLen: 4096, GPUUsedGiB: 20, GPUMemoryUtilization: 0.4}, nil)
	var se *StartupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, LoadOOM, se.Kind, se.Error())

	s, err := Resolve(Config{Model: "Qwen/Qwen2.5-14B-Instruct", GPU: "A10G", MaxModelLen: 4096, CheckpointQuantization: "awq"}, nil)
	require.NoError(t, err, "a 4-bit build fits")
	var sum int64
	for _, b := range loadTensors(s, s.Capacity.WeightsBytes) {
		sum += b
	}
	assert.InEpsilon(t, s.Capacity.WeightsBytes, sum, 0.01, "a quantized build's tensors add up to its weights")
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return f
}
