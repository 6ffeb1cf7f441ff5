package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/dashcli"
	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// TestMain lets the test binary stand in for vllmtop when a test starts it as a child: the
// simulator that bench --sim and the dashboard supervise is this executable run as
// `vllmtop sim`.
func TestMain(m *testing.M) {
	if os.Getenv("VLLMTOP_TEST_AS_VLLMTOP") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Setenv("VLLMTOP_TEST_AS_VLLMTOP", "1")
	os.Setenv("GORACE", "atexit_sleep_ms=0") // a race-built child would sleep a second at exit
	os.Unsetenv("COLUMNS")                   // help and reports are laid out as for a pipe: 100 columns
	os.Exit(m.Run())
}

// runVllmtop runs a command line and returns its exit status, stdout and stderr.
func runVllmtop(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Both bench --sim and the dashboard start the simulator through the launcher, as a supervised
// `vllmtop sim` child that asks for the key the client sends, which is never on its command
// line.
func TestBenchAndDashboardStartTheSimulatorTheSameWay(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "client-key")
	t.Setenv("VLLM_API_KEY", "another-key")
	var sups []*launch.Server
	stop := launch.Watch(func(s launch.Spec, srv *launch.Server) {
		assert.Equal(t, "client-key", s.APIKey, "the simulator asks for the key the client sends")
		sups = append(sups, srv)
	})
	t.Cleanup(stop)

	code, out, errOut := runVllmtop("bench", "--sim", "--sim-speed", "50", "--num-prompts", "3", "--random-input-len", "8", "--random-output-len", "2")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "3", benchTableValue(t, out, "Successful requests:"), "served with the client's key")

	fs := pflag.NewFlagSet("vllmtop", pflag.ContinueOnError)
	d := dashcli.Flags(fs)
	require.NoError(t, fs.Parse([]string{"--sim-speed", "50"}))
	require.NoError(t, d.Finish(nil, nil, os.Getenv))
	require.NoError(t, d.Build(dashboardSim(&env{getenv: os.Getenv, prog: "vllmtop"}), nil))
	t.Cleanup(func() { _ = d.Close() })
	require.NotNil(t, d.Deps().Capacity, "the simulator's capacity model for the what-if table")

	require.Len(t, sups, 2, "one launch each")
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, srv := range sups {
		args := srv.Sup.Args()
		assert.Equal(t, []string{exe, "sim"}, args[:2], "this executable as vllmtop sim")
		port, _ := server.ArgValue(args, "--port")
		assert.NotEmpty(t, port, "on a port of its own")
		assert.Regexp(t, `^http://127\.0\.0\.1:\d+$`, server.BaseURL(args), "on loopback")
		assert.NotContains(t, strings.Join(args, " "), "client-key")
	}
	assert.Contains(t, sups[1].Args, "meta-llama/Llama-3.1-8B-Instruct", "the dashboard's default model")
	assert.Same(t, d.Deps().Supervisor, sups[1].Sup)
}

// bench --sim, on either clock, and sweep, on either clock, go through the launcher; a key
// on the simulator's command line goes to its environment, not its argv.
func TestBenchAndSweepLaunchThroughTheLauncher(t *testing.T) {
	benchNoKeys(t)
	var modes []launch.Mode
	var args [][]string
	stop := launch.Watch(func(s launch.Spec, srv *launch.Server) {
		modes, args = append(modes, s.Mode), append(args, srv.Args)
	})
	t.Cleanup(stop)
	t.Setenv("OPENAI_API_KEY", "s3cret")
	short := []string{"--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "2"}
	code, _, errOut := runVllmtop(append([]string{"bench", "--sim", "--sim-args", "--api-key s3cret --sim-speed 50"}, short...)...)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = runVllmtop(append([]string{"bench", "--sim", "--sim-clock", "virtual"}, short...)...)
	require.Equal(t, 0, code, errOut)
	out := t.TempDir()
	for _, clock := range []string{"wall", "virtual"} {
		code, stdout, errOut := runVllmtop(append([]string{"sweep", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-speed 50 --sim-startup-seconds 0",
			"--sim-clock", clock, "--num-runs", "1", "-o", out, "-e", clock}, short...)...)
		require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	}
	assert.Equal(t, []launch.Mode{launch.Child, launch.Virtual, launch.Child, launch.Virtual}, modes)
	assert.NotContains(t, strings.Join(args[0], " "), "s3cret", "the key is in the child's environment")
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, exe, args[2][0], "the sweep runs vllmtop sim as this executable")
}

// Every flag a command accepts is in its help, which is made from its flag set.
func TestHelpListsEveryFlag(t *testing.T) {
	root := newRoot(&env{getenv: os.Getenv})
	for _, c := range append([]*cobra.Command{root}, root.Commands()...) {
		if c.Name() == "sim" {
			continue // its help is the simulator's own, checked below
		}
		code, out, errOut := runVllmtop(strings.Fields("help " + strings.TrimPrefix(c.CommandPath(), "vllmtop"))...)
		require.Equal(t, 0, code, errOut)
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return // vllm serve's flags the simulator only accepts: vllmtop help sim names them
			}
			assert.Contains(t, out, "--"+f.Name+" ", "%s --help lists --%s", c.CommandPath(), f.Name)
		})
	}
	code, out, _ := runVllmtop("help", "sim")
	require.Equal(t, 0, code)
	assert.Equal(t, serve.Help(), out)
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		// A --no-x of a flag accepted without simulation goes with its --x.
		assert.Contains(t, out, "--"+strings.TrimPrefix(f.Name, "no-"))
	})

	code, out, _ = runVllmtop("help", "bench")
	require.Equal(t, 0, code)
	for _, want := range []string{"usage: vllmtop bench", "--burstiness", "--random-range-ratio", "--seed", "--sim-port",
		"Simulator flags", "--sim-gpu string", "(default \"H100\")", "--gpu-memory-utilization", "Exit status:"} {
		assert.Contains(t, out, want)
	}
	code2, out2, _ := runVllmtop("bench", "--help")
	assert.Equal(t, code, code2)
	assert.Equal(t, out, out2, "bench --help is vllmtop help bench")
}

func TestCompletionAndVersion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runVllmtop("completion", shell)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "vllmtop", shell)
	}
	code, out, _ := runVllmtop("completion", "--help")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "Generate the autocompletion script", "cobra's own commands keep cobra's help")
	code, out, errOut := runVllmtop("__complete", "bench", "--max-c")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "--max-concurrency")
	code, out, _ = runVllmtop("__complete", "bench", "--sim-g")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "--sim-gpu", "the simulator's flags complete too")

	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ = runVllmtop(args...)
		assert.Equal(t, 0, code)
		assert.Equal(t, "vllmtop "+version+"\n", out)
	}
}

// Errors are one line with the command's prefix; usage errors say where the help is.
func TestOneErrorStyle(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--theme", "neon"}, 2, `vllmtop: --theme "neon": choose one of`},
		{[]string{"stray"}, 2, `vllmtop: unexpected argument "stray": not a command`},
		{[]string{"stray", "--sim"}, 2, `vllmtop: unexpected argument "stray": not a command`},
		{[]string{"bnch", "--sim"}, 2, `vllmtop: unexpected argument "bnch": not a command; did you mean "bench"? (see vllmtop help)`},
		{[]string{"metrcs"}, 2, `vllmtop: unexpected argument "metrcs": not a command; did you mean "metrics"?`},
		{[]string{"bench", "--bogus"}, 2, "vllmtop bench: unknown flag: --bogus (see vllmtop help bench)"},
		{[]string{"bench", "--max-concurrency", "0"}, 2, `vllmtop bench: --max-concurrency "0": want a positive integer`},
		{[]string{"metrics"}, 2, "vllmtop metrics: no URL given"},
		{[]string{"metrics", "--window", "five", "http://x"}, 2, `vllmtop metrics: invalid value "five" for --window (a duration with its unit: 30s, 5m, 1h30m) (see vllmtop help metrics)`},
		{[]string{"metrics", "http://127.0.0.1:1"}, 1, "vllmtop metrics: http://127.0.0.1:1/metrics: "},
		{[]string{"completion", "tcsh"}, 2, `vllmtop: completion: no script for the shell "tcsh"; choose one of bash, fish, powershell, zsh`},
		// The simulator's flags are checked before the dashboard asks for a terminal.
		{[]string{"--sim-gpu", "H101"}, 2, `vllmtop: simulator: unknown GPU "H101" (did you mean H100-SXM-80GB?)`},
		{[]string{"--model", "foo/bar"}, 2, `vllmtop: simulator: unknown model "foo/bar"`},
		{[]string{"--sim-args", "--sim-gpu H101"}, 2, `vllmtop: --sim-args: unknown GPU "H101"`},
		{[]string{"--sim-vllm-version", "0.7.3"}, 2, `vllmtop: simulator: argument --sim-vllm-version: 0.7.3 ran the V0 engine`},
		{[]string{"--gpu-memory-utilization", "1.5"}, 1, `vllmtop: the simulated server would not start: gpu_memory_utilization must be less than or equal to 1`},
	} {
		code, out, errOut := runVllmtop(c.args...)
		assert.Equal(t, c.code, code, "%v", c.args)
		assert.Empty(t, out, "%v", c.args)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		assert.True(t, strings.HasPrefix(errOut, c.want), "%v: %q", c.args, errOut)
	}
}

// vllmtop help names an unknown command rather than printing the root's help.
func TestHelpOfAnUnknownCommand(t *testing.T) {
	code, out, errOut := runVllmtop("help", "nosuch")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "vllmtop help: no command \"nosuch\" (see vllmtop help)\n", errOut)
	code, out, _ = runVllmtop("help", "metrics")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: vllmtop metrics URL")
}

func TestHelpCommandListFitsTheFlags(t *testing.T) {
	code, out, _ := runVllmtop("help")
	require.Equal(t, 0, code)
	cmds := out[strings.Index(out, "Commands:"):strings.Index(out, "Flags:")]
	for _, l := range strings.Split(cmds, "\n") {
		assert.LessOrEqual(t, len([]rune(l)), 100, "as wide as the flags below it at most: %q", l)
	}
}

// At 80 columns help fits, but for its example command lines, which are kept whole to be
// copied: pflag leaves the rest of a description on one line after a word longer than its
// column (--dataset-path's list of formats ran to 160), and the usage line, the command
// lists and the notes are written for 100.
func TestHelpFitsEightyColumns(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	for _, cmd := range [][]string{{"help", "bench"}, {"help", "sweep"}, {"help", "metrics"}, {"help", "sim"}, {"--help"}} {
		code, out, errOut := runVllmtop(cmd...)
		require.Equal(t, 0, code, errOut)
		flags, examples := 0, false
		for _, line := range strings.Split(out, "\n") {
			switch {
			case line == "Examples:":
				examples = true
			case line == "":
				examples = false
			}
			if strings.HasPrefix(strings.TrimLeft(line, " "), "--") {
				flags++
			}
			if !examples {
				assert.LessOrEqual(t, len([]rune(line)), 80, "%v: %q", cmd, line)
			}
		}
		assert.Greater(t, flags, 5, "%v lists its flags", cmd)
	}
}
