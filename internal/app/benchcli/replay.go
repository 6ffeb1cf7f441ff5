package benchcli

import (
	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
)

// finishReplay reads the replay flags: a trace replays at its timestamps unless --request-rate
// is given (then it is sampled, as vLLM samples BurstGPT); --num-prompts caps a replay only if
// given.
func (o *Options) finishReplay(fs *pflag.FlagSet) error {
	r, d := &o.Runs, &o.Dataset
	mt := &d.MultiTurn
	if err := o.finishDatasets(fs); err != nil {
		return err
	}
	if err := cliflag.FinishReplay(fs, *d); err != nil {
		return err
	}
	if mt.On {
		mt.InputLen, mt.OutputLen, mt.RangeRatio, mt.SystemLen = d.Random.InputLen, d.Random.OutputLen, d.Random.RangeRatio, d.Random.PrefixLen
	}
	d.Trace.Sample, d.Trace.NumPrompts = cliflag.IsTrace(d.Name) && fs.Changed("request-rate"), r.NumPrompts
	if d.Name == loadgen.DatasetTimedTrace {
		d.Trace.Sample = !selfTimed(fs) // vLLM sends it at its timestamps unless --no-self-timed
	}
	switch {
	case !Replays(*d):
		return nil
	case r.Warmups > 0:
		return cliflag.Usagef("--num-warmups does not go with a replay: its first requests are part of what it replays")
	case o.ReadyTimeout > 0:
		return cliflag.Usagef("--ready-check-timeout-sec does not go with a replay: its first request is part of what it replays")
	case o.Search.On():
		return cliflag.Usagef("an SLO search varies the rate or concurrency of a random or sampled dataset, not a replay")
	case mt.On && len(r.Rates) > 1:
		return cliflag.Usagef("--multi-turn runs conversations at --max-concurrency, not at a --request-rate")
	}
	if !fs.Changed("num-prompts") && d.Name != loadgen.DatasetTimedTrace { // vLLM sends a timed_trace's first --num-prompts lines
		r.NumPrompts = 0 // the whole trace, every conversation
	}
	r.Info.NumPrompts = r.NumPrompts
	return nil
}

// Replays reports whether the dataset is replayed (a trace at its timestamps, or
// conversations) rather than sent as prompts at a rate.
func Replays(d loadgen.DatasetConfig) bool {
	return d.MultiTurn.On || cliflag.IsTrace(d.Name) && !d.Trace.Sample
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
