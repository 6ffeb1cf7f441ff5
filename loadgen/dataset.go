package loadgen

import (
	"context"
	"fmt"
	"math"
)

// Datasets a headless run can send, by vllm bench serve's --dataset-name.
const (
	DatasetRandom   = "random"
	DatasetShareGPT = "sharegpt"
	DatasetFixed    = "fixed"
)

// DatasetConfig is vllm bench serve's choice of prompts.
type DatasetConfig struct {
	Name   string       // --dataset-name: DatasetRandom, DatasetShareGPT or DatasetFixed
	Path   string       // --dataset-path: the ShareGPT JSON file
	Prompt string       // --prompt: the fixed prompt
	Random RandomConfig // the random dataset's lengths; Random.OutputLen is the fixed prompt's too
	// ShareGPTOutputLen replaces each conversation's answer length when positive.
	ShareGPTOutputLen int
	IgnoreEOS         bool // always on for the random dataset, as vLLM's
	Seed              int64
	// Trace is how a burstgpt or mooncake trace is replayed; MultiTurn plays sharegpt or
	// synthetic conversations turn by turn.
	Trace     TraceDatasetConfig
	MultiTurn MultiTurnConfig
	Extra     ExtraConfig // vLLM's further datasets (vllmdatasets.go)
}

// Dataset is a checked dataset with its file read: it builds the workload once the server is
// known.
type Dataset struct {
	cfg      DatasetConfig
	sharegpt *ShareGPT
	// A replay's: the ShareGPT conversations, the trace's length, its skipped lines.
	conversations *ShareGPTConversations
	traceLen      int
	skipped       int
	extra         *promptList // a custom, spec_bench, sonnet or hf file's prompts
}

// OpenDataset checks cfg and reads its file, so that a bad dataset fails before any server is
// asked. Its errors name the flag to fix.
func OpenDataset(cfg DatasetConfig) (*Dataset, error) {
	switch cfg.Name {
	case DatasetRandom:
		cfg.IgnoreEOS = true // vLLM does so for the random dataset with OpenAI backends
		cfg.Random.IgnoreEOS, cfg.Random.Seed = true, cfg.Seed
		if _, err := NewRandom(cfg.Random, EstimatedVocab()); err != nil {
			return nil, err
		}
	case DatasetShareGPT:
		if cfg.Path == "" {
			return nil, fmt.Errorf("--dataset-name sharegpt needs --dataset-path FILE")
		}
	case DatasetFixed:
		if cfg.Prompt == "" {
			return nil, fmt.Errorf("--dataset-name fixed needs --prompt TEXT")
		}
		if cfg.Random.OutputLen < 1 {
			return nil, fmt.Errorf("--random-output-len must be at least 1")
		}
	case DatasetTimedTrace:
		if err := cfg.Extra.TimedTrace.Check(); err != nil {
			return nil, err
		}
		cfg.Trace.BlockSize = cfg.Extra.TimedTrace.ChunkSize
	case DatasetBurstGPT, DatasetMooncake:
	default:
		if !isExtra(cfg.Name) {
			return nil, checkExtraName(cfg.Name)
		}
	}
	if cfg.Prompt != "" && cfg.Name != DatasetFixed {
		return nil, fmt.Errorf("--prompt goes with --dataset-name fixed, not %s", cfg.Name)
	}
	if cfg.Path != "" && cfg.Name != DatasetShareGPT && !cfg.isTrace() && !extraTakesPath(cfg.Name) {
		return nil, fmt.Errorf("--dataset-path goes with a dataset read from a file (sharegpt, custom, spec_bench, sonnet, hf, burstgpt, timed_trace, mooncake), not %s", cfg.Name)
	}
	d := &Dataset{cfg: cfg}
	if err := d.checkReplay(); err != nil {
		return nil, err
	}
	if err := d.openExtra(); err != nil {
		return nil, err
	}
	if cfg.Name == DatasetShareGPT && !cfg.MultiTurn.On {
		g, err := LoadShareGPT(cfg.Path, cfg.Seed, cfg.ShareGPTOutputLen, cfg.IgnoreEOS, nil)
		if err != nil {
			return nil, err
		}
		d.sharegpt = g
		if cfg.Extra.DisableShuffle {
			g.order = identity(len(g.order)) // --disable-shuffle: the file's order
		}
	}
	return d, nil
}

// Workload builds the prompts for the server behind t (a *Client, or the simulator's own
// tokenizer) and says in a line what they are: random prompts of exact lengths when the
// server's /tokenize allows (estimated otherwise, with the reason), the fixed prompt, or the
// ShareGPT conversations. It fails only when ctx ends.
func (d *Dataset) Workload(ctx context.Context, t Tokenizer) (Workload, string, error) {
	switch d.cfg.Name {
	case DatasetShareGPT:
		if d.sharegpt == nil {
			return nil, "", nil // conversations: see Replay
		}
		return d.sharegpt, d.sharegpt.Name() + " from " + d.cfg.Path + " (lengths estimated at 4 characters a token)", nil
	case DatasetPrefixRepetition, DatasetCustom, DatasetSpecBench, DatasetRandomMM, DatasetSonnet, DatasetHF:
		return d.extraWorkload(ctx, t)
	case DatasetFixed:
		p := Prompt{Text: d.cfg.Prompt, OutputTokens: d.cfg.Random.OutputLen, IgnoreEOS: d.cfg.IgnoreEOS}
		return &Fixed{P: p}, fmt.Sprintf("one fixed prompt, %d output tokens", p.OutputTokens), nil
	}
	if d.cfg.MultiTurn.On || d.cfg.isTrace() && !d.cfg.Trace.Sample {
		return nil, "", nil // see Replay
	}
	vocab, how, err := d.vocab(ctx, t)
	if err != nil {
		return nil, "", err
	}
	if d.cfg.isTrace() {
		w, err := d.sampleTrace(vocab)
		if err != nil {
			return nil, "", err
		}
		if d.cfg.Name == DatasetTimedTrace {
			return w, w.Name() + ", the first lines in file order, at the request rate (" + how + ")", nil
		}
		return w, w.Name() + " sampled at the request rate (" + how + ")", nil
	}
	w, err := NewRandom(d.cfg.Random, vocab)
	if err != nil {
		return nil, "", err
	}
	return w, w.Name() + " (" + how + ")", nil
}

// MaxTokens is the most tokens one request of the random dataset may need, prompt and output
// at the top of their ranges; 0 for the other datasets.
func (d *Dataset) MaxTokens() int {
	if d.cfg.Name != DatasetRandom {
		return 0
	}
	r := d.cfg.Random
	return r.PrefixLen + int(math.Ceil(float64(r.InputLen)*(1+r.RangeRatio))) + int(math.Ceil(float64(r.OutputLen)*(1+r.outputRatio())))
}
