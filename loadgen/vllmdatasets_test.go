package loadgen

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noTokenize is a server without /tokenize: prompts use the estimated vocabulary.
type noTokenize struct{}

func (noTokenize) TokenStrings(context.Context, string) ([]string, error) { return nil, ErrNoTokenize }
func (noTokenize) PromptTokens(context.Context, string) (int, error)      { return 0, ErrNoTokenize }

func fixture(name string) string { return filepath.Join("..", "testdata", name) }

// openWorkload opens cfg and builds its workload without a tokenizer.
func openWorkload(t *testing.T, cfg DatasetConfig) (*Dataset, Workload, string) {
	t.Helper()
	d, err := OpenDataset(cfg)
	require.NoError(t, err)
	w, how, err := d.Workload(context.Background(), noTokenize{})
	require.NoError(t, err)
	require.NotNil(t, w)
	return d, w, how
}

func prompts(w Workload, n int) []Prompt {
	out := make([]Prompt, n)
	for i := range out {
		out[i] = w.Prompt(i)
	}
	return out
}

func TestCustomDataset(t *testing.T) {
	path := fixture("vllm-custom-prompts.jsonl")
	for _, c := range []struct {
		name      string
		x         ExtraConfig
		wantOut   []int
		wantFirst string // with DisableShuffle, the file's first prompt comes first
		available int
	}{
		{"the file's output_tokens", ExtraConfig{NumPrompts: 3, CustomOutputLen: -1, DisableShuffle: true}, []int{6, 9, 12}, "What is the capital of France?", 0},
		{"--custom-output-len overrides", ExtraConfig{NumPrompts: 5, CustomOutputLen: 256}, []int{256, 256, 256, 256, 256}, "", 0},
		{"--no-oversample keeps the file's 3", ExtraConfig{NumPrompts: 10, CustomOutputLen: 7, NoOversample: true}, []int{7, 7, 7}, "", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, w, how := openWorkload(t, DatasetConfig{Name: DatasetCustom, Path: path, Extra: c.x})
			got := prompts(w, len(c.wantOut))
			var outs []int
			for _, p := range got {
				outs = append(outs, p.OutputTokens)
				assert.Equal(t, estimateTokens(p.Text), p.InputTokens)
			}
			if c.x.DisableShuffle {
				assert.Equal(t, c.wantOut, outs)
				assert.True(t, strings.HasPrefix(got[0].Text, c.wantFirst), got[0].Text)
			} else {
				assert.ElementsMatch(t, c.wantOut, outs)
			}
			assert.Equal(t, c.available, d.Available())
			assert.Contains(t, how, "chat template")
		})
	}
	list, _ := loadCustom(path, ExtraConfig{NumPrompts: 8, CustomOutputLen: 1}, 0)
	assert.Equal(t, 8, list.Len(), "oversampled to --num-prompts")
	_, err := OpenDataset(DatasetConfig{Name: DatasetCustom, Path: fixture("vllm-hf-sharegpt-vicuna.json"), Extra: ExtraConfig{CustomOutputLen: 1}})
	assert.ErrorContains(t, err, "JSONL only")
	_, err = OpenDataset(DatasetConfig{Name: DatasetCustom, Path: fixture("vllm-spec-bench-questions.jsonl"), Extra: ExtraConfig{CustomOutputLen: 1}})
	assert.ErrorContains(t, err, `no string "prompt"`)
}

func TestSpecBenchDataset(t *testing.T) {
	_, w, _ := openWorkload(t, DatasetConfig{Name: DatasetSpecBench, Path: fixture("vllm-spec-bench-questions.jsonl"),
		Extra: ExtraConfig{NumPrompts: 4, SpecBenchOutputLen: 9, SpecBenchCategory: "writing"}})
	for _, p := range prompts(w, 4) {
		assert.Contains(t, []string{"Write a two line poem about a quiet harbour at dawn.", "Describe a lighthouse keeper's morning in three sentences."}, p.Text,
			"only the first turn of the writing questions")
		assert.Equal(t, 9, p.OutputTokens)
	}
	_, w, _ = openWorkload(t, DatasetConfig{Name: DatasetSpecBench, Path: fixture("vllm-spec-bench-questions.jsonl"), Extra: ExtraConfig{SpecBenchOutputLen: 256}})
	assert.Equal(t, 5, w.(*promptList).Len(), "every category, --num-prompts 0: the whole file")
}

func TestSonnetDataset(t *testing.T) {
	data, err := os.ReadFile(fixture("vllm-sonnet-lines.txt"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	_, w, _ := openWorkload(t, DatasetConfig{Name: DatasetSonnet, Path: fixture("vllm-sonnet-lines.txt"),
		Extra: ExtraConfig{NumPrompts: 5, Sonnet: SonnetConfig{InputLen: 120, OutputLen: 7, PrefixLen: 50}}})
	// The instruction is 14 tokens, a line 11 on average: (50-14)/11 rounds to 3 prefix lines,
	// (120-14)/11 to 10 lines in all.
	prefix := sonnetBase + strings.Join(lines[:3], "")
	for _, p := range prompts(w, 5) {
		assert.True(t, strings.HasPrefix(p.Text, prefix), "the first 3 lines are the shared prefix")
		assert.Equal(t, 1+10, strings.Count(p.Text, "\n"), "the instruction's line and 10 poem lines")
		assert.LessOrEqual(t, p.InputTokens, 120)
		assert.Equal(t, 7, p.OutputTokens)
	}
	_, err = OpenDataset(DatasetConfig{Name: DatasetSonnet, Path: fixture("vllm-sonnet-lines.txt"), Extra: ExtraConfig{Sonnet: SonnetConfig{InputLen: 10}}})
	assert.ErrorContains(t, err, "--sonnet-input-len 10 must be higher")
}

func TestPrefixRepetitionDataset(t *testing.T) {
	x := ExtraConfig{NumPrompts: 7, PrefixRepetition: PrefixRepetitionConfig{PrefixLen: 12, SuffixLen: 5, NumPrefixes: 3, OutputLen: 4}}
	_, w, _ := openWorkload(t, DatasetConfig{Name: DatasetPrefixRepetition, Extra: x})
	groups := map[string]int{}
	suffixes := map[string]bool{}
	for _, p := range prompts(w, 7) {
		words := strings.Fields(p.Text)
		require.Len(t, words, 17, "prefix + suffix tokens")
		assert.Equal(t, 12+5+EstimatedVocab().Overhead, p.InputTokens)
		assert.Equal(t, 4, p.OutputTokens)
		groups[strings.Join(words[:12], " ")]++
		suffixes[strings.Join(words[12:], " ")] = true
	}
	counts := []int{}
	for _, n := range groups {
		counts = append(counts, n)
	}
	assert.ElementsMatch(t, []int{3, 2, 2}, counts, "7 prompts over 3 prefixes: 7/3 each, the first 7%3 one more")
	assert.Len(t, suffixes, 7, "each prompt has its own suffix")
	x.NumPrompts = 2
	_, err := OpenDataset(DatasetConfig{Name: DatasetPrefixRepetition, Extra: x})
	assert.ErrorContains(t, err, "--num-prompts (2) must be at least --prefix-repetition-num-prefixes (3)")

	// A trillion prompts cycle a bounded list, each pass with new suffixes.
	huge := newPrefixRepetition(x.PrefixRepetition, 1e12, EstimatedVocab(), 0, true)
	assert.LessOrEqual(t, len(huge.group), MaxScaledArrivals)
	assert.Zero(t, len(huge.group)%3, "whole rounds of the prefixes")
	n := len(huge.group)
	assert.NotEqual(t, huge.Prompt(5).Text, huge.Prompt(5+n).Text, "the next pass has new suffixes")
}

func TestRandomMMDataset(t *testing.T) {
	mm := RandomMMConfig{BaseItems: 2, ItemsRangeRatio: 0.5, Limits: map[string]int{"image": 2},
		Buckets: []MMBucket{{Height: 8, Width: 12, Frames: 1, Prob: 1}, {Height: 720, Width: 1280, Frames: 16, Prob: 0}}}
	cfg := DatasetConfig{Name: DatasetRandomMM, Random: RandomConfig{InputLen: 20, OutputLen: 3}, Extra: ExtraConfig{Chat: true, MM: mm}}
	_, w, _ := openWorkload(t, cfg)
	seen := map[int]bool{}
	for _, p := range prompts(w, 40) {
		assert.Equal(t, 20, p.InputTokens, "the text's tokens, as vLLM counts them")
		seen[len(p.Parts)] = true
		for _, part := range p.Parts {
			url := part["image_url"].(map[string]string)["url"]
			raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/png;base64,"))
			require.NoError(t, err)
			img, err := png.Decode(bytes.NewReader(raw))
			require.NoError(t, err)
			assert.Equal(t, 12, img.Bounds().Dx())
			assert.Equal(t, 8, img.Bounds().Dy())
		}
	}
	assert.Equal(t, map[int]bool{1: true, 2: true}, seen, "[floor(2*0.5), ceil(2*1.5)] = [1, 3], capped at the image limit 2")

	c, err := NewClient(ClientConfig{BaseURL: "http://127.0.0.1:1", Endpoint: EndpointChat})
	require.NoError(t, err)
	body, err := c.body(w.Prompt(0))
	require.NoError(t, err)
	var req struct {
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &req))
	require.Len(t, req.Messages, 1)
	assert.Equal(t, "text", req.Messages[0].Content[0]["type"], "the text first, then the images")
	assert.Equal(t, "image_url", req.Messages[0].Content[1]["type"])

	for _, bad := range []struct {
		edit func(*DatasetConfig)
		want string
	}{
		{func(c *DatasetConfig) { c.Extra.Chat = false }, "--backend openai-chat"},
		{func(c *DatasetConfig) { c.Extra.MM.Buckets = []MMBucket{{720, 1280, 16, 1}} }, "video buckets"},
		{func(c *DatasetConfig) { c.Extra.MM.Limits = map[string]int{"video": 1} }, "no limit for image"},
		{func(c *DatasetConfig) { c.Extra.MM.ItemsRangeRatio = 1.5 }, "in [0, 1]"},
		{func(c *DatasetConfig) { c.Extra.MM.Limits = map[string]int{"image": 0} }, "exceeds"},
	} {
		c := cfg
		c.Extra.MM.Buckets = append([]MMBucket(nil), mm.Buckets...)
		bad.edit(&c)
		_, err := OpenDataset(c)
		assert.ErrorContains(t, err, bad.want)
	}
}

func TestParseMMFlags(t *testing.T) {
	b, err := ParseMMBuckets("{(256, 256, 1): 0.5, (720, 1280, 1): 0.4, (720, 1280, 16): 0.10}")
	require.NoError(t, err)
	assert.Equal(t, []MMBucket{{256, 256, 1, 0.5}, {720, 1280, 1, 0.4}, {720, 1280, 16, 0.1}}, b)
	b, err = ParseMMBuckets(`{"(64, 32, 1)": 1}`)
	require.NoError(t, err)
	assert.Equal(t, []MMBucket{{64, 32, 1, 1}}, b)
	for _, bad := range []string{"", "{}", "{(1, 2): 0.5}", "[(1, 2, 1): 1]", "{(1, 2, 1): 1, junk}"} {
		_, err := ParseMMBuckets(bad)
		assert.Error(t, err, bad)
	}
	l, err := ParseMMLimits(`{"image": 3, "video": 0}`)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"image": 3, "video": 0}, l)
	_, err = ParseMMLimits("image=3")
	assert.Error(t, err)
}

func TestHFLocalDatasets(t *testing.T) {
	for _, c := range []struct {
		file, name string
		outputLen  int
		want       []Prompt // in file order (DisableShuffle)
	}{
		{"vllm-hf-mt-bench.jsonl", "philschmid/mt-bench", 0, []Prompt{
			{Text: "Compose a short travel note about a weekend in a small mountain town.", OutputTokens: 256},
			{Text: "Pretend you are a museum guide and greet a group of visitors.", OutputTokens: 256}}},
		{"vllm-hf-mt-bench.jsonl", "philschmid/mt-bench", 9, []Prompt{
			{Text: "Compose a short travel note about a weekend in a small mountain town.", OutputTokens: 9}}},
		{"vllm-hf-gsm8k.jsonl", "openai/gsm8k", 0, []Prompt{
			{Text: "A baker makes twelve loaves each hour for five hours. How many loaves does she make?", OutputTokens: 256}}},
		// The answer's length is the output length; the one-turn conversation is skipped.
		{"vllm-hf-sharegpt-vicuna.json", "Aeala/ShareGPT_Vicuna_unfiltered", 0, []Prompt{
			{Text: "Can you explain what a hash table is, in a couple of sentences?", OutputTokens: 31},
			{Text: "Suggest a name for a small bakery near the sea.", OutputTokens: 21}}},
		{"vllm-hf-mlperf.jsonl", "mgoin/mlperf-inference-llama3.1-data", 0, []Prompt{
			{Text: "You are a concise assistant.\n\nList two benefits of regular walking.", OutputTokens: 14,
				Messages: []ChatMessage{{Role: "system", Content: "You are a concise assistant."}, {Role: "user", Content: "List two benefits of regular walking."}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, w, _ := openWorkload(t, DatasetConfig{Name: DatasetHF, Path: fixture(c.file),
				Extra: ExtraConfig{DisableShuffle: true, NumPrompts: len(c.want), NoOversample: true,
					HF: HFConfig{Name: c.name, OutputLen: c.outputLen}}})
			for i, want := range c.want {
				got := w.Prompt(i)
				want.InputTokens = estimateTokens(want.Text)
				assert.Equal(t, want, got, "prompt %d", i)
			}
		})
	}
	all, err := loadHF(fixture("vllm-hf-sharegpt-vicuna.json"), ExtraConfig{HF: HFConfig{Name: "Aeala/ShareGPT_Vicuna_unfiltered"}}, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, all.Len(), "the conversation of one turn is skipped")
	for _, bad := range []struct {
		path, name, want string
	}{
		{"philschmid/mt-bench", "", "not a local file"},
		{fixture("vllm-hf-mt-bench.jsonl"), "", "needs --hf-name"},
		{fixture("vllm-hf-mt-bench.jsonl"), "lmarena-ai/VisionArena-Chat", "images, audio, tools"},
		{fixture("vllm-hf-mt-bench.jsonl"), "someone/else", "not one of vLLM's hf datasets"},
		{fixture("vllm-hf-mt-bench.jsonl"), "openai/gsm8k", "no row of openai/gsm8k"},
	} {
		_, err := OpenDataset(DatasetConfig{Name: DatasetHF, Path: bad.path, Extra: ExtraConfig{HF: HFConfig{Name: bad.name}}})
		assert.ErrorContains(t, err, bad.want, "%s %s", bad.path, bad.name)
	}
}

func TestTimedTraceReader(t *testing.T) {
	f, err := os.Open(fixture("vllm-timed-trace.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	cfg := DefaultTimedTrace
	cfg.SecMultiplier = 0.001
	r := NewTimedTraceReader(f, "trace", cfg)
	var got []TraceEntry
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, e)
	}
	require.Len(t, got, 4)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{0, 250 * ms, 500 * ms, 900 * ms}, []time.Duration{got[0].Timestamp, got[1].Timestamp, got[2].Timestamp, got[3].Timestamp})
	assert.Equal(t, []int{40, 20, 32, 30}, []int{got[0].InputLen, got[1].InputLen, got[2].InputLen, got[3].InputLen},
		"16 tokens a hash id: 3 ids cover 40, 2 cover 20; 2 ids cut 64 to 32; no ids keep the length")
	assert.Equal(t, []int64{1, 2, 3}, got[0].HashIDs)
	assert.Equal(t, 5, got[0].OutputLen)

	renamed := `{"ts": 2, "isl": 10, "osl": 3}` + "\n" + `{"ts": 3, "osl": 3}` + "\n"
	cfg = TimedTraceConfig{ChunkSize: 16, SecMultiplier: 1, LabelTimestamp: "ts", LabelInput: "isl", LabelOutput: "osl", LabelHashIDs: "h"}
	r = NewTimedTraceReader(strings.NewReader(renamed), "trace", cfg)
	e, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, e.Timestamp)
	assert.Equal(t, 10, e.InputLen)
	_, err = r.Next()
	assert.ErrorContains(t, err, `no "isl" field (--timed-trace-label-input-length names it)`)
	_, err = OpenDataset(DatasetConfig{Name: DatasetTimedTrace, Path: fixture("vllm-timed-trace.jsonl"), Extra: ExtraConfig{TimedTrace: TimedTraceConfig{ChunkSize: 0}}})
	assert.ErrorContains(t, err, "--timed-trace-chunk-hash-size")
}

func TestRandomPrefixComesOnTopOfInputLen(t *testing.T) {
	v := EstimatedVocab()
	r, err := NewRandom(RandomConfig{InputLen: 30, OutputLen: 2, PrefixLen: 10}, v)
	require.NoError(t, err)
	p := r.Prompt(0)
	assert.Equal(t, 40, p.InputTokens, "vLLM: prefix_len + input_len")
	assert.Len(t, strings.Fields(p.Text), 40-v.Overhead)
}

func TestRefusedDatasetsSayWhy(t *testing.T) {
	for name := range refusedDatasets {
		_, err := OpenDataset(DatasetConfig{Name: name})
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "\n")
		assert.True(t, strings.HasPrefix(err.Error(), "--dataset-name "+name+": "), err.Error())
	}
}

func TestRandomSeparateRangeRatios(t *testing.T) {
	out := 0.5
	r, err := NewRandom(RandomConfig{InputLen: 50, OutputLen: 10, RangeRatio: 0, OutputRangeRatio: &out}, EstimatedVocab())
	require.NoError(t, err)
	outs := map[int]bool{}
	for i := range 200 {
		p := r.Prompt(i)
		assert.Equal(t, 50, p.InputTokens, "the input's ratio is 0")
		assert.True(t, p.OutputTokens >= 5 && p.OutputTokens <= 15, p.OutputTokens)
		outs[p.OutputTokens] = true
	}
	assert.Greater(t, len(outs), 5, "the output's ratio is 0.5")
	bad := 1.0
	_, err = NewRandom(RandomConfig{InputLen: 50, OutputLen: 10, OutputRangeRatio: &bad}, EstimatedVocab())
	assert.ErrorContains(t, err, "got input 0 and output 1")
}

// The other text datasets of --dataset-name hf, each from a one-row export written here.
func TestHFLocalDatasetColumns(t *testing.T) {
	for _, c := range []struct {
		name, row string
		want      Prompt
	}{
		{"likaixin/InstructCoder", `{"input": "def f(): pass", "instruction": "Add a docstring."}`,
			Prompt{Text: "def f(): pass\n\nAdd a docstring. Just output the code, do not include any explanation.", OutputTokens: 200}},
		{"openai/openai_humaneval", `{"task_id": "HumanEval/0", "prompt": "def add(a, b):\n"}`, Prompt{Text: "def add(a, b):\n", OutputTokens: 256}},
		{"AI-MO/NuminaMath-CoT", `{"problem": "What is two plus two, written out?", "solution": "Two plus two is four, so the answer is four."}`,
			Prompt{Text: "What is two plus two, written out?", OutputTokens: 11}},
	} {
		path := filepath.Join(t.TempDir(), "export.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(c.row+"\n"), 0o644))
		_, w, _ := openWorkload(t, DatasetConfig{Name: DatasetHF, Path: path, Extra: ExtraConfig{NumPrompts: 1, HF: HFConfig{Name: c.name}}})
		c.want.InputTokens = estimateTokens(c.want.Text)
		assert.Equal(t, c.want, w.Prompt(0), c.name)
	}
}

func TestShareGPTDatasetFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sharegpt.json")
	conv := func(q string) string {
		return `{"conversations": [{"from": "human", "value": "` + q + `"}, {"from": "gpt", "value": "` + strings.Repeat("answer ", 8) + `"}]}`
	}
	require.NoError(t, os.WriteFile(path, []byte("["+conv("first question of the file")+","+conv("second question of the file")+","+
		conv("third question of the file")+"]"), 0o644))
	d, w, _ := openWorkload(t, DatasetConfig{Name: DatasetShareGPT, Path: path, ShareGPTOutputLen: 2,
		Extra: ExtraConfig{DisableShuffle: true, NoOversample: true, NumPrompts: 10}})
	assert.Equal(t, []string{"first question of the file", "second question of the file", "third question of the file"},
		[]string{w.Prompt(0).Text, w.Prompt(1).Text, w.Prompt(2).Text}, "--disable-shuffle: the file's order")
	assert.Equal(t, 2, w.Prompt(0).OutputTokens, "vLLM keeps a given output length under 4 tokens")
	assert.Equal(t, 3, d.Available(), "--no-oversample: the file's 3")
}

// Lengths beyond any model's context are refused before a prompt is built: building one takes
// gigabytes for a request every server answers with HTTP 400.
func TestRandomLengthsAreBounded(t *testing.T) {
	v := &Vocab{Words: []string{"a", "b"}}
	for _, cfg := range []RandomConfig{
		{InputLen: MaxRandomTokens + 1, OutputLen: 8},
		{InputLen: MaxRandomTokens, OutputLen: 8, RangeRatio: 0.5},
		{InputLen: 8, OutputLen: MaxRandomTokens + 1},
		{InputLen: MaxRandomTokens, OutputLen: 8, PrefixLen: 1},
	} {
		_, err := NewRandom(cfg, v)
		assert.ErrorContains(t, err, "longer than any model's context", "%+v", cfg)
	}
	_, err := NewRandom(RandomConfig{InputLen: MaxRandomTokens, OutputLen: MaxRandomTokens}, v)
	assert.NoError(t, err, "the bound itself is allowed")
}

// A dataset file of the wrong shape is described in the file's words, not Go's types.
func TestJSONShapeErrorsSpeakJSON(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		`[{"conversations": "nope"}]`: "found a JSON string at conversations (byte 25)",
		`{"a": 1}`:                    "found a JSON object (byte 1)",
	} {
		path := filepath.Join(dir, "d.json")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		_, err := LoadShareGPT(path, 0, 0, false, nil)
		require.Error(t, err, body)
		assert.Contains(t, err.Error(), want, body)
		assert.NotContains(t, err.Error(), "Go ", body)
		assert.NotContains(t, err.Error(), "struct", body)
	}
}
