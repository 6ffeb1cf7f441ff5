package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchVirtual is the simulator on its virtual clock: a run takes milliseconds.
var benchVirtual = []string{"--sim", "--sim-clock", "virtual"}

func testdataPath(name string) string { return filepath.Join("testdata", name) }

// Each of vLLM's datasets, end to end against the simulator: the requests sent and the
// tokens asked for are what vLLM's definition of the dataset gives.
func TestBenchVLLMDatasets(t *testing.T) {
	benchNoKeys(t)
	chat := []string{"--backend", "openai-chat", "--endpoint", "/v1/chat/completions"}
	for _, c := range []struct {
		name                 string
		args                 []string
		requests, in, output string // "" for a count not checked
	}{
		{"custom, the file's output_tokens", []string{"--dataset-name", "custom", "--dataset-path", testdataPath("vllm-custom-prompts.jsonl"),
			"--skip-chat-template", "--custom-output-len", "-1", "--num-prompts", "3", "--disable-shuffle"}, "3", "", "27"},
		{"custom, --no-oversample", []string{"--dataset-name", "custom", "--dataset-path", testdataPath("vllm-custom-prompts.jsonl"),
			"--no-oversample", "--custom-output-len", "4"}, "3", "", "12"},
		{"spec_bench, one category", []string{"--dataset-name", "spec_bench", "--dataset-path", testdataPath("vllm-spec-bench-questions.jsonl"),
			"--spec-bench-category", "writing", "--spec-bench-output-len", "8", "--num-prompts", "4"}, "4", "", "32"},
		{"spec_bench, every question", []string{"--dataset-name", "spec_bench", "--dataset-path", testdataPath("vllm-spec-bench-questions.jsonl"),
			"--num-prompts", "-1", "--spec-bench-output-len", "2"}, "5", "", "10"},
		{"sonnet", []string{"--dataset-name", "sonnet", "--dataset-path", testdataPath("vllm-sonnet-lines.txt"), "--num-prompts", "4",
			"--sonnet-input-len", "120", "--sonnet-prefix-len", "50", "--sonnet-output-len", "7"}, "4", "", "28"},
		{"prefix_repetition", []string{"--dataset-name", "prefix_repetition", "--num-prompts", "6", "--prefix-repetition-num-prefixes", "2",
			"--prefix-repetition-prefix-len", "32", "--prefix-repetition-suffix-len", "16", "--prefix-repetition-output-len", "5"}, "6", "288", "30"},
		// --output-len sets every dataset's output length but sonnet's, as vllm bench serve maps it.
		{"--output-len and --input-len leave sonnet's", []string{"--dataset-name", "sonnet", "--dataset-path", testdataPath("vllm-sonnet-lines.txt"), "--num-prompts", "4",
			"--sonnet-input-len", "120", "--sonnet-prefix-len", "50", "--sonnet-output-len", "7", "--output-len", "3", "--input-len", "300"}, "4", "", "28"},
		{"--output-len reaches prefix_repetition", []string{"--dataset-name", "prefix_repetition", "--num-prompts", "6",
			"--prefix-repetition-num-prefixes", "2", "--prefix-repetition-prefix-len", "32", "--prefix-repetition-suffix-len", "16",
			"--output-len", "3"}, "6", "288", "18"},
		{"--output-len reaches custom", []string{"--dataset-name", "custom", "--dataset-path", testdataPath("vllm-custom-prompts.jsonl"),
			"--no-oversample", "--output-len", "2"}, "3", "", "6"},
		{"--output-len reaches spec_bench", []string{"--dataset-name", "spec_bench", "--dataset-path", testdataPath("vllm-spec-bench-questions.jsonl"),
			"--num-prompts", "4", "--output-len", "5"}, "4", "", "20"},
		{"random-mm", append(chat, "--dataset-name", "random-mm", "--num-prompts", "3", "--random-input-len", "40", "--random-output-len", "4",
			// Images go to a model with a vision tower (a text-only one answers 400, as vLLM's
			// does); the simulator does not count their tokens in the prompt, so those are not checked.
			"--random-mm-bucket-config", "{(64, 64, 1): 1.0}", "--random-mm-base-items-per-request", "2",
			"--", "google/gemma-3-4b-it", "--max-model-len", "4096"), "3", "", "12"},
		{"hf mt-bench", []string{"--dataset-name", "hf", "--dataset-path", testdataPath("vllm-hf-mt-bench.jsonl"), "--hf-name", "philschmid/mt-bench",
			"--num-prompts", "4", "--hf-output-len", "6"}, "4", "", "24"},
		{"hf gsm8k, its 256 output tokens", []string{"--dataset-name", "hf", "--dataset-path", testdataPath("vllm-hf-gsm8k.jsonl"), "--hf-name", "openai/gsm8k",
			"--num-prompts", "2", "--no-oversample"}, "2", "", "512"},
		{"hf ShareGPT_Vicuna on chat", append(chat, "--dataset-name", "hf", "--dataset-path", testdataPath("vllm-hf-sharegpt-vicuna.json"),
			"--hf-name", "Aeala/ShareGPT_Vicuna_unfiltered", "--hf-split", "train", "--num-prompts", "10", "--no-oversample"), "2", "", "52"},
		{"hf mlperf, system and user messages", append(chat, "--dataset-name", "hf", "--dataset-path", testdataPath("vllm-hf-mlperf.jsonl"),
			"--hf-name", "mgoin/mlperf-inference-llama3.1-data", "--num-prompts", "2", "--no-oversample"), "2", "", "30"},
		{"timed_trace at the request rate", []string{"--dataset-name", "timed_trace", "--dataset-path", testdataPath("vllm-timed-trace.jsonl"),
			"--timed-trace-sec-multiplier", "0.001"}, "4", "122", "18"},
		{"timed_trace, --self-timed, first 3 lines", []string{"--dataset-name", "timed_trace", "--dataset-path", testdataPath("vllm-timed-trace.jsonl"),
			"--timed-trace-sec-multiplier", "0.001", "--self-timed", "--num-prompts", "3"}, "3", "92", "12"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := benchRun(t, append(append(benchVirtual, "--ignore-eos"), c.args...)...)
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, c.requests, benchTableValue(t, out, "Successful requests:"))
			if c.in != "" {
				assert.Equal(t, c.in, benchTableValue(t, out, "Total input tokens:"))
			}
			assert.Equal(t, c.output, benchTableValue(t, out, "Total generated tokens:"))
		})
	}
}

// A dataset or dataset flag of vLLM's that cannot apply says so in a line and exits 2.
func TestBenchVLLMDatasetsRefused(t *testing.T) {
	benchNoKeys(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dataset-name", "hf", "--dataset-path", "philschmid/mt-bench"}, "not a local file"},
		{[]string{"--dataset-name", "hf", "--dataset-path", testdataPath("vllm-hf-mt-bench.jsonl"), "--hf-name", "lmarena-ai/VisionArena-Chat"}, "images, audio, tools"},
		{[]string{"--dataset-name", "random-mm"}, "--backend openai-chat"},
		{[]string{"--dataset-name", "random-mm", "--backend", "openai-chat", "--random-mm-bucket-config", "{(720, 1280, 16): 1.0}"}, "video buckets"},
		{[]string{"--dataset-name", "random-mm", "--random-mm-bucket-config", "256x256"}, "--random-mm-bucket-config"},
		{[]string{"--dataset-name", "speed_bench"}, "downloads SPEED-Bench"},
		{[]string{"--dataset-name", "random-rerank"}, "reranker"},
		{[]string{"--dataset-name", "custom_image", "--dataset-path", testdataPath("vllm-custom-prompts.jsonl")}, "custom_image"},
		{[]string{"--random-batch-size", "4"}, "--random-batch-size 4"},
		{[]string{"--self-timed"}, "--self-timed sends a timed_trace"},
		{[]string{"--dataset-name", "timed_trace", "--dataset-path", testdataPath("vllm-timed-trace.jsonl"), "--trace-block-size", "16"}, "--timed-trace-chunk-hash-size"},
		{[]string{"--dataset-name", "timed_trace", "--dataset-path", testdataPath("vllm-timed-trace.jsonl"), "--timed-trace-label-input-length", "isl"}, `no "isl" field`},
		{[]string{"--dataset-name", "custom", "--dataset-path", testdataPath("vllm-hf-sharegpt-vicuna.json")}, "JSONL only"},
		{[]string{"--dataset-name", "prefix_repetition", "--num-prompts", "3"}, "must be at least --prefix-repetition-num-prefixes"},
	} {
		code, out, errOut := benchRun(t, append(benchVirtual, c.args...)...)
		assert.Equal(t, 2, code, "%v: %s", c.args, errOut)
		assert.Empty(t, out, "%v", c.args)
		line := benchErrorLine(t, errOut)
		assert.Contains(t, line, c.want, "%v", c.args)
		assert.False(t, strings.Contains(line, "panic"), line)
	}
}
