package cliflag

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/loadgen"
)

// Answers is --multi-turn-answers: received, recorded or stand-in.
func Answers(p *loadgen.AnswerMode) pflag.Value {
	return value[loadgen.AnswerMode]{p, "string", func(s string) (loadgen.AnswerMode, error) {
		for _, m := range []loadgen.AnswerMode{loadgen.AnswerReceived, loadgen.AnswerRecorded, loadgen.AnswerStandIn} {
			if m.String() == s {
				return m, nil
			}
		}
		return 0, fmt.Errorf("want received, recorded or stand-in")
	}, loadgen.AnswerMode.String}
}

// The flags AddReplay defines, by what they go with.
var (
	multiTurnFlags = []string{"num-conversations", "num-turns", "turn-prefix-len", "think-time", "think-time-range-ratio", "multi-turn-answers"}
	traceFlags     = []string{"trace-speedup", "trace-block-size", "burstgpt-model", "trace-skip-malformed"}
)

// AddReplay gives fs the flags of trace replay (--dataset-name burstgpt or mooncake) and of
// multi-turn conversations (--multi-turn), as bench and the dashboard take them.
func AddReplay(fs *pflag.FlagSet, t *loadgen.TraceDatasetConfig, mt *loadgen.MultiTurnConfig) {
	fs.Float64Var(&t.Speedup, "trace-speedup", 1, "Replay a trace this many times faster (0.5: twice as slow)")
	fs.IntVar(&t.BlockSize, "trace-block-size", loadgen.DefaultTraceBlockSize, "Tokens per Mooncake hash id")
	fs.StringVar(&t.BurstGPTModel, "burstgpt-model", "GPT-4", "BurstGPT rows to replay: GPT-4 (as vLLM), ChatGPT, or * for both")
	fs.BoolVar(&t.SkipMalformed, "trace-skip-malformed", false, "Skip malformed trace lines (counted) instead of stopping at the first")
	fs.BoolVar(&mt.On, "multi-turn", false, "Play conversations turn by turn (sharegpt, or synthetic with random); the concurrency counts conversations")
	fs.IntVar(&mt.Count, "num-conversations", 0, "Conversations to play (default: bench, every one of a ShareGPT file or 32 synthetic; the dashboard, no end)")
	fs.IntVar(&mt.Turns, "num-turns", 0, "Turns of each synthetic conversation (default 5); cuts ShareGPT ones when given")
	fs.IntVar(&mt.PrefixLen, "turn-prefix-len", 0, "Tokens of a document unique to each synthetic conversation, in its first message")
	fs.DurationVar(&mt.Think.Mean, "think-time", 0, "Pause between an answer and the next user message (e.g. 2s)")
	fs.Float64Var(&mt.Think.RangeRatio, "think-time-range-ratio", 0, "Think times drawn uniformly from [T(1-r), T(1+r)], 0 <= r < 1")
	fs.Var(Answers(&mt.Answers), "multi-turn-answers", "What the history holds for earlier answers: received, recorded (ShareGPT's) or stand-in")
}

// IsTrace reports whether a dataset name is a trace file's.
func IsTrace(name string) bool {
	return name == loadgen.DatasetBurstGPT || name == loadgen.DatasetMooncake || name == loadgen.DatasetTimedTrace
}

// FinishReplay refuses AddReplay's flags where they do nothing: the multi-turn ones without
// --multi-turn, the trace ones without a trace, --multi-turn with a trace.
func FinishReplay(fs *pflag.FlagSet, d loadgen.DatasetConfig) error {
	for _, name := range multiTurnFlags {
		if fs.Changed(name) && !d.MultiTurn.On {
			return Usagef("--%s goes with --multi-turn", name)
		}
	}
	for _, name := range traceFlags {
		if fs.Changed(name) && !IsTrace(d.Name) {
			return Usagef("--%s goes with --dataset-name burstgpt or mooncake", name)
		}
	}
	if d.MultiTurn.On && IsTrace(d.Name) {
		return Usagef("--multi-turn plays sharegpt or synthetic (random) conversations; a trace's sessions replay without it")
	}
	// The replay reads a speed-up of 0 as its default of 1: given on the command line, 0 is
	// a mistake, not a request for real time.
	if s := d.Trace.Speedup; fs.Changed("trace-speedup") && !(s > 0) {
		return Usagef("--trace-speedup must be a number from 0.001 to 1e+06, got %g", s)
	}
	return nil
}
