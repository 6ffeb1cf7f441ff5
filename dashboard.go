package main

import (
	"context"
	"os"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/dashcli"
)

const dashboardAbout = `Benchmark and monitor a vLLM server from a terminal: the built-in simulator (its flags below),
the command after -- (supervised), or --attach URL. vllmtop waits until the server is ready,
drives streaming load at a concurrency or rate you change while it runs, and charts what the
client and the server's /metrics see. Press ? in the dashboard for its keys; without a
terminal, use vllmtop bench or vllmtop metrics URL.
`

// defineDashboard is `vllmtop [flags] [-- CMD...]`; its wiring is in internal/dashcli.
func defineDashboard(fs *pflag.FlagSet, e *env) runFunc {
	d := dashcli.Flags(fs)
	return func(ctx context.Context, args []string) error {
		before, after := splitDash(fs, args)
		if err := d.Finish(before, after, e.getenv); err != nil {
			return err
		}
		checked := func(err error, what string) error { return simErrorAs(err, what, "would not start", e) }
		if err := d.Check(checked); err != nil {
			return err
		}
		if !isTerminal(os.Stdout) || !isTerminal(os.Stdin) {
			return usagef("the dashboard needs a terminal; for scripts use 'vllmtop bench' (headless benchmark) or 'vllmtop metrics URL' (one parsed scrape)")
		}
		if err := d.Build(dashboardSim(e), e.say); err != nil {
			return err
		}
		return d.Run(ctx, e.getenv)
	}
}

// dashboardSim words the errors of the dashboard's simulator as bench --sim words its own.
func dashboardSim(e *env) dashcli.SimErrors {
	return func(err error, what string) error { return simError(err, what, e) }
}
