package serve

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/vlog"
)

func noEnv(string) string { return "" }

func TestParseArgsLikeVLLMServe(t *testing.T) {
	o, err := ParseArgs([]string{"--gpu-memory-utilization", "0.8", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len=8k",
		"-tp", "2", "--no-enable-prefix-caching", "--sim-gpu", "a100", "--trust-remote-code", "--port", "9000"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, "meta-llama/Llama-3.1-8B-Instruct", o.Engine.Model, "the positional model_tag, anywhere")
	assert.Equal(t, 0.8, o.Engine.GPUMemoryUtilization)
	assert.Equal(t, 8000, o.Engine.MaxModelLen)
	assert.Equal(t, 2, o.Engine.TensorParallelSize)
	assert.Equal(t, sim.Off, o.Engine.PrefixCaching)
	assert.Equal(t, "a100", o.Engine.GPU)
	assert.Equal(t, 9000, o.Port)
	assert.Equal(t, "127.0.0.1", o.Host, "loopback unless told")
	keys := []string{}
	for _, nv := range o.NonDefault {
		keys = append(keys, nv.Key)
		switch nv.Key {
		case "max_model_len":
			assert.Equal(t, 8000, nv.Value, "logged as the parsed int")
		case "enable_prefix_caching":
			assert.Equal(t, false, nv.Value, "--no-x is argparse's BooleanOptionalAction: x's own field, False")
		}
	}
	assert.Equal(t, []string{"model_tag", "model", "gpu_memory_utilization", "max_model_len", "tensor_parallel_size", "enable_prefix_caching", "sim_gpu", "trust_remote_code", "port"}, keys)
	logged := []string{}
	for _, kv := range toKV(o.NonDefault) {
		logged = append(logged, kv.Key)
	}
	assert.NotContains(t, logged, "sim_gpu", "the log's non-default args are vLLM's arguments only")
	assert.Len(t, logged, len(keys)-1)

	// A flag given its default value is set, but vLLM does not log it as non-default.
	o, err = ParseArgs([]string{"Qwen/Qwen3-0.6B", "-tp", "1", "--max-num-seqs", "64"}, noEnv)
	require.NoError(t, err)
	logged = logged[:0]
	for _, kv := range loggedArgs(o) {
		logged = append(logged, kv.Key)
	}
	assert.Equal(t, []string{"model_tag", "model", "max_num_seqs"}, logged)

	// vLLM's seed defaults to 0 (from 0.12) and the utilisation to the release's: argparse's
	// comparison with its defaults leaves those out of the log (a 0.31.0 harness passing
	// --seed 0 logs no seed); another release's default is logged.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--seed", "0", "--gpu-memory-utilization", "0.92"}, []string{"model_tag", "model"}},
		{[]string{"--seed", "3", "--gpu-memory-utilization", "0.9"}, []string{"model_tag", "model", "seed", "gpu_memory_utilization"}},
		{[]string{"--gpu-memory-utilization", "0.9", "--sim-vllm-version", "0.19.0"}, []string{"model_tag", "model"}},
		{[]string{"--gpu-memory-utilization", "0.92", "--sim-vllm-version", "0.19.0"}, []string{"model_tag", "model", "gpu_memory_utilization"}},
		{[]string{"--seed", "0", "--sim-vllm-version", "0.11.0"}, []string{"model_tag", "model", "seed"}},
	} {
		o, err = ParseArgs(append([]string{"Qwen/Qwen3-0.6B"}, tc.args...), noEnv)
		require.NoError(t, err)
		logged = logged[:0]
		for _, kv := range loggedArgs(o) {
			logged = append(logged, kv.Key)
		}
		assert.Equal(t, tc.want, logged, "%v", tc.args)
	}

	d, err := ParseArgs(nil, noEnv)
	require.NoError(t, err)
	assert.Equal(t, sim.DefaultModel, d.Engine.Model)
	assert.Zero(t, d.Engine.GPUMemoryUtilization, "unset: the imitated release's default applies")
	assert.Equal(t, 8000, d.Port)
	assert.Equal(t, 1.0, d.Speed)
	assert.Empty(t, d.NonDefault)
}

func TestParseArgsAPIKeyFromEnv(t *testing.T) {
	env := func(k string) string {
		if k == "VLLM_API_KEY" {
			return "from-env"
		}
		return ""
	}
	o, err := ParseArgs(nil, env)
	require.NoError(t, err)
	assert.Equal(t, []string{"from-env"}, o.APIKeys)
	o, err = ParseArgs([]string{"--api-key", "from-flag"}, env)
	require.NoError(t, err)
	assert.Equal(t, []string{"from-flag"}, o.APIKeys, "the flag takes precedence")
}

func TestParseMaxModelLen(t *testing.T) {
	for in, want := range map[string]int{"4096": 4096, "1k": 1000, "1K": 1024, "25.6k": 25600, "32K": 32768, "1m": 1000000, "1M": 1048576} {
		got, err := ParseMaxModelLen(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "abc", "-5", "0", "auto", "-1", "1x", "1e99", "1.5K"} {
		_, err := ParseMaxModelLen(bad)
		assert.Error(t, err, bad, "a length; auto is the flag's own case")
	}
	for _, auto := range []string{"auto", "AUTO", "-1"} {
		o, err := ParseArgs([]string{"--max-model-len", auto}, noEnv)
		require.NoError(t, err, auto)
		assert.True(t, o.Engine.AutoFitMaxModelLen, auto)
		assert.Equal(t, []NamedValue{{"max_model_len", -1}}, o.NonDefault, "vLLM stores auto as -1")
	}
}

func TestParseArgsErrors(t *testing.T) {
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"--no-such-flag", "3"}, "unrecognized arguments: --no-such-flag 3"},
		{[]string{"--gpu-memory-utilisation", "0.8"}, "unrecognized arguments: --gpu-memory-utilisation 0.8 (did you mean --gpu-memory-utilization?)"},
		{[]string{"--max-model-length=4096"}, "(did you mean --max-model-len?)"},
		{[]string{"Qwen/Qwen3-0.6B", "--swap-space", "4"}, "unrecognized arguments: --swap-space (removed in vLLM 0.18; --sim-vllm-version is 0.33.0)"},
		{[]string{"a", "b"}, "unrecognized arguments: b"},
		{[]string{"--port", "abc"}, "argument --port: invalid int value: 'abc'"},
		{[]string{"--seed", "abc"}, "argument --seed: invalid int value: 'abc'"},
		{[]string{"--gpu-memory-utilization", "lots"}, "argument --gpu-memory-utilization: invalid float value: 'lots'"},
		{[]string{"--port"}, "argument --port: expected one argument"},
		{[]string{"--max-model-len", "big"}, "argument --max-model-len: invalid value"},
		{[]string{"--sim-speed", "0"}, "argument --sim-speed: must be greater than 0"},
		{[]string{"--port", "70000"}, "is not a port number"},
		{[]string{"--sim-startup-seconds", "NaN"}, "argument --sim-startup-seconds: must be between 0 and 3600, got NaN"},
	}
	for _, tc := range cases {
		_, err := ParseArgs(tc.args, noEnv)
		var ue *UsageError
		require.True(t, errors.As(err, &ue), "%v: %v", tc.args, err)
		assert.Contains(t, ue.Msg, tc.msg, "%v", tc.args)
	}
	_, err := ParseArgs([]string{"--help"}, noEnv)
	var help *HelpRequested
	require.ErrorAs(t, err, &help)
	assert.Contains(t, help.Text, "binds 127.0.0.1 by")
	assert.Contains(t, help.Text, "--gpu-memory-utilization")
	assert.Contains(t, help.Text, "meta-llama/Llama-3.1-8B-Instruct")
}

func TestAPIKeyIsNotInTheLoggedArgs(t *testing.T) {
	o, err := ParseArgs([]string{"--api-key", "sk-secret"}, noEnv)
	require.NoError(t, err)
	for _, nv := range o.NonDefault {
		assert.NotEqual(t, "sk-secret", nv.Value)
	}
	assert.Equal(t, []string{"sk-secret"}, o.APIKeys)
}

func TestSpeculativeAndVersionFlags(t *testing.T) {
	o, err := ParseArgs([]string{"Qwen/Qwen3.5-0.8B", "--speculative-config", `{"method":"mtp","num_speculative_tokens":2}`,
		"--sim-spec-acceptance", "0.8", "--sim-vllm-version", "0.25.1"}, noEnv)
	require.NoError(t, err)
	require.NotNil(t, o.Engine.Speculative)
	assert.Equal(t, "mtp", o.Engine.Speculative.Method)
	assert.Equal(t, 2, o.Engine.Speculative.NumSpeculativeTokens)
	assert.Equal(t, 0.8, o.Engine.Speculative.AcceptanceRate)
	assert.Equal(t, "0.25.1", o.Engine.VLLMVersion)
	// Logged as the dict vLLM parsed, keys in the order given.
	var logged []vlog.KV
	for _, nv := range o.NonDefault {
		logged = append(logged, vlog.KV{Key: nv.Key, Value: nv.Value})
	}
	assert.Contains(t, vlog.PyDict(logged), `'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 2}`)
	d, err := jsonAsPython(`{"b": [1, 2.5, null, true, "x'y"], "a": {"z": 1e-05}}`)
	require.NoError(t, err)
	assert.Equal(t, `{'b': [1, 2.5, None, True, "x'y"], 'a': {'z': 1e-05}}`, vlog.PyDict(d.([]vlog.KV)))

	for args, want := range map[string]string{
		`--speculative-config {not json`:                          "argument --speculative-config: Value {not json cannot be converted to <function loads>.",
		`--speculative-config {"num_speculative_tokens":"three"}`: "num_speculative_tokens must be a positive integer",
		`--sim-spec-acceptance 0.5`:                               "only with --speculative-config",
		`--speculative-config {"method":7}`:                       "method must be a string",
	} {
		_, err := ParseArgs(strings.SplitN(args, " ", 2), noEnv)
		var ue *UsageError
		if assert.ErrorAs(t, err, &ue, args) {
			assert.Contains(t, ue.Msg, want)
		}
	}
	// The engine checks the rest, with the simulated version's range.
	o, err = ParseArgs([]string{"--sim-vllm-version", "0.1.9"}, noEnv)
	require.NoError(t, err)
	_, err = sim.Resolve(o.Engine, nil)
	assert.ErrorContains(t, err, "--sim-vllm-version 0.1.9 is not simulated; the simulator imitates vLLM 0.10.0 to 0.33, serves from 0.8 and plans memory (--print-capacity) from 0.2.0")
}

func TestAsyncSchedulingFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want sim.Toggle
		kv   any // the non-default arg vLLM logs, nil for none
	}{
		{nil, sim.Default, nil},
		{[]string{"--async-scheduling"}, sim.On, true},
		{[]string{"--no-async-scheduling"}, sim.Off, false},
	} {
		o, err := ParseArgs(append([]string{"Qwen/Qwen3-0.6B"}, tc.args...), noEnv)
		require.NoError(t, err, tc.args)
		assert.Equal(t, tc.want, o.Engine.AsyncScheduling, tc.args)
		var logged any
		for _, nv := range o.NonDefault {
			if nv.Key == "async_scheduling" {
				logged = nv.Value
			}
		}
		assert.Equal(t, tc.kv, logged, tc.args)
	}
	// One BooleanOptionalAction: given both, the later wins, as argparse does.
	for _, tc := range []struct {
		args []string
		want sim.Toggle
	}{
		{[]string{"--async-scheduling", "--no-async-scheduling"}, sim.Off},
		{[]string{"--no-async-scheduling", "--async-scheduling"}, sim.On},
		{[]string{"--async-scheduling", "--", "--no-async-scheduling"}, sim.On}, // after --, a positional
	} {
		o, err := ParseArgs(tc.args, noEnv)
		require.NoError(t, err, tc.args)
		assert.Equal(t, tc.want, o.Engine.AsyncScheduling, tc.args)
	}
	o, err := ParseArgs([]string{"--enable-prefix-caching", "--no-enable-prefix-caching"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, sim.Off, o.Engine.PrefixCaching)
}

// TestCurrentServeFlagsAccepted runs command lines of vLLM 0.20 to 0.30 as published: every flag
// is one vllm serve takes, so the simulator must take it too.
func TestCurrentServeFlagsAccepted(t *testing.T) {
	for _, line := range [][]string{
		// roy6n23/vllm-tp2-profiling's pinned engine settings (0.30.0)
		{"meta-llama/Llama-3.1-8B-Instruct", "--dtype", "bfloat16", "--max-model-len", "9216", "--gpu-memory-utilization", "0.90",
			"--max-num-seqs", "1024", "--max-num-batched-tokens", "8192", "--block-size", "16", "--kv-cache-dtype", "auto", "--seed", "0",
			"--no-enable-prefix-caching", "--enable-chunked-prefill", "--async-scheduling", "--stream-interval", "1",
			"--attention-backend", "FLASH_ATTN", "--generation-config", "vllm", "-O2"},
		// a 0.20 docker compose command of a Qwen3.6 NVFP4 MoE
		{"Qwen/Qwen3.6-35B-A3B", "--trust-remote-code", "--gpu-memory-utilization", "0.90", "--max-model-len", "65536",
			"--max-num-seqs", "1", "--max-num-batched-tokens", "4096", "--kv-cache-dtype", "fp8_e4m3", "--reasoning-parser", "qwen3",
			"--tool-call-parser", "qwen3_coder", "--moe-backend", "cutlass", "--enable-prefix-caching", "--max-cudagraph-capture-size", "4"},
		{"Qwen/Qwen3.5-9B", "--language-model-only", "--limit-mm-per-prompt", `{"image": 2}`, "--mamba-ssm-cache-dtype", "float32",
			"-cc", `{"cudagraph_mode": "FULL_AND_PIECEWISE"}`, "-ep", "--hf-overrides", "{}", "--override-generation-config", "{}",
			"--long-prefill-token-threshold", "0", "--max-num-partial-prefills", "1", "--max-long-partial-prefills", "1",
			"--enable-log-requests", "--no-enable-log-requests", "--cpu-offload-gb", "0", "-O", "3"},
	} {
		o, err := ParseArgs(line, noEnv)
		require.NoError(t, err, line)
		assert.NotEmpty(t, o.NotSimulated, "the start-up warning names what is not simulated")
	}
	o, err := ParseArgs([]string{"-O3"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, []string{"--optimization-level"}, o.NotSimulated)
	o, err = ParseArgs([]string{"--seed", "3", "--stream-interval", "2"}, noEnv)
	require.NoError(t, err)
	assert.Contains(t, o.NonDefault, NamedValue{"seed", 3}, "an integer flag is logged as the number vLLM parsed")
	assert.Contains(t, o.NonDefault, NamedValue{"stream_interval", 2})
	o, err = ParseArgs([]string{"--attention-backend", "TRITON_ATTN"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, "TRITON_ATTN", o.Engine.AttentionBackend, "read for the Triton backend's KV-cache checks")
	assert.Empty(t, o.NotSimulated)

	// A list flag takes the values up to the next option (argparse's nargs="+"): 0.10's
	// --cuda-graph-sizes and its successor.
	o, err = ParseArgs([]string{"--cuda-graph-sizes", "1", "2", "4", "--max-model-len", "4096", "--cudagraph-capture-sizes", "8", "--sim-vllm-version", "0.12.0"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, 4096, o.Engine.MaxModelLen)
	assert.Equal(t, []string{"--cuda-graph-sizes", "--cudagraph-capture-sizes"}, o.NotSimulated)
	for _, nv := range o.NonDefault {
		if nv.Key == "cuda_graph_sizes" {
			assert.Equal(t, []int{1, 2, 4}, nv.Value, "logged as the list of ints vLLM parsed")
		}
	}
	_, err = ParseArgs([]string{"--cuda-graph-sizes"}, noEnv)
	assert.Error(t, err, "a list flag needs a value")
	// argparse's type=int: every value is an int, and the list takes what follows up to the
	// next option, a model tag included.
	_, err = ParseArgs([]string{"--cudagraph-capture-sizes", "1", "2", "x"}, noEnv)
	assert.EqualError(t, err, "argument --cudagraph-capture-sizes: invalid int value: 'x'")
	_, err = ParseArgs([]string{"--cudagraph-capture-sizes", "1", "meta-llama/Llama-3.1-8B-Instruct"}, noEnv)
	assert.EqualError(t, err, "argument --cudagraph-capture-sizes: invalid int value: 'meta-llama/Llama-3.1-8B-Instruct'")

	// Several served names follow the flag, and vLLM logs them as a list.
	o, err = ParseArgs([]string{"Qwen/Qwen3-0.6B", "--served-model-name", "a", "b", "--max-model-len", "4096"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, o.ServedModelNames)
	assert.Equal(t, "Qwen/Qwen3-0.6B", o.Engine.Model, "the second name is not the positional model")
	comma, err := ParseArgs([]string{"--served-model-name", "org/model,v2"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, []string{"org/model,v2"}, comma.ServedModelNames, "a comma is part of a name")
	for _, nv := range o.NonDefault {
		if nv.Key == "served_model_name" {
			assert.Equal(t, []string{"a", "b"}, nv.Value)
		}
	}
}

func TestV2ModelRunnerEnv(t *testing.T) {
	runner := func(version, model, env string) (v2, graphsReserved bool) {
		t.Helper()
		p, err := Prepare([]string{model, "--sim-vllm-version", version}, func(k string) string {
			if k == "VLLM_USE_V2_MODEL_RUNNER" {
				return env
			}
			return ""
		})
		require.NoError(t, err, version+" "+model+" "+env)
		s := p.Setup()
		return s.V2ModelRunner(), s.CUDAGraphProfiled()
	}
	moe := "Qwen/Qwen3-30B-A3B"
	v2, reserved := runner("0.29.0", moe, "")
	assert.True(t, v2 && reserved, "0.29 runs every model on the V2 runner, which reserves its graphs")
	v2, reserved = runner("0.29.0", moe, "0")
	assert.True(t, !v2 && reserved, "0 keeps the V1 runner, whose estimate is reserved from 0.21")
	v2, reserved = runner("0.25.0", moe, "1")
	assert.True(t, v2 && !reserved, "1 takes the V2 runner of 0.25, whose estimate is 0")
	v2, _ = runner("0.24.0", moe, "1")
	assert.False(t, v2, "before 0.25 the memory plan has no V2 runner to take")

	_, err := ParseArgs(nil, func(k string) string {
		if k == "VLLM_USE_V2_MODEL_RUNNER" {
			return "yes"
		}
		return ""
	})
	assert.EqualError(t, err, `VLLM_USE_V2_MODEL_RUNNER: invalid literal for int() with base 10: "yes"`)
}
