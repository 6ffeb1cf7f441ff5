package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// defineSim is `vllmtop sim`: the simulated server in this process. It parses its own flags,
// as vllm serve's argparse does, and prints its own messages.
func defineSim(_ *pflag.FlagSet, e *env) runFunc {
	return func(ctx context.Context, args []string) error {
		return exitCode(serve.Main(ctx, args, e.stdout, e.stderr, e.getenv))
	}
}

// startSim is how the dashboard and `bench --sim` start the built-in simulator, so that both
// run it as vllmtop runs a real server: this executable as `vllmtop sim` with args, under a
// server.Supervisor, on loopback, at port (0: a free one, unless args give --port). The
// defaults ("--flag", "value" pairs) apply where args do not set those flags; model, the one
// the client asks for, is the simulated one unless args name a model or serve it under another
// name. The child asks for the key the client sends (none when key is ""). A bad command line,
// or a setting the simulator would refuse, fails here, before anything runs (what names the
// flags in the message). It returns the supervisor, not started, and the simulator's plan. It is
// a variable so that a test can see who calls it.
var startSim = func(args []string, model string, port int, key, what string, e *env, defaults ...string) (*server.Supervisor, *serve.Plan, error) {
	args, plan, err := prepareSim(args, model, what, e, defaults...)
	if err != nil {
		return nil, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	if port != 0 {
		args = server.EditArgs(args, server.Set("--port", strconv.Itoa(port)))
	}
	cmd, err := server.OnLoopback(append([]string{exe, "sim"}, args...))
	if err != nil {
		return nil, nil, err
	}
	sup, err := server.New(cmd, server.WithAPIKey(key))
	return sup, plan, err
}

// prepareSim completes the simulator's command line with defaults and model as startSim does
// and resolves it: the arguments and the plan, for the simulator run in-process.
func prepareSim(args []string, model, what string, e *env, defaults ...string) ([]string, *serve.Plan, error) {
	if _, named := server.ArgValue(args, "--served-model-name"); model != "" && !named {
		defaults = append(defaults, "--model", model) // after the default model: it wins
	}
	args, err := serve.WithDefaults(args, defaults...)
	if err != nil {
		return nil, nil, simError(err, what, e)
	}
	plan, err := serve.Prepare(args, e.getenv)
	if err != nil {
		return nil, nil, simError(err, what, e)
	}
	return args, plan, nil
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
