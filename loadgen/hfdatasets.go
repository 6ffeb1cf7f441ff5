package loadgen

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
)

// HFConfig is --hf-name, --hf-subset, --hf-split and --hf-output-len (0: the dataset's own).
type HFConfig struct {
	Name, Subset, Split string
	OutputLen           int
}

// hfText is how one of vLLM's Hugging Face text datasets makes a request of a row.
type hfText struct {
	prompt func(dataRow) (text string, msgs []ChatMessage)
	answer string // the column whose length is the output length; "" for defaultOut
	// defaultOut is the output length without --hf-output-len when there is no answer column.
	defaultOut int
	templated  bool // vLLM applies the chat template on the client
	// filter drops rows as vLLM's is_valid_sequence does: always, or only without
	// --hf-output-len; maxPrompt and maxTotal are its bounds.
	filterAlways, filterDynamic bool
	maxPrompt, maxTotal         int
}

func column(key string) func(dataRow) (string, []ChatMessage) {
	return func(r dataRow) (string, []ChatMessage) { return r.str(key), nil }
}

func conversationTurn(i int) func(dataRow) string {
	return func(r dataRow) string {
		c, _ := r["conversations"].([]any)
		if len(c) < 2 {
			return ""
		}
		m, _ := c[i].(map[string]any)
		s, _ := m["value"].(string)
		return s
	}
}

var aimo = hfText{prompt: column("problem"), answer: "solution", filterDynamic: true, maxPrompt: 2048, maxTotal: 32000}
var mlperf = hfText{prompt: func(r dataRow) (string, []ChatMessage) {
	sys, q := r.str("system_prompt"), r.str("question")
	return sys + "\n\n" + q, []ChatMessage{{Role: "system", Content: sys}, {Role: "user", Content: q}}
}, answer: "output", templated: true, filterAlways: true, maxPrompt: 1024, maxTotal: 2048}

// hfTextDatasets are vLLM's text datasets of --dataset-name hf, by hub id, with their columns
// (vllm/benchmarks/datasets/datasets.py).
var hfTextDatasets = map[string]hfText{
	"Aeala/ShareGPT_Vicuna_unfiltered": {prompt: func(r dataRow) (string, []ChatMessage) { return conversationTurn(0)(r), nil },
		answer: "conversations", filterDynamic: true, maxPrompt: 1024, maxTotal: 2048},
	"likaixin/InstructCoder": {prompt: func(r dataRow) (string, []ChatMessage) {
		return r.str("input") + "\n\n" + r.str("instruction") + " Just output the code, do not include any explanation.", nil
	}, defaultOut: 200, templated: true},
	"philschmid/mt-bench":                  {prompt: func(r dataRow) (string, []ChatMessage) { return r.first("turns"), nil }, defaultOut: 256, templated: true},
	"openai/openai_humaneval":              {prompt: column("prompt"), defaultOut: 256, templated: true},
	"openai/gsm8k":                         {prompt: column("question"), defaultOut: 256, templated: true},
	"AI-MO/aimo-validation-aime":           aimo,
	"AI-MO/NuminaMath-1.5":                 aimo,
	"AI-MO/NuminaMath-CoT":                 aimo,
	"mgoin/mlperf-inference-llama2-data":   mlperf,
	"mgoin/mlperf-inference-llama3.1-data": mlperf,
}

// hfRefused are vLLM's other hf datasets: images, video, audio, tool schemas or a prompt
// template of their own, which this build does not send.
var hfRefused = []string{"lmarena-ai/VisionArena-Chat", "lmarena-ai/vision-arena-bench-v0.1", "yale-nlp/MMVU",
	"lmms-lab/LLaVA-OneVision-Data", "Lin-Chen/MMStar", "openslr/librispeech_asr", "facebook/voxpopuli", "LIUM/tedlium",
	"edinburghcstr/ami", "speechcolab/gigaspeech", "kensho/spgispeech", "ArtificialAnalysis/Earnings22-Cleaned-AA",
	"D4nt3/esb-datasets-earnings22-validation-tiny-filtered", "gorilla-llm/Berkeley-Function-Calling-Leaderboard",
	"zed-industries/zeta", "vdaita/edit_5k_char", "vdaita/edit_10k_char"}

// hfSpec finds the dataset of --hf-name (or a hub id given as --dataset-path) and checks that
// the path is a local file: nothing is downloaded.
func hfSpec(path string, cfg HFConfig) (hfText, string, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return hfText{}, "", fmt.Errorf("--dataset-path %s: not a local file; --dataset-name hf reads a local JSON or JSONL export (name its hub id with --hf-name) and downloads nothing", path)
		}
		return hfText{}, "", fmt.Errorf("--dataset-path: %w", err)
	}
	name := cfg.Name
	if name == "" {
		return hfText{}, "", fmt.Errorf("--dataset-name hf with a local --dataset-path needs --hf-name, the dataset's hub id (one of %s)", hfKnown())
	}
	if spec, ok := hfTextDatasets[name]; ok {
		return spec, name, nil
	}
	if slices.Contains(hfRefused, name) {
		return hfText{}, "", fmt.Errorf("--hf-name %s: its requests need images, audio, tools or a prompt template this build does not send (text datasets: %s)", name, hfKnown())
	}
	return hfText{}, "", fmt.Errorf("--hf-name %q is not one of vLLM's hf datasets; the text ones are %s", name, hfKnown())
}

func hfKnown() string {
	var names []string
	for n := range hfTextDatasets {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// loadHF reads a local export of one of vLLM's Hugging Face text datasets.
func loadHF(path string, cfg ExtraConfig, seed int64) (*promptList, error) {
	spec, name, err := hfSpec(path, cfg.HF)
	if err != nil {
		return nil, err
	}
	recs, err := readRecords(path)
	if err != nil {
		return nil, err
	}
	var items []Prompt
	for _, r := range recs {
		if p, ok := spec.request(r, cfg.HF.OutputLen); ok {
			items = append(items, p)
		}
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no row of %s has the columns vLLM reads, within its length bounds", path, name)
	}
	return newList("hf "+name, path, items, cfg, seed, spec.templated)
}

// request makes a row's request; ok is false for a row vLLM skips.
func (s hfText) request(r dataRow, outputLen int) (Prompt, bool) {
	text, msgs := s.prompt(r)
	if text == "" {
		return Prompt{}, false
	}
	in, out := estimateTokens(text), s.defaultOut
	if s.answer == "conversations" {
		a := conversationTurn(1)(r)
		if a == "" {
			return Prompt{}, false
		}
		out = estimateTokens(a)
	} else if s.answer != "" {
		out = estimateTokens(r.str(s.answer))
	}
	dynamic := outputLen <= 0
	if !dynamic {
		out = outputLen
	}
	if (s.filterAlways || s.filterDynamic && dynamic) && (in < 4 || out < 4 || in > s.maxPrompt || in+out > s.maxTotal) {
		return Prompt{}, false
	}
	return Prompt{Text: text, InputTokens: in, OutputTokens: out, Messages: msgs}, true
}
