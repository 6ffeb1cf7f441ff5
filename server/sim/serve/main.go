package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// ShutdownGrace is how long in-flight requests may run on after SIGTERM before they are aborted.
const ShutdownGrace = 2 * time.Second

// Main runs `vllmtop sim` with args until ctx ends (SIGTERM/SIGINT) and returns the exit code:
// 0 after a clean shutdown, 1 when the engine fails to start (vLLM's error text on stdout),
// 2 for a bad command line (argparse's usage line and error on stderr).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	opts, err := ParseArgs(args, getenv)
	if err == nil && opts.PrintCapacity {
		return printCapacity(opts, args, getenv, stdout, stderr)
	}
	var invalid *ValidationError
	if errors.As(err, &invalid) && wantsCapacity(args) {
		// --print-capacity is our own report: one line, not vLLM's traceback.
		fmt.Fprintf(stderr, "vllmtop sim: error: %s\n", invalid.Short())
		return 2
	}
	inst, err := Start(ctx, args, getenv, WithLogs(stdout, stderr))
	if err != nil {
		writeStartError(err, stdout, stderr, true)
		return ExitCode(err)
	}
	if err := inst.Wait(); err != nil {
		fmt.Fprintf(stderr, "vllmtop sim: error: %v\n", err)
		return 1
	}
	return 0
}

// wantsCapacity reports whether args ask for --print-capacity.
func wantsCapacity(args []string) bool {
	for _, a := range args {
		if a == "--print-capacity" || strings.HasPrefix(a, "--print-capacity=") {
			return true
		}
	}
	return false
}

func unwrapSyscall(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

// writeStartError reports why the server did not start: help on stdout, a bad command line
// or configuration as one "vllmtop sim: error:" line on stderr, and vLLM's own failures as
// vLLM prints them (already in the log, unless logged is false: then on stdout).
func writeStartError(err error, stdout, stderr io.Writer, logged bool) {
	var help *HelpRequested
	var usage *UsageError
	var cfgErr *ConfigError
	var startErr *StartupError
	var invalid *ValidationError
	switch {
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.Text)
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "%s\nvllmtop sim: error: %s\n", usageLine, usage.Msg)
	case errors.As(err, &cfgErr):
		fmt.Fprintf(stderr, "vllmtop sim: error: %s\n", cfgErr.Msg)
	case errors.As(err, &startErr), errors.As(err, &invalid):
		if !logged {
			fmt.Fprintln(stdout, err)
		}
	default:
		fmt.Fprintf(stderr, "vllmtop sim: error: %v\n", err)
	}
}
