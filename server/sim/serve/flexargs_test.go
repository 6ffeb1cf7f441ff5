package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlexibleArgs(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"--tensor_parallel_size", "8"}, []string{"--tensor-parallel-size", "8"}},
		{[]string{"--max_model_len=4_096"}, []string{"--max-model-len=4_096"}},
		{[]string{"--model", "org/my_model", "-tp", "2"}, []string{"--model", "org/my_model", "-tp", "2"}},
		{[]string{"--speculative-config.method", "mtp", "--port", "9000", "--speculative_config.num_speculative_tokens=1"},
			[]string{"--port", "9000", "--speculative-config", `{"method":"mtp","num_speculative_tokens":1}`}},
		{[]string{"-cc.pass_config.fuse_rope_kvcache=True", "-cc.use_inductor_graph_partition=true"},
			[]string{"-cc", `{"pass_config":{"fuse_rope_kvcache":"True"},"use_inductor_graph_partition":true}`}},
		{[]string{"--kv-transfer-config.kv_buffer_size", "80g"}, []string{"--kv-transfer-config", `{"kv_buffer_size":80000000000}`}},
		{[]string{"--compilation-config.cudagraph_capture_sizes+", "1,2", "--compilation-config.cudagraph_capture_sizes+=4"},
			[]string{"--compilation-config", `{"cudagraph_capture_sizes":["1","2","4"]}`}},
		{[]string{"--sim-jitter", "-0.5", "--", "--a_b.c"}, []string{"--sim-jitter", "-0.5", "--", "--a_b.c"}},
		{[]string{"--.", "0"}, []string{"--.", "0"}}, // no flag name: left to argparse, not a "--"
		{[]string{"-x.y", "1", "--", "-z.w"}, []string{"-x", `{"y":1}`, "--", "-z.w"}},
	} {
		got, err := flexibleArgs(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	_, err := flexibleArgs([]string{"--speculative-config.method"})
	assert.EqualError(t, err, "argument --speculative-config.method: expected one argument")
}

// Recipes' command lines: underscores and dotted keys reach the simulated engine.
func TestFlexibleArgsReachTheEngine(t *testing.T) {
	o, err := ParseArgs([]string{"Qwen/Qwen3-8B", "--tensor_parallel_size", "2", "--max_num_seqs=64",
		"--speculative-config.method", "ngram", "--speculative-config.num_speculative_tokens", "3",
		"--speculative-config.prompt_lookup_max", "4"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, 2, o.Engine.TensorParallelSize)
	assert.Equal(t, 64, o.Engine.MaxNumSeqs)
	require.NotNil(t, o.Engine.Speculative)
	assert.Equal(t, "ngram", o.Engine.Speculative.Method)
	assert.Equal(t, 3, o.Engine.Speculative.NumSpeculativeTokens)

	_, err = ParseArgs([]string{"Qwen/Qwen3-8B", "--no_such.key", "1"}, noEnv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unrecognized arguments: --no-such")
}

// FuzzFlexibleArgs: any command line is rewritten or refused in one error, and each dotted
// flag becomes a valid JSON object.
func FuzzFlexibleArgs(f *testing.F) {
	f.Add("--a_b.c_d=1 -x.y+ 1,2 --", "v")
	f.Add("--speculative-config.method", "mtp")
	f.Fuzz(func(t *testing.T, line, value string) {
		args := append(strings.Fields(line), value)
		out, err := flexibleArgs(args)
		if err != nil {
			return
		}
		dotted := 0
		for _, a := range args {
			if a == "--" {
				break
			}
			key, _, _ := strings.Cut(a, "=")
			name, _, isDotted := strings.Cut(key, ".")
			if strings.HasPrefix(a, "-") && !isNumber(a) && isDotted && strings.Trim(name, "-") != "" {
				dotted++
			}
		}
		for i, a := range out {
			if a == "--" {
				break
			}
			key, _, _ := strings.Cut(a, "=")
			name, _, isDotted := strings.Cut(key, ".")
			if strings.HasPrefix(a, "-") && !isNumber(a) && strings.Trim(name, "-") != "" {
				assert.False(t, isDotted, "dotted flag %q left over", a)
			}
			if dotted > 0 && i > 0 && i == len(out)-1-len(tailOf(out)) {
				assert.True(t, json.Valid([]byte(a)), "the last merged flag %q is JSON", out[i-1])
			}
		}
		again, err := flexibleArgs(out)
		if err == nil && !strings.Contains(line, "--") {
			assert.Equal(t, len(out), len(again), "rewriting twice changes nothing more")
		}
	})
}

// tailOf is the part of args from "--" on.
func tailOf(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return args[i:]
		}
	}
	return nil
}
