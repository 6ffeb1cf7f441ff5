package benchcli

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/loadgen"
)

// DefaultITLThresholds is vllm bench serve's --timeline-itl-thresholds, in milliseconds.
const DefaultITLThresholds = "25,50"

// TimelineSuffix replaces the result file's extension in the timeline's name (vLLM writes
// .timeline.html with plotly; vllmtop draws a PNG).
const TimelineSuffix = ".timeline.png"

// Timeline is --plot-timeline: each request of a run drawn on a time axis, its time to first
// token and then each inter-token gap coloured by the thresholds; and --plot-dataset-stats
// (Stats), the run's token counts, drawn from the same requests.
type Timeline struct {
	On, Stats bool
	// ITL are the two bounds (milliseconds) between the fast, middling and slow gaps.
	ITL        [2]float64
	thresholds string
}

// defineTimeline adds --plot-timeline, --timeline-itl-thresholds and --plot-dataset-stats.
func (o *Options) defineTimeline(fs *pflag.FlagSet) {
	t := &o.Timeline
	fs.BoolVar(&t.On, "plot-timeline", false, "Draw each request's timeline (time to first token, then each inter-token gap coloured by --timeline-itl-thresholds) to a PNG named as the result file with "+TimelineSuffix+" for its extension (vLLM writes .timeline.html)")
	fs.StringVar(&t.thresholds, "timeline-itl-thresholds", DefaultITLThresholds, "Two comma-separated inter-token latencies in milliseconds: the bounds between the timeline's green, orange and red gaps")
	fs.BoolVar(&t.Stats, "plot-dataset-stats", false, "Draw the run's prompt, output and total tokens (three histograms, and each request's tokens stacked) to a PNG named as the result file with "+DatasetStatsSuffix+" for its extension, as vLLM does")
}

// finishTimeline reads the timeline's flags.
func (o *Options) finishTimeline(fs *pflag.FlagSet) error {
	t := &o.Timeline
	switch {
	case t.On && o.Search.On():
		return cliflag.Usagef("--plot-timeline draws a run's requests; an SLO search draws its curve with --plot")
	case t.Stats && o.Search.On():
		return cliflag.Usagef("--plot-dataset-stats draws a run's requests; an SLO search draws its curve with --plot")
	case !t.On:
		return nil // vLLM reads the thresholds only for a timeline, whatever they say
	}
	itl, err := ParseITLThresholds(t.thresholds)
	if err != nil {
		return cliflag.Usagef("%v", err)
	}
	t.ITL = itl
	return nil
}

// ParseITLThresholds reads --timeline-itl-thresholds as vLLM does (two comma-separated
// numbers of milliseconds, spaces around them allowed), refusing also what would draw
// nonsense: a negative or non-finite bound, or a first bound over the second.
func ParseITLThresholds(s string) ([2]float64, error) {
	var out [2]float64
	bad := func(why string) ([2]float64, error) {
		return out, fmt.Errorf("--timeline-itl-thresholds %q: %s", textfmt.OneLine(s, 40), why)
	}
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return bad(fmt.Sprintf("want 2 comma-separated values in milliseconds, e.g. %s; got %d", DefaultITLThresholds, len(parts)))
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		switch {
		case err != nil:
			return bad(fmt.Sprintf("%q is not a number of milliseconds", textfmt.OneLine(strings.TrimSpace(p), 20)))
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			return bad("each value must be a finite number of milliseconds, 0 or more")
		}
		out[i] = v
	}
	if out[0] > out[1] {
		return bad("the first value must not exceed the second")
	}
	return out, nil
}

// drawn reports whether a figure of the run's requests is drawn.
func (t Timeline) drawn() bool { return t.On || t.Stats }

// suffixes are the figures' suffixes, each replacing the result file's extension.
func (t Timeline) suffixes() []string {
	var out []string
	if t.On {
		out = append(out, TimelineSuffix)
	}
	if t.Stats {
		out = append(out, DatasetStatsSuffix)
	}
	return out
}

// withSuffix replaces a path's extension as Python's Path.with_suffix does (vLLM's naming).
func withSuffix(path, suffix string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + suffix
}

// figureHint is what a refused figure path says to do.
const figureHint = "give --overwrite to replace it, or another --result-filename"

// timelineOutputs are the figures' paths, checked before the run as the results' are.
func (o *Options) timelineOutputs() []output {
	res := o.resultOutputs()
	var out []output
	for _, r := range res {
		if r.err != nil {
			out = append(out, r)
			continue
		}
		for _, s := range o.Timeline.suffixes() {
			out = append(out, output{path: withSuffix(r.path, s), opts: replaceable(o.Overwrite, figureHint)})
		}
	}
	return out
}

// timelineReq is what the timeline keeps of one measured request.
type timelineReq struct {
	index int
	start time.Time // when the time to first token counts from
	ttft  time.Duration
	itls  []time.Duration
	ok    bool
	// prompt and output are the request's tokens, for --plot-dataset-stats.
	prompt, output int
}

// timelineRun gathers one run's requests as they finish, from the request goroutines.
type timelineRun struct {
	mu   sync.Mutex
	reqs []timelineReq
}

func (t *timelineRun) add(r loadgen.Result) {
	if r.Warmup {
		return
	}
	start := r.Start
	if r.FromIntended && !r.Intended.IsZero() {
		start = r.Intended // a replay's TTFT counts from when the trace wanted it sent
	}
	q := timelineReq{index: r.Index, start: start, ok: r.OK(), prompt: r.PromptTokens}
	if q.ok { // a failed request's output counts 0, as in vLLM's output_lens
		q.ttft, q.itls, q.output = r.TTFT, append([]time.Duration(nil), r.ITLs...), r.OutputTokens
	}
	t.mu.Lock()
	t.reqs = append(t.reqs, q)
	t.mu.Unlock()
}

// sorted is the requests in their order in the run.
func (t *timelineRun) sorted() []timelineReq {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]timelineReq(nil), t.reqs...)
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out
}

// withTimeline adds a timeline to each run: gathered from its start, drawn when it is done.
func (b *Bench) withTimeline(start func(loadgen.RunInfo) ([]func(loadgen.Result), func()), done func(loadgen.SweepRun)) (func(loadgen.RunInfo) ([]func(loadgen.Result), func()), func(loadgen.SweepRun)) {
	var cur *timelineRun // runs are made one after another
	onStart := func(info loadgen.RunInfo) ([]func(loadgen.Result), func()) {
		cur = &timelineRun{}
		sinks, finish := start(info)
		return append(sinks, cur.add), finish
	}
	onDone := func(run loadgen.SweepRun) {
		done(run)
		if cur != nil {
			b.drawFigures(run, cur.sorted())
		}
	}
	return onStart, onDone
}

// drawFigures writes one run's figures beside its result file and says where, or why one
// could not be drawn.
func (b *Bench) drawFigures(run loadgen.SweepRun, reqs []timelineReq) {
	opts := b.o.SaveTo
	if run.Of > 1 {
		opts.Sweep = run.Param
	}
	result, err := loadgen.ResultPath(run.Info, opts)
	if b.saved != nil && b.saved() != "" {
		result = b.saved() // the result took another name: the figures go with it
	}
	if err != nil {
		b.plotFailed = true
		b.env.Say("cannot draw the figures: %s", textfmt.OneLine(err.Error(), 0))
		return
	}
	t, file := b.o.Timeline, replaceable(b.o.Overwrite, figureHint)
	for _, s := range t.suffixes() {
		path, what := withSuffix(result, s), "Timeline plot"
		if s == TimelineSuffix {
			err = writeTimeline(path, reqs, t.ITL, file)
		} else {
			what, err = "Dataset statistics plot", writeDatasetStats(path, reqs, file)
		}
		if err != nil {
			b.plotFailed = true
			b.env.Say("cannot draw the %s: %s", strings.ToLower(what), textfmt.OneLine(err.Error(), 0))
			continue
		}
		b.env.Note("%s saved to: %s", what, filepath.Clean(path))
	}
}
