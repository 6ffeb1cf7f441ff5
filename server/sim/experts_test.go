package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resolveWeights is the weights one rank of cfg loads, in GiB.
func resolveWeights(t *testing.T, cfg Config) (*Setup, float64) {
	t.Helper()
	if cfg.GPU == "" {
		cfg.GPU = "H200"
	}
	s, err := Resolve(cfg, nil)
	require.NoError(t, err)
	return s, float64(s.Capacity.WeightsBytes) / gib
}

func TestDataParallelSplitsTheRoutedExperts(t *testing.T) {
	const model = "Qwen/Qwen3-30B-A3B"
	one, w1 := resolveWeights(t, Config{Model: model})
	routed := routedExpertBytes(one) / gib
	require.Greater(t, routed, w1/2, "most of the model is its routed experts")

	// Without expert parallelism vLLM shards every expert over TP x DP ranks; attention and the
	// dense parts are whole on each engine.
	_, w2 := resolveWeights(t, Config{Model: model, DataParallelSize: 2})
	assert.InDelta(t, w1-routed/2, w2, 0.01)
	// Expert parallelism deals out 128 experts whole, 64 a rank: the same bytes.
	ep, w2ep := resolveWeights(t, Config{Model: model, DataParallelSize: 2, ExpertParallel: true})
	assert.Equal(t, 64, ep.LocalExperts())
	assert.InDelta(t, w2, w2ep, 0.01)
	// At TP 2 and one engine the experts are split in two either way, as before.
	_, tp2 := resolveWeights(t, Config{Model: model, TensorParallelSize: 2})
	_, tp2ep := resolveWeights(t, Config{Model: model, TensorParallelSize: 2, ExpertParallel: true})
	assert.InDelta(t, tp2, tp2ep, 0.01)
	assert.Contains(t, ep.Capacity.ExpertsNote, "up to 64 a rank")
	assert.Empty(t, one.Capacity.ExpertsNote)
}

func TestEPLBNeedsEvenlyDealtExperts(t *testing.T) {
	_, err := Resolve(Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H200", DataParallelSize: 2, ExpertParallel: true, EPLB: true, RedundantExperts: 3}, nil)
	assert.EqualError(t, err, "EPLB currently only supports even distribution of experts across ranks. Got 131 experts and 2 EP ranks.")
	_, err = Resolve(Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H200", DataParallelSize: 2, ExpertParallel: true, EPLB: true, RedundantExperts: 4}, nil)
	assert.NoError(t, err)
}

func TestRedundantExpertsAddWholeExperts(t *testing.T) {
	const model = "Qwen/Qwen3-30B-A3B"
	base, w := resolveWeights(t, Config{Model: model, DataParallelSize: 3, ExpertParallel: true})
	assert.Equal(t, 43, base.LocalExperts(), "128 over 3: the first ranks take one more")
	more, wr := resolveWeights(t, Config{Model: model, DataParallelSize: 3, ExpertParallel: true, RedundantExperts: 16})
	assert.Equal(t, 48, more.LocalExperts())
	perExpert := routedExpertBytes(base) / gib / 128
	assert.InDelta(t, 5*perExpert, wr-w, 0.01)
	assert.Contains(t, more.Capacity.ExpertsNote, "+ 16 redundant")
}

// gpt-oss keeps whole experts unpadded by TP under expert parallelism: the intermediate size
// is padded as on one GPU, not per slice.
func TestExpertParallelMXFP4KeepsOneGPUPadding(t *testing.T) {
	s, _ := resolveWeights(t, Config{Model: "openai/gpt-oss-120b", DataParallelSize: 4, ExpertParallel: true})
	m := s.ModelProfile
	assert.InDelta(t, mxfp4ExpertBytesPerRank(m, 1)*32/128, routedExpertRankBytes(s), 1)
	sliced, _ := resolveWeights(t, Config{Model: "openai/gpt-oss-120b", DataParallelSize: 4})
	assert.InDelta(t, mxfp4ExpertBytesPerRank(m, 4), routedExpertRankBytes(sliced), 1)
}

func TestDeepSeekV3FitsEightH200sWithDataAndExpertParallelism(t *testing.T) {
	// vLLM's DeepSeek recipe: --data-parallel-size 8 --enable-expert-parallel on eight H200s.
	s, w := resolveWeights(t, Config{Model: "deepseek-ai/DeepSeek-V3", DataParallelSize: 8, ExpertParallel: true})
	assert.Less(t, w, 100.0)
	assert.Greater(t, s.Capacity.KVCacheTokens, 100_000)
	_, err := Resolve(Config{Model: "deepseek-ai/DeepSeek-V3", GPU: "H200"}, nil)
	assert.Error(t, err, "one H200 cannot hold it")
}

func TestExpertParallelNeedsExperts(t *testing.T) {
	_, err := Resolve(Config{Model: "Qwen/Qwen3-8B", GPU: "H200", ExpertParallel: true, TensorParallelSize: 2}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Number of experts in the model must be greater than 0")
}

func TestExpertsOfAPipelineStage(t *testing.T) {
	// DeepSeek-V2-Lite's first layer is dense: stage 0 of 2 holds 13 of the 26 routed layers.
	cfg := Config{Model: "deepseek-ai/DeepSeek-V2-Lite", GPU: "L4", PipelineParallelSize: 2, TensorParallelSize: 2}
	one, err := Resolve(cfg, nil)
	require.NoError(t, err)
	cfg.DataParallelSize = 2
	two, err := Resolve(cfg, nil)
	require.NoError(t, err)
	for i, st := range one.Capacity.Stages {
		assert.Less(t, two.Capacity.Stages[i].WeightsBytes, st.WeightsBytes, "stage %d", i)
	}
}

// A block-scaled FP8 checkpoint's experts cut over the ranks must stay whole blocks wide.
func TestBlockFP8ExpertsMustSplitIntoWholeBlocks(t *testing.T) {
	_, err := Resolve(Config{Model: "Qwen/Qwen3-235B-A22B-FP8", GPU: "H200", TensorParallelSize: 8}, nil)
	assert.EqualError(t, err, "The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = 128.")
	_, err = Resolve(Config{Model: "Qwen/Qwen3-235B-A22B-FP8", GPU: "H200", TensorParallelSize: 4, DataParallelSize: 2}, nil)
	assert.Error(t, err, "the experts span the data-parallel ranks too")
	for _, ok := range []Config{
		{Model: "Qwen/Qwen3-235B-A22B-FP8", GPU: "H200", TensorParallelSize: 8, ExpertParallel: true},
		{Model: "Qwen/Qwen3-235B-A22B-FP8", GPU: "H200", TensorParallelSize: 4},
		{Model: "Qwen/Qwen3-30B-A3B", GPU: "H200", TensorParallelSize: 8},
	} {
		_, err := Resolve(ok, nil)
		assert.NoError(t, err, "%+v", ok)
	}
}
