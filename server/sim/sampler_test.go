package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"encoding/json"
	"os"
)

func TestV1SamplerPathByRelease(t *testing.T) {
	for v, want := range map[string]samplerPath{
		"0.8.0": samplerFlashInferProbs, "0.9.0": samplerFlashInferProbs,
		"0.9.1": samplerFlashInferLogits, "0.10.1.1": samplerFlashInferLogits, "0.11.0": samplerFlashInferLogits,
		"0.11.1": samplerSort, "0.16.0": samplerSort,
		"0.17.0": samplerTriton, "0.19.0": samplerTriton,
		"0.20.0": samplerFlashInferLogits, DefaultVersion: samplerFlashInferLogits,
	} {
		assert.Equal(t, want, v1SamplerPath(MustVersion(v), false, SamplerEnvUnset), v)
	}
	// FlashInfer's sampler is CUDA-only: an AMD card sorts until the native path's Triton kernel.
	for v, want := range map[string]samplerPath{
		"0.8.0": samplerSort, "0.10.2": samplerSort, "0.16.0": samplerSort,
		"0.17.0": samplerTriton, DefaultVersion: samplerTriton,
	} {
		assert.Equal(t, want, v1SamplerPath(MustVersion(v), true, SamplerEnvUnset), v+" on ROCm")
		assert.Equal(t, want, v1SamplerPath(MustVersion(v), true, SamplerEnvOn), v+" on ROCm asks for FlashInfer in vain")
	}
	// VLLM_USE_FLASHINFER_SAMPLER turns FlashInfer off where it is the default and on where not.
	for _, c := range []struct {
		v    string
		env  SamplerEnv
		want samplerPath
	}{
		{"0.8.0", SamplerEnvOff, samplerSort}, {"0.11.0", SamplerEnvOff, samplerSort},
		{"0.11.1", SamplerEnvOn, samplerFlashInferLogits}, {"0.19.0", SamplerEnvOn, samplerFlashInferLogits},
		{"0.20.0", SamplerEnvOff, samplerTriton}, {"0.16.0", SamplerEnvOff, samplerSort},
	} {
		assert.Equal(t, c.want, v1SamplerPath(MustVersion(c.v), false, c.env), "%s with %d", c.v, c.env)
	}
	for in, want := range map[string]SamplerEnv{"": SamplerEnvUnset, "0": SamplerEnvOff, "1": SamplerEnvOn, "2": SamplerEnvOn, " 0": SamplerEnvOff} {
		got, err := ParseSamplerEnv(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseSamplerEnv("true")
	assert.Error(t, err, "int('true') is an error in vLLM's envs.py too")
}

func TestV1SamplerPeakPerEntry(t *testing.T) {
	const vocab = 100000
	perEntry := func(path samplerPath, rows int, logitsBytes float64) float64 {
		return v1SamplerPeakBytes(path, rows, vocab, logitsBytes) / float64(rows*vocab)
	}
	// bf16 logits (2 B) and their float32 copy (4 B), plus what each path allocates.
	assert.InDelta(t, 10, perEntry(samplerFlashInferProbs, 256, 2), 1e-9, "float32 probabilities")
	assert.InDelta(t, 14, perEntry(samplerFlashInferLogits, 256, 2), 1e-9, "top-k-masked copy and its softmax")
	assert.InDelta(t, 38, perEntry(samplerSort, 256, 2), 1e-9, "sort outputs, index input and cub's double buffers")
	assert.InDelta(t, 50, perEntry(samplerSort, 64, 2), 1e-9, "under 128 rows PyTorch sorts (value, index-and-segment) pairs in one pass")
	assert.InDelta(t, 38, perEntry(samplerSort, 1, 2), 1e-9, "one row costs as much as many")
	assert.InDelta(t, 14*256*vocab+tritonSamplerBuffers, v1SamplerPeakBytes(samplerTriton, 256, vocab, 2), 1, "softmax and noise, and the kernel's buffers")
	assert.InDelta(t, 12, perEntry(samplerFlashInferLogits, 256, 4), 1e-9, "a float32 model's logits are not copied")
}

func TestV1SamplerPeakInTheProfile(t *testing.T) {
	// gpt-oss-120b on an H200 with a 1,024-token budget: the sampler over 1,024 rows of 201,088
	// entries outweighs the forward, and its cost follows the release's kernel. The profile
	// holds the forward's output (1,024 tokens x 2,880 hidden in bf16) through the sampler run.
	cfg := Config{Model: "openai/gpt-oss-120b", GPU: "H200", MaxNumBatchedTokens: 1024, MaxModelLen: 8192}
	entries := int64(1024 * 201088)
	hidden := int64(1024 * 2880 * 2)
	for v, perEntry := range map[string]int64{"0.10.1.1": 14, "0.11.1": 38, "0.20.0": 14} {
		cfg.VLLMVersion = v
		s, err := Resolve(cfg, nil)
		require.NoError(t, err, v)
		require.Equal(t, 1024, s.MaxNumSeqs, v)
		assert.Equal(t, perEntry*entries+hidden, s.Capacity.ActivationBytes, v)
	}
	cfg.VLLMVersion = "0.19.0"
	s, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(14*float64(entries)+tritonSamplerBuffers)+hidden, s.Capacity.ActivationBytes, "the Triton kernel")

	// The sort path costs 24 B an entry more than FlashInfer's: less KV memory at 0.11.1.
	cfg.VLLMVersion = "0.11.0"
	fi, err := Resolve(cfg, nil)
	require.NoError(t, err)
	cfg.VLLMVersion = "0.11.1"
	sorted, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, 24*entries, fi.Capacity.AvailableKVBytes-sorted.Capacity.AvailableKVBytes)
}

func TestHostSamplerBytesOverrideTheRelease(t *testing.T) {
	p := BuiltinProfiles()
	for i := range p.Hosts {
		p.Hosts[i].SamplerBytesPerSeqVocab = 20
	}
	s, err := Resolve(Config{Model: "Qwen/Qwen2-7B-Instruct", GPU: "A100-SXM-80GB", MaxModelLen: 4096, VLLMVersion: "0.11.1"}, p)
	require.NoError(t, err)
	assert.Equal(t, int64(20*256*152064+2048*3584*2), s.Capacity.ActivationBytes, "the sampler's and the held hidden states")
}

// The sort path's peak as measured on an H100 with PyTorch 2.11 (docs/measurements/v1-sampler):
// the model holds every measured size within 2%.
func TestV1SamplerSortPeakAsMeasured(t *testing.T) {
	data, err := os.ReadFile("../../docs/measurements/v1-sampler/sort_path.json")
	require.NoError(t, err)
	var m struct {
		Results []struct {
			Rows, Vocab int
			What        string
			PeakBytes   float64 `json:"peak_bytes"`
		}
	}
	require.NoError(t, json.Unmarshal(data, &m))
	n := 0
	for _, r := range m.Results {
		if r.What != "sampler" {
			continue
		}
		n++
		got := v1SamplerPeakBytes(samplerSort, r.Rows, r.Vocab, 2)
		assert.InEpsilon(t, r.PeakBytes, got, 0.02, "%d rows of %d", r.Rows, r.Vocab)
	}
	assert.GreaterOrEqual(t, n, 8)
}
