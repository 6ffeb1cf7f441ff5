package server

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What the dashboard and the commands need to know of vLLM's command line, in one place.

// DefaultGPUMemoryUtilization is the newest releases' default --gpu-memory-utilization, the
// starting point of a change when the server has not said its own yet (0.9 before v0.21).
const DefaultGPUMemoryUtilization = 0.92

const flagGPUMemoryUtilization = "--gpu-memory-utilization"

// GPUMemoryUtilization is the fraction of GPU memory a server started with args takes, as its
// --gpu-memory-utilization says. Without the flag it is 0, unknown: the default depends on the
// release (0.9 before v0.21), and the server reports the value it took in
// vllm:cache_config_info. It is 0 too when the value is not a number.
func GPUMemoryUtilization(args []string) float64 {
	v, ok := ArgValue(args, flagGPUMemoryUtilization)
	if !ok {
		return 0
	}
	u, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	return u
}

// SetGPUMemoryUtilization is the edit that restarts a server with utilisation u, written with
// two decimals as people write it.
func SetGPUMemoryUtilization(u float64) ArgEdit {
	return Set(flagGPUMemoryUtilization, strconv.FormatFloat(u, 'f', 2, 64))
}

// BaseURL is where a server started with args answers a local client: its --host (loopback
// for an all-interfaces bind) and --port (vLLM's default 8000), or --uds.
func BaseURL(args []string) string { return endpointFromArgs(args).base }

// RedactKeys returns a copy of a command line with the values of --api-key hidden, for
// showing it on screen.
func RedactKeys(args []string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		switch {
		case a == "--api-key" && i+1 < len(out):
			out[i+1] = "***"
		case strings.HasPrefix(a, "--api-key="):
			out[i] = "--api-key=***"
		}
	}
	return out
}

// TakeAPIKey returns a copy of a known server's command line (see KnownCommand) without its
// --api-key, and the key, so that the key can go in the child's environment (VLLM_API_KEY,
// which vLLM and the simulator read) rather than on its command line, where ps shows it. ok is
// false, and args come back as they are, without exactly one key: none, or several (a list
// the variable cannot hold).
func TakeAPIKey(args []string) (rest []string, key string, ok bool) {
	if !KnownCommand(args) {
		return args, "", false
	}
	n := 0
	for i := 0; i < len(args) && args[i] != "--"; i++ {
		flag, value, hasValue := splitFlag(args[i])
		if flag != "--api-key" {
			continue
		}
		if !hasValue && takesNext(args, i+1) {
			i++
			value, hasValue = args[i], true
		}
		n++
		key = value
		if !hasValue || strings.Contains(value, ",") {
			n++ // a bare --api-key, or a list in one value
		}
	}
	if n != 1 {
		return args, "", false
	}
	return EditArgs(args, Remove("--api-key")), key, true
}

// Kind is what a command line runs, as far as vllmtop knows it.
type Kind int

const (
	KindOther     Kind = iota // anything else: vllmtop adds no flags to it and guesses nothing
	KindVLLMServe             // vllm serve [MODEL] [flags]
	KindAPIServer             // python -m vllm.entrypoints.openai.api_server [flags]
	KindSim                   // vllmtop sim [MODEL] [flags]: this program's simulator
)

// Command is a command line as Classify reads it.
type Command struct {
	Kind Kind
	// Prog is the index of the server's program word: 0, or after an env wrapper
	// (env [-i] [-u NAME] [NAME=VALUE]... PROGRAM).
	Prog int
	// Args is the index of the server's own arguments: after "serve", "sim" or the module.
	Args int
}

// VLLM reports whether the command is vLLM's server (vllm serve or the api_server module).
func (c Command) VLLM() bool { return c.Kind == KindVLLMServe || c.Kind == KindAPIServer }

// apiServerModule is the module of vLLM's OpenAI-compatible server, as python -m runs it.
const apiServerModule = "vllm.entrypoints.openai.api_server"

// Classify says whether args runs this program's simulator (vllmtop sim, by any path, or this
// executable's sim), a vLLM server (vllm serve, python -m vllm.entrypoints.openai.api_server)
// or something else, looking through an env wrapper. It is the one place that decides.
func Classify(args []string) Command {
	p := envWrapped(args)
	if p < 0 || len(args)-p < 2 {
		return Command{}
	}
	prog, base := args[p], filepath.Base(args[p])
	switch {
	case base == "vllm" && args[p+1] == "serve":
		return Command{Kind: KindVLLMServe, Prog: p, Args: p + 2}
	case isPython(base):
		for i := p + 1; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
			if args[i] == "-m" && i+1 < len(args) && args[i+1] == apiServerModule {
				return Command{Kind: KindAPIServer, Prog: p, Args: i + 2}
			}
			if args[i] == "-m"+apiServerModule {
				return Command{Kind: KindAPIServer, Prog: p, Args: i + 1}
			}
		}
	case args[p+1] == "sim" && (base == "vllmtop" || isThisExecutable(prog)):
		return Command{Kind: KindSim, Prog: p, Args: p + 2}
	}
	return Command{}
}

// envWrapped is the index of the program env runs when args is an env command line, 0 when
// it is not one, -1 when env's options are ones vllmtop does not read (-S splits a string).
func envWrapped(args []string) int {
	if len(args) == 0 || filepath.Base(args[0]) != "env" {
		return 0
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-i" || a == "-" || a == "--ignore-environment":
		case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
			i++ // the option's value
		case strings.HasPrefix(a, "--unset=") || strings.HasPrefix(a, "--chdir=") ||
			len(a) > 2 && (strings.HasPrefix(a, "-u") || strings.HasPrefix(a, "-C")):
		case a == "--":
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		case strings.HasPrefix(a, "-"):
			return -1
		case !strings.Contains(a, "="):
			return i
		}
	}
	return -1
}

func isThisExecutable(path string) bool {
	exe, err := os.Executable()
	return err == nil && path == exe
}

// isPython reports whether name is a Python interpreter: python, python3, python3.12.
func isPython(name string) bool {
	rest, ok := strings.CutPrefix(name, "python")
	return ok && strings.Trim(rest, "0123456789.") == ""
}

// KnownCommand reports whether args runs a server whose flags vllmtop knows (--host, --port,
// --model and the rest of vLLM's): vllm serve, python -m vllm.entrypoints.openai.api_server,
// or vllmtop sim (this executable's too). vllmtop edits only such command lines.
func KnownCommand(args []string) bool { return Classify(args).Kind != KindOther }

// ModelArg is the model a known command line serves (see KnownCommand): its --model, else for
// vllm serve and vllmtop sim the first argument after the subcommand that is neither a flag
// nor a flag's value (vllm serve MODEL); "" when there is none or the command is not known.
func ModelArg(args []string) string {
	c := Classify(args)
	if c.Kind == KindOther {
		return ""
	}
	if v, ok := ArgValue(args, "--model"); ok {
		return v
	}
	if c.Kind == KindAPIServer {
		return ""
	}
	for i := c.Args; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ""
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		if prev := args[i-1]; i > c.Args && strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
			continue
		}
		return a
	}
	return ""
}

// WithAPIKey makes the child ask for key, as vLLM reads it from VLLM_API_KEY (an --api-key
// on its command line still comes first): the variable is set to key in its environment, or
// removed when key is "", so a server started for a client asks for the key that client sends.
func WithAPIKey(key string) Option { return func(o *options) { o.apiKey = &key } }

// environ is the child's environment: WithEnv's or ours, with WithAPIKey's key.
func (o *options) environ() []string {
	if o.apiKey == nil {
		return o.env
	}
	env := o.env
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "VLLM_API_KEY=") {
			out = append(out, kv)
		}
	}
	if *o.apiKey != "" {
		out = append(out, "VLLM_API_KEY="+*o.apiKey)
	}
	return out
}

// OnLoopback returns a copy of a known server's command line (see KnownCommand) that listens
// on 127.0.0.1 and on a free port unless it says otherwise (--host, --port): vLLM's own
// default is every interface, and a server vllmtop starts binds loopback unless told. Any
// other command is returned as it is: it may not take those flags (and is then probed where
// BaseURL says: its own --port, else vLLM's 8000).
func OnLoopback(args []string) ([]string, error) {
	out := append([]string(nil), args...)
	if !KnownCommand(out) {
		return out, nil
	}
	if _, ok := ArgValue(out, "--port"); !ok {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.New("server: no free loopback port: " + err.Error())
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		out = append(out, "--port", strconv.Itoa(port))
	}
	if _, ok := ArgValue(out, "--host"); !ok {
		out = append(out, "--host", "127.0.0.1")
	}
	return out, nil
}
