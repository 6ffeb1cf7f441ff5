package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/simtest"
	"github.com/vllmtop/vllmtop/internal/app/sweepcli"
)

// Where vLLM's own documentation writes its `vllm bench serve` command lines (the published
// pages of docs/benchmarking/ and docs/contributing/ in vLLM's repository).
const (
	docCLI        = "https://docs.vllm.ai/en/latest/benchmarking/cli/"
	docContrib    = "https://docs.vllm.ai/en/latest/contributing/benchmarks/"
	docProfile    = "https://docs.vllm.ai/en/latest/contributing/profiling/"
	docSweepsPage = "https://docs.vllm.ai/en/latest/benchmarking/sweeps/"
	docSkillRnd   = "https://skills.sh/vllm-project/vllm-skills/vllm-bench-random-synthetic"
)

// vllmDocsBenchLines are command lines from vLLM's documentation, copied as written (the
// shell's line continuations joined), with vllm spelled vllmtop (`vllmtop bench serve` is
// `vllmtop bench`). want is "run" (runs to its
// end), "refuse" (a backend vllmtop does not run: exit 2, one line saying why) or
// "skip-until-dataset NAME" (a dataset vllmtop does not read yet).
var vllmDocsBenchLines = []struct{ source, line, want string }{
	{docCLI, `vllmtop bench serve --backend vllm --model NousResearch/Hermes-3-Llama-3.1-8B --endpoint /v1/completions --dataset-name sharegpt --dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json --num-prompts 10`, "run"},
	{docContrib, `vllmtop bench serve --backend vllm --model NousResearch/Hermes-3-Llama-3.1-8B --endpoint /v1/completions --dataset-name sharegpt --dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json --top-k 10 --top-p 0.9 --temperature 0.5 --num-prompts 10`, "run"},
	{docCLI, `vllmtop bench serve --backend openai-chat --model Qwen/Qwen2.5-VL-7B-Instruct --dataset-name sharegpt --dataset-path /path/to/ShareGPT4V/sharegpt4v_instruct_gpt4-vision_cap100k.json --num-prompts 100 --save-result --result-dir ~/vllm_benchmark_results --save-detailed --endpoint /v1/chat/completions`, "run"},
	{docCLI, `vllmtop bench serve --backend openai-chat --model Qwen/Qwen2.5-VL-7B-Instruct --dataset-name sharegpt --dataset-path /path/to/ShareGPT4Video/llava_v1_5_mix665k_with_video_chatgpt72k_share4video28k.json --num-prompts 100 --save-result --result-dir ~/vllm_benchmark_results --save-detailed --endpoint /v1/chat/completions`, "run"},
	{docProfile, `vllmtop bench serve --backend vllm --model meta-llama/Meta-Llama-3-70B --dataset-name sharegpt --dataset-path sharegpt.json --profile --num-prompts 2`, "run"},
	{docProfile, `vllmtop bench serve --backend vllm --model meta-llama/Llama-3.1-8B-Instruct --num-prompts 1 --dataset-name random --random-input 1024 --random-output 512`, "run"},
	{docSweepsPage, `vllmtop bench serve --model meta-llama/Llama-2-7b-chat-hf --backend vllm --endpoint /v1/completions --dataset-name sharegpt --dataset-path benchmarks/ShareGPT_V3_unfiltered_cleaned_split.json`, "run"},
	{docSkillRnd, `vllmtop bench serve --backend openai-chat --model Qwen/Qwen2.5-1.5B-Instruct --endpoint /v1/chat/completions --dataset-name random --num-prompts 10`, "run"},
	{docCLI, `vllmtop bench serve --model jinaai/jina-embeddings-v3 --backend openai-embeddings --endpoint /v1/embeddings --dataset-name sharegpt --dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json`, "run"},
	{docCLI, `vllmtop bench serve --model openai/clip-vit-base-patch32 --backend openai-embeddings-clip --endpoint /v1/embeddings --dataset-name sharegpt --dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json`, "refuse"},
	{docCLI, `vllmtop bench serve --model openai/clip-vit-base-patch32 --backend openai-embeddings-clip --endpoint /v1/embeddings --dataset-name hf --dataset-path lmarena-ai/VisionArena-Chat`, "refuse"},
	{docCLI, `vllmtop bench serve --model TIGER-Lab/VLM2Vec-Full --backend openai-embeddings-vlm2vec --endpoint /v1/embeddings --dataset-name sharegpt --dataset-path <your data path>/ShareGPT_V3_unfiltered_cleaned_split.json`, "refuse"},
	{docCLI, `vllmtop bench serve --model TIGER-Lab/VLM2Vec-Full --backend openai-embeddings-vlm2vec --endpoint /v1/embeddings --dataset-name hf --dataset-path lmarena-ai/VisionArena-Chat`, "refuse"},
	{docCLI, `vllmtop bench serve --model BAAI/bge-reranker-v2-m3 --backend vllm-rerank --endpoint /v1/rerank --dataset-name random-rerank --tokenizer BAAI/bge-reranker-v2-m3 --random-input-len 512 --num-prompts 10 --random-batch-size 5`, "refuse"},
	{docCLI, `vllmtop bench serve --port 9001 --save-result --save-detailed --backend vllm --model meta-llama/Llama-3.1-8B-Instruct --endpoint /v1/completions --dataset-name custom --dataset-path <path-to-your-data-jsonl> --custom-skip-chat-template --num-prompts 80 --max-concurrency 1 --temperature=0.3 --top-p=0.75 --result-dir "./log/"`, "run"},
	{docCLI, `vllmtop bench serve --backend openai-chat --model Qwen/Qwen2-VL-7B-Instruct --endpoint /v1/chat/completions --dataset-name hf --dataset-path lmarena-ai/VisionArena-Chat --hf-split train --num-prompts 1000`, "refuse"},
	{docCLI, `vllmtop bench serve --model meta-llama/Meta-Llama-3-8B-Instruct --dataset-name hf --dataset-path likaixin/InstructCoder --num-prompts 2048`, "skip-until-dataset hf (no local export of InstructCoder here)"},
	{docCLI, `vllmtop bench serve --model meta-llama/Meta-Llama-3-8B-Instruct --dataset-name spec_bench --dataset-path "<YOUR_DOWNLOADED_PATH>/data/spec_bench/question.jsonl" --num-prompts -1`, "run"},
	{docCLI, `vllmtop bench serve --model meta-llama/Meta-Llama-3-8B-Instruct --dataset-name spec_bench --dataset-path "<YOUR_DOWNLOADED_PATH>/data/spec_bench/question.jsonl" --num-prompts -1 --spec-bench-category "summarization"`, "run"},
	{docCLI, `vllmtop bench serve --backend openai-chat --model Qwen/Qwen2-VL-7B-Instruct --endpoint /v1/chat/completions --dataset-name hf --dataset-path lmms-lab/LLaVA-OneVision-Data --hf-split train --hf-subset "chart2text(cauldron)" --num-prompts 10`, "refuse"},
	{docCLI, `vllmtop bench serve --backend openai-chat --model Qwen/Qwen2-VL-7B-Instruct --endpoint /v1/chat/completions --dataset-name hf --dataset-path Aeala/ShareGPT_Vicuna_unfiltered --hf-split train --num-prompts 10`, "run"},
	{docCLI, `vllmtop bench serve --model Qwen/QwQ-32B --dataset-name hf --dataset-path AI-MO/aimo-validation-aime --num-prompts 10 --seed 42`, "skip-until-dataset hf (no local export of AIMO here)"},
	{docCLI, `vllmtop bench serve --model Qwen/QwQ-32B --dataset-name hf --dataset-path philschmid/mt-bench --num-prompts 80`, "run"},
	{docCLI, `vllmtop bench serve --model Qwen/QwQ-32B --dataset-name hf --dataset-path vdaita/edit_5k_char --num-prompts 90 --blazedit-min-distance 0.01 --blazedit-max-distance 0.99`, "refuse"},
	{docCLI, `vllmtop bench serve --backend openai --model meta-llama/Llama-2-7b-chat-hf --dataset-name prefix_repetition --num-prompts 100 --prefix-repetition-prefix-len 512 --prefix-repetition-suffix-len 128 --prefix-repetition-num-prefixes 5 --prefix-repetition-output-len 128`, "run"},
	{docCLI, `vllmtop bench serve --backend openai-chat --model Qwen/Qwen2.5-VL-3B-Instruct --endpoint /v1/chat/completions --dataset-name random-mm --num-prompts 100 --max-concurrency 10 --random-prefix-len 25 --random-input-len 300 --random-output-len 40 --random-range-ratio 0.2 --random-mm-base-items-per-request 2 --random-mm-limit-mm-per-prompt '{"image": 3, "video": 0}' --random-mm-bucket-config '{(224, 224, 1): 1.0}' --request-rate inf --ignore-eos --seed 42`, "run"},
}

// docsShareGPT writes a small ShareGPT file for the lines that name one.
func docsShareGPT(t *testing.T) string {
	var convs []map[string]any
	for i := range 12 {
		convs = append(convs, map[string]any{"id": strconv.Itoa(i), "conversations": []map[string]string{
			{"from": "human", "value": fmt.Sprintf("Question %d: how do tides work near the coast?", i)},
			{"from": "gpt", "value": strings.Repeat("The moon pulls the water and the coast shapes it. ", 3)}}})
	}
	b, err := json.Marshal(convs)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "sharegpt.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// docsHFExports are the local exports of the Hugging Face datasets the lines name.
var docsHFExports = map[string]string{
	"Aeala/ShareGPT_Vicuna_unfiltered": "testdata/vllm-hf-sharegpt-vicuna.json",
	"philschmid/mt-bench":              "testdata/vllm-hf-mt-bench.jsonl",
}

// docsDataset is the local file that stands for a line's --dataset-path.
func docsDataset(t *testing.T, args []string, path, sharegpt string) string {
	name := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--dataset-name" {
			name = args[i+1]
		}
	}
	switch name {
	case "custom":
		return "testdata/vllm-custom-prompts.jsonl"
	case "spec_bench":
		return "testdata/vllm-spec-bench-questions.jsonl"
	case "hf":
		if local, ok := docsHFExports[path]; ok {
			return local
		}
		return path // a hub id: refused, nothing downloaded
	}
	return sharegpt
}

// docsArgs points a documented line at the simulator: files in a temporary directory, at most
// 8 prompts, the server at url.
func docsArgs(t *testing.T, line, sharegpt, url string) []string {
	words, err := sweepcli.SplitCommand(strings.ReplaceAll(line, "<your data path>/", ""))
	require.NoError(t, err)
	require.Equal(t, []string{"vllmtop", "bench", "serve"}, words[:3])
	args, prompts := words[2:], false // "serve" stays: vllmtop bench takes vLLM's subcommand
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--dataset-path":
			hub := args[i+1]
			args[i+1] = docsDataset(t, args, hub, sharegpt)
			if local, ok := docsHFExports[hub]; ok && args[i+1] == local {
				args = append(args, "--hf-name", hub) // the hub id names the local export's format
			}
		case "--result-dir":
			args[i+1] = t.TempDir()
		case "--num-prompts":
			prompts = true
			if n, _ := strconv.Atoi(args[i+1]); n > 8 {
				args[i+1] = "8"
			}
		}
	}
	if !prompts {
		args = append(args, "--num-prompts", "8")
	}
	return append(args, "--base-url", url)
}

func TestVLLMDocsBenchServeLines(t *testing.T) {
	benchNoKeys(t)
	sharegpt := docsShareGPT(t)
	for i, c := range vllmDocsBenchLines {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			if name, ok := strings.CutPrefix(c.want, "skip-until-dataset "); ok {
				t.Skipf("needs the %s dataset (%s)", name, c.source)
			}
			model := docsModel(t, c.line)
			url := "http://127.0.0.1:1" // a refused line never reaches a server
			if c.want == "run" {
				simArgs := []string{"Qwen/Qwen2.5-0.5B-Instruct", "--served-model-name", model}
				if strings.Contains(c.line, "--backend openai-embeddings ") {
					simArgs = append(simArgs, "--runner", "pooling") // an embedding model's server
				}
				if strings.Contains(c.line, "--dataset-name random-mm ") {
					simArgs = []string{model, "--max-model-len", "8192"} // images need a model with a vision encoder
				}
				url = simtest.StartVirtual(t, simArgs...)
			}
			code, out, errOut := benchRun(t, docsArgs(t, c.line, sharegpt, url)...)
			if c.want == "refuse" {
				assert.Equal(t, 2, code, "%s\n%s", c.source, errOut)
				assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
				assert.Regexp(t, `--backend |unknown flag: --random-batch-size|--dataset-name hf|multimodal|image`, errOut, "the backend's or the dataset's reason")
				return
			}
			require.Equal(t, 0, code, "%s: %s\n%s", c.source, c.line, errOut)
			assert.Contains(t, out, "Serving Benchmark Result")
			assert.Equal(t, "0", benchTableValue(t, out, "Failed requests:"), errOut)
		})
	}
}

// docsModel is the line's --model.
func docsModel(t *testing.T, line string) string {
	words := strings.Fields(line)
	for i, w := range words {
		if w == "--model" && i+1 < len(words) {
			return words[i+1]
		}
	}
	t.Fatalf("no --model in %s", line)
	return ""
}
