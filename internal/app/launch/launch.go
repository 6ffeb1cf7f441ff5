// Package launch starts the servers vllmtop benchmarks and watches, one way for every command:
// vLLM, this program's simulator or any other command as a child under server.Supervisor, or
// the simulator in-process (on its virtual clock for a benchmark, or serving HTTP for a test).
// It holds the rules they share: which command is the simulator (server.Classify), the
// simulator run as this executable's sim, the API key (the child's environment, never its
// command line), and loopback on a free port unless the command says otherwise.
package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/internal/app/predict"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// Mode is how a server runs.
type Mode int

const (
	Child     Mode = iota // a child process under server.Supervisor, not yet started
	Virtual               // the simulator in-process on simulated time, without HTTP
	InProcess             // the simulator in-process, serving HTTP (tests)
)

// Spec is a server to launch.
type Spec struct {
	// Command is the server's command line: vllm serve ..., python -m
	// vllm.entrypoints.openai.api_server ..., vllmtop sim ... (see Sim) or any other.
	Command []string
	Mode    Mode
	// Defaults are the simulator's "--flag", "value" pairs, for the flags Command does not set.
	Defaults []string
	// Model, the one the client asks for, is the simulated one unless Command names a model
	// or serves it under another name.
	Model string
	// Port (Child, a known command) is the port to listen on; 0: Command's --port, else a free one.
	Port int
	// APIKey is the key the client sends (its --api-key, else OPENAI_API_KEY, else
	// VLLM_API_KEY): the child asks for it, unless Command gives one of its own.
	APIKey string
	// Endpoint (Virtual) is the API path the benchmark calls.
	Endpoint string
	// Listener (InProcess) is where the simulator serves; nil: its --host and --port.
	Listener net.Listener
	// Clock (InProcess) drives the engine; nil: the wall clock (sped up by --sim-speed).
	Clock sim.Clock
	// Grace (InProcess) is how long in-flight requests run on after Stop; 0: serve's default.
	Grace time.Duration
	// Getenv reads the environment the simulator's command line is checked with.
	Getenv func(string) string
	// Env (Child) are "KEY=value" entries added to the environment the child inherits.
	Env []string
}

// Server is a launched server: Sup, Target or Instance, by the spec's Mode.
type Server struct {
	Kind     server.Kind
	Args     []string           // the command line it runs (for the simulator, with its defaults)
	Plan     *serve.Plan        // the simulator's settings; nil for other servers
	Sup      *server.Supervisor // Child: not started
	Target   *predict.Target    // Virtual
	Instance *serve.Instance    // InProcess: serving
}

// Sim is the command line of this program's simulator with args.
func Sim(args ...string) []string { return append([]string{"vllmtop", "sim"}, args...) }

// ArgsError is a simulator command line that would not run: a help request, a bad flag or a
// setting the simulator refuses (serve.ExitCode tells which), found before anything runs.
type ArgsError struct{ Err error }

func (e *ArgsError) Error() string { return e.Err.Error() }
func (e *ArgsError) Unwrap() error { return e.Err }

// ErrNotSim is Launch's error for a command other than the simulator in Virtual or InProcess
// mode: only the simulator runs in-process.
var ErrNotSim = errors.New("only vllmtop sim runs in-process")

// executable is this program's path; a variable for tests.
var executable = os.Executable

// Launch launches the server s describes: the one place vllmtop starts one.
func Launch(s Spec) (*Server, error) {
	if s.Getenv == nil {
		s.Getenv = func(string) string { return "" }
	}
	c := server.Classify(s.Command)
	srv := &Server{Kind: c.Kind, Args: append([]string(nil), s.Command...)}
	if c.Kind == server.KindSim {
		args, plan, err := prepare(srv.Args[c.Args:], s)
		if err != nil {
			return nil, &ArgsError{err}
		}
		srv.Args, srv.Plan = append(srv.Args[:c.Args:c.Args], args...), plan
	} else if s.Mode != Child {
		return nil, ErrNotSim
	}
	var err error
	switch s.Mode {
	case Virtual:
		if err := srv.Plan.Served(); err != nil {
			return nil, &ArgsError{err}
		}
		if n := srv.Plan.DataParallelSize(); n > 1 {
			// The virtual clock drives one engine; the served simulator runs n.
			return nil, &ArgsError{fmt.Errorf("the virtual clock simulates one engine, not --data-parallel-size %d: use the wall clock (drop --sim-clock virtual)", n)}
		}
		srv.Target = predict.New(srv.Plan, s.Endpoint)
	case InProcess:
		opts := []serve.StartOption{serve.WithListener(s.Listener), serve.WithClock(s.Clock), serve.WithGrace(s.Grace)}
		srv.Instance, err = serve.Start(context.Background(), srv.Args[c.Args:], s.Getenv, opts...)
	default:
		var key string
		if srv.Args, key, err = childArgs(srv.Args, c, s); err == nil {
			opts := []server.Option{server.WithAPIKey(key)}
			if len(s.Env) > 0 { // later entries win: exec keeps the last of a repeated key
				opts = append(opts, server.WithEnv(append(os.Environ(), s.Env...)))
			}
			srv.Sup, err = server.New(srv.Args, opts...)
		}
	}
	if err != nil {
		return nil, err
	}
	notify(s, srv)
	return srv, nil
}

// Check reports, as Launch would, a simulator command line that would not run, starting
// nothing; other commands pass.
func Check(s Spec) error {
	if s.Getenv == nil {
		s.Getenv = func(string) string { return "" }
	}
	c := server.Classify(s.Command)
	if c.Kind != server.KindSim {
		return nil
	}
	_, plan, err := prepare(append([]string(nil), s.Command[c.Args:]...), s)
	if err == nil {
		err = plan.Served() // a release it plans but does not serve (V0) is refused at start
	}
	if err != nil {
		return &ArgsError{err}
	}
	return nil
}

// prepare completes the simulator's arguments with the spec's defaults and model and resolves
// them.
func prepare(args []string, s Spec) ([]string, *serve.Plan, error) {
	defaults := append([]string(nil), s.Defaults...)
	if _, named := server.ArgValue(args, "--served-model-name"); s.Model != "" && !named {
		// The client's model takes the default model's place: one --model on the command line.
		replaced := false
		for i := 0; i+1 < len(defaults); i += 2 {
			if defaults[i] == "--model" {
				defaults[i+1], replaced = s.Model, true
			}
		}
		if !replaced {
			defaults = append(defaults, "--model", s.Model)
		}
	}
	args, err := serve.WithDefaults(args, defaults...)
	if err != nil {
		return nil, nil, err
	}
	plan, err := serve.Prepare(args, s.Getenv)
	return args, plan, err
}

// childArgs is the command line a child runs and the key it asks for: the simulator named bare
// (vllmtop, found on PATH) is this executable, so that `go run .` needs no vllmtop installed and
// runs the same build (a path the user gives runs as given); a known server listens on
// loopback at a free port unless told; a key of its own command line moves to its
// environment, else it asks for the client's.
func childArgs(args []string, c server.Command, s Spec) ([]string, string, error) {
	if c.Kind == server.KindSim && args[c.Prog] == "vllmtop" {
		if exe, err := executable(); err == nil {
			args[c.Prog] = exe
		}
	}
	if s.Port != 0 && c.Kind != server.KindOther {
		args = server.EditArgs(args, server.Set("--port", strconv.Itoa(s.Port)))
	}
	args, err := server.OnLoopback(args)
	if err != nil {
		return nil, "", err
	}
	if rest, own, ok := server.TakeAPIKey(args); ok {
		return rest, own, nil
	}
	return args, s.APIKey, nil
}

// StartReady starts a Child server and waits until it is ready, for at most ready on top of
// the simulator's imitated start-up. On failure it stops it; what names the server in the
// error ("the simulated server").
func (srv *Server) StartReady(ctx context.Context, ready time.Duration, what string) error {
	if err := srv.Sup.Start(ctx); err != nil {
		srv.Stop()
		return fmt.Errorf("%s failed to start: %v", what, err)
	}
	if srv.Plan != nil {
		ready += srv.Plan.StartupTime()
	}
	wait, cancel := context.WithTimeout(ctx, ready)
	defer cancel()
	if err := srv.Sup.WaitReady(wait); err != nil {
		srv.Stop()
		return fmt.Errorf("%s did not become ready: %v", what, err)
	}
	return nil
}

// stopWithin bounds Stop's wait for a server that ignores SIGTERM and the kill after it.
const stopWithin = 30 * time.Second

// Stop stops the server and releases it.
func (srv *Server) Stop() {
	switch {
	case srv.Sup != nil:
		ctx, cancel := context.WithTimeout(context.Background(), stopWithin)
		defer cancel()
		_ = srv.Sup.Stop(ctx)
		_ = srv.Sup.Close()
	case srv.Instance != nil:
		_ = srv.Instance.Stop()
	}
}

var watchers struct {
	sync.Mutex
	next int
	fs   map[int]func(Spec, *Server)
}

// Watch calls f after every launch until the returned function is called: for tests, to see
// that a command launches what it should, and through here.
func Watch(f func(Spec, *Server)) (stop func()) {
	watchers.Lock()
	defer watchers.Unlock()
	if watchers.fs == nil {
		watchers.fs = map[int]func(Spec, *Server){}
	}
	id := watchers.next
	watchers.next++
	watchers.fs[id] = f
	return func() {
		watchers.Lock()
		defer watchers.Unlock()
		delete(watchers.fs, id)
	}
}

func notify(s Spec, srv *Server) {
	watchers.Lock()
	fs := make([]func(Spec, *Server), 0, len(watchers.fs))
	for _, f := range watchers.fs {
		fs = append(fs, f)
	}
	watchers.Unlock()
	for _, f := range fs {
		f(s, srv)
	}
}
