package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/server/sim"
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
	return simErrorAs(err, what, "failed to start", e)
}

// simErrorAs is simError with the verb of a start-up failure: "would not start" where the
// settings were only checked.
func simErrorAs(err error, what, failed string, e *env) error {
	switch serve.ExitCode(err) {
	case 0:
		fmt.Fprint(e.stdout, serve.Help())
		return exitCode(0)
	case 2:
		return usagef("%s: %s", what, textfmt.OneLine(err.Error(), 0))
	}
	what = "the simulated server"
	msg := err.Error()
	var startErr *serve.StartupError
	var invalid *sim.ValidationError
	switch {
	case errors.As(err, &startErr) && startErr.Setup != nil:
		// The model and card may be defaults the user never typed: name them.
		what = fmt.Sprintf("the simulated server (%s on %s)", startErr.Setup.Model, startErr.Setup.GPUProfile.Name)
	case errors.As(err, &invalid):
		msg = invalid.Short() // the rule broken, without pydantic's wrapping
		if invalid.Model != "" {
			what = fmt.Sprintf("the simulated server (%s on %s)", invalid.Model, invalid.GPU)
		}
	}
	return fmt.Errorf("%s %s: %s", what, failed, textfmt.OneLine(msg, 0))
}
