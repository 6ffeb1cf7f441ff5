// Package dashcli is the dashboard's command line and wiring: its flags, the server it starts,
// supervises or attaches to, the load and the scraper it gives the UI, and the order in which
// they start and stop.
package dashcli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/internal/app/recorder"
	"github.com/vllmtop/vllmtop/internal/base/outfile"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/themes"
	"github.com/vllmtop/vllmtop/tui"
)

// The simulated server the dashboard starts when given no server: the defaults of the
// simulator's flags, as "--flag", "value" pairs, where the user's flags do not set them.
var SimDefaults = []string{"--model", defaultSimModel, "--sim-gpu", defaultSimGPU, "--sim-startup-seconds", "2"}

const (
	defaultSimModel = "meta-llama/Llama-3.1-8B-Instruct"
	defaultSimGPU   = "H100-SXM-80GB"
)

// gcPercent is the dashboard's garbage-collection target (GOGC) unless the environment sets
// one. Its live heap is mostly the buffers and goroutines of the streams in flight, which stay;
// the default of 100 lets the heap grow to twice that between collections (110 MB resident at
// 1,000 streams). A fifth keeps it near the live heap (under 80 MB) for about a collection a
// second at that load, some 20 ms of CPU each.
const gcPercent = 20

// memoryLimit is the dashboard's soft limit on the Go runtime's memory (GOMEMLIMIT) unless the
// environment sets one. At 1,000 streams the runtime holds some 66 MB (25 MB of live heap, 22
// MB of goroutine stacks, the rest free spans it keeps), and the resident set crept towards it
// as pages were touched; near the limit the runtime returns free spans to the system and
// collects sooner, so the resident set stays flat. It is soft: a larger live heap is allowed,
// at the cost of more frequent collections.
const memoryLimit = 60 << 20

// Dashboard is a parsed `vllmtop` command line and what it runs, so that every exit path can
// stop it in order.
type Dashboard struct {
	loadCfg     loadgen.SessionConfig
	dataset     loadgen.DatasetConfig // --dataset-name and the replay flags
	deps        tui.Deps
	attach      string
	simArgsFlag string
	simFlags    []string // the simulator's flags given directly
	simArgs     []string // --sim-args and simFlags
	command     []string // after --
	sup         *server.Supervisor
	load        *loadgen.Session
	sla         string
	getenv      func(string) string
	fl          fleetOptions // the fleet's sources, the config file, canary and recorder
	flags       *pflag.FlagSet
}

// SimErrors words an error of the simulator's command line (a *launch.ArgsError) for the user,
// as bench --sim words its own; what says where the flags came from.
type SimErrors func(err error, what string) error

// Sayer writes one message line to the user.
type Sayer func(format string, a ...any)

// Flags defines the dashboard's flags: the load's (named as vllm bench serve names
// them), the view's, and the simulator's.
func Flags(fs *pflag.FlagSet) *Dashboard {
	o := &Dashboard{flags: fs}
	l, c := &o.loadCfg, &o.loadCfg.Client
	fs.StringVar(&o.attach, "attach", "", "monitor a running server at this URL (read-only until space starts load); several URLs: a fleet")
	fs.IntVar(&l.Concurrency, "max-concurrency", 4, "requests in flight (closed loop); with --request-rate, also the open loop's cap for the session, as in vllm bench serve")
	fs.Float64Var(&l.Rate, "request-rate", 0, "start in rate mode at this many requests/s")
	fs.Float64Var(&l.Burstiness, "burstiness", 1, "gamma shape of inter-arrival times in rate mode (1 = Poisson)")
	fs.StringVar(&c.Endpoint, "endpoint", loadgen.EndpointCompletions, "API path: /v1/completions or /v1/chat/completions")
	fs.StringVar(&c.Model, "model", "", "model name for requests (default: the server's first model); the simulated model too")
	fs.IntVar(&l.Short.InputLen, "random-input-len", 256, "prompt tokens (short prompts)")
	fs.IntVar(&l.Short.OutputLen, "random-output-len", 128, "output tokens")
	fs.IntVar(&l.Long.InputLen, "long-input-len", 4096, "prompt tokens of the long-prompt workload (p)")
	fs.Float64Var(&l.Short.RangeRatio, "random-range-ratio", 0, "lengths uniform in [L(1-r), L(1+r)]")
	fs.Int64Var(&l.Seed, "seed", 0, "seed for prompts and arrivals")
	fs.StringVar(&l.Record, "record", "", "write every result to this JSONL file as it finishes (a file there is refused)")
	fs.BoolVar(&l.RecordOverwrite, "overwrite", false, "replace the --record file if it exists")
	fs.Var(cliflag.Goodput(&l.Goodput), "goodput", `service-level objectives in ms, e.g. "ttft:200 tpot:50": the Runs view adds goodput`)
	fs.StringVar(&o.deps.Theme, "theme", themes.Default, "colours: "+strings.Join(themes.Names(), ", ")+" (NO_COLOR is honoured)")
	fs.DurationVar(&o.deps.ScrapeInterval, "metrics-interval", time.Second, "how often /metrics is scraped")
	fs.StringVar(&c.APIKey, "api-key", "", "API key (default: OPENAI_API_KEY, else VLLM_API_KEY); a server vllmtop starts asks for it")
	cliflag.AddClient(fs, c)
	fs.IntVar(&l.PrefixLen, "prefix-len", loadgen.DefaultSharedPrefixLen, "tokens of the shared system prompt P toggles (the prefix-caching demo)")
	fs.StringVar(&o.dataset.Name, "dataset-name", loadgen.DatasetRandom, "random, or a trace to replay (burstgpt, mooncake), or conversations with --multi-turn (sharegpt, random)")
	fs.StringVar(&o.dataset.Path, "dataset-path", "", "the BurstGPT CSV, Mooncake JSONL or ShareGPT JSON file")
	cliflag.AddReplay(fs, &o.dataset.Trace, &o.dataset.MultiTurn)
	fs.StringVar(&o.simArgsFlag, "sim-args", "", `the simulator's flags in one string, e.g. "--sim-gpu L4 Qwen/Qwen2.5-0.5B-Instruct"`)
	cliflag.AddSim(fs, &o.simFlags, map[string]string{"sim-gpu": defaultSimGPU, "sim-startup-seconds": "2", "port": "0"})
	fs.StringVar(&o.sla, "sla", "", `the SLO of the search (S) and the sweep (W) keys, as bench takes it, e.g. "p99_ttft_ms<=500" (none: S asks)`)
	fs.Float64SliceVar(&o.deps.SweepUtils, "sweep-utils", nil, "the --gpu-memory-utilization values the sweep key (W) restarts with (default: the current value and 0.05 either side)")
	fs.IntVar(&o.deps.Tune.ProbeRequests, "probe-requests", 48, "completed requests each probe of a search measures, after its warm-up")
	fs.StringVar(&o.deps.ExportDir, "export-dir", "", "where the export key (E) writes its CSV and JSON (default: the current directory)")
	o.fleetFlags(fs)
	return o
}

// changed reports whether the command line gave the flag.
func (o *Dashboard) changed(name string) bool { return o.flags != nil && o.flags.Changed(name) }

// Finish completes the options from the arguments the flags left (before and after --) and
// checks them. Its errors are *cliflag.UsageError.
func (o *Dashboard) Finish(before, after []string, getenv func(string) string) error {
	o.simArgs = append(strings.Fields(o.simArgsFlag), o.simFlags...)
	l := &o.loadCfg
	_, themeKnown := themes.ByName(o.deps.Theme)
	switch {
	case len(before) > 0 && o.attach == "":
		return cliflag.Usagef("unexpected argument %q: not a command (vllmtop help lists them); a server command goes after --", before[0])
	case after != nil && len(after) == 0:
		return cliflag.Usagef("nothing after --: give the server command, e.g. vllmtop -- vllm serve MODEL")
	case o.attach != "" && after != nil:
		return cliflag.Usagef("--attach and a command after -- cannot be combined")
	case len(o.simArgs) > 0 && (o.attach != "" || after != nil):
		return cliflag.Usagef("--sim-args and the simulator's flags are for the built-in simulator, not with --attach or a command after --")
	case !themeKnown:
		return cliflag.Usagef("--theme %q: choose one of %s", o.deps.Theme, strings.Join(themes.Names(), ", "))
	case l.Concurrency < 0:
		return cliflag.Usagef("--max-concurrency %d: want 0 (no load until + starts it; with --request-rate, no cap) or more", l.Concurrency)
	case l.Rate < 0 || o.changed("request-rate") && !(l.Rate > 0):
		return cliflag.Usagef("--request-rate %g: want a positive rate in requests/s (leave it out for the closed loop)", l.Rate)
	case l.Short.InputLen < 1:
		return cliflag.Usagef("--random-input-len %d: want at least 1 token", l.Short.InputLen)
	case l.Short.OutputLen < 1:
		return cliflag.Usagef("--random-output-len %d: want at least 1 token", l.Short.OutputLen)
	case l.Long.InputLen < 1:
		return cliflag.Usagef("--long-input-len %d: want at least 1 token", l.Long.InputLen)
	case o.deps.ScrapeInterval < 100*time.Millisecond:
		return cliflag.Usagef("--metrics-interval %s: want at least 100ms", o.deps.ScrapeInterval)
	case o.deps.Tune.ProbeRequests < 1:
		return cliflag.Usagef("--probe-requests must be at least 1")
	}
	if err := o.finishTuning(); err != nil {
		return err
	}
	o.getenv = getenv
	o.command, o.deps.InitialConc, o.deps.InitialRate = after, l.Concurrency, l.Rate
	if l.Rate > 0 && l.Concurrency > 0 && o.changed("max-concurrency") {
		l.MaxInFlight = l.Concurrency // vllm bench serve caps a rate so; 0 is no cap there too
		o.deps.RateCap = l.MaxInFlight
	}
	o.deps.Goodput, o.deps.LiveWindow, o.deps.NoColor = l.Goodput, loadgen.DefaultLiveWindow, getenv("NO_COLOR") != ""
	o.deps.PrefixLen, o.deps.Burstiness = l.PrefixLen, l.Burstiness
	l.Long.OutputLen, l.Long.RangeRatio = l.Short.OutputLen, l.Short.RangeRatio
	if l.Client.APIKey == "" {
		l.Client.APIKey = loadgen.APIKeyFromEnv(getenv)
	}
	if err := o.finishDataset(); err != nil {
		return err
	}
	return o.finishFleet(before, getenv)
}

// Check reports what Build would refuse of the built-in simulator's flags, starting nothing,
// so that a bad flag is named even where the dashboard cannot run.
func (d *Dashboard) Check(words SimErrors) error {
	if d.attach != "" || d.fleetMode() {
		return nil
	}
	spec, what := d.simSpec()
	if d.command != nil {
		spec, what = launch.Spec{Command: d.command, Getenv: d.getenv}, "the command after --"
	}
	err := launch.Check(spec)
	var bad *launch.ArgsError
	if errors.As(err, &bad) && words != nil {
		return words(bad.Err, what)
	}
	return err
}

// simSpec is the built-in simulator's launch and the name its flag errors go by: --sim-args
// where the user gave it, the simulator otherwise (its flags are the dashboard's own).
func (d *Dashboard) simSpec() (launch.Spec, string) {
	c := d.loadCfg.Client
	spec := launch.Spec{Command: launch.Sim(d.simArgs...), APIKey: c.APIKey, Getenv: d.getenv, Defaults: SimDefaults, Model: c.Model}
	switch {
	case d.simArgsFlag != "" && len(d.simFlags) > 0:
		return spec, "simulator (its flags and --sim-args)"
	case d.simArgsFlag != "":
		return spec, "--sim-args"
	}
	return spec, "simulator"
}

// Build makes the server's supervisor, the load and the scraper.
func (d *Dashboard) Build(words SimErrors, say Sayer) error {
	d.warnConfig(say)
	if err := d.checkOutputs(); err != nil {
		return err
	}
	if d.fleetMode() {
		return d.buildFleet()
	}
	err := d.server(words, say)
	if err != nil {
		return err
	}
	// The flight recorder keeps the client's recent results for its bundle.
	d.fl.results = recorder.NewResults(0)
	cfg := d.loadCfg
	cfg.Sinks = append(cfg.Sinks[:len(cfg.Sinks):len(cfg.Sinks)], d.fl.results.Add)
	if d.load, err = loadgen.NewSession(cfg); err != nil {
		return err
	}
	c := d.loadCfg.Client
	opts := []scrape.Option{scrape.WithAPIKey(c.APIKey), scrape.WithCAFile(c.CAFile)}
	if c.Insecure {
		opts = append(opts, scrape.WithInsecureSkipVerify())
	}
	scr, err := scrape.NewClient(c.BaseURL, opts...)
	d.deps.Supervisor, d.deps.Load, d.deps.Scraper, d.deps.Workload = d.sup, d.load, scr, d.load.WorkloadName()
	d.wireCapacity()
	if err != nil {
		return err
	}
	return d.singleOnCall(scr)
}

// server makes the supervisor (attached to --attach, of the command after --, or of the
// built-in simulator) and points the load at it.
func (d *Dashboard) server(words SimErrors, say Sayer) error {
	c := d.loadCfg.Client
	spec := launch.Spec{Command: d.command, APIKey: c.APIKey, Getenv: d.getenv}
	what := "the command after --"
	switch {
	case d.attach != "":
		url := strings.TrimRight(d.attach, "/")
		d.deps.Mode, d.deps.Target, d.deps.StartPaused, d.deps.RestartDisabled = tui.ModeAttach, sanitize.URL(url), true, true
		d.loadCfg.Client.BaseURL = url
		var err error
		d.sup, err = server.Attach(url)
		return err
	case d.command != nil:
		d.deps.Mode = tui.ModeSupervise
	default:
		d.deps.Mode = tui.ModeSimulator
		spec, what = d.simSpec()
	}
	srv, err := launch.Launch(spec)
	var bad *launch.ArgsError
	if errors.As(err, &bad) && words != nil {
		return words(bad.Err, what)
	}
	if err != nil {
		return err
	}
	d.sup = srv.Sup
	args := d.sup.Args()
	d.deps.Target = sanitize.Message(strings.Join(server.RedactKeys(args), " "))
	d.deps.InitialUtil = server.GPUMemoryUtilization(args)
	d.loadCfg.Client.BaseURL = server.BaseURL(args)
	if srv.Kind == server.KindOther {
		// Its flags are its own: vllmtop adds none and looks where its command line says.
		where := "the --port it was given"
		if _, ok := server.ArgValue(args, "--port"); !ok {
			where = "vLLM's default port"
		}
		say("%s is not vllm serve, python -m vllm.entrypoints.openai.api_server or vllmtop sim: vllmtop adds no --port or --host to it and expects the server at %s (%s)",
			args[0], d.loadCfg.Client.BaseURL, where)
		d.deps.Target += " [expected at " + sanitize.URL(d.loadCfg.Client.BaseURL) + "]"
		// A restart edits --gpu-memory-utilization, which such a command may not take.
		d.deps.InitialUtil, d.deps.RestartDisabled = 0, true
	}
	return nil
}

// Run starts the server and the load, runs the UI, and on every exit path stops the load and
// the server and restores the terminal.
func (d *Dashboard) Run(ctx context.Context, getenv func(string) string) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
		d.shutdown()
	}()
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	if d.fleetMode() {
		stop := d.runFleet(ctx)
		_, err = tea.NewProgram(tui.New(d.deps), programOptions(ctx)...).Run()
		stop()
		if err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	if err := d.sup.Start(ctx); err != nil {
		return err
	}
	if cn := d.fl.canaryRun; cn != nil {
		cn.start(ctx)
		defer cn.stop()
		if d.fl.canary > 0 {
			cn.SetOn(true)
		}
	}
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		_ = d.load.Run(ctx, d.sup.WaitReady)
	}()
	// VLLMTOP_CPUPROFILE writes a CPU profile of the whole session, to see what the UI costs.
	if path := getenv("VLLMTOP_CPUPROFILE"); path != "" {
		if f, err := outfile.Create(path, outfile.Options{Mode: outfile.Overwrite}); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	_, err = tea.NewProgram(tui.New(d.deps), programOptions(ctx)...).Run()
	cancel()
	<-loadDone
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, context.Canceled) {
		return err
	}
	if d.attach == "" {
		return d.sup.Status().Outcome()
	}
	return nil
}

// Deps is what the UI gets.
func (d *Dashboard) Deps() tui.Deps { return d.deps }

// Close releases what Build made without stopping a started server (Run stops it).
func (d *Dashboard) Close() error {
	if d.load != nil {
		_ = d.load.Close()
	}
	if d.sup != nil {
		return d.sup.Close()
	}
	return nil
}

func (d *Dashboard) shutdown() {
	if d.sup == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), server.DefaultGrace+5*time.Second)
	defer cancel()
	_ = d.sup.Stop(ctx)
	_ = d.sup.Close()
	_ = d.load.Close()
}

// checkOutputs checks, before any server is started, the files the dashboard writes: --record
// (kept unless --overwrite) and --export-dir (a directory that takes files). A path the flags
// make bad is a usage error.
func (d *Dashboard) checkOutputs() error {
	var err error
	if d.loadCfg.Record != "" {
		err = outfile.Check(d.loadCfg.Record, loadgen.RecordFile(d.loadCfg.RecordOverwrite))
	}
	if dir := d.deps.ExportDir; err == nil && dir != "" {
		err = outfile.Check(filepath.Join(dir, "vllmtop-export-check"), outfile.Options{})
	}
	switch {
	case outfile.Refused(err):
		return cliflag.Usagef("%v", err)
	case err != nil:
		return fmt.Errorf("cannot write: %w", err)
	}
	return nil
}
