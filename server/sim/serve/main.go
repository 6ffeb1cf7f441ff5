package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/vlog"
)

// ShutdownGrace is how long in-flight requests may run on after SIGTERM before they are aborted.
const ShutdownGrace = 2 * time.Second

// Main runs `vllmtop sim` with args until ctx ends (SIGTERM/SIGINT) and returns the exit code:
// 0 after a clean shutdown, 1 when the engine fails to start (vLLM's error text on stdout),
// 2 for a bad command line (argparse's usage line and error on stderr).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	opts, err := ParseArgs(args, getenv)
	var help *HelpRequested
	var usage *UsageError
	var invalid *sim.ValidationError
	switch {
	case errors.As(err, &invalid):
		// A config class rejects the value as vLLM's pydantic configs do: a traceback, exit 1.
		pid := os.Getpid()
		vlog.New(stdout, stderr, time.Now, pid, pid).ConfigFailure(invalid)
		return 1
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.Text)
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "%s\nvllmtop sim: error: %s\n", usageLine, usage.Msg)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "vllmtop sim: error: %v\n", err)
		return 2
	}
	profiles, err := sim.LoadProfiles(opts.ProfilesPath)
	if err != nil {
		fmt.Fprintf(stderr, "vllmtop sim: error: %v\n", err)
		return 2
	}
	pid := os.Getpid()
	logs := vlog.New(stdout, stderr, time.Now, pid, pid)
	setup, err := sim.Resolve(opts.Engine, profiles)
	var cfgErr *sim.ConfigError
	var startErr *sim.StartupError
	switch {
	case errors.As(err, &cfgErr):
		fmt.Fprintf(stderr, "vllmtop sim: error: %s\n", cfgErr.Msg)
		return 2
	case errors.As(err, &startErr):
		logs.StartupFailure(startErr)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "vllmtop sim: error: %v\n", err)
		return 1
	}
	addr := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "vllmtop sim: error: cannot listen on %s: %v\n", addr, unwrapSyscall(err))
		return 1
	}
	srv := New(opts, setup, nil, logs)
	if err := srv.Run(ctx, ln, ShutdownGrace); err != nil {
		fmt.Fprintf(stderr, "vllmtop sim: error: %v\n", err)
		return 1
	}
	return 0
}

func unwrapSyscall(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}
