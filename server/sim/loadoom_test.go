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
		m := regexp.MustCompile(`^CUDA out of memory\. Tried to allocate ([0-9.]+) MiB\. GPU 0 has a total capacity of 22\.06 GiB of which ([0-9.]+) MiB is free\. Including non-PyTorch memory, this process has ([0-9.]+) GiB memory in use\. Of the allocated memory ([0-9.]+) GiB is allocated by PyTorch, and ([0-9.]+) MiB is reserved by PyTorch but unallocated\. If reserved but unallocated memory is large try setting PYTORCH_ALLOC_CONF=expandable_segments:True`).FindStringSubmatch(se.Message)
		require.NotNil(t, m, se.Message)
		tried, free, inUse, allocated := atof(t, m[1]), atof(t, m[2]), atof(t, m[3]), atof(t, m[4])
		assert.Less(t, allocated, inUse, "the CUDA context is in use but not PyTorch's")
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

// Every catalogue model's tensors add up to its weights, so weights that exceed the room
// always fail on one of them, whatever the shapes leave out (norms, routers, shared experts,
// a vision tower).
func TestLoadTensorsAddUpToTheWeights(t *testing.T) {
	p := BuiltinProfiles()
	for _, m := range p.Models {
		for _, tp := range []int{1, 2, 4, 8} {
			s, err := Resolve(Config{Model: m.Name, GPU: "H200", TensorParallelSize: tp, MaxModelLen: 2048}, p)
			if err != nil {
				continue
			}
			var sum int64
			for _, b := range loadTensors(s, s.Capacity.WeightsBytes) {
				require.GreaterOrEqual(t, b, int64(0), m.Name)
				sum += b
			}
			assert.InEpsilon(t, s.Capacity.WeightsBytes, sum, 0.001, "%s at TP %d", m.Name, tp)
			break
		}
	}
	// A card with too little free memory for the weights fails while loading them.
	_, err := Resolve(Config{Model: "google/gemma-3-4b-it", GPU: "L4", GPUMemoryUtilization: 0.3, GPUUsedGiB: 13.6, MaxModelLen: 2048}, p)
	var se *StartupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, LoadOOM, se.Kind, se.Error())
}
