package benchcli

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/internal/base/outfile"
	"github.com/vllmtop/vllmtop/loadgen"
)

// CheckOutputs checks, before any server is asked, every file the benchmark will write: its
// directory exists or can be made and takes files, and nothing the user made is at the path
// (unless --overwrite or --append-result says what to do with it). A path the flags make bad
// (one that exists, a link, a name out of --result-dir) is a *cliflag.UsageError; a directory
// that cannot be written is a plain error.
func (o *Options) CheckOutputs() error {
	for _, c := range o.outputs() {
		if err := c.check(); err != nil {
			return OutputError(err)
		}
	}
	return nil
}

// OutputError makes a refused output path a usage error (exit status 2), and leaves the
// system's errors (a directory that cannot be written: exit status 1) as they are.
func OutputError(err error) error {
	if outfile.Refused(err) {
		return cliflag.Usagef("%v", err)
	}
	return fmt.Errorf("cannot write the results: %w", err)
}

// PlotFile is how the plot is written: a file there is kept unless overwrite.
func PlotFile(overwrite bool) outfile.Options {
	return replaceable(overwrite, "give --overwrite to replace it, or another --plot")
}

func replaceable(overwrite bool, hint string) outfile.Options {
	o := outfile.Options{Hint: hint}
	if overwrite {
		o.Mode = outfile.Overwrite
	}
	return o
}

// output is one path to check, or an error found while listing them.
type output struct {
	path string
	opts outfile.Options
	err  error
}

func (c output) check() error {
	if c.err != nil {
		return c.err
	}
	return outfile.Check(c.path, c.opts)
}

// outputs lists the files the benchmark writes that are known before it runs.
func (o *Options) outputs() []output {
	var out []output
	if o.Plot != "" {
		out = append(out, output{path: o.Plot, opts: PlotFile(o.Overwrite)})
	}
	switch {
	case o.Search.On() && (o.Save || o.SaveTo.Dir != ""):
		base := cmp.Or(o.SaveTo.Dir, ".")
		opts := replaceable(o.Overwrite, "give --overwrite to replace it, or another --result-dir")
		out = append(out, output{path: filepath.Join(base, "summary.csv"), opts: opts})
		for _, slo := range o.Search.SLOs {
			out = append(out, output{path: filepath.Join(base, loadgen.SanitizeFilename("SLA--"+slo.Text("-")+".json")), opts: opts})
		}
		if !o.Overwrite {
			out = append(out, output{err: probesIn(base, o.Search.Variable)})
		}
	case o.Save:
		out = append(out, o.resultOutputs()...)
	}
	if o.Timeline.drawn() {
		out = append(out, o.timelineOutputs()...)
	}
	return out
}

// resultOutputs are the result files of --save-result: each run's with --result-filename, else
// one with vLLM's pattern for the directory (its name has the time of the run).
func (o *Options) resultOutputs() []output {
	r := o.Runs
	info := r.Info
	info.Date, info.ModelID, info.RequestRate = time.Now(), cmp.Or(o.Client.Model, "model"), r.Rates[0]
	if len(r.Concurrency) > 0 {
		info.MaxConcurrency = r.Concurrency[0]
	}
	opts := o.SaveTo
	values := r.Values()
	if len(values) > 1 {
		opts.Sweep = r.Param()
	}
	if opts.Filename == "" {
		values = values[:1]
	}
	var out []output
	for _, v := range values {
		if opts.Sweep == loadgen.SweepRequestRate {
			info.RequestRate = v
		} else if opts.Sweep != "" {
			info.MaxConcurrency = int(v)
		}
		path, err := loadgen.ResultPath(info, opts)
		out = append(out, output{path: path, opts: opts.File(), err: err})
	}
	return out
}

// probesIn refuses a directory that holds an earlier search's probes (VARIABLE=VALUE).
func probesIn(base, variable string) error {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil // missing: made by Check; unreadable: Check says so
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), variable+"=") {
			return fmt.Errorf("%s %w: an earlier search's probes; give --overwrite to replace them, or another --result-dir", filepath.Join(base, e.Name()), outfile.ErrExists)
		}
	}
	return nil
}
