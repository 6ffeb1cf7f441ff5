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
// token and then each inter-token gap coloured by the thresholds.
type Timeline struct {
	On bool
	// ITL are the two bounds (milliseconds) between the fast, middling and slow gaps.
	ITL        [2]float64
	thresholds string
}

// defineTimeline adds --plot-timeline and --timeline-itl-thresholds.
func (o *Options) defineTimeline(fs *pflag.FlagSet) {
	t := &o.Timeline
	fs.BoolVar(&t.On, "plot-timeline", false, "Draw each request's timeline (time to first token, then each inter-token gap coloured by --timeline-itl-thresholds) to a PNG named as the result file with "+TimelineSuffix+" for its extension (vLLM writes .timeline.html)")
	fs.StringVar(&t.thresholds, "timeline-itl-thresholds", DefaultITLThresholds, "Two comma-separated inter-token latencies in milliseconds: the bounds between the timeline's green, orange and red gaps")
}

// finishTimeline reads the timeline's flags.
func (o *Options) finishTimeline(fs *pflag.FlagSet) error {
	t := &o.Timeline
	switch {
	case fs.Changed("timeline-itl-thresholds") && !t.On:
		return cliflag.Usagef("--timeline-itl-thresholds colours --plot-timeline: give it too")
	case t.On && o.Search.On():
		return cliflag.Usagef("--plot-timeline draws a run's requests; an SLO search draws its curve with --plot")
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

// timelinePath is where a run's timeline goes: its result file's path, the extension
// replaced as vLLM's Path.with_suffix replaces it.
func (o *Options) timelinePath(info loadgen.RunInfo, sweep string) (string, error) {
	opts := o.SaveTo
	opts.Sweep = sweep
	p, err := loadgen.ResultPath(info, opts)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(p, filepath.Ext(p)) + TimelineSuffix, nil
}

// timelineOutputs are the timelines' paths, checked before the run as the results' are.
func (o *Options) timelineOutputs() []output {
	res := o.resultOutputs()
	out := make([]output, 0, len(res))
	opts := replaceable(o.Overwrite, "give --overwrite to replace it, or another --result-filename")
	for _, r := range res {
		if r.err != nil {
			out = append(out, r)
			continue
		}
		out = append(out, output{path: strings.TrimSuffix(r.path, filepath.Ext(r.path)) + TimelineSuffix, opts: opts})
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
	q := timelineReq{index: r.Index, start: start, ok: r.OK()}
	if q.ok {
		q.ttft, q.itls = r.TTFT, append([]time.Duration(nil), r.ITLs...)
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
			b.drawTimeline(run, cur.sorted())
		}
	}
	return onStart, onDone
}

// drawTimeline writes one run's timeline and says where, or why it could not.
func (b *Bench) drawTimeline(run loadgen.SweepRun, reqs []timelineReq) {
	sweep := ""
	if run.Of > 1 {
		sweep = run.Param
	}
	path, err := b.o.timelinePath(run.Info, sweep)
	if err == nil {
		opts := replaceable(b.o.Overwrite, "give --overwrite to replace it, or another --result-filename")
		err = writeTimeline(path, reqs, b.o.Timeline.ITL, opts)
	}
	if err != nil {
		b.plotFailed = true
		b.env.Say("cannot draw the timeline: %s", textfmt.OneLine(err.Error(), 0))
		return
	}
	b.env.Note("Timeline plot saved to: %s", filepath.Clean(path))
}
