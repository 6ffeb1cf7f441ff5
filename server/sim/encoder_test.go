package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEncoderProfileItems(t *testing.T) {
	cases := []struct {
		name, model, gpu, version, entry string
		maxModelLen, seqs, tp, items     int
	}{
		// 16384 batched tokens (the LLM class on a large GPU) over 256 tokens an image.
		{"Gemma 3, LLM class, 0.10", "google/gemma-3-4b-it", "B200", "0.10.0", EntryLLM, 0, 0, 1, 64},
		{"Gemma 3, server, 0.19", "google/gemma-3-4b-it", "H100-SXM-80GB", "0.19.0", EntryServe, 8192, 0, 1, 32},
		// The budget is at least one item: a 16384-token image on a 2048-token budget.
		{"Qwen3.8, 2048 tokens", "Qwen/Qwen3.8-27B-FP8", "RTX-5090", "0.26.0", EntryServe, 0, 0, 2, 1},
		// Capped by what max_num_seqs requests of max_model_len hold.
		{"two requests of 512 tokens", "google/gemma-3-4b-it", "H100-SXM-80GB", "0.19.0", EntryServe, 512, 2, 1, 4},
		{"a text model", "meta-llama/Llama-3.1-8B-Instruct", "H100-SXM-80GB", "0.19.0", EntryServe, 8192, 0, 1, 0},
	}
	for _, c := range cases {
		s, err := Resolve(Config{Model: c.model, GPU: c.gpu, VLLMVersion: c.version, EntryPoint: c.entry, MaxModelLen: c.maxModelLen,
			MaxNumSeqs: c.seqs, TensorParallelSize: c.tp}, nil)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.items, encoderItems(s), c.name)
	}
}

// The V1 tower's peak from its code: on the fit-split Qwen3.8-27B FP8 log at TP 2 on RTX 5090s
// (0.26, one 65,536-patch image) it is the position-embedding interpolation's, 10 hidden-size
// values and the 1,536 pixel values a patch, 1.59 GiB logged; at TP 1 the block's MLP is the
// larger. The fit-split Gemma 3 4B B200 log of 0.10.0 is not reproduced: 64 images peak at 9.96
// GiB there, where the code's tensors are 6.2 (and the 0.19 H100 logs of the same tower agree
// with the code).
func TestEncoderProfilePeakFromTheCode(t *testing.T) {
	s, err := Resolve(Config{Model: "Qwen/Qwen3.8-27B-FP8", GPU: "RTX-5090", VLLMVersion: "0.26.0", TensorParallelSize: 2,
		GPUMemoryUtilization: 0.92}, nil)
	require.NoError(t, err)
	act, _ := profileMemory(s)
	within(t, 1.59, float64(act)/gib, 0.01, "the fit log's activations")
	peak, kept := encoderProfileBytes(s)
	assert.InDelta(t, 65536*(1536+10*1152)*2, peak, 1, "the interpolation's peak at TP 2")
	assert.Greater(t, peak, kept)

	s.TensorParallelSize = 1
	peak, _ = encoderProfileBytes(s)
	assert.InDelta(t, 65536*(1536+3*1152+2*4304+1152)*2, peak, 1, "the MLP's peak at TP 1")

	g, err := Resolve(Config{Model: "google/gemma-3-4b-it", GPU: "B200", VLLMVersion: "0.10.0", EntryPoint: EntryLLM}, nil)
	require.NoError(t, err)
	require.Equal(t, 64, encoderItems(g))
	peak, _ = encoderProfileBytes(g)
	assert.InDelta(t, 64*4096*(588+3*1152+2*4304)*2, peak, 1, "SigLIP: pixels and the MLP's tensors")
}

func TestEncoderOutputsStayThroughTheSampler(t *testing.T) {
	// 32 Gemma 3 images at 0.19: the activation is the larger of the tower's peak and the
	// sampler's (with the held hidden states) plus the 32 x 256 embeddings the encoder cache
	// holds; here the sampler's side.
	s, err := Resolve(Config{Model: "google/gemma-3-4b-it", GPU: "H100-SXM-80GB", VLLMVersion: "0.19.0", MaxModelLen: 8192, MaxNumSeqs: 1024}, nil)
	require.NoError(t, err)
	peak, kept := encoderProfileBytes(s)
	assert.InDelta(t, 32*256*2560*2, kept, 1)
	act, _ := profileMemory(s)
	entries := float64(s.MaxNumSeqs) * float64(s.ModelProfile.VocabSize)
	sampler := profiledHiddenBytes(s, entries) + v1SamplerPeak(s, entries)
	assert.Less(t, peak, kept+sampler)
	assert.Equal(t, int64(kept+sampler), act)
}

// V0 profiled an image in every dummy sequence of an encoder-decoder model: the fit-split
// Llama-3.2-11B-Vision log of 0.7.0 (128 sequences, 65,536 tokens) peaks at 36.63 GiB, which
// V0's factor is fitted on.
func TestV0EncoderDecoderProfilesEverySequence(t *testing.T) {
	s, err := Resolve(Config{Model: "meta-llama/Llama-3.2-11B-Vision", GPU: "H100-SXM-80GB", VLLMVersion: "0.7.0", MaxModelLen: 65536,
		MaxNumSeqs: 128}, nil)
	require.NoError(t, err)
	assert.Equal(t, 128, encoderItems(s))
	act, _ := profileMemory(s)
	assert.InEpsilon(t, 36.63, float64(act)/gib, 0.01)

	// A decoder-only model's V0 profile caps the sequences at the token budget over an image.
	g, err := Resolve(Config{Model: "google/gemma-3-4b-it", GPU: "H100-SXM-80GB", VLLMVersion: "0.7.0", MaxModelLen: 8192}, nil)
	require.NoError(t, err)
	assert.Equal(t, 32, encoderItems(g), "8192 tokens over 256 an image")
}
