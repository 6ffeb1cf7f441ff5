package serve

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

func TestExpertParallelFlags(t *testing.T) {
	o, err := ParseArgs([]string{"--model", "Qwen/Qwen3-30B-A3B", "-dp", "4", "-ep", "--enable-eplb",
		"--eplb-config", `{"num_redundant_experts": 8, "window_size": 1000}`}, noEnv)
	require.NoError(t, err)
	assert.True(t, o.Engine.ExpertParallel)
	assert.Equal(t, 4, o.Engine.DataParallelSize)
	assert.Equal(t, 8, o.Engine.RedundantExperts)
	assert.NotContains(t, o.NotSimulated, "enable-expert-parallel")
	// pydantic takes a numeric string for the int; 0.10 and 0.11 had the flag of its own.
	o, err = ParseArgs([]string{"--model", "Qwen/Qwen3-30B-A3B", "-dp", "4", "-ep", "--enable-eplb", "--eplb-config", `{"num_redundant_experts": "8"}`}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, 8, o.Engine.RedundantExperts)
	o, err = ParseArgs([]string{"--model", "Qwen/Qwen3-30B-A3B", "-dp", "4", "-ep", "--enable-eplb", "--num-redundant-experts", "8", "--sim-vllm-version", "0.11.0"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, 8, o.Engine.RedundantExperts)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--enable-eplb"}, "enable_expert_parallel must be True to use EPLB."},
		{[]string{"-ep", "--eplb-config", `{"num_redundant_experts": 4}`}, "num_redundant_experts is set to 4 but EPLB is not enabled"},
		{[]string{"-ep", "--enable-eplb", "--eplb-config", `{"num_redundant_experts": -1}`}, "must be non-negative"},
		{[]string{"-ep", "--eplb-config", `{num_redundant_experts: 4}`}, "argument --eplb-config: not a JSON object"},
		{[]string{"-ep", "--enable-eplb", "--eplb-config", `{"num_redundant_experts": 2.5}`}, "num_redundant_experts must be a whole number, got 2.5"},
		{[]string{"-ep", "--enable-eplb", "--num-redundant-experts", "2"}, "unrecognized arguments: --num-redundant-experts (removed in vLLM 0.12"},
	} {
		_, err := ParseArgs(append([]string{"--model", "Qwen/Qwen3-30B-A3B", "-dp", "2"}, tc.args...), noEnv)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
}

// The recipe's DeepSeek-V3 command: eight data-parallel engines with expert parallelism start
// on eight H200s, each rank holding 32 of the 256 experts.
func TestCapacityReportOfDataAndExpertParallelism(t *testing.T) {
	args := []string{"deepseek-ai/DeepSeek-V3", "--sim-gpu", "H200", "--data-parallel-size", "8", "--enable-expert-parallel"}
	r, err := CapacityReport(args, noEnv, capacity.Workload{PromptTokens: 1024, OutputTokens: 128})
	require.NoError(t, err)
	require.NotEmpty(t, r.Columns)
	assert.Empty(t, r.Columns[0].Refused)
	assert.Contains(t, r.Layout, "Experts: 256 routed dealt out whole over 8 ranks (TP 1 x DP 8), up to 32 a rank; attention and dense layers over TP")
	_, err = CapacityReport(args[:len(args)-1], noEnv, capacity.Workload{PromptTokens: 1024, OutputTokens: 128})
	require.NoError(t, err, "without -ep the experts are sliced over the eight ranks instead")
}
