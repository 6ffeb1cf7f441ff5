package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// defineSim is `vllmtop sim`: the simulated server in this process. It parses its own flags,
// as vllm serve's argparse does, and prints its own messages.
func defineSim(_ *pflag.FlagSet, e *env) runFunc {
	return func(ctx context.Context, args []string) error {
		return exitCode(serve.Main(ctx, args, e.stdout, e.stderr, e.getenv))
	}
}

// launchError words an error of launch.Launch for a command that starts the simulator: one
// of its command line (what names where its flags came from) as simError does, others as
// they are.
func launchError(err error, what string, e *env) error {
	var bad *launch.ArgsError
	if errors.As(err, &bad) {
		return simError(bad.Err, what, e)
	}
	return err
}

// simError words an error of the simulator's command line for a command that starts it: its
// help (printed; exit 0), a bad flag or setting (exit 2), or the start-up failure vLLM would
// report (exit 1).
func simError(err error, what string, e *env) error {
	switch serve.ExitCode(err) {
	case 0:
		fmt.Fprint(e.stdout, serve.Help())
		return exitCode(0)
	case 2:
		return usagef("%s: %s", what, textfmt.OneLine(err.Error(), 0))
	}
	return fmt.Errorf("the simulated server failed to start: %s", textfmt.OneLine(err.Error(), 0))
}
