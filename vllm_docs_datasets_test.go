package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vLLM's benchmark docs (docs/benchmarking/cli in vLLM's repository), as docs.vllm.ai renders them.
const vllmBenchDocs = "https://docs.vllm.ai/en/latest/benchmarking/cli/"

// vllmDocsDatasetLines are `vllm bench serve` command lines of vLLM's docs that use the
// datasets of vLLM's that need no download, as written there but for: vllm is vllmtop, the
// simulator is the server (--sim on its virtual clock, --host and --port dropped, the docs'
// model served under its name), and data paths are the fixtures of testdata/ (a hub id given
// as --dataset-path becomes a local export and --hf-name).
var vllmDocsDatasetLines = []struct {
	source, line string
	requests     string // the successful requests the line makes
	simModel     string // the model the simulated server loads, where its default would refuse the line
}{
	{vllmBenchDocs + "#custom-dataset", `vllm bench serve --save-result --save-detailed \
  --backend vllm \
  --model meta-llama/Llama-3.1-8B-Instruct \
  --endpoint /v1/completions \
  --dataset-name custom \
  --dataset-path testdata/vllm-custom-prompts.jsonl \
  --skip-chat-template \
  --num-prompts 80 \
  --max-concurrency 1`, "80", ""},
	{vllmBenchDocs + "#spec-bench-benchmark-with-speculative-decoding", `vllm bench serve \
    --model meta-llama/Meta-Llama-3-8B-Instruct \
    --dataset-name spec_bench \
    --dataset-path "testdata/vllm-spec-bench-questions.jsonl" \
    --num-prompts -1`, "5", ""},
	{vllmBenchDocs + "#spec-bench-benchmark-with-speculative-decoding", `vllm bench serve \
    --model meta-llama/Meta-Llama-3-8B-Instruct \
    --dataset-name spec_bench \
    --dataset-path "testdata/vllm-spec-bench-questions.jsonl" \
    --num-prompts -1 \
    --spec-bench-category "summarization"`, "1", ""},
	{vllmBenchDocs + "#other-huggingfacedataset-examples", `vllm bench serve \
  --backend openai-chat \
  --model Qwen/Qwen2-VL-7B-Instruct \
  --endpoint /v1/chat/completions \
  --dataset-name hf \
  --dataset-path testdata/vllm-hf-sharegpt-vicuna.json --hf-name Aeala/ShareGPT_Vicuna_unfiltered \
  --hf-split train \
  --num-prompts 10`, "10", ""},
	{vllmBenchDocs + "#other-huggingfacedataset-examples", `vllm bench serve \
    --model Qwen/QwQ-32B \
    --dataset-name hf \
    --dataset-path testdata/vllm-hf-mt-bench.jsonl --hf-name philschmid/mt-bench \
    --num-prompts 80`, "80", ""},
	{vllmBenchDocs + "#other-huggingfacedataset-examples", `vllm bench serve \
    --model NousResearch/Hermes-3-Llama-3.1-8B \
    --dataset-name hf \
    --dataset-path testdata/vllm-hf-gsm8k.jsonl --hf-name openai/gsm8k \
    --num-prompts 80`, "80", ""},
	{vllmBenchDocs + "#prefix-repetition-dataset", `vllm bench serve \
  --backend openai \
  --model meta-llama/Llama-2-7b-chat-hf \
  --dataset-name prefix_repetition \
  --num-prompts 100 \
  --prefix-repetition-prefix-len 512 \
  --prefix-repetition-suffix-len 128 \
  --prefix-repetition-num-prefixes 5 \
  --prefix-repetition-output-len 128`, "100", ""},
	{vllmBenchDocs + "#running-moonshotai-traces", `vllm bench serve --model Qwen/Qwen3.5-2B \
--dataset-name=timed_trace --num-prompts 100 \
--dataset-path testdata/vllm-timed-trace.jsonl \
--ignore-eos  --self-timed --timed-trace-chunk-hash-size 512 \
--timed-trace-sec-multiplier 0.001`, "4", ""},
	{vllmBenchDocs + "#synthetic-random-images-random-mm", `vllm bench serve \
  --backend openai-chat \
  --model Qwen/Qwen2.5-VL-3B-Instruct \
  --endpoint /v1/chat/completions \
  --dataset-name random-mm \
  --num-prompts 100 \
  --max-concurrency 10 \
  --random-prefix-len 25 \
  --random-input-len 300 \
  --random-output-len 40 \
  --random-range-ratio 0.2 \
  --random-mm-base-items-per-request 2 \
  --random-mm-limit-mm-per-prompt '{"image": 3, "video": 0}' \
  --random-mm-bucket-config '{(224, 224, 1): 1.0}' \
  --request-rate inf \
  --ignore-eos \
  --seed 42`, "100", "Qwen/Qwen2.5-VL-3B-Instruct"},
}

// shellWords splits a command line as a POSIX shell does for these lines: blanks, single and
// double quotes, backslash-newline continuations.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	line = strings.ReplaceAll(line, "\\\n", " ")
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.Zero(t, quote, "unclosed quote in %q", line)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func TestVLLMDocsDatasetLines(t *testing.T) {
	benchNoKeys(t)
	for _, c := range vllmDocsDatasetLines {
		words := shellWords(t, c.line)
		require.Equal(t, []string{"vllm", "bench", "serve"}, words[:3], c.source)
		args, model := words[3:], ""
		for i, w := range args {
			if w == "--model" {
				model = args[i+1]
			}
		}
		args = append(args, "--result-dir", t.TempDir(), "--sim", "--sim-clock", "virtual", "--")
		if c.simModel != "" {
			// A model the page's requests need, before --served-model-name takes its names
			// (nargs="+", as in vLLM).
			args = append(args, c.simModel, "--max-model-len", "4096")
		}
		args = append(args, "--served-model-name", model)
		code, out, errOut := benchRun(t, args...)
		require.Equal(t, 0, code, "%s\n%s\n%s", c.source, c.line, errOut)
		assert.Equal(t, c.requests, benchTableValue(t, out, "Successful requests:"), c.line)
		assert.Equal(t, "0", benchFailed(out), c.line)
	}
}

// benchFailed is the table's failed requests, "0" when it has no such row.
func benchFailed(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); strings.HasPrefix(l, "Failed requests:") && len(f) == 3 {
			return f[2]
		}
	}
	return "0"
}
