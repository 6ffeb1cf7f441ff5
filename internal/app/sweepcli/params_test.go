package sweepcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/loadgen"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "params.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// A serve_params.json written for vLLM: a list, or an object of named combinations.
func TestReadParamsAsVLLM(t *testing.T) {
	combos, err := ReadParams(write(t, `[{"gpu_memory_utilization": 0.5, "max_num_seqs": 128}, {"gpu_memory_utilization": 0.9, "enable_prefix_caching": false}]`), "--serve-params")
	require.NoError(t, err)
	require.Len(t, combos, 2)
	assert.Equal(t, "gpu_memory_utilization=0.5-max_num_seqs=128", combos[0].Label())
	assert.Equal(t, "gpu_memory_utilization=0.9, enable_prefix_caching=False", combos[1].Text(", "))
	assert.Equal(t, []loadgen.Field{{Key: "gpu_memory_utilization", Value: loadgen.PyFloat(0.5)}, {Key: "max_num_seqs", Value: 128}}, combos[0].Fields())

	named, err := ReadParams(write(t, `{"small": {"max_num_seqs": 16}, "big": {"max_num_seqs": 256, "_benchmark_name": "x"}}`), "--serve-params")
	require.NoError(t, err)
	assert.Equal(t, "small", named[0].Label())
	assert.Equal(t, "big", named[1].Label())

	none, err := ReadParams("", "--bench-params")
	require.NoError(t, err)
	assert.Equal(t, []Combo{{}}, none, "no file: the command as given")

	for _, bad := range []string{``, `[]`, `[1]`, `{"a": 1}`, `"x"`, `[{"_benchmark_name": "a"}, {"_benchmark_name": "a"}]`, `[{`} {
		_, err := ReadParams(write(t, bad), "--serve-params")
		assert.Error(t, err, "%q", bad)
	}
	_, err = ReadParams(filepath.Join(t.TempDir(), "missing.json"), "--serve-params")
	assert.ErrorContains(t, err, "--serve-params")
}

func TestApplyToCommandAsVLLM(t *testing.T) {
	cmd := []string{"vllm", "serve", "m", "--gpu-memory-utilization", "0.8", "--enable-prefix-caching"}
	c := Combo{Params: []Param{
		{"gpu_memory_utilization", jsonNumber("0.5")}, // replaces the value in place
		{"max_num_seqs", jsonNumber("64")},            // appended
		{"enable_prefix_caching", false},              // --no- form, in place
		{"speculative_config", map[string]any{"method": "ngram", "num_speculative_tokens": jsonNumber("3")}}, // as JSON
		{"compilation_config.level", true},      // a nested key: =true
		{"max-model-len", jsonNumber("4096.0")}, // as Python writes a float
	}}
	assert.Equal(t, []string{"vllm", "serve", "m", "--gpu-memory-utilization", "0.5", "--no-enable-prefix-caching",
		"--max-num-seqs", "64", "--speculative-config", `{"method": "ngram", "num_speculative_tokens": 3}`,
		"--compilation-config.level=true", "--max-model-len", "4096.0"}, c.ApplyTo(cmd))
	assert.Equal(t, []string{"vllm", "serve", "m", "--gpu-memory-utilization", "0.8", "--enable-prefix-caching"}, cmd, "the input is not changed")
	assert.True(t, c.Has("max-num-seqs"))
	assert.False(t, c.Has("max_concurrency"))
}

func TestSplitCommandAsShlex(t *testing.T) {
	cases := map[string][]string{
		`vllm serve m --a 1`:                        {"vllm", "serve", "m", "--a", "1"},
		`vllmtop sim 'Qwen/Qwen2.5 0.5B' --x "a b"`: {"vllmtop", "sim", "Qwen/Qwen2.5 0.5B", "--x", "a b"},
		`a\ b "c\"d" e''f`:                          {"a b", `c"d`, "ef"},
		"  spaced\tout \n":                          {"spaced", "out"},
	}
	for in, want := range cases {
		got, err := SplitCommand(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "   ", `'open`, `"open`, `trailing\`} {
		_, err := SplitCommand(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestBenchFlags(t *testing.T) {
	for in, want := range map[string][]string{
		"vllm bench serve --model m --num-prompts 10": {"--model", "m", "--num-prompts", "10"},
		"/usr/bin/vllmtop bench --num-prompts 10":     {"--num-prompts", "10"},
		"--num-prompts 10":                            {"--num-prompts", "10"},
	} {
		got, err := BenchFlags(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := BenchFlags("python bench.py")
	assert.ErrorContains(t, err, "want vllm bench serve")
}

func jsonNumber(s string) any { return json.Number(s) }

// A benchmark command of a sweep takes bench's client flags too: https trust and the cap on an
// event, written back by the sweep as --name=value.
func TestParseBenchClientFlags(t *testing.T) {
	o, err := ParseBench([]string{"--insecure", "--ca-file", "ca.pem", "--max-event-size=4MiB"}, func(string) string { return "" })
	require.NoError(t, err)
	assert.True(t, o.Client.Insecure)
	assert.Equal(t, "ca.pem", o.Client.CAFile)
	assert.Equal(t, 4<<20, o.Client.MaxEventBytes)
	o, err = ParseBench(nil, func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, loadgen.DefaultMaxEventBytes, o.Client.MaxEventBytes, "the default cap")
	_, err = ParseBench([]string{"--max-event-size", "lots"}, func(string) string { return "" })
	assert.ErrorContains(t, err, "want a size from 1KiB to 1GiB")
}

// The object-of-named-objects form keeps each object's keys in the file's order, as vLLM's
// dict does: the order the flags are appended in, and the one its directory is named by.
func TestReadParamsNamedKeepsKeyOrder(t *testing.T) {
	named, err := ReadParams(write(t, `{"a": {"max_num_seqs": 8, "enable_prefix_caching": true, "block_size": 32}}`), "--serve-params")
	require.NoError(t, err)
	require.Len(t, named, 1)
	assert.Equal(t, "max_num_seqs=8, enable_prefix_caching=True, block_size=32", named[0].Text(", "))
	assert.Equal(t, []string{"vllm", "serve", "m", "--max-num-seqs", "8", "--enable-prefix-caching", "--block-size", "32"},
		named[0].ApplyTo([]string{"vllm", "serve", "m"}))
	assert.Equal(t, "a", named[0].Label())
}

// An empty list or object runs nothing and says how to run the command unchanged.
func TestEmptyParamsSayWhatRunsTheCommandAsItIs(t *testing.T) {
	for _, in := range []string{`[]`, `{}`} {
		_, err := parseParams([]byte(in))
		assert.ErrorContains(t, err, "a list of one {} runs the command as it is", in)
	}
	cs, err := parseParams([]byte(`[{}]`))
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Empty(t, cs[0].Params)
}
