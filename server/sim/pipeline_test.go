package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// getPPIndices is vLLM's get_pp_indices (vllm/distributed/utils.py) for the default split,
// written out as a list of (start, end) to check PPPartition against.
func getPPIndices(layers, size int) [][2]int {
	parts := make([]int, size)
	for i := range parts {
		parts[i] = layers / size
	}
	for i := 2; i < layers%size+2; i++ {
		parts[len(parts)-i]++
	}
	out := make([][2]int, size)
	start := 0
	for r, n := range parts {
		out[r] = [2]int{start, start + n}
		start += n
	}
	return out
}

func TestPPPartitionMatchesGetPPIndices(t *testing.T) {
	for _, tc := range []struct {
		layers, size int
		want         []int
	}{
		{32, 2, []int{16, 16}},
		{27, 2, []int{14, 13}},         // DeepSeek-V2-Lite: the remainder goes before the last stage
		{61, 4, []int{15, 15, 16, 15}}, // DeepSeek-V3
		{62, 4, []int{15, 16, 16, 15}}, // two extra: the middle stages
		{63, 4, []int{16, 16, 16, 15}},
		{80, 3, []int{27, 27, 26}},
		{28, 3, []int{9, 10, 9}},
		{64, 8, []int{8, 8, 8, 8, 8, 8, 8, 8}},
		{36, 1, []int{36}},
	} {
		got, err := PPPartition(tc.layers, tc.size, "")
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%d layers, %d stages", tc.layers, tc.size)
		start := 0
		for r, n := range got {
			assert.Equal(t, getPPIndices(tc.layers, tc.size)[r], [2]int{start, start + n}, "%d layers, rank %d", tc.layers, r)
			start += n
		}
	}
}

func TestPPPartitionFromEnvironment(t *testing.T) {
	got, err := PPPartition(48, 2, "16,32")
	require.NoError(t, err)
	assert.Equal(t, []int{16, 32}, got)
	got, err = PPPartition(48, 2, " 20, 28")
	require.NoError(t, err)
	assert.Equal(t, []int{20, 28}, got)
	for partition, msg := range map[string]string{
		"16,x":     "Invalid partition string: 16,x",
		"16,16,16": "len(partitions)=3 does not match pp_size=2.",
		"16,16":    "sum(partitions)=32 does not match num_hidden_layers=48.",
		// From the environment, echoed: no escape codes reach the terminal, no endless value.
		"16,\x1b[31mx":             "Invalid partition string: 16,x",
		strings.Repeat("1,", 3000): "VLLM_PP_LAYER_PARTITION is longer than 4096 bytes",
	} {
		_, err := PPPartition(48, 2, partition)
		require.Error(t, err, partition)
		assert.Equal(t, msg, err.Error())
		var ee *EngineConfigError
		assert.Equal(t, !strings.Contains(msg, "longer than"), errors.As(err, &ee), "vLLM's own ValueError, or the simulator's bound: %s", msg)
	}
	_, err = PPPartition(4, 8, "")
	assert.Error(t, err, "more stages than layers")
}

// TestPipelineCapacity: Llama-3.1-8B on two L4s as two stages. Each GPU holds half the layers
// (so a token's KV is half as large and a GiB holds twice the tokens), the embedding on the
// first and the LM head on the second; the engine keeps the smaller stage's blocks.
func TestPipelineCapacity(t *testing.T) {
	cfg := Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", MaxModelLen: 8192}
	one, err := Resolve(cfg, nil)
	require.NoError(t, err)
	cfg.PipelineParallelSize = 2
	two, err := Resolve(cfg, nil)
	require.NoError(t, err)
	c := two.Capacity

	require.Len(t, c.Stages, 2)
	assert.Equal(t, [2]int{0, 16}, [2]int{c.Stages[0].FirstLayer, c.Stages[0].EndLayer})
	assert.Equal(t, [2]int{16, 32}, [2]int{c.Stages[1].FirstLayer, c.Stages[1].EndLayer})
	assert.Equal(t, one.Capacity.BytesPerToken/2, c.BytesPerToken, "half the layers on each GPU")
	// Untied embeddings: the two tables are split one per end stage, so the stages add up.
	assert.InDelta(t, one.Capacity.WeightsBytes, c.Stages[0].WeightsBytes+c.Stages[1].WeightsBytes, 4)
	assert.Greater(t, c.Stages[1].ActivationBytes, c.Stages[0].ActivationBytes, "the sampler runs on the last stage only")
	cfg.VLLMVersion = "0.19.0" // the Triton sampler, whose fixed buffers are the last stage's too
	v19, err := Resolve(cfg, nil)
	require.NoError(t, err)
	assert.Greater(t, v19.Capacity.Stages[1].ActivationBytes, v19.Capacity.Stages[0].ActivationBytes)
	cfg.VLLMVersion = ""
	assert.Equal(t, min(c.Stages[0].NumGPUBlocks, c.Stages[1].NumGPUBlocks), c.NumGPUBlocks)
	// About 14 GiB more KV memory per GPU for half the bytes a token: far more than twice the tokens.
	assert.Greater(t, c.KVCacheTokens, 4*one.Capacity.KVCacheTokens)
	assert.Equal(t, 2, two.WorldSize())

	// A tied model: each end stage holds a copy of the table.
	q, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "L4", PipelineParallelSize: 2}, nil)
	require.NoError(t, err)
	q1, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "L4"}, nil)
	require.NoError(t, err)
	table := int64(q.ModelProfile.EmbeddingParams() * 2)
	assert.InDelta(t, q1.Capacity.WeightsBytes+table, q.Capacity.Stages[0].WeightsBytes+q.Capacity.Stages[1].WeightsBytes, 4)

	lines := LayoutLines(two.Config, c)
	require.Len(t, lines, 4)
	assert.Contains(t, lines[0], "world size 2 = --tensor-parallel-size 1 x --pipeline-parallel-size 2")
	assert.Contains(t, lines[2], "layers 16-31 (16, LM head and sampler)")
}

// TestPipelineRefusalIsPerStage: the KV check runs on each stage's own layers, so the needed
// memory of one max_model_len request is a stage's, half the whole model's.
func TestPipelineRefusalIsPerStage(t *testing.T) {
	cfg := Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", MaxModelLen: 32768, GPUMemoryUtilization: 0.4, PipelineParallelSize: 2}
	_, err := Resolve(cfg, nil)
	var se *StartupError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, MaxModelLenTooLarge, se.Kind)
	assert.Contains(t, se.Message, "(2.0 GiB KV cache is needed", "16 layers x 32768 tokens x 64 KiB")
	require.Len(t, se.Capacity.Stages, 2)
	assert.True(t, strings.HasPrefix(se.Message, "To serve at least one request"))

	cfg.PPLayerPartition = "16,15"
	_, err = Resolve(cfg, nil)
	var ee *EngineConfigError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "sum(partitions)=31 does not match num_hidden_layers=32.", ee.Msg)
}

// TestPipelineStepTime: stages do not shorten one sequence's step (its token passes every
// stage), but a big batch's compute is shared by the stages.
func TestPipelineStepTime(t *testing.T) {
	base := Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", MaxModelLen: 8192}
	one, err := Resolve(base, nil)
	require.NoError(t, err)
	base.PipelineParallelSize = 2
	two, err := Resolve(base, nil)
	require.NoError(t, err)
	m1, m2 := NewStepModel(one), NewStepModel(two)

	decode := []Work{{Q: 1, C: 1000}}
	assert.Greater(t, m2.GPUSeconds(decode), m1.GPUSeconds(decode), "the hand-off between stages costs, the split gains nothing")
	assert.Less(t, m2.GPUSeconds(decode), 1.05*m1.GPUSeconds(decode))

	prefill := []Work{{Q: 2048}, {Q: 2048}, {Q: 2048}, {Q: 2048}}
	ratio := m2.GPUSeconds(prefill) / m1.GPUSeconds(prefill)
	assert.InDelta(t, 0.5, ratio, 0.1, "compute-bound: each micro-batch is half the batch")
	assert.Equal(t, 0.0, m2.GPUSeconds(nil))
}

// TestPipelineStagesHoldTheirOwnExperts: where the dense layers come first
// (first_k_dense_replace), a stage holds the experts of its routed layers only, so GLM-4.7's
// first stage (3 dense layers, 8 routed) is lighter than a middle stage of 11 routed ones, and
// the stages still add up to the whole model.
func TestPipelineStagesHoldTheirOwnExperts(t *testing.T) {
	cfg := Config{Model: "zai-org/GLM-4.7-FP8", GPU: "A100-SXM-80GB", PipelineParallelSize: 8, MaxModelLen: 8192, VLLMVersion: "0.19.0"}
	s, err := Resolve(cfg, nil)
	require.NoError(t, err)
	st := s.Capacity.Stages
	require.Len(t, st, 8)
	assert.Equal(t, []int{11, 11, 11, 12, 12, 12, 12, 11}, []int{st[0].Layers(), st[1].Layers(), st[2].Layers(), st[3].Layers(), st[4].Layers(), st[5].Layers(), st[6].Layers(), st[7].Layers()})
	m := s.ModelProfile
	routedLayer := float64(m.NumExperts) * m.ExpertParams() / float64(m.RoutedLayers()) // FP8: a byte each
	table := m.EmbeddingParams() * 2
	// Stage 1 (11 routed) against stage 0 (3 dense + 8 routed and the embedding): three layers'
	// experts apart, less the embedding and the dense MLPs.
	denseMLP := 3 * float64(m.HiddenSize*m.DenseIntermediateSize)
	want := 3*routedLayer - table - 3*denseMLP
	got := float64(st[1].WeightsBytes - st[0].WeightsBytes)
	assert.InEpsilon(t, want, got, 0.02, "stage 1 carries three more layers' experts, stage 0 the dense MLPs")
	var sum int64
	for _, x := range st {
		sum += x.WeightsBytes - int64(ropeCacheBytes(s))
	}
	whole := weightBytes(s)
	assert.InEpsilon(t, whole, float64(sum), 1e-6, "the stages add up to the model")
}

// TestPipelineKVCheckOfTheWholeModel: from 0.14 until the fix of vllm#33698 the check of one
// max_model_len request asked every stage for the whole model's KV (vllm#32105: GLM-4.7-FP8 at
// PP 8 on A100s, 71.16 GiB needed against 28.57); before and after, each stage's own.
func TestPipelineKVCheckOfTheWholeModel(t *testing.T) {
	cfg := Config{Model: "zai-org/GLM-4.7-FP8", GPU: "A100-SXM-80GB", PipelineParallelSize: 8, MaxModelLen: 202752,
		GPUMemoryUtilization: 0.925, MaxNumSeqs: 128}
	for _, c := range []struct {
		version string
		refused bool
	}{{"0.13.0", false}, {"0.14.0", true}, {"0.15.1", true}, {"0.16.0", false}, {"0.33.0", false}} {
		cfg.VLLMVersion = c.version
		_, err := Resolve(cfg, nil)
		if !c.refused {
			assert.NoError(t, err, c.version)
			continue
		}
		var se *StartupError
		require.ErrorAs(t, err, &se, c.version)
		assert.Equal(t, MaxModelLenTooLarge, se.Kind, c.version)
		assert.Contains(t, se.Message, "(71.16 GiB KV cache is needed", c.version)
		require.Len(t, se.Capacity.Stages, 8, "the refusal keeps every stage's plan")
	}

	// A pinned cache too small for one request is refused by each stage's own check, in the
	// releases with the whole-model check as in the others.
	for _, version := range []string{"0.13.0", "0.15.1", "0.16.0"} {
		for name, pin := range map[string]func(*Config){
			"--kv-cache-memory-bytes 2G":     func(c *Config) { c.KVCacheMemoryBytes = 2 << 30 },
			"--num-gpu-blocks-override 1000": func(c *Config) { c.NumGPUBlocksOverride = 1000 },
		} {
			pinned := cfg
			pinned.VLLMVersion = version
			pin(&pinned)
			_, err := Resolve(pinned, nil)
			var se *StartupError
			require.ErrorAs(t, err, &se, "%s %s", version, name)
			assert.Equal(t, MaxModelLenTooLarge, se.Kind, "%s %s", version, name)
		}
	}
}
