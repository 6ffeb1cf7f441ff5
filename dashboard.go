package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/pflag"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/serve"
	"github.com/vllmtop/vllmtop/themes"
	"github.com/vllmtop/vllmtop/tui"
)

// The simulated server the dashboard starts when given no server.
const (
	defaultSimModel = "meta-llama/Llama-3.1-8B-Instruct"
	defaultSimGPU   = "H100-SXM-80GB"
)

type dashboardFlags struct {
	attach          string
	concurrency     int
	rate            float64
	burstiness      float64
	endpoint        string
	model           string
	inputLen        int
	outputLen       int
	longInputLen    int
	rangeRatio      float64
	seed            int64
	record          string
	theme           string
	metricsInterval time.Duration
	apiKey          string
	simArgs         string
	command         []string
}

func parseDashboardFlags(args []string) (*dashboardFlags, error) {
	f := &dashboardFlags{}
	fs := pflag.NewFlagSet("vllmtop", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.attach, "attach", "", "monitor a running server at this URL (read-only until space starts load)")
	fs.IntVar(&f.concurrency, "max-concurrency", 4, "requests in flight (closed loop)")
	fs.Float64Var(&f.rate, "request-rate", 0, "start in rate mode at this many requests/s")
	fs.Float64Var(&f.burstiness, "burstiness", 1, "gamma shape of inter-arrival times in rate mode (1 = Poisson)")
	fs.StringVar(&f.endpoint, "endpoint", loadgen.EndpointCompletions, "API path: /v1/completions or /v1/chat/completions")
	fs.StringVar(&f.model, "model", "", "model name for requests (default: the server's first model)")
	fs.IntVar(&f.inputLen, "random-input-len", 256, "prompt tokens (short prompts)")
	fs.IntVar(&f.outputLen, "random-output-len", 128, "output tokens")
	fs.IntVar(&f.longInputLen, "long-input-len", 4096, "prompt tokens of the long-prompt workload (p)")
	fs.Float64Var(&f.rangeRatio, "random-range-ratio", 0, "lengths uniform in [L(1-r), L(1+r)]")
	fs.Int64Var(&f.seed, "seed", 0, "seed for prompts and arrivals")
	fs.StringVar(&f.record, "record", "", "write every result to this JSONL file as it finishes")
	fs.StringVar(&f.theme, "theme", themes.Default, "colours: "+strings.Join(themes.Names(), ", "))
	fs.DurationVar(&f.metricsInterval, "metrics-interval", time.Second, "how often /metrics is scraped")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (default: OPENAI_API_KEY or VLLM_API_KEY)")
	fs.StringVar(&f.simArgs, "sim-args", "", "extra flags for the built-in simulator, e.g. \"--sim-gpu l4 Qwen/Qwen2.5-0.5B-Instruct\"")
	var cmd []string
	if i := indexOf(args, "--"); i >= 0 {
		args, cmd = args[:i], args[i+1:]
		if len(cmd) == 0 {
			return nil, errors.New("nothing after --: give the server command, e.g. vllmtop -- vllm serve MODEL")
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (a server command goes after --)", fs.Arg(0))
	}
	f.command = cmd
	if f.attach != "" && cmd != nil {
		return nil, errors.New("--attach and a command after -- cannot be combined")
	}
	if _, ok := themes.ByName(f.theme); !ok {
		return nil, fmt.Errorf("--theme %q: choose one of %s", f.theme, strings.Join(themes.Names(), ", "))
	}
	if f.concurrency < 0 || f.rate < 0 || f.inputLen < 1 || f.outputLen < 1 || f.longInputLen < 1 || f.metricsInterval < 100*time.Millisecond {
		return nil, errors.New("load flags must be positive and --metrics-interval at least 100ms")
	}
	return f, nil
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func isTTY(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// runDashboard is `vllmtop [flags] [-- CMD...]`.
func runDashboard(args []string, stdout, stderr io.Writer) int {
	f, err := parseDashboardFlags(args)
	if errors.Is(err, pflag.ErrHelp) {
		usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "vllmtop: %v (see vllmtop help)\n", err)
		return 2
	}
	if !isTTY(os.Stdout) || !isTTY(os.Stdin) {
		fmt.Fprintln(stderr, "vllmtop: the dashboard needs a terminal; for scripts use 'vllmtop bench' (headless benchmark) or 'vllmtop metrics URL' (one parsed scrape)")
		return 2
	}
	app, err := buildDashboard(f)
	if err != nil {
		fmt.Fprintf(stderr, "vllmtop: %v\n", err)
		return 1
	}
	return app.run(stderr)
}

// dashboard holds what the dashboard runs, so every exit path can stop it in order.
type dashboard struct {
	deps   tui.Deps
	sup    *server.Supervisor
	load   *loadgen.Session
	url    string
	attach bool
}

func buildDashboard(f *dashboardFlags) (*dashboard, error) {
	d := &dashboard{}
	deps := tui.Deps{Theme: f.theme, ScrapeInterval: f.metricsInterval, InitialConc: f.concurrency}
	var capacity tui.CapacityFunc
	switch {
	case f.attach != "":
		d.attach = true
		d.url = strings.TrimRight(f.attach, "/")
		sup, err := server.Attach(d.url)
		if err != nil {
			return nil, err
		}
		d.sup = sup
		deps.Mode, deps.Target, deps.StartPaused, deps.RestartDisabled = tui.ModeAttach, d.url, true, true
	default:
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("no free loopback port: %w", err)
		}
		cmd := f.command
		if cmd == nil {
			exe, err := os.Executable()
			if err != nil {
				return nil, err
			}
			simArgs := append([]string{"--sim-gpu", defaultSimGPU, "--sim-startup-seconds", "2"}, strings.Fields(f.simArgs)...)
			if !hasPositionalOrModel(simArgs) {
				simArgs = append([]string{defaultSimModel}, simArgs...)
			}
			cmd = append([]string{exe, "sim", "--port", strconv.Itoa(port)}, simArgs...)
			capacity = simCapacity(cmd[2:])
			deps.Mode = tui.ModeSimulator
		} else {
			deps.Mode = tui.ModeSupervise
			if _, ok := server.ArgValue(cmd, "--port"); !ok {
				cmd = append(append([]string(nil), cmd...), "--port", strconv.Itoa(port))
			}
			// A server started here listens on loopback unless the command says otherwise
			// (vLLM's own default is every interface).
			if _, ok := server.ArgValue(cmd, "--host"); !ok {
				cmd = append(cmd, "--host", "127.0.0.1")
			}
		}
		sup, err := server.New(cmd)
		if err != nil {
			return nil, err
		}
		d.sup = sup
		d.url = server.BaseURL(cmd)
		deps.Target = strings.Join(server.RedactKeys(cmd), " ")
		deps.InitialUtil = server.GPUMemoryUtilization(cmd)
	}
	key := f.apiKey
	if key == "" {
		key = loadgen.APIKeyFromEnv(os.Getenv)
	}
	load, err := loadgen.NewSession(loadgen.SessionConfig{
		Client:      loadgen.ClientConfig{BaseURL: d.url, Endpoint: f.endpoint, Model: f.model, APIKey: key},
		Concurrency: f.concurrency, Rate: f.rate, Burstiness: f.burstiness, Seed: f.seed, Record: f.record,
		Short: loadgen.RandomConfig{InputLen: f.inputLen, OutputLen: f.outputLen, RangeRatio: f.rangeRatio},
		Long:  loadgen.RandomConfig{InputLen: f.longInputLen, OutputLen: f.outputLen, RangeRatio: f.rangeRatio},
	})
	if err != nil {
		return nil, err
	}
	d.load = load
	scr, err := scrape.NewClient(d.url, scrape.WithAPIKey(key))
	if err != nil {
		return nil, err
	}
	deps.Supervisor, deps.Load, deps.Scraper, deps.Capacity = d.sup, load, scr, capacity
	d.deps = deps
	return d, nil
}

func hasPositionalOrModel(args []string) bool {
	for i, a := range args {
		if a == "--model" || strings.HasPrefix(a, "--model=") {
			return true
		}
		if !strings.HasPrefix(a, "-") && (i == 0 || !strings.HasPrefix(args[i-1], "--") || strings.Contains(args[i-1], "=")) {
			return true
		}
	}
	return false
}

// simCapacity predicts the simulator's capacity at another utilisation with its own model.
func simCapacity(simArgs []string) tui.CapacityFunc {
	opts, err := serve.ParseArgs(simArgs, os.Getenv)
	if err != nil {
		return nil
	}
	profiles, err := sim.LoadProfiles(opts.ProfilesPath)
	if err != nil {
		return nil
	}
	return func(util float64) (int, float64, error) {
		cfg := opts.Engine
		cfg.GPUMemoryUtilization = util
		s, err := sim.Resolve(cfg, profiles)
		if err != nil {
			return 0, 0, err
		}
		return s.Capacity.KVCacheTokens, s.Capacity.MaxConcurrency, nil
	}
}

// run starts the server and the load, runs the UI, and on every exit path stops the load and
// the server and restores the terminal.
func (d *dashboard) run(stderr io.Writer) (code int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "vllmtop: internal error: %v\n", r)
			code = 1
		}
		d.shutdown()
	}()
	if err := d.sup.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "vllmtop: %v\n", err)
		return 1
	}
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		_ = d.load.Run(ctx, d.sup.WaitReady)
	}()
	// VLLMTOP_CPUPROFILE writes a CPU profile of the whole session, to see what the UI costs.
	if path := os.Getenv("VLLMTOP_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	p := tea.NewProgram(tui.New(d.deps), tea.WithAltScreen(), tea.WithContext(ctx))
	_, err := p.Run()
	cancel()
	<-loadDone
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "vllmtop: %v\n", err)
		return 1
	}
	if st := d.sup.Status(); st.Exit.Failed() && !d.attach {
		fmt.Fprintf(stderr, "vllmtop: the server exited: %s\n", st.Exit)
	}
	return 0
}

func (d *dashboard) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), server.DefaultGrace+5*time.Second)
	defer cancel()
	_ = d.sup.Stop(ctx)
	_ = d.sup.Close()
	_ = d.load.Close()
}
