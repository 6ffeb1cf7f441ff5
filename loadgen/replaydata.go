package loadgen

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// Trace datasets, by --dataset-name.
const (
	DatasetBurstGPT = "burstgpt"
	DatasetMooncake = "mooncake"
)

// TraceDatasetConfig says how a trace file (BurstGPT CSV, Mooncake JSONL) is replayed.
type TraceDatasetConfig struct {
	Speedup       float64 // --trace-speedup: divides the trace's times (0 means 1)
	BlockSize     int     // --trace-block-size: tokens per hash id (0: DefaultTraceBlockSize)
	BurstGPTModel string  // --burstgpt-model: GPT-4 (vLLM's choice), ChatGPT or * for both
	SkipMalformed bool    // --trace-skip-malformed: skip bad lines, counted, instead of stopping
	// Sample draws NumPrompts entries and sends them at the run's own rate, as vllm bench
	// serve does with --request-rate, instead of at their timestamps.
	Sample     bool
	NumPrompts int
}

// MultiTurnConfig is --multi-turn: conversations played turn by turn, from a ShareGPT file or
// synthetic ones (the random dataset's --multi-turn).
type MultiTurnConfig struct {
	On    bool
	Count int // --num-conversations: conversations to play (0: the file's, or 32 synthetic)
	// Synthetic conversations' shape (Turns also cuts ShareGPT ones when positive).
	Turns, InputLen, OutputLen int
	RangeRatio                 float64
	SystemLen                  int // --prefix-len: a system prompt every conversation shares
	PrefixLen                  int // --turn-prefix-len: a prefix unique to each conversation
	Think                      ThinkTime
	Answers                    AnswerMode
}

// DefaultSyntheticConversations is --num-conversations for synthetic conversations.
const DefaultSyntheticConversations = 32

// isTrace reports whether the dataset is a trace file.
func (cfg DatasetConfig) isTrace() bool {
	return cfg.Name == DatasetBurstGPT || cfg.Name == DatasetMooncake || cfg.Name == DatasetTimedTrace
}

// checkReplay checks a trace or multi-turn dataset and reads its file once (line by line, so in
// constant memory): a malformed line fails here, before any server is asked, unless skipped.
func (d *Dataset) checkReplay() error {
	cfg := d.cfg
	mt := cfg.MultiTurn
	switch {
	case mt.On && cfg.Name != DatasetShareGPT && cfg.Name != DatasetRandom:
		return fmt.Errorf("--multi-turn plays sharegpt conversations or synthetic ones (--dataset-name random), not %s", cfg.Name)
	case mt.On && (mt.Turns < 0 || mt.Count < 0):
		return fmt.Errorf("--num-turns and --num-conversations must not be negative")
	case mt.On && mt.Think.Mean < 0, mt.On && (mt.Think.RangeRatio < 0 || mt.Think.RangeRatio >= 1):
		return fmt.Errorf("--think-time must not be negative and --think-time-range-ratio must be in [0, 1)")
	case mt.On && cfg.Name == DatasetShareGPT:
		g, err := LoadShareGPTConversations(cfg.Path, ShareGPTConversationConfig{Seed: cfg.Seed, MaxConversations: mt.Count,
			MaxTurns: mt.Turns, OutputLen: cfg.ShareGPTOutputLen})
		if err != nil {
			return err
		}
		d.conversations = g
		return nil
	case mt.On:
		if mt.Turns == 0 {
			d.cfg.MultiTurn.Turns = 5
		}
		if mt.Count == 0 {
			d.cfg.MultiTurn.Count = DefaultSyntheticConversations
		}
		_, err := NewSyntheticConversations(d.synthetic(), EstimatedVocab())
		return err
	case !cfg.isTrace():
		return nil
	case cfg.Path == "":
		return fmt.Errorf("--dataset-name %s needs --dataset-path FILE", cfg.Name)
	}
	t := cfg.Trace
	if _, err := NewSchedule(nil, ScheduleConfig{Speedup: t.Speedup, Prompt: func(int, TraceEntry) Prompt { return Prompt{} }}); err != nil {
		return err
	}
	if t.BlockSize < 0 || t.BlockSize > MaxTraceTokens {
		return fmt.Errorf("--trace-block-size must be from 1 to %d, got %d", MaxTraceTokens, t.BlockSize)
	}
	src, err := d.openTrace(func(int, TraceEntry) Prompt { return Prompt{} })
	if err != nil {
		return err
	}
	n := 0
	for {
		if _, err := src.Next(); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s has no request to replay", cfg.Path)
	}
	d.traceLen = n
	return nil
}

func (d *Dataset) synthetic() SyntheticConversationConfig {
	mt := d.cfg.MultiTurn
	return SyntheticConversationConfig{Turns: mt.Turns, InputLen: mt.InputLen, OutputLen: mt.OutputLen, RangeRatio: mt.RangeRatio,
		SystemLen: mt.SystemLen, PrefixLen: mt.PrefixLen, Seed: d.cfg.Seed}
}

// traceReader opens the trace file.
func (d *Dataset) traceReader() (TraceReader, *os.File, error) {
	cfg := d.cfg
	f, err := os.Open(cfg.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("--dataset-path: %w", err)
	}
	r, err := OpenTrace(cfg.Name, f, cfg.Path, TraceOptions{BurstGPT: BurstGPTOptions{Model: cfg.Trace.BurstGPTModel},
		Mooncake: MooncakeOptions{BlockSize: cfg.Trace.BlockSize}, TimedTrace: cfg.Extra.TimedTrace})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, f, nil
}

// openTrace opens the trace as a schedule of prompts from build; the file closes at its end.
func (d *Dataset) openTrace(build func(int, TraceEntry) Prompt) (ArrivalSource, error) {
	r, f, err := d.traceReader()
	if err != nil {
		return nil, err
	}
	t := d.cfg.Trace
	s, err := NewSchedule(r, ScheduleConfig{Speedup: t.Speedup, Prompt: build, SkipMalformed: t.SkipMalformed})
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileSchedule{s: s, f: f, d: d}, nil
}

// fileSchedule is a schedule that closes its file when it ends and remembers what it skipped.
type fileSchedule struct {
	s *Schedule
	f *os.File
	d *Dataset
}

func (fs *fileSchedule) Next() (Arrival, error) {
	a, err := fs.s.Next()
	if err != nil && fs.f != nil {
		fs.f.Close()
		fs.f = nil
		fs.d.skipped = fs.s.Skipped()
	}
	return a, err
}

// Replays reports whether the dataset is replayed (Replay) rather than sent as a Workload.
func (d *Dataset) Replays() bool { return d.cfg.MultiTurn.On || d.cfg.isTrace() && !d.cfg.Trace.Sample }

// Name is a short name of a replayed dataset: "mooncake trace", "multi-turn random".
func (d *Dataset) Name() string {
	if d.cfg.MultiTurn.On {
		return "multi-turn " + d.cfg.Name
	}
	return d.cfg.Name + " trace"
}

// Skipped is the number of malformed lines the trace's last read skipped
// (--trace-skip-malformed).
func (d *Dataset) Skipped() int { return d.skipped }

// Replay is the trace or the conversations to replay, built for the server behind t, and a
// line that says what they are; both nil for a dataset a Workload sends. A trace is read anew,
// line by line, by every run.
func (d *Dataset) Replay(ctx context.Context, t Tokenizer) (trace func() (ArrivalSource, error), conv *ConversationLoad, how string, err error) {
	cfg := d.cfg
	if !cfg.MultiTurn.On && (!cfg.isTrace() || cfg.Trace.Sample) {
		return nil, nil, "", nil
	}
	vocab, vhow, err := d.vocab(ctx, t)
	if err != nil {
		return nil, nil, "", err
	}
	if cfg.MultiTurn.On {
		mt := cfg.MultiTurn
		cl := &ConversationLoad{Dialogue: DialogueConfig{Vocab: vocab, Answers: mt.Answers, IgnoreEOS: cfg.IgnoreEOS, Seed: cfg.Seed},
			Think: mt.Think, Count: mt.Count}
		if d.conversations != nil {
			cl.Conversations = d.conversations
			if cl.Count == 0 {
				cl.Count = d.conversations.Len()
			}
		} else {
			cl.Dialogue.IgnoreEOS = true // as the random dataset
			if cl.Conversations, err = NewSyntheticConversations(d.synthetic(), vocab); err != nil {
				return nil, nil, "", err
			}
		}
		how = fmt.Sprintf("%d %s, think time %v (%s)", cl.Count, cl.Conversations.Name(), mt.Think.Mean, vhow)
		return nil, cl, how, nil
	}
	prompts := d.tracePrompts(vocab)
	trace = func() (ArrivalSource, error) { return d.openTrace(prompts.Prompt) }
	speed := ""
	if s := cfg.Trace.Speedup; s != 0 && s != 1 {
		speed = fmt.Sprintf(", %gx speed", s)
	}
	how = fmt.Sprintf("%s trace %s, %d requests at their timestamps%s (%s)", cfg.Name, cfg.Path, d.traceLen, speed, vhow)
	return trace, nil, how, nil
}

// tracePrompts builds a trace's prompts: the trace's lengths, exactly (ignore_eos on).
func (d *Dataset) tracePrompts(v *Vocab) *TracePrompts {
	return NewTracePrompts(v, TracePromptConfig{BlockSize: d.cfg.Trace.BlockSize, IgnoreEOS: true, Seed: d.cfg.Seed})
}

// sampleTrace is a trace's entries drawn as vllm bench serve draws BurstGPT's, for --request-rate.
func (d *Dataset) sampleTrace(v *Vocab) (Workload, error) {
	r, f, err := d.traceReader()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	skipped, n := 0, d.cfg.Trace.NumPrompts
	if d.cfg.Name == DatasetTimedTrace {
		r, n = &firstLines{r: r, n: n}, 0
	}
	w, err := SampleTrace(r, d.cfg.Name+" trace "+d.cfg.Path, n, d.cfg.Seed, d.tracePrompts(v).Prompt,
		d.cfg.Trace.SkipMalformed, func(error) { skipped++ })
	d.skipped = skipped
	return w, err
}

// vocab calibrates the prompt words on the server's tokenizer (estimated without one) and says how.
func (d *Dataset) vocab(ctx context.Context, t Tokenizer) (*Vocab, string, error) {
	vocab, err := CalibrateVocab(ctx, t)
	how := "exact lengths from the server's /tokenize"
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		vocab, how = EstimatedVocab(), "estimated lengths: "+textfmt.OneLine(err.Error(), 0)
	case !vocab.Checked:
		how = "estimated lengths: the server has no /tokenize"
	}
	return vocab, how, nil
}
