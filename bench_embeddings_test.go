package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchSimEmbeddings benchmarks the simulator's pooling runner as vllm bench serve's
// openai-embeddings backend does: vLLM's pooling table and result keys, E2EL only.
func TestBenchSimEmbeddings(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	code, out, errOut := benchRun(t, "--sim", "--backend", "openai-embeddings", "--endpoint", "/v1/embeddings",
		"--num-prompts", "20", "--random-input-len", "64", "--save-result", "--result-dir", dir, "--",
		"--runner", "pooling", "--sim-speed", "50")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var labels []string
	for _, l := range lines {
		labels = append(labels, strings.TrimRight(l[:min(len(l), 40)], " "))
	}
	assert.Equal(t, []string{"============ Serving Benchmark Result ==",
		"Successful requests:", "Failed requests:", "Benchmark duration (s):", "Total input tokens:",
		"Request throughput (req/s):", "Input throughput (inputs/s):", "Total token throughput (tok/s):",
		"----------------End-to-end Latency------", "Mean E2EL (ms):", "Median E2EL (ms):", "P99 E2EL (ms):",
		strings.Repeat("=", 40)}, labels, out)
	assert.Equal(t, "20", benchTableValue(t, out, "Successful requests:"))
	assert.Equal(t, "1280", benchTableValue(t, out, "Total input tokens:"), "the server's usage.prompt_tokens")
	p99, err := strconv.ParseFloat(benchTableValue(t, out, "P99 E2EL (ms):"), 64)
	require.NoError(t, err)
	assert.Positive(t, p99)

	files, err := filepath.Glob(filepath.Join(dir, "openai-embeddings-infqps-*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	raw, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	for _, k := range []string{"duration", "completed", "total_input_tokens", "total_input_sequences", "request_throughput",
		"input_sequence_throughput", "total_token_throughput", "latencies", "queue_times", "mean_e2el_ms", "median_e2el_ms",
		"std_e2el_ms", "p99_e2el_ms"} {
		assert.Contains(t, doc, k)
	}
	for _, k := range []string{"failed", "total_output_tokens", "output_throughput", "mean_ttft_ms", "mean_tpot_ms",
		"max_output_tokens_per_s", "request_goodput"} {
		assert.NotContains(t, doc, k, "vLLM's pooling result has no %s", k)
	}
	assert.Equal(t, 20.0, doc["total_input_sequences"])
	assert.Equal(t, "openai-embeddings", doc["backend"])
}

func TestBenchEmbeddingsRefusals(t *testing.T) {
	benchNoKeys(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "openai-embeddings"}, "URL must end with 'embeddings'"},
		{[]string{"--backend", "openai-embeddings", "--endpoint", "/v1/embeddings", "--temperature", "0.5"}, "sampling parameters are only supported"},
		{[]string{"--backend", "openai-embeddings", "--endpoint", "/v1/embeddings", "--sim-clock", "virtual"}, "--sim-clock virtual"},
	} {
		code, out, errOut := benchRun(t, append([]string{"--sim"}, c.args...)...)
		assert.Equal(t, 2, code, c.args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, c.want, c.args)
	}
}
