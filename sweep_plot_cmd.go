package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/app/sweepcli"
)

// splitKeys is a comma-separated list of keys; "" is none.
func splitKeys(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// plotFormat checks --format.
func plotFormat(f string) error {
	if f != "png" && f != "svg" {
		return usagef("--format %q: want png or svg", f)
	}
	return nil
}

// defineSweepPlot is `vllmtop sweep plot OUTPUT_DIR`.
func defineSweepPlot(fs *pflag.FlagSet, e *env) runFunc {
	var a sweepcli.PlotArgs
	var figBy, rowBy, colBy, curveBy, filterBy, binBy string
	fs.StringVar(&a.FigDir, "fig-dir", "", "The directory to save the figures in, relative to OUTPUT_DIR (default: OUTPUT_DIR)")
	fs.StringVar(&figBy, "fig-by", "", "Comma-separated keys: a figure per combination of their values")
	fs.StringVar(&rowBy, "row-by", "", "Comma-separated keys: a row per combination of their values")
	fs.StringVar(&colBy, "col-by", "", "Comma-separated keys: a column per combination of their values")
	fs.StringVar(&curveBy, "curve-by", "", "Comma-separated keys: a curve per combination of their values")
	fs.StringVar(&a.VarX, "var-x", "request_throughput", "The variable for the x-axis")
	fs.StringVar(&a.VarY, "var-y", "p99_e2el_ms", "The variable for the y-axis")
	fs.StringVar(&filterBy, "filter-by", "", "Comma-separated filters, e.g. max_concurrency<1000,max_num_batched_tokens<=4096")
	fs.StringVar(&binBy, "bin-by", "", "Comma-separated bins, e.g. request_throughput%1 (a bin size of 1)")
	fs.StringVar(&a.ScaleX, "scale-x", "", "The x-axis scale: log or sqrt (default linear)")
	fs.StringVar(&a.ScaleY, "scale-y", "", "The y-axis scale: log or sqrt (default linear)")
	fs.StringVar(&a.FigName, "fig-name", "FIGURE", "The figures' file name prefix; the group's values follow")
	fs.BoolVar(&a.DryRun, "dry-run", false, "Print each figure's group, grid and file; draw nothing")
	fs.StringVar(&a.Format, "format", "png", "png or svg (vllmtop's: vLLM writes PNG)")
	return func(_ context.Context, args []string) error {
		var err error
		if len(args) != 1 {
			return usagef("want one OUTPUT_DIR: the sweep's results")
		}
		a.OutputDir, a.FigBy, a.RowBy, a.ColBy, a.CurveBy = args[0], splitKeys(figBy), splitKeys(rowBy), splitKeys(colBy), splitKeys(curveBy)
		for _, sc := range []string{a.ScaleX, a.ScaleY} {
			if sc != "" && sc != "log" && sc != "sqrt" && sc != "linear" {
				return usagef("--scale-x/--scale-y %q: want log, sqrt or linear", sc)
			}
		}
		if a.Filters, err = sweepcli.ParseFilters(filterBy); err != nil {
			return usagef("--filter-by: %v", err)
		}
		if a.Bins, err = sweepcli.ParseBinners(binBy); err != nil {
			return usagef("--bin-by: %v", err)
		}
		if err := plotFormat(a.Format); err != nil {
			return err
		}
		return sweepcli.Plot(a, e.stdout)
	}
}

// defineSweepPareto is `vllmtop sweep plot_pareto OUTPUT_DIR`.
func defineSweepPareto(fs *pflag.FlagSet, e *env) runFunc {
	var a sweepcli.ParetoArgs
	var labelBy string
	fs.StringVar(&a.UserCountVar, "user-count-var", "max_concurrency", "Result key of the concurrent user count (else request_rate, else max_concurrent_requests)")
	fs.StringVar(&a.GPUCountVar, "gpu-count-var", "", "Result key of the GPU count (default: tensor x pipeline x data parallel size)")
	fs.StringVar(&labelBy, "label-by", "max_concurrency,gpu_count", "Comma-separated keys each point is labelled with")
	fs.BoolVar(&a.DryRun, "dry-run", false, "Print the figure to plot; draw nothing")
	fs.StringVar(&a.Format, "format", "png", "png or svg (vllmtop's: vLLM writes PNG)")
	return func(_ context.Context, args []string) error {
		if len(args) != 1 {
			return usagef("want one OUTPUT_DIR: the sweep's results")
		}
		if err := plotFormat(a.Format); err != nil {
			return err
		}
		a.OutputDir, a.LabelBy = args[0], splitKeys(labelBy)
		return sweepcli.PlotPareto(a, e.stdout)
	}
}

// defineSweepStartup is `vllmtop sweep startup`.
func defineSweepStartup(fs *pflag.FlagSet, e *env) runFunc {
	var c sweepcli.StartupConfig
	var startupCmd, serveParams, startupParams, clock string
	var readySec int
	fs.StringVar(&startupCmd, "startup-cmd", "vllm bench startup", "The startup benchmark's command: vllm bench startup FLAGS (run as vllmtop sim FLAGS)")
	fs.StringVar(&serveParams, "serve-params", "", "JSON file of server parameter combinations (keys vllm bench startup lacks are left out)")
	fs.StringVar(&startupParams, "startup-params", "", "JSON file of vllm bench startup parameter combinations")
	fs.BoolVar(&c.StrictParams, "strict-params", false, "Refuse unsupported keys in the parameter files rather than leave them out")
	fs.StringVarP(&c.OutputDir, "output-dir", "o", "results", "The directory results are written to")
	fs.StringVarP(&c.ExperimentName, "experiment-name", "e", "", "The experiment's directory in --output-dir (default: the time)")
	fs.IntVar(&c.NumRuns, "num-runs", 1, "Runs of each combination")
	fs.BoolVar(&c.ShowStdout, "show-stdout", false, "Print each run's mean cold and warm start-up")
	fs.BoolVar(&c.DryRun, "dry-run", false, "Print the commands and where results would go; run nothing")
	fs.BoolVar(&c.Resume, "resume", false, "Finish an experiment: skip the runs it has results for")
	fs.StringVar(&clock, "sim-clock", benchcli.ClockVirtual, "virtual: the start-up the simulator imitates (--sim-startup-seconds); wall: start each server and time it")
	fs.IntVar(&readySec, "server-ready-timeout", 300, "Seconds to wait for each server to become ready")
	return func(ctx context.Context, args []string) error {
		var err error
		switch {
		case len(args) > 0:
			return usagef("unexpected argument %q (the command goes in --startup-cmd)", args[0])
		case c.NumRuns < 1:
			return usagef("--num-runs should be at least 1")
		case clock != benchcli.ClockWall && clock != benchcli.ClockVirtual:
			return usagef("--sim-clock %q: want wall or virtual", clock)
		}
		if c.StartupCmd, err = sweepcli.SplitCommand(startupCmd); err != nil {
			return usagef("--startup-cmd: %v", err)
		}
		if _, _, err := sweepcli.StartupArgs(c.StartupCmd); err != nil {
			return usagef("%v", err)
		}
		if c.ServeParams, err = sweepcli.ReadParams(serveParams, "--serve-params"); err != nil {
			return usagef("%v", err)
		}
		if c.StartupParams, err = sweepcli.ReadParams(startupParams, "--startup-params"); err != nil {
			return usagef("%v", err)
		}
		say := func(s string) { e.note("%s", s) }
		for _, p := range []*[]sweepcli.Combo{&c.ServeParams, &c.StartupParams} {
			if *p, err = sweepcli.FilterStartupParams(*p, c.StrictParams, say); err != nil {
				return err
			}
		}
		c.Clock, c.ReadyTimeout, c.Getenv = clock, time.Duration(readySec)*time.Second, e.getenv
		return sweepcli.RunStartup(ctx, c, benchcli.Env{Stdout: e.stdout, Stderr: e.stderr, Say: e.say, Note: e.note})
	}
}
