package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/sweepcli"
)

// vLLM's sweep documentation: the current page, and the page as it stood after PR #35306
// (serve_sla's scan, before its rename to serve_workload).
const (
	sweepsDoc    = "https://docs.vllm.ai/en/latest/benchmarking/sweeps/"
	sweepsDocSLA = "https://github.com/vllm-project/vllm/pull/35306 (the sweeps page's SLA Scanner section)"
)

// docSweeps are vllm bench sweep command lines copied from vLLM's docs. Edits to point them at
// the simulator: `vllm bench sweep` is `vllmtop sweep`; in --serve-cmd `vllm serve` is
// `vllmtop sim --sim-profiles P` (P adds Llama-2-7b-chat-hf, which the simulator lacks), and the
// serve sweeps get --sim-clock virtual; benchmarks/ is a temporary directory. The --bench-cmd
// `vllm bench serve ...` is unchanged. Each row runs after the ones before it (plots read
// their results); want is a file the row must leave, relative to the results directory.
var docSweeps = []struct {
	source, cmd, want string
}{
	{sweepsDoc + "#basic", `vllm bench sweep serve \
    --serve-cmd 'vllm serve meta-llama/Llama-2-7b-chat-hf' \
    --bench-cmd 'vllm bench serve --model meta-llama/Llama-2-7b-chat-hf --backend vllm --endpoint /v1/completions --dataset-name sharegpt --dataset-path benchmarks/ShareGPT_V3_unfiltered_cleaned_split.json' \
    --serve-params benchmarks/serve_hparams.json \
    --bench-params benchmarks/bench_hparams.json \
    --output-dir benchmarks/results \
    --experiment-name demo`, "demo/SERVE--max_num_seqs=32-max_num_batched_tokens=1024-BENCH--scenario_A/run=2.json"},
	{sweepsDoc + "#workload-explorer", `vllm bench sweep serve_workload \
    --serve-cmd 'vllm serve meta-llama/Llama-2-7b-chat-hf' \
    --bench-cmd 'vllm bench serve --model meta-llama/Llama-2-7b-chat-hf --backend vllm --endpoint /v1/completions --dataset-name sharegpt --dataset-path benchmarks/ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 100' \
    --workload-var max_concurrency \
    --serve-params benchmarks/serve_hparams.json \
    --bench-params benchmarks/bench_hparams.json \
    --num-runs 1 \
    --output-dir benchmarks/results \
    --experiment-name demo2`, "demo2/SERVE--max_num_seqs=64-max_num_batched_tokens=2048-BENCH--scenario_B-WL--max_concurrency=100/summary.json"},
	{sweepsDoc + "#basic_1", `vllm bench sweep plot $EXPERIMENT_DIR \
    --var-x max_concurrency \
    --var-y median_ttft_ms \
    --col-by _benchmark_name \
    --curve-by max_num_seqs,max_num_batched_tokens \
    --fig-name latency_curve`, "demo2/latency_curve.png"},
	{sweepsDoc + "#basic_1", `vllm bench sweep plot $EXPERIMENT_DIR \
    --var-x max_concurrency \
    --var-y total_token_throughput \
    --col-by _benchmark_name \
    --curve-by max_num_seqs,max_num_batched_tokens \
    --fig-name throughput_curve`, "demo2/throughput_curve.png"},
	{sweepsDoc + "#basic_1", `vllm bench sweep plot $EXPERIMENT_DIR \
    --var-x total_token_throughput \
    --var-y median_ttft_ms \
    --col-by _benchmark_name \
    --curve-by max_num_seqs,max_num_batched_tokens \
    --fig-name latency_throughput`, "demo2/latency_throughput.png"},
	{sweepsDoc + "#pareto-chart", `vllm bench sweep plot_pareto $EXPERIMENT_DIR \
  --label-by max_concurrency,tensor_parallel_size,pipeline_parallel_size`, "demo2/pareto/PARETO.png"},
	{sweepsDoc + "#startup-benchmark", `vllm bench sweep startup \
    --startup-cmd 'vllm bench startup --model Qwen/Qwen3-0.6B' \
    --serve-params benchmarks/serve_hparams_startup.json \
    --startup-params benchmarks/startup_hparams.json \
    --output-dir benchmarks/results \
    --experiment-name demo3`, "demo3/SERVE--tp2-STARTUP--qwen3-0.6/run=0.json"},
	{sweepsDocSLA, `vllm bench sweep serve_sla \
    --serve-cmd 'vllm serve meta-llama/Llama-2-7b-chat-hf' \
    --bench-cmd 'vllm bench serve --model meta-llama/Llama-2-7b-chat-hf --backend vllm --endpoint /v1/completions --dataset-name sharegpt --dataset-path benchmarks/ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 100' \
    --serve-params benchmarks/serve_hparams.json \
    --bench-params benchmarks/bench_hparams.json \
    -o benchmarks/sla`, "<timestamp>/SERVE--max_num_seqs=32-max_num_batched_tokens=1024-BENCH--scenario_A/summary.json"},
	{sweepsDocSLA, `vllm bench sweep plot benchmarks/results/<timestamp> \
    --var-x request_rate \
    --var-y p99_ttft_ms \
    --row-by random_input_len \
    --col-by random_output_len \
    --curve-by max_num_seqs,max_num_batched_tokens \
    --filter-by 'request_rate<=128'`, "<timestamp>/FIGURE.png"},
}

// docSweepFiles writes the docs' example parameter files (the first two entries of the serve
// and bench ones), the ShareGPT file and the simulator's profile of Llama-2-7b-chat-hf.
func docSweepFiles(t *testing.T, dir string) {
	t.Helper()
	b := filepath.Join(dir, "benchmarks")
	require.NoError(t, os.MkdirAll(b, 0o755))
	data, err := os.ReadFile("testdata/sharegpt-conversations.json")
	require.NoError(t, err)
	writeFile(t, b, "ShareGPT_V3_unfiltered_cleaned_split.json", string(data))
	writeFile(t, b, "serve_hparams.json", `[{"max_num_seqs": 32, "max_num_batched_tokens": 1024}, {"max_num_seqs": 64, "max_num_batched_tokens": 2048}]`)
	writeFile(t, b, "bench_hparams.json", `[{"_benchmark_name": "scenario_A", "random_input_len": 128, "random_output_len": 32},
		{"_benchmark_name": "scenario_B", "random_input_len": 256, "random_output_len": 64}]`)
	writeFile(t, b, "serve_hparams_startup.json", `[{"_benchmark_name": "tp1", "model": "Qwen/Qwen3-0.6B", "tensor_parallel_size": 1, "gpu_memory_utilization": 0.9},
		{"_benchmark_name": "tp2", "model": "Qwen/Qwen3-0.6B", "tensor_parallel_size": 2, "gpu_memory_utilization": 0.9}]`)
	writeFile(t, b, "startup_hparams.json", `[{"_benchmark_name": "qwen3-0.6", "num_iters_cold": 2, "num_iters_warmup": 1, "num_iters_warm": 2}]`)
	// Llama-2-7b-chat-hf's config.json.
	writeFile(t, dir, "profiles.json", `{"models": [{"name": "meta-llama/Llama-2-7b-chat-hf", "num_layers": 32, "hidden_size": 4096,
		"num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 128, "intermediate_size": 11008, "vocab_size": 32000,
		"tie_word_embeddings": false, "max_position_embeddings": 4096, "dtype": "float16", "params": 6.74e9, "source": "config.json"}]}`)
}

// onlyDir is the one directory in dir (an experiment named by its time).
func onlyDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, dir)
	return entries[0].Name()
}

func TestVLLMDocsSweepCommandLines(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	docSweepFiles(t, dir)
	results, stamp := filepath.Join(dir, "benchmarks", "results"), ""
	for i, c := range docSweeps {
		cmd := strings.ReplaceAll(c.cmd, "vllm serve ", "vllmtop sim --sim-profiles "+filepath.Join(dir, "profiles.json")+" ")
		cmd = strings.ReplaceAll(cmd, "benchmarks/", filepath.Join(dir, "benchmarks")+"/")
		cmd = strings.ReplaceAll(cmd, "$EXPERIMENT_DIR", filepath.Join(results, "demo2"))
		if strings.Contains(cmd, "<timestamp>") {
			stamp = onlyDir(t, filepath.Join(dir, "benchmarks", "sla"))
			cmd = strings.ReplaceAll(strings.ReplaceAll(cmd, "results/<timestamp>", "sla/"+stamp), "<timestamp>", stamp)
		}
		words, err := sweepcli.SplitCommand(cmd)
		require.NoError(t, err)
		require.Equal(t, []string{"vllm", "bench", "sweep"}, words[:3], c.source)
		args := append([]string{"sweep"}, words[3:]...)
		if strings.HasPrefix(words[3], "serve") {
			args = append(args, "--sim-clock", "virtual")
		}
		code, stdout, errOut := runVllmtop(args...)
		require.Equal(t, 0, code, "row %d (%s): %s\n%s\n%s", i, c.source, cmd, lastLines(stdout, 15), errOut)
		want := filepath.Join(results, c.want)
		if strings.HasPrefix(c.want, "<timestamp>") {
			stamp = onlyDir(t, filepath.Join(dir, "benchmarks", "sla"))
			want = filepath.Join(dir, "benchmarks", "sla", strings.ReplaceAll(c.want, "<timestamp>", stamp))
		}
		info, err := os.Stat(want)
		require.NoError(t, err, "row %d (%s)", i, c.source)
		assert.Positive(t, info.Size(), want)
	}
}

// lastLines is the end of a command's output, for a failure's message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
