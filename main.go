// Command vllmtop benchmarks and monitors vLLM servers from a terminal.
//
// This file is the command table: each command's name, summary, help and the function that
// defines its flags and returns its run. The commands' wiring is in dashboard.go (and
// internal/dashcli) and the *_cmd.go files, their flag types in internal/cliflag; what they do
// is in the libraries (loadgen, scrape, server, server/sim/serve, tui).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/serve"

	"github.com/vllmtop/vllmtop/internal/base/termwidth"
)

// version is the release version; builds may override it with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// command is one entry of the command table. define adds the command's flags to fs and returns
// the function that runs it with the arguments the flags leave.
type command struct {
	name          string // "" is vllmtop itself: the dashboard
	usage         string // what follows the name on the help's first line
	summary       string // its line in vllmtop's list of commands
	about, footer string // the help's text above and below the flags
	define        func(fs *pflag.FlagSet, e *env) runFunc
	raw           bool      // it parses its own arguments (vllmtop sim, as vllm serve does)
	gather        []string  // flags that take several values, as vLLM's argparse (nargs="+")
	subs          []command // its subcommands (vllmtop sweep serve, ...); the command runs without one
}

type runFunc func(ctx context.Context, args []string) error

var commands = []command{
	{name: "", usage: "[flags] [-- vllm serve MODEL [vllm flags]]", summary: "the dashboard", about: dashboardAbout,
		define: defineDashboard, gather: []string{"--goodput"}},
	{name: "bench", usage: "[--base-url URL | --sim [simulator flags]] [flags] [-- simulator flags]",
		summary: "headless benchmark with vllm bench serve's flags, table and result files", about: benchAbout,
		footer: benchFooter, define: defineBench, gather: []string{"--goodput", "--metadata", "--header", "--lora-modules"}},
	{name: "metrics", usage: "URL [flags]", summary: "one /metrics scrape, parsed (two with --window: rates, quantiles)",
		about: metricsAbout, define: defineMetrics},
	{name: "sweep", usage: "--serve-cmd CMD [--serve-params FILE] [--bench-params FILE] [--sla-params JSON] [flags]",
		summary: "serve sweeps and SLO searches as vllm bench sweep serve, a server per setting",
		about:   sweepAbout, footer: sweepFooter, define: defineSweep, gather: []string{"--goodput", "--metadata"}, subs: sweepSubs},
	{name: "sim", usage: "[MODEL] [vllm serve flags]", summary: "the simulated vLLM server on its own, a drop-in for vllm serve",
		define: defineSim, raw: true},
	{name: "version", summary: "print the version", define: defineVersion},
}

// env is what every command gets: its output streams, the environment, and its name for the
// one prefix its messages carry ("vllmtop bench: ...").
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	prog           string
}

// say writes one message line with the command's prefix, note one line of information
// ("Model: ..."); both pass sanitize.Message: no control character from a server reaches the
// terminal, and no password or query value of a URL, whoever built the message.
func (e *env) say(format string, a ...any) { e.note("%s: %s", e.prog, fmt.Sprintf(format, a...)) }

func (e *env) note(format string, a ...any) {
	fmt.Fprintln(e.stderr, sanitize.Message(fmt.Sprintf(format, a...)))
}

// usageError is a bad command line: exit status 2.
type usageError = cliflag.UsageError

func usagef(format string, a ...any) error { return cliflag.Usagef(format, a...) }

// exitCode ends a command with that status (0 too); what needed saying was said.
type exitCode int

func (c exitCode) Error() string { return "exit status " + strconv.Itoa(int(c)) }

func main() {
	server.MaybeRunKeeper() // in the keeper role this never returns; see package server
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line and returns the exit status: 0 done, 1 it could not be done, 2 a
// bad command line. The first SIGINT, SIGTERM or SIGHUP (a closed terminal) ends the command's
// context (a benchmark then reports what finished, the dashboard stops the load and the server);
// a second one ends the process.
func run(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: os.Getenv, prog: "vllmtop"}
	args = vllmSpelling(args)
	root := newRoot(e)
	if err := unknownCommand(root, args); err != nil {
		e.say("%s (see vllmtop help)", err.Msg)
		return 2
	}
	root.SetArgs(gatherValues(vllmArgs(root, args)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	context.AfterFunc(ctx, stop)
	cmd, err := root.ExecuteContextC(ctx)
	if cmd != nil {
		e.prog = cmd.CommandPath()
	}
	var code exitCode
	var bad *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.Is(err, benchcli.ErrFailed): // a benchmark that said what went wrong
		return 1
	case errors.As(err, &bad):
		where := strings.TrimPrefix(e.prog, "vllmtop")
		if where == " help" {
			where = ""
		}
		e.say("%s (see vllmtop help%s)", bad.Msg, where)
		return 2
	}
	e.say("%s", textfmt.OneLine(err.Error(), 0))
	return 1
}

// vllmSpelling reads vLLM's "bench sweep ..." as "sweep ...", so that a vllm bench sweep
// command line runs with vllm replaced by vllmtop ("bench serve" is bench's own spelling).
func vllmSpelling(args []string) []string {
	if len(args) >= 2 && args[0] == "bench" && args[1] == "sweep" {
		return append([]string{"sweep"}, args[2:]...)
	}
	return args
}

// newRoot builds the command tree from the table; cobra adds help and completion.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{Use: "vllmtop", Version: version, SilenceErrors: true, SilenceUsage: true}
	root.SetVersionTemplate("vllmtop {{.Version}}\n")
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	cobraHelp := root.HelpFunc() // for the commands cobra adds (completion), which inherit the root's
	for _, entry := range commands {
		c := root
		if entry.name != "" {
			c = &cobra.Command{Use: entry.name, Short: entry.summary}
			root.AddCommand(c)
		}
		attach(c, root, entry, e, cobraHelp)
		for _, sub := range entry.subs {
			sc := &cobra.Command{Use: sub.name, Short: sub.summary}
			c.AddCommand(sc)
			attach(sc, root, sub, e, cobraHelp)
		}
	}
	strictHelp(root)
	return root
}

// attach gives c the entry's flags, run and help.
func attach(c, root *cobra.Command, entry command, e *env, cobraHelp func(*cobra.Command, []string)) {
	c.Args = cobra.ArbitraryArgs
	c.DisableFlagParsing = entry.raw
	c.Flags().SortFlags = false
	runCmd := entry.define(c.Flags(), e)
	c.RunE = func(c *cobra.Command, args []string) error {
		e.prog = c.CommandPath()
		if err := cliflag.NoNaN(c.Flags()); err != nil {
			return err
		}
		return runCmd(c.Context(), args)
	}
	c.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c.Name() != entry.name && c != root {
			cobraHelp(c, args)
			return
		}
		fmt.Fprint(e.stdout, help(c, entry))
	})
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{Msg: cliflag.Message(err)} })
}

// unknownCommand refuses a first word that names no command before any flag is parsed, so a
// typo says so (and what was meant) rather than failing on the first flag the root lacks.
func unknownCommand(root *cobra.Command, args []string) *usageError {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil
	}
	root.InitDefaultCompletionCmd() // cobra adds it only when the tree runs
	if root.SuggestionsMinimumDistance <= 0 {
		root.SuggestionsMinimumDistance = 2
	}
	if c, _, err := root.Find(args[:1]); err == nil && c != root {
		return unknownShell(c, args[1:])
	}
	if strings.HasPrefix(args[0], "__") { // cobra's hidden completion commands
		return nil
	}
	msg := fmt.Sprintf("unexpected argument %q: not a command", args[0])
	if s := root.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	} else {
		msg += " (vllmtop help lists them); a server command goes after --"
	}
	return &usageError{Msg: msg}
}

// unknownShell refuses `vllmtop completion SHELL` for a shell cobra writes no script for: its
// completion command would print its help and succeed.
func unknownShell(c *cobra.Command, rest []string) *usageError {
	if c.Name() != "completion" || len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return nil
	}
	var shells []string
	for _, sc := range c.Commands() {
		if sc.Name() == rest[0] {
			return nil
		}
		if sc.IsAvailableCommand() {
			shells = append(shells, sc.Name())
		}
	}
	return &usageError{Msg: fmt.Sprintf("completion: no script for the shell %q; choose one of %s", sanitize.Message(rest[0]), strings.Join(shells, ", "))}
}

// strictHelp makes `vllmtop help NAME` refuse a name that is no command: cobra's own help
// takes it for the root's argument and prints the root's help.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	h, _, err := root.Find([]string{"help"})
	if err != nil || h.Name() != "help" {
		return
	}
	show := h.Run
	h.Run = nil
	h.RunE = func(c *cobra.Command, args []string) error {
		if _, rest, err := root.Find(args); err != nil || len(rest) > 0 {
			return usagef("no command %q", strings.Join(args, " "))
		}
		show(c, args)
		return nil
	}
}

// help is a command's help, generated from its flag set.
func help(c *cobra.Command, entry command) string {
	if entry.raw {
		return serve.Help()
	}
	var b strings.Builder
	// The texts are written for 100 columns; a narrower terminal gets them reflowed.
	width := termwidth.Stdout()
	narrow := width < termwidth.Max
	fit := func(line string, indent int) string {
		if narrow {
			return textfmt.Hang(line, width, indent)
		}
		return line
	}
	about, footer := entry.about, entry.footer
	if narrow {
		about, footer = textfmt.Wrap(about, width)+"\n", textfmt.FitProse(footer, width)
	}
	usage := fmt.Sprintf("usage: %s %s", c.CommandPath(), entry.usage)
	fmt.Fprintf(&b, "%s\n\n%s", fit(usage, len("usage: ")+len(c.CommandPath())+1), about)
	if entry.name == "" {
		b.WriteString("\nCommands:\n")
		for _, cmd := range commands[1:] {
			b.WriteString(fit(fmt.Sprintf("  vllmtop %-9s %s", cmd.name, cmd.summary), 20) + "\n")
		}
		b.WriteString(fit("  vllmtop help CMD  a command's flags; vllmtop completion SHELL: bash, zsh, fish or powershell", 20) + "\n")
	}
	if len(entry.subs) > 0 {
		b.WriteString("\nSubcommands:\n")
		for _, sub := range entry.subs {
			b.WriteString(fit(fmt.Sprintf("  %s %-14s %s", c.CommandPath(), sub.name, sub.summary), len(c.CommandPath())+18) + "\n")
		}
	}
	b.WriteString(cliflag.Usage(c.Flags()))
	if footer != "" {
		b.WriteString("\n" + footer)
	}
	return b.String()
}

// gatherValues prepares a command line for parsing (see cliflag.Gather) with its command's
// flags that take several values.
func gatherValues(args []string) []string {
	for _, c := range commands {
		if c.name != "" && len(args) > 0 && c.name == args[0] {
			return cliflag.Gather(args, c.gather)
		}
	}
	return cliflag.Gather(args, commands[0].gather)
}

// splitDash splits a command's arguments at --: before it, positional arguments; after it, a
// server command or the simulator's flags (nil when there is no --).
func splitDash(fs *pflag.FlagSet, args []string) (before, after []string) {
	if n := fs.ArgsLenAtDash(); n >= 0 {
		return args[:n], args[n:]
	}
	return args, nil
}

// isTerminal reports whether f is a terminal: the dashboard needs one, and bench draws its
// progress bar on one.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

func defineVersion(_ *pflag.FlagSet, e *env) runFunc {
	return func(context.Context, []string) error {
		fmt.Fprintf(e.stdout, "vllmtop %s\n", version)
		return nil
	}
}
