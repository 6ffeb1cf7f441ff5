package dashcli

import (
	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
)

// finishDataset opens --dataset-name's trace or conversations, read and checked before any
// server starts, for the load to replay instead of its random prompts.
func (o *Dashboard) finishDataset() error {
	d, l := &o.dataset, &o.loadCfg
	t, mt := d.Trace, d.MultiTurn
	switch {
	case l.PrefixLen < 1:
		return cliflag.Usagef("--prefix-len must be at least 1")
	case !mt.On && (mt.Count != 0 || mt.Turns != 0 || mt.PrefixLen != 0 || mt.Think != loadgen.ThinkTime{} || mt.Answers != loadgen.AnswerReceived):
		return cliflag.Usagef("--num-conversations, --num-turns, --turn-prefix-len, --think-time and --multi-turn-answers go with --multi-turn")
	case !cliflag.IsTrace(d.Name) && (t.Speedup != 1 || t.SkipMalformed || t.BlockSize != loadgen.DefaultTraceBlockSize || t.BurstGPTModel != "GPT-4"):
		return cliflag.Usagef("--trace-speedup, --trace-block-size, --burstgpt-model and --trace-skip-malformed go with --dataset-name burstgpt or mooncake")
	}
	if d.Name == loadgen.DatasetRandom && !d.MultiTurn.On {
		if d.Path != "" {
			return cliflag.Usagef("--dataset-path goes with --dataset-name burstgpt, mooncake or sharegpt")
		}
		return nil
	}
	switch {
	case d.Name == loadgen.DatasetShareGPT && !d.MultiTurn.On:
		return cliflag.Usagef("--dataset-name sharegpt plays its conversations: give --multi-turn")
	case !cliflag.IsTrace(d.Name) && d.Name != loadgen.DatasetShareGPT && d.Name != loadgen.DatasetRandom:
		return cliflag.Usagef("--dataset-name %q: the dashboard replays burstgpt or mooncake traces, or sharegpt or random conversations with --multi-turn", d.Name)
	}
	d.Seed, d.IgnoreEOS, d.Random = l.Seed, true, l.Short
	m := &d.MultiTurn
	m.InputLen, m.OutputLen, m.RangeRatio = l.Short.InputLen, l.Short.OutputLen, l.Short.RangeRatio
	ds, err := loadgen.OpenDataset(*d)
	if err != nil {
		return cliflag.Usagef("%v", err)
	}
	l.Dataset = ds
	return nil
}
