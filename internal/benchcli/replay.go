package benchcli

import (
	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
)

// replayFlags are the trace replay's and multi-turn's flags that need reading after parsing.
type replayFlags struct {
	answers string
}

// defineReplay gives fs the flags of trace replay (--dataset-name burstgpt or mooncake) and of
// multi-turn conversations (--multi-turn).
func defineReplay(fs *pflag.FlagSet, o *Options) {
	t, mt := &o.Dataset.Trace, &o.Dataset.MultiTurn
	fs.Float64Var(&t.Speedup, "trace-speedup", 1, "Replay a trace this many times faster (0.5: twice as slow)")
	fs.IntVar(&t.BlockSize, "trace-block-size", loadgen.DefaultTraceBlockSize, "Tokens per Mooncake hash id")
	fs.StringVar(&t.BurstGPTModel, "burstgpt-model", "GPT-4", "BurstGPT rows to replay: GPT-4 (as vLLM), ChatGPT, or * for both")
	fs.BoolVar(&t.SkipMalformed, "trace-skip-malformed", false, "Skip malformed trace lines (counted) instead of stopping at the first")
	fs.BoolVar(&mt.On, "multi-turn", false, "Play conversations turn by turn (sharegpt, or synthetic with random); --max-concurrency counts conversations")
	fs.IntVar(&mt.Count, "num-conversations", 0, "Conversations to play (default: every one of a ShareGPT file, 32 synthetic)")
	fs.IntVar(&mt.Turns, "num-turns", 0, "Turns of each synthetic conversation (default 5); cuts ShareGPT ones when given")
	fs.IntVar(&mt.PrefixLen, "turn-prefix-len", 0, "Tokens of a document unique to each synthetic conversation, in its first message")
	fs.DurationVar(&mt.Think.Mean, "think-time", 0, "Pause between an answer and the next user message (e.g. 2s)")
	fs.Float64Var(&mt.Think.RangeRatio, "think-time-range-ratio", 0, "Think times drawn uniformly from [T(1-r), T(1+r)], 0 <= r < 1")
	fs.StringVar(&o.replay.answers, "multi-turn-answers", "received", "What the history holds for earlier answers: received, recorded (ShareGPT's) or stand-in")
}

// finishReplay reads the replay flags: a trace replays at its timestamps unless --request-rate
// is given (then it is sampled, as vLLM samples BurstGPT); --num-prompts caps a replay only if
// given.
func (o *Options) finishReplay(fs *pflag.FlagSet) error {
	r, d := &o.Runs, &o.Dataset
	mt := &d.MultiTurn
	trace := d.Name == loadgen.DatasetBurstGPT || d.Name == loadgen.DatasetMooncake
	switch o.replay.answers {
	case "received":
		mt.Answers = loadgen.AnswerReceived
	case "recorded":
		mt.Answers = loadgen.AnswerRecorded
	case "stand-in":
		mt.Answers = loadgen.AnswerStandIn
	default:
		return cliflag.Usagef("--multi-turn-answers %q: want received, recorded or stand-in", o.replay.answers)
	}
	if mt.On {
		mt.InputLen, mt.OutputLen, mt.RangeRatio, mt.SystemLen = d.Random.InputLen, d.Random.OutputLen, d.Random.RangeRatio, d.Random.PrefixLen
	}
	d.Trace.Sample, d.Trace.NumPrompts = trace && fs.Changed("request-rate"), r.NumPrompts
	replays := Replays(*d)
	for _, name := range []string{"num-conversations", "num-turns", "turn-prefix-len", "think-time", "think-time-range-ratio", "multi-turn-answers"} {
		if fs.Changed(name) && !mt.On {
			return cliflag.Usagef("--%s goes with --multi-turn", name)
		}
	}
	for _, name := range []string{"trace-speedup", "trace-block-size", "burstgpt-model", "trace-skip-malformed"} {
		if fs.Changed(name) && !trace {
			return cliflag.Usagef("--%s goes with --dataset-name burstgpt or mooncake", name)
		}
	}
	switch {
	case mt.On && trace:
		return cliflag.Usagef("--multi-turn plays sharegpt or synthetic (random) conversations; a trace's sessions replay without it")
	case !replays:
		return nil
	case r.Warmups > 0:
		return cliflag.Usagef("--num-warmups does not go with a replay: its first requests are part of what it replays")
	case o.Search.On():
		return cliflag.Usagef("an SLO search varies the rate or concurrency of a random or sampled dataset, not a replay")
	case mt.On && len(r.Rates) > 1:
		return cliflag.Usagef("--multi-turn runs conversations at --max-concurrency, not at a --request-rate")
	}
	if !fs.Changed("num-prompts") {
		r.NumPrompts = 0 // the whole trace, every conversation
	}
	r.Info.NumPrompts = r.NumPrompts
	return nil
}

// Replays reports whether the dataset is replayed (a trace at its timestamps, or
// conversations) rather than sent as prompts at a rate.
func Replays(d loadgen.DatasetConfig) bool {
	trace := d.Name == loadgen.DatasetBurstGPT || d.Name == loadgen.DatasetMooncake
	return d.MultiTurn.On || trace && !d.Trace.Sample
}

// checkRuns is the runs' Check; a replay ends with its trace or its conversations, so it
// needs no count.
func checkRuns(r loadgen.SweepConfig, d loadgen.DatasetConfig) error {
	if Replays(d) {
		r.Conversations = &loadgen.ConversationLoad{Count: 1}
	}
	if err := r.Check(); err != nil {
		return cliflag.Usagef("%v", err)
	}
	return nil
}
