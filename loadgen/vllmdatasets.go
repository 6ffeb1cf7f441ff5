package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
)

// More of vllm bench serve's --dataset-name values (vllm/benchmarks/datasets/datasets.py):
// the ones that need no download, and hf read from a local export.
const (
	DatasetPrefixRepetition = "prefix_repetition"
	DatasetCustom           = "custom"
	DatasetSpecBench        = "spec_bench"
	DatasetRandomMM         = "random-mm"
	DatasetSonnet           = "sonnet"
	DatasetHF               = "hf"
	DatasetTimedTrace       = "timed_trace"
)

// extraDatasets are the datasets of ExtraConfig, built by openExtra.
var extraDatasets = []string{DatasetPrefixRepetition, DatasetCustom, DatasetSpecBench, DatasetRandomMM, DatasetSonnet, DatasetHF}

// refusedDatasets are vLLM's datasets this build cannot send, and why, in a line each.
var refusedDatasets = map[string]string{
	"random-rerank": "sends query and document lists to a reranker (/v1/rerank, /score), which this benchmark does not drive",
	"custom_image":  "sends local image files as chat content; this build sends generated images only (random-mm)",
	"custom_audio":  "sends audio files; this build has no audio backend",
	"speed_bench":   "downloads SPEED-Bench from the Hugging Face hub; this build downloads nothing",
	"txt-slices":    "was removed from current vLLM",
}

// ExtraConfig holds the settings of vLLM's further datasets, by their vllm bench serve flags.
type ExtraConfig struct {
	// NumPrompts is --num-prompts: how many prompts a file dataset samples (0: every one).
	NumPrompts int
	// NoOversample keeps a file's count when it has fewer prompts than NumPrompts;
	// DisableShuffle keeps the file's order; SkipChatTemplate sends prompts as written.
	NoOversample, DisableShuffle, SkipChatTemplate bool
	// Chat is true for the chat endpoint, which random-mm needs.
	Chat bool
	// CustomOutputLen is --custom-output-len (-1: each line's output_tokens).
	CustomOutputLen int
	// SpecBenchOutputLen and SpecBenchCategory are --spec-bench-output-len and -category.
	SpecBenchOutputLen int
	SpecBenchCategory  string
	Sonnet             SonnetConfig
	PrefixRepetition   PrefixRepetitionConfig
	MM                 RandomMMConfig
	HF                 HFConfig
	TimedTrace         TimedTraceConfig
}

// isExtra reports whether name is one of ExtraConfig's datasets.
func isExtra(name string) bool { return slices.Contains(extraDatasets, name) }

// extraTakesPath reports whether an extra dataset reads --dataset-path.
func extraTakesPath(name string) bool {
	return name == DatasetCustom || name == DatasetSpecBench || name == DatasetSonnet || name == DatasetHF
}

// checkExtraName refuses a dataset of vLLM's this build cannot send, in one line.
func checkExtraName(name string) error {
	if why, ok := refusedDatasets[name]; ok {
		return fmt.Errorf("--dataset-name %s: %s", name, why)
	}
	return fmt.Errorf("--dataset-name %q: this build has random, random-mm, prefix_repetition, sharegpt, custom, spec_bench, sonnet, hf (local file), burstgpt, timed_trace, mooncake and fixed", name)
}

// openExtra checks an extra dataset and reads its file.
func (d *Dataset) openExtra() error {
	cfg := d.cfg
	if extraTakesPath(cfg.Name) && cfg.Path == "" {
		return fmt.Errorf("--dataset-name %s needs --dataset-path FILE", cfg.Name)
	}
	var err error
	switch cfg.Name {
	case DatasetPrefixRepetition:
		err = cfg.Extra.PrefixRepetition.check(cfg.Extra.NumPrompts)
	case DatasetRandomMM:
		err = d.checkRandomMM()
	case DatasetCustom:
		d.extra, err = loadCustom(cfg.Path, cfg.Extra, cfg.Seed)
	case DatasetSpecBench:
		d.extra, err = loadSpecBench(cfg.Path, cfg.Extra, cfg.Seed)
	case DatasetSonnet:
		d.extra, err = loadSonnet(cfg.Path, cfg.Extra, cfg.Seed)
	case DatasetHF:
		d.extra, err = loadHF(cfg.Path, cfg.Extra, cfg.Seed)
	}
	if d.extra != nil {
		for i := range d.extra.prompts {
			d.extra.prompts[i].IgnoreEOS = cfg.IgnoreEOS
		}
	}
	return err
}

// Available is the number of prompts a file dataset sends with --no-oversample, when the file
// has fewer than --num-prompts; 0 otherwise (no bound).
func (d *Dataset) Available() int {
	switch {
	case d.cfg.Name == DatasetTimedTrace && d.cfg.Trace.Sample:
		return d.traceLen // vLLM sends a timed_trace's lines once
	case d.sharegpt != nil && d.cfg.Extra.NoOversample:
		return d.sharegpt.Len()
	case d.extra == nil || !d.cfg.Extra.NoOversample && d.cfg.Extra.NumPrompts > 0:
		return 0
	}
	return d.extra.Len()
}

// firstLines is a trace's first n entries (all for n <= 0): vLLM's timed_trace sends the
// first --num-prompts lines, in order.
type firstLines struct {
	r    TraceReader
	n, i int
}

func (f *firstLines) Next() (TraceEntry, error) {
	if f.n > 0 && f.i >= f.n {
		return TraceEntry{}, io.EOF
	}
	e, err := f.r.Next()
	if err == nil {
		f.i++
	}
	return e, err
}

// extraWorkload builds an extra dataset's prompts for the server behind t.
func (d *Dataset) extraWorkload(ctx context.Context, t Tokenizer) (Workload, string, error) {
	if d.extra != nil {
		return d.extra, d.extra.Name() + " from " + d.cfg.Path + " (lengths estimated at 4 characters a token" + d.templateNote() + ")", nil
	}
	vocab, how, err := d.vocab(ctx, t)
	if err != nil {
		return nil, "", err
	}
	var w Workload
	if d.cfg.Name == DatasetPrefixRepetition {
		p := newPrefixRepetition(d.cfg.Extra.PrefixRepetition, d.cfg.Extra.NumPrompts, vocab, d.cfg.Seed, !d.cfg.Extra.DisableShuffle)
		p.ignoreEOS, w = d.cfg.IgnoreEOS, p
	} else if w, err = d.randomMM(vocab); err != nil {
		return nil, "", err
	}
	return w, w.Name() + " (" + how + ")", nil
}

// templateNote says what becomes of the chat template vLLM applies on the client.
func (d *Dataset) templateNote() string {
	switch {
	case d.cfg.Extra.SkipChatTemplate || !d.extra.templated:
		return ""
	case d.cfg.Extra.Chat:
		return "; the server applies the chat template"
	}
	return "; sent as written: vLLM applies the model's chat template on the client, and vllmtop has no tokenizer (the chat endpoint has the server apply it)"
}

// promptList is a dataset's sampled prompts, sent in order and cycled.
type promptList struct {
	name      string
	prompts   []Prompt
	templated bool // vLLM applies the chat template to these unless --skip-chat-template
}

func (p *promptList) Name() string        { return fmt.Sprintf("%s (%d prompts)", p.name, len(p.prompts)) }
func (p *promptList) Len() int            { return len(p.prompts) }
func (p *promptList) Prompt(i int) Prompt { return p.prompts[i%len(p.prompts)] }

// sampleList orders a file's prompts as vLLM samples them: shuffled with the seed unless
// disableShuffle, the first n kept (every one for n <= 0) and, when fewer, topped up to n with
// seeded random picks unless noOversample.
func sampleList(items []Prompt, n int, seed int64, cfg ExtraConfig) []Prompt {
	items = slices.Clone(items)
	if !cfg.DisableShuffle {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5ba2e))
		rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	}
	if n > 0 && len(items) > n {
		items = items[:n]
	}
	if n > 0 && len(items) < n && !cfg.NoOversample && len(items) > 0 {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x0e5a))
		have := len(items)
		for len(items) < n {
			items = append(items, items[rng.IntN(have)])
		}
	}
	return items
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// estimateTokens is the 4-characters-a-token estimate used for a file's text.
func estimateTokens(s string) int { return max(1, (len(s)+3)/4) }
