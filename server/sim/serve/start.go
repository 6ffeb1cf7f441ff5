package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/vlog"
)

// This file is the simulator's facade: how the rest of vllmtop starts it, checks its command
// line, or asks what capacity it would have, without reaching into the engine.

// ConfigError is a setting the simulator cannot simulate (an unknown model or GPU, a profiles
// file it cannot read): a bad command line, exit status 2.
type ConfigError = sim.ConfigError

// StartupError is a setting vLLM itself refuses at start-up (no memory left for the KV cache,
// a context longer than the model's), with vLLM's message: exit status 1.
type StartupError = sim.StartupError

// ValidationError is a value vLLM's config classes reject (a flag out of its field's range),
// with pydantic's message: exit status 1, as vLLM fails.
type ValidationError = sim.ValidationError

// Plan is a simulator command line, parsed and resolved: what Start would run.
type Plan struct {
	opts     *Options
	profiles *sim.Profiles
	setup    *sim.Setup
}

// Prepare parses args as `vllmtop sim` does (getenv supplies VLLM_API_KEY and
// VLLM_ALLOW_LONG_MAX_MODEL_LEN) and resolves the engine's settings and capacity. Errors are
// *HelpRequested, *UsageError (argparse's kind), *ConfigError, *ValidationError or
// *StartupError.
func Prepare(args []string, getenv func(string) string) (*Plan, error) {
	plan, _, err := prepare(args, getenv)
	return plan, err
}

// prepare is Prepare that also returns the parsed options when resolving fails, for the
// start-up lines a failed start-up prints first.
func prepare(args []string, getenv func(string) string) (*Plan, *Options, error) {
	opts, err := ParseArgs(args, getenv)
	if err != nil {
		return nil, nil, err
	}
	profiles, err := loadProfiles(opts, getenv)
	if err != nil {
		return nil, opts, err
	}
	setup, err := sim.Resolve(opts.Engine, profiles)
	if err != nil {
		return nil, opts, err
	}
	return &Plan{opts: opts, profiles: profiles, setup: setup}, opts, nil
}

// servedVersion refuses to serve as a release of the V0 engine (before 0.8): the server's
// logs, endpoints and /metrics are the V1 engine's, and would claim a V1 engine of that
// release. Prepare and --print-capacity plan those releases. A version that does not parse is
// left to the engine's own check.
func servedVersion(version string) error {
	v, err := sim.ParseVersion(version)
	if err != nil || v.V1Engine() {
		return nil
	}
	return &UsageError{fmt.Sprintf("argument --sim-vllm-version: %s ran the V0 engine, whose logs and /metrics the simulated server does not imitate; it serves as 0.8 to %s (--print-capacity plans the memory of releases from 0.2)", version, sim.NewestMinor())}
}

// Served is servedVersion for a prepared plan: an error where the plan's release cannot be
// served (a V0 release), for the virtual clock, which runs the engine without Start.
func (p *Plan) Served() error { return servedVersion(p.setup.VLLMVersion) }

// ExitCode is the status `vllmtop sim` ends with for an error of Prepare or Start: 0 for a
// help request, 2 for a bad command line or setting, 1 for anything else (what vLLM itself
// refuses once it runs: a ValidationError, a StartupError).
func ExitCode(err error) int {
	var help *HelpRequested
	var usage *UsageError
	var cfg *ConfigError
	switch {
	case errors.As(err, &help):
		return 0
	case errors.As(err, &usage), errors.As(err, &cfg):
		return 2
	}
	return 1
}

// DataParallelSize is the number of engines the server runs (--data-parallel-size).
func (p *Plan) DataParallelSize() int { return max(1, p.opts.DataParallelSize) }

// Model is the simulated model's name (the --model or positional value).
func (p *Plan) Model() string { return p.setup.Model }

// Multimodal reports whether the simulated model takes images (and audio or video) in chat
// messages; a text-only one refuses them as vLLM does.
func (p *Plan) Multimodal() bool { return p.setup.ModelProfile.IsMultimodal() }

// GPU is the simulated GPU profile's name.
func (p *Plan) GPU() string { return p.setup.GPUProfile.Name }

// Cards is the GPU with the parallel layout across cards, as a header says it:
// "H100-SXM-80GB", or "H100-SXM-80GB, TP 2 x PP 2".
func (p *Plan) Cards() string {
	var parts []string
	for _, d := range []struct {
		name string
		n    int
	}{{"DP", p.opts.DataParallelSize}, {"TP", p.setup.TensorParallelSize}, {"PP", p.setup.PipelineParallelSize}} {
		if d.n > 1 {
			parts = append(parts, fmt.Sprintf("%s %d", d.name, d.n))
		}
	}
	if len(parts) == 0 {
		return p.GPU()
	}
	return p.GPU() + ", " + strings.Join(parts, " x ")
}

// Speed is --sim-speed: simulated seconds per wall-clock second.
func (p *Plan) Speed() float64 { return p.opts.Speed }

// StartupTime is how long, on the wall clock, the server imitates loading before /health
// answers 200.
func (p *Plan) StartupTime() time.Duration {
	return time.Duration(p.opts.StartupSeconds / p.opts.Speed * float64(time.Second))
}

// CapacityAt predicts the KV cache (tokens, and the concurrency of max-model-len requests it
// holds) the same simulated server would have with --gpu-memory-utilization util. The error is
// the *StartupError vLLM would stop with at that utilisation.
func (p *Plan) CapacityAt(util float64) (tokens int, maxConcurrency float64, err error) {
	cfg := p.opts.Engine
	cfg.GPUMemoryUtilization = util
	return capacityAt(cfg, p.profiles)
}

// WithDefaults returns args with defaults ("--flag", "value" pairs) put before them for each
// flag args do not set; a positional model counts as --model. Errors are ParseArgs's.
func WithDefaults(args []string, defaults ...string) ([]string, error) {
	opts, err := ParseArgs(args, emptyEnv)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, nv := range opts.NonDefault {
		set[nv.Key] = true
	}
	set["model"] = set["model"] || set["model_tag"]
	var out []string
	for i := 0; i+1 < len(defaults); i += 2 {
		if !set[strings.ReplaceAll(strings.TrimLeft(defaults[i], "-"), "-", "_")] {
			out = append(out, defaults[i], defaults[i+1])
		}
	}
	return append(out, args...), nil
}

// Flags returns the simulator's flags (vllm serve's and --sim-*), bound to values nobody reads,
// for a command that accepts them on its own command line and passes them on.
func Flags() *pflag.FlagSet { return usage().Flags }

// Help is `vllmtop sim --help`.
func Help() string { return usage().Text }

func usage() *HelpRequested {
	_, err := ParseArgs([]string{"--help"}, emptyEnv)
	var help *HelpRequested
	if !errors.As(err, &help) {
		panic("serve: --help was not a help request")
	}
	return help
}

func emptyEnv(string) string { return "" }

// StartOption configures Start.
type StartOption func(*startConfig)

type startConfig struct {
	stdout, stderr io.Writer
	ln             net.Listener
	clock          sim.Clock
	grace          time.Duration
}

// WithLogs writes vLLM's log lines (start-up, stats, access, failures) to stdout and stderr.
func WithLogs(stdout, stderr io.Writer) StartOption {
	return func(c *startConfig) { c.stdout, c.stderr = stdout, stderr }
}

// WithListener serves on ln instead of listening on --host and --port.
func WithListener(ln net.Listener) StartOption { return func(c *startConfig) { c.ln = ln } }

// WithClock drives the engine on c (a *sim.VirtualClock in tests) instead of the wall clock.
func WithClock(c sim.Clock) StartOption { return func(s *startConfig) { s.clock = c } }

// WithGrace lets in-flight requests run on for d after Stop instead of ShutdownGrace (0 keeps
// ShutdownGrace): a test's servers stop at once.
func WithGrace(d time.Duration) StartOption { return func(s *startConfig) { s.grace = d } }

// Instance is a simulated vLLM server started by Start.
type Instance struct {
	plan   *Plan
	srv    *Server
	url    string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Start prepares args (see Prepare), listens on --host and --port (127.0.0.1:8000 unless they
// say otherwise) and serves in the background until ctx ends or Stop. With WithLogs, a start-up
// failure or a rejected value is logged as vLLM logs it before Start returns its error.
func Start(ctx context.Context, args []string, getenv func(string) string, opts ...StartOption) (*Instance, error) {
	var cfg startConfig
	for _, o := range opts {
		o(&cfg)
	}
	var logs, failures *vlog.Logger
	if cfg.stdout != nil {
		pid := os.Getpid()
		logs = vlog.New(cfg.stdout, cfg.stderr, time.Now, pid, pid)
		failures = logs
		// The release names the processes in every line, a failed start-up's included, and
		// with data parallelism the first engine's lines carry its rank.
		v, dp := namingArgs(args, getenv)
		logs.UseRelease(v)
		if dp > 1 {
			failures = logs.DPRank(0)
		}
	}
	if o, err := ParseArgs(args, getenv); err == nil {
		if err := servedVersion(o.Engine.VLLMVersion); err != nil {
			return nil, err
		}
	}
	plan, parsed, err := prepare(args, getenv)
	var startErr *StartupError
	var invalid *ValidationError
	switch {
	case logs == nil:
	case errors.As(err, &startErr) && parsed != nil:
		failures.FailedStartup(startErr, loggedArgs(parsed), parsed.StartupSeconds)
	case errors.As(err, &startErr):
		failures.StartupFailure(startErr)
	case errors.As(err, &invalid):
		logs.ConfigFailure(invalid)
	}
	if err != nil {
		return nil, err
	}
	ln := cfg.ln
	if ln == nil {
		addr := net.JoinHostPort(plan.opts.Host, strconv.Itoa(plan.opts.Port))
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("cannot listen on %s: %v", addr, unwrapSyscall(err))
		}
	}
	if cfg.grace <= 0 {
		cfg.grace = ShutdownGrace
	}
	i := &Instance{plan: plan, srv: New(plan.opts, plan.setup, cfg.clock, logs), url: "http://" + ln.Addr().String(),
		done: make(chan struct{})}
	var runCtx context.Context
	runCtx, i.cancel = context.WithCancel(ctx)
	go func() {
		defer close(i.done)
		i.err = i.srv.Run(runCtx, ln, cfg.grace)
	}()
	return i, nil
}

// URL is the server's base URL, e.g. http://127.0.0.1:8000.
func (i *Instance) URL() string { return i.url }

// Plan is what the instance runs.
func (i *Instance) Plan() *Plan { return i.plan }

// Ready reports whether the imitated model load is over and /health answers 200.
func (i *Instance) Ready() bool { return i.srv.Ready() }

// Wait blocks until the server has shut down (its context ended, or Stop) and returns why it
// failed, if it did.
func (i *Instance) Wait() error {
	<-i.done
	return i.err
}

// Stop shuts the server down as SIGTERM does (in-flight requests get ShutdownGrace) and waits.
func (i *Instance) Stop() error {
	i.cancel()
	return i.Wait()
}

// ServedModel is the model name clients ask for: the first --served-model-name, else --model.
func (p *Plan) ServedModel() string {
	if len(p.opts.ServedModelNames) > 0 {
		return p.opts.ServedModelNames[0]
	}
	return p.setup.Model
}

// Capacity is the memory plan vLLM would log at start-up: weights, activation peak, KV cache
// bytes, blocks, tokens and the maximum concurrency of max-model-len requests.
func (p *Plan) Capacity() sim.Capacity { return p.setup.Capacity }

// MaxModelLen is the context length the server accepts (prompt plus output).
func (p *Plan) MaxModelLen() int { return p.setup.MaxModelLen }

// Setup is the resolved engine configuration, for a caller that drives an engine of its own on
// simulated time (see NewEngine).
func (p *Plan) Setup() *sim.Setup { return p.setup }

// NewEngine builds a fresh engine with the plan's settings, as Start's server builds its own:
// for running the simulated GPU in-process on a virtual clock, without HTTP.
func (p *Plan) NewEngine() *sim.Engine { return sim.NewEngine(p.setup) }

// PromptIDs are the token ids the server computes for text sent as a completions prompt, or
// with chat as one user message with the generation prompt, as /v1/completions and
// /v1/chat/completions (and /tokenize) compute them.
func PromptIDs(text string, chat bool) []int {
	if chat {
		content, _ := json.Marshal(text)
		return chatPrompt([]chatMessage{{Role: "user", Content: content}}, true)
	}
	return sim.Tokenize(text)
}

// ChatIDs are the token ids the server computes for a chat request's messages, given as
// role and content pairs, with the generation prompt, as /v1/chat/completions computes them.
func ChatIDs(roles, contents []string) []int {
	msgs := make([]chatMessage, len(roles))
	for i := range roles {
		content, _ := json.Marshal(contents[i])
		msgs[i] = chatMessage{Role: roles[i], Content: content}
	}
	return chatPrompt(msgs, true)
}

// TokenStrings is the text of each token of PromptIDs(text, false), as /tokenize returns it.
func TokenStrings(text string) []string { return sim.TokenStrings(text) }

// namingArgs is the release and the data-parallel size a command line asks for, as the log's
// process names need them: from the parsed options, or, where the command line is rejected
// (a value out of range), from its --sim-vllm-version and --data-parallel-size as written.
func namingArgs(args []string, getenv func(string) string) (sim.Version, int) {
	if opts, err := ParseArgs(args, getenv); err == nil {
		if v, err := sim.ParseVersion(opts.Engine.VLLMVersion); err == nil {
			return v, opts.DataParallelSize
		}
	}
	v := sim.MustVersion(sim.DefaultVersion)
	if w, err := sim.ParseVersion(flagValue(args, "--sim-vllm-version")); err == nil {
		v = w
	}
	dp, _ := strconv.Atoi(flagValue(expandShortAliases(args), "--data-parallel-size"))
	return v, dp
}

// flagValue is the last value args give flag, as "--flag value" or "--flag=value", or "".
func flagValue(args []string, flag string) string {
	v := ""
	for i, a := range args {
		switch {
		case a == "--":
			return v
		case a == flag && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, flag+"="):
			v = a[len(flag)+1:]
		}
	}
	return v
}
