package benchcli

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/loadgen/curve"
)

// Search runs one SLO search against the benchmark's server; each probe, as it ends, is
// printed on one line, saved under base when base is not "", and handed to onProbe. extra
// fields (a sweep's server settings) are added to each probe's documents.
func (b *Bench) Search(ctx context.Context, slo loadgen.SLO, base string, extra []loadgen.Field, onProbe func(loadgen.SLOProbe)) (loadgen.SLOResult, error) {
	s := b.o.Search
	search := loadgen.SLOSearch{Variable: s.Variable, SLO: slo, Max: loadgen.SLOMaxValue} // a rate of 65536 is sent as inf
	if s.Variable == loadgen.SLOConcurrency {
		search.Max = max(1, b.o.Runs.NumPrompts) // everything at once: as many slots as prompts
	}
	search.OnDiscard = func(d loadgen.SLODiscard) {
		fmt.Fprintln(b.env.Stdout, DiscardLine(search, d))
		// The retry opens fresh connections: one kept from before a restart may be reset
		// under its first request.
		for _, c := range b.clients {
			c.CloseIdleConnections()
		}
		if b.onDiscard != nil {
			b.onDiscard(d)
		}
	}
	fmt.Fprintf(b.env.Stdout, "SLA criteria: %s\n", slo.Text(", "))
	probe := func(ctx context.Context, value int, phase string) ([]loadgen.ResultDoc, error) {
		return b.probe(ctx, search, value, phase, extra)
	}
	var saveErr error
	res, err := loadgen.SearchSLO(ctx, search, probe, func(p loadgen.SLOProbe) {
		fmt.Fprintln(b.env.Stdout, ProbeLine(search, p))
		if base != "" && saveErr == nil {
			saveErr = loadgen.SaveSLOProbe(base, s.Variable, p)
		}
		if onProbe != nil {
			onProbe(p)
		}
	})
	if err == nil {
		err = saveErr
	}
	return res, err
}

// probe makes the runs of one value.
func (b *Bench) probe(ctx context.Context, s loadgen.SLOSearch, value int, phase string, extra []loadgen.Field) ([]loadgen.ResultDoc, error) {
	cfg := b.o.Runs
	n := cfg.NumPrompts
	switch s.Variable {
	case loadgen.SLOConcurrency:
		// Even the top probe turns its slots over: one wave alone would flatter it.
		cfg.Concurrency = []int{value}
		n = max(n, b.o.Search.MinRequests, 4*value)
	default: // a burst of everything at once gives the rate to start from
		rate := float64(value)
		if value >= s.Max {
			rate = math.Inf(1)
		}
		cfg.Rates = []float64{rate}
		if phase != "max" {
			n = max(n, b.o.Search.MinRequests)
		}
	}
	cfg.NumPrompts, cfg.Info.NumPrompts = n, n
	b.env.Note("Testing %s: %d (%d requests)", s.Variable, value, n)
	var docs []loadgen.ResultDoc
	for k := 0; k < b.o.Search.NumRuns; k++ {
		cfg.Workload = loadgen.Offset(b.o.Runs.Workload, b.offset) // fresh prompts: no prefix-cache carry-over
		b.offset += n + cfg.Warmups
		cfg.OnStart = b.progress(cfg, false)
		var run *loadgen.SweepRun
		if err := loadgen.Sweep(ctx, b.client, cfg, func(r loadgen.SweepRun) { run = &r }); err != nil && ctx.Err() == nil {
			return docs, err
		}
		if run == nil || run.Interrupted {
			return docs, ctx.Err()
		}
		run.Release() // a probe's document has no per-request arrays (see finishSearch)
		if why := probeHealth(run.Summary); why != "" {
			return nil, loadgen.Discard("%s", why) // the server's state, not the load, made these numbers
		}
		switch {
		case run.Stopped != "":
			// Its statistics cover a run that did not happen as asked: the search ends here.
			return docs, fmt.Errorf("%s=%d: %s", s.Variable, value, run.Stopped)
		case run.Summary.Completed == 0:
			return docs, fmt.Errorf("%s=%d: no request succeeded: %s", s.Variable, value, loadgen.FailureSummary(run.Summary.FailuresByClass))
		}
		doc := run.Doc.Set("run_number", k)
		for _, f := range extra {
			doc = doc.Set(f.Key, f.Value)
		}
		docs = append(docs, doc.Set(s.Variable, value))
	}
	return docs, nil
}

// MaxProbeErrorShare is the share of a probe's requests that may fail because the server was
// unreachable or answered 5xx before the probe is discarded: its latencies are a restart's.
const MaxProbeErrorShare = 0.05

// serverFailures are the failure classes of a server that is down, restarting or cut off,
// as against requests the server refuses (400, 404: the same on every try).
var serverFailures = []loadgen.ErrorClass{loadgen.ErrConnect, loadgen.ErrReset, loadgen.ErrTimeout, loadgen.ErrHTTP5xx, loadgen.ErrTruncated}

// probeHealth says why a run cannot be scored ("" when it can): more than
// MaxProbeErrorShare of its requests failed as a server that is not there fails.
func probeHealth(s loadgen.Summary) string {
	bad := 0
	for _, c := range serverFailures {
		bad += s.FailuresByClass[c]
	}
	total := s.Completed + s.Failed
	if bad == 0 || float64(bad) <= MaxProbeErrorShare*float64(total) {
		return ""
	}
	return fmt.Sprintf("%d of %d requests failed (%s): the server was unreachable or restarting", bad, total, loadgen.FailureSummary(s.FailuresByClass))
}

// DiscardLine is a discarded probe on one line.
func DiscardLine(s loadgen.SLOSearch, d loadgen.SLODiscard) string {
	return fmt.Sprintf("%-22s  discarded (try %d of %d, not scored): %s", s.Variable+"="+strconv.Itoa(d.Value), d.Try, retries(s)+1, d.Reason)
}

func retries(s loadgen.SLOSearch) int {
	if s.Retries == 0 {
		return loadgen.DefaultSLORetries
	}
	return max(s.Retries, 0)
}

// ProbeLine is one probe on one line: the value, each criterion's metric and bound, the
// throughput, and whether it passed.
func ProbeLine(s loadgen.SLOSearch, p loadgen.SLOProbe) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s", s.Variable+"="+strconv.Itoa(p.Value))
	for _, c := range s.SLO {
		fmt.Fprintf(&b, "  %s=%.2f (%s%s)", c.Metric, p.Means[c.Metric], c.Op, strconv.FormatFloat(c.Target, 'f', -1, 64))
	}
	out, rps := mean(p.Docs, "output_throughput"), mean(p.Docs, "request_throughput")
	verdict := "PASSED"
	if !p.Passed() {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "  %9.2f tok/s  %7.2f req/s  %s", out, rps, verdict)
	return b.String()
}

// mean averages a numeric key over documents.
func mean(docs []loadgen.ResultDoc, key string) float64 {
	sum := 0.0
	for _, d := range docs {
		v, _ := d.Get(key)
		switch x := v.(type) {
		case loadgen.PyFloat:
			sum += float64(x)
		case int:
			sum += float64(x)
		}
	}
	return sum / math.Max(1, float64(len(docs)))
}

// searchAll is `vllmtop bench --sla`: each constraint set's search, the curve, the knee, and
// the files in --result-dir when saving.
func (b *Bench) searchAll(ctx context.Context) error {
	base := ""
	if b.o.Save || b.o.SaveTo.Dir != "" {
		base = b.o.SaveTo.Dir
		if base == "" {
			base = "."
		}
	}
	var records []loadgen.ResultDoc
	var chart curve.Chart
	var failure string // said last, after the files: the line that ends the command
	probed := false
	for _, slo := range b.o.Search.SLOs {
		fmt.Fprintln(b.env.Stdout, "[SLA START]")
		res, err := b.Search(ctx, slo, base, nil, nil)
		if len(res.Probes) > 0 { // else there is no curve, and no knee to name: the error says why
			probed = true
			chart = Chart(b.o.Search.Variable, slo, b.card.ID, []Curve{{Name: b.card.ID, Result: res}})
			fmt.Fprintln(b.env.Stdout)
			PrintCurve(b.env.Stdout, loadgen.SLOSearch{Variable: b.o.Search.Variable, SLO: slo}, res)
			fmt.Fprintln(b.env.Stdout)
			fmt.Fprint(b.env.Stdout, curve.Text(chart, 72, 14))
			fmt.Fprintln(b.env.Stdout, loadgen.KneeLine(b.o.Search.Variable, res.Knee))
			if res.Knee == 0 && err == nil {
				b.env.Say("no %s met the SLO: every probe failed it", b.o.Search.Variable)
			}
		}
		fmt.Fprintln(b.env.Stdout, "[SLA END]")
		if base != "" {
			docs, serr := loadgen.SaveSLOResult(base, loadgen.SLOSearch{Variable: b.o.Search.Variable, SLO: slo}, res)
			records = append(records, docs...)
			if serr != nil && err == nil {
				err = serr
			}
		}
		if err != nil {
			failure = textfmt.OneLine(err.Error(), 0)
			if ctx.Err() != nil {
				failure = "interrupted; the curve covers the probes that finished"
			}
			break
		}
	}
	if base != "" && len(records) > 0 {
		path, err := loadgen.SaveSummaryCSV(base, records)
		if err != nil {
			b.env.Say("cannot save the summary: %s", textfmt.OneLine(err.Error(), 0))
			return ErrFailed
		}
		b.env.Note("Saved %d probe runs to %s", len(records), path)
	}
	if b.o.Plot != "" && probed {
		if err := curve.Save(b.o.Plot, chart); err != nil {
			b.env.Say("cannot draw the plot: %s", textfmt.OneLine(err.Error(), 0))
			return ErrFailed
		}
		b.env.Note("Plot: %s", filepath.Clean(b.o.Plot))
	}
	if failure != "" {
		b.env.Say("%s", failure)
		return ErrFailed
	}
	return nil
}

// PrintCurve writes the probes ordered by value, the knee marked: the curve as a table.
func PrintCurve(w io.Writer, s loadgen.SLOSearch, r loadgen.SLOResult) {
	fmt.Fprintf(w, "%-22s", s.Variable)
	for _, c := range s.SLO {
		fmt.Fprintf(w, "  %14s", c.Metric)
	}
	fmt.Fprintf(w, "  %12s  %9s  %s\n", "output tok/s", "req/s", "SLA")
	for _, p := range r.ByValue() {
		mark := "met"
		if !p.Passed() {
			mark = "not met"
		}
		if p.Value == r.Knee {
			mark += "  <- knee"
		}
		fmt.Fprintf(w, "%-22d", p.Value)
		for _, c := range s.SLO {
			fmt.Fprintf(w, "  %14.2f", p.Means[c.Metric])
		}
		fmt.Fprintf(w, "  %12.2f  %9.2f  %s\n", mean(p.Docs, "output_throughput"), mean(p.Docs, "request_throughput"), mark)
	}
}

// Curve is one server setting's search, for a chart.
type Curve struct {
	Name   string
	Result loadgen.SLOResult
}

// Chart is the searches' curves: output throughput against the first criterion's metric, one
// series per setting ordered by the tuned value, each knee marked, the SLO's bound as a line.
func Chart(variable string, slo loadgen.SLO, title string, curves []Curve) curve.Chart {
	y := slo[0]
	c := curve.Chart{Title: title, XLabel: "output throughput (tok/s)", YLabel: y.Metric, SLO: y.Target, SLOLabel: y.String()}
	for _, cv := range curves {
		s := curve.Series{Name: cv.Name, Knee: -1}
		for _, p := range cv.Result.ByValue() {
			if p.Value == cv.Result.Knee {
				s.Knee = len(s.Points)
			}
			s.Points = append(s.Points, curve.Point{X: mean(p.Docs, "output_throughput"), Y: p.Means[y.Metric], Label: ValueLabel(variable, p.Value)})
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// ValueLabel names a tuned value: "C=48", "12 req/s".
func ValueLabel(variable string, v int) string {
	if variable == loadgen.SLORate {
		return strconv.Itoa(v) + " req/s"
	}
	return "C=" + strconv.Itoa(v)
}
