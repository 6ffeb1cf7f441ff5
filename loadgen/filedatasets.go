package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
)

// dataRow is one object of a JSON or JSONL dataset file.
type dataRow map[string]any

// readRecords reads a JSON list of objects, or JSONL (one object a line, blank lines skipped).
func readRecords(path string) ([]dataRow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--dataset-path: %w", err)
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var recs []dataRow
		if err := json.Unmarshal(data, &recs); err != nil {
			return nil, fmt.Errorf("%s: want a JSON list of objects: %s", path, jsonShape(err))
		}
		return recs, nil
	}
	var recs []dataRow
	for i, line := range bytes.Split(data, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		var r dataRow
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("%s:%d: want one JSON object a line: %v", path, i+1, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// str is a dataRow's string field ("" when absent or not a string).
func (r dataRow) str(key string) string {
	s, _ := r[key].(string)
	return s
}

// first is the first element of a dataRow's list field as a string.
func (r dataRow) first(key string) string {
	if l, ok := r[key].([]any); ok && len(l) > 0 {
		s, _ := l[0].(string)
		return s
	}
	return ""
}

// loadCustom reads vLLM's custom dataset: JSONL lines with "prompt" and, for
// --custom-output-len -1, "output_tokens".
func loadCustom(path string, cfg ExtraConfig, seed int64) (*promptList, error) {
	if !strings.HasSuffix(path, ".jsonl") {
		return nil, fmt.Errorf("--dataset-name custom reads JSONL only (a .jsonl file), as vLLM does: %s", path)
	}
	recs, err := readRecords(path)
	if err != nil {
		return nil, err
	}
	var items []Prompt
	for i, r := range recs {
		p, ok := r["prompt"].(string)
		if !ok {
			return nil, fmt.Errorf("%s: line %d has no string \"prompt\"", path, i+1)
		}
		out := cfg.CustomOutputLen
		if out < 1 && out != -1 {
			return nil, fmt.Errorf("--custom-output-len must be positive, or -1 for each line's \"output_tokens\"")
		}
		if out == -1 {
			n, ok := r["output_tokens"].(float64)
			if !ok || n < 1 || n != math.Trunc(n) {
				return nil, fmt.Errorf("%s: line %d: --custom-output-len -1 takes each line's \"output_tokens\", a positive integer", path, i+1)
			}
			out = int(n)
		}
		items = append(items, Prompt{Text: p, InputTokens: estimateTokens(p), OutputTokens: out})
	}
	return newList("custom", path, items, cfg, seed, true)
}

// loadSpecBench reads Spec-Bench's question.jsonl: the first of each line's "turns", the
// lines of --spec-bench-category only when given.
func loadSpecBench(path string, cfg ExtraConfig, seed int64) (*promptList, error) {
	recs, err := readRecords(path)
	if err != nil {
		return nil, err
	}
	var items []Prompt
	for i, r := range recs {
		if _, ok := r["turns"]; !ok {
			return nil, fmt.Errorf("%s: line %d has no \"turns\" (a Spec-Bench question.jsonl line)", path, i+1)
		}
		if cfg.SpecBenchCategory != "" && r.str("category") != cfg.SpecBenchCategory {
			continue
		}
		if p := r.first("turns"); p != "" {
			items = append(items, Prompt{Text: p, InputTokens: estimateTokens(p), OutputTokens: cfg.SpecBenchOutputLen})
		}
	}
	return newList("spec_bench", path, items, cfg, seed, true)
}

// newList samples a file's prompts (see sampleList), refusing an empty file.
func newList(name, path string, items []Prompt, cfg ExtraConfig, seed int64, templated bool) (*promptList, error) {
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no prompt to send (--dataset-name %s)", path, name)
	}
	if cfg.NumPrompts == 0 && cfg.NoOversample {
		cfg.NumPrompts = len(items)
	}
	return &promptList{name: name, prompts: sampleList(items, cfg.NumPrompts, seed, cfg), templated: templated}, nil
}

// SonnetConfig is the sonnet dataset's --sonnet-input-len, -output-len and -prefix-len.
type SonnetConfig struct{ InputLen, OutputLen, PrefixLen int }

// sonnetBase is the instruction that starts every sonnet prompt (vLLM's SonnetDataset).
const sonnetBase = "Pick as many lines as you can from these poem lines:\n"

// loadSonnet builds sonnet prompts as vLLM does: the instruction, the file's first lines up to
// --sonnet-prefix-len tokens (shared by every prompt), then random lines up to
// --sonnet-input-len; a draw longer than that is drawn again.
func loadSonnet(path string, cfg ExtraConfig, seed int64) (*promptList, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--dataset-path: %w", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s: no line to build sonnet prompts from", path)
	}
	s := cfg.Sonnet
	total := 0
	for _, l := range lines {
		total += estimateTokens(l)
	}
	avg, base := float64(total)/float64(len(lines)), estimateTokens(sonnetBase)
	if s.InputLen <= base {
		return nil, fmt.Errorf("--sonnet-input-len %d must be higher than the instruction's length (%d tokens)", s.InputLen, base)
	}
	nIn := int(math.Round(float64(s.InputLen-base) / avg))
	nPrefix := min(max(int(math.Round(float64(s.PrefixLen-base)/avg)), 0), len(lines), nIn)
	prefix := sonnetBase + strings.Join(lines[:nPrefix], "")
	rng := rand.New(rand.NewPCG(uint64(seed), 0x50e7))
	n := cfg.NumPrompts
	if n <= 0 {
		n = 1000
	}
	var items []Prompt
	for tries := 0; len(items) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("%s: lines too long for --sonnet-input-len %d", path, s.InputLen)
		}
		var b strings.Builder
		b.WriteString(prefix)
		for range nIn - nPrefix {
			b.WriteString(lines[rng.IntN(len(lines))])
		}
		if in := estimateTokens(b.String()); in <= s.InputLen {
			items = append(items, Prompt{Text: b.String(), InputTokens: in, OutputTokens: s.OutputLen})
		}
	}
	return &promptList{name: "sonnet", prompts: items, templated: !cfg.Chat}, nil
}
