package benchcli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
)

// samplingFlags are vllm bench serve's sampling parameters, in the request's field names; each
// is sent only when given (vLLM no longer sends temperature 0 by default).
var samplingFlags = []struct {
	flag, field string
	integer     bool
}{
	{"top-p", "top_p", false}, {"top-k", "top_k", true}, {"min-p", "min_p", false},
	{"temperature", "temperature", false}, {"frequency-penalty", "frequency_penalty", false},
	{"presence-penalty", "presence_penalty", false}, {"repetition-penalty", "repetition_penalty", false},
}

// vllmFlags are the flags of current vllm bench serve that shape each request or the run,
// beyond those Define had before.
type vllmFlags struct {
	extraBody, requestIDPrefix, servedModel string
	headers                                 []string
	logprobs                                int
	sampling                                map[string]*float64
	topK                                    int
	ramp                                    loadgen.Ramp
	profile                                 bool
	probeRate                               float64
	loraModules                             []string
	loraAssignment                          string
}

// defineVLLM adds vllm bench serve's request flags to fs.
func (o *Options) defineVLLM(fs *pflag.FlagSet) {
	v := &o.vf
	v.sampling = map[string]*float64{}
	for _, s := range samplingFlags {
		if s.integer {
			fs.IntVar(&v.topK, s.flag, 0, "Sampling parameter "+s.field+", sent only when given")
			continue
		}
		v.sampling[s.flag] = new(float64)
		fs.Float64Var(v.sampling[s.flag], s.flag, 0, "Sampling parameter "+s.field+", sent only when given (default: the server's)")
	}
	fs.StringVar(&v.extraBody, "extra-body", "", `JSON object merged into each request's body, e.g. '{"chat_template_kwargs":{"enable_thinking":false}}'`)
	fs.StringArrayVar(&v.headers, "header", nil, "KEY=VALUE header sent with each request (repeat the flag for several)")
	fs.StringVar(&v.requestIDPrefix, "request-id-prefix", "", `Prefix of each request's x-request-id header, the request's index after it (default "bench-" and 8 random hex digits and "-")`)
	fs.IntVar(&v.logprobs, "logprobs", 0, "Logprobs per token to ask for (completions API; default: not sent)")
	fs.StringVar(&v.ramp.Strategy, "ramp-up-strategy", "", "Raise the request rate over the run from --ramp-up-start-rps to --ramp-up-end-rps: linear or exponential")
	fs.IntVar(&v.ramp.StartRPS, "ramp-up-start-rps", 0, "The ramp-up's first rate (requests per second)")
	fs.IntVar(&v.ramp.EndRPS, "ramp-up-end-rps", 0, "The ramp-up's last rate (requests per second)")
	defineVLLMCompat(fs)
	o.defineTimeline(fs)
	fs.Float64Var(&v.probeRate, "probe-request-rate", 0, "Send one-token probe requests at this rate (per second) beside the load, outside --max-concurrency, and report their latency")
	fs.BoolVar(&v.profile, "profile", false, "Start the server's profiler after the warm-ups, before the measured requests, and stop it after them (POST /start_profile, /stop_profile)")
	fs.StringArrayVar(&v.loraModules, "lora-modules", nil, "LoRA adapters the server was started with; each request names one of them as its model (several values after the flag, or the flag repeated)")
	fs.StringVar(&v.loraAssignment, "lora-assignment", "random", "How requests get their adapter: random (seeded by --seed) or round-robin")
	fs.StringVar(&v.servedModel, "served-model-name", "", "The model name sent in requests, with --model naming the model in results (with --sim, also the name the simulator serves)")
}

// finishVLLM reads the request flags into the client's extras.
func (o *Options) finishVLLM(fs *pflag.FlagSet) error {
	v, e := &o.vf, &o.Client.Extras
	// No stall cut-off: a request queued on a busy server gets no byte until its first token,
	// and vLLM's client waits for it as long as the request's deadline.
	o.Client.StallTimeout = o.Client.RequestTimeout
	body := map[string]any{}
	for _, s := range samplingFlags {
		switch {
		case !fs.Changed(s.flag):
		case s.integer:
			body[s.field] = v.topK
		default:
			body[s.field] = *v.sampling[s.flag]
		}
	}
	if len(body) > 0 && loadgen.PoolingBackend(o.Runs.Info.Backend) {
		return cliflag.Usagef("sampling parameters are only supported by openai-compatible backends, not --backend %s", o.Runs.Info.Backend)
	}
	if v.extraBody != "" {
		var extra map[string]any
		if err := json.Unmarshal([]byte(v.extraBody), &extra); err != nil || extra == nil {
			return cliflag.Usagef("--extra-body: want a JSON object, e.g. '{\"top_k\": 20}'")
		}
		for k, x := range extra {
			body[k] = x
		}
	}
	if len(body) > 0 {
		e.Body = body
	}
	for _, h := range splitHeaders(v.headers) {
		k, val, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return cliflag.Usagef("--header %q: want KEY=VALUE", h)
		}
		if e.Headers == nil {
			e.Headers = map[string]string{}
		}
		e.Headers[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	if fs.Changed("logprobs") {
		n := v.logprobs
		e.Logprobs = &n
	}
	o.Runs.RequestIDPrefix = v.requestIDPrefix
	if !fs.Changed("request-id-prefix") {
		o.Runs.RequestIDPrefix = defaultRequestIDPrefix()
	}
	if err := o.finishRamp(fs); err != nil {
		return err
	}
	switch {
	case v.probeRate < 0 || math.IsInf(v.probeRate, 0) || math.IsNaN(v.probeRate):
		return cliflag.Usagef("--probe-request-rate must be a finite rate, 0 for no probes")
	case v.probeRate > 0 && o.Sim && o.SimClock == ClockVirtual:
		return cliflag.Usagef("--probe-request-rate sends probes over HTTP; the virtual clock has none (use --sim-clock wall)")
	}
	o.Runs.ProbeRate = v.probeRate
	switch v.loraAssignment {
	case "random", "round-robin":
	default:
		return cliflag.Usagef("--lora-assignment %q: want random or round-robin", v.loraAssignment)
	}
	for _, m := range v.loraModules {
		o.Runs.LoRA.Modules = append(o.Runs.LoRA.Modules, strings.Fields(strings.ReplaceAll(m, ",", " "))...)
	}
	o.Runs.LoRA.RoundRobin, o.Runs.LoRA.Seed = v.loraAssignment == "round-robin", o.Runs.Seed
	if v.servedModel != "" && o.Sim {
		o.SimArgs = append(o.SimArgs, "--served-model-name="+v.servedModel)
	}
	return nil
}

// finishRamp reads --ramp-up-strategy and its bounds, refusing what vLLM refuses and what a
// ramp cannot go with here.
func (o *Options) finishRamp(fs *pflag.FlagSet) error {
	ramp, r := o.vf.ramp, &o.Runs
	switch {
	case ramp.Strategy == "" && (fs.Changed("ramp-up-start-rps") || fs.Changed("ramp-up-end-rps")):
		return cliflag.Usagef("--ramp-up-start-rps and --ramp-up-end-rps go with --ramp-up-strategy")
	case ramp.Strategy == "":
		return nil
	case fs.Changed("request-rate"):
		return cliflag.Usagef("when using ramp-up, do not specify --request-rate: the ramp-up sets the rate")
	case !fs.Changed("ramp-up-start-rps") || !fs.Changed("ramp-up-end-rps"):
		return cliflag.Usagef("when using --ramp-up-strategy, both --ramp-up-start-rps and --ramp-up-end-rps must be specified")
	case r.NumPrompts <= 0 || r.Duration > 0:
		return cliflag.Usagef("a ramp-up spreads its rates over --num-prompts requests: give --num-prompts, not --duration")
	case o.Dataset.MultiTurn.On || ((o.Dataset.Name == loadgen.DatasetBurstGPT || o.Dataset.Name == loadgen.DatasetMooncake) && !o.Dataset.Trace.Sample):
		return cliflag.Usagef("--ramp-up-strategy sets arrival times; a replay brings its own")
	}
	if err := ramp.Check(); err != nil {
		return cliflag.Usagef("%v", err)
	}
	if o.slaInline != "" || o.slaParams != "" {
		return cliflag.Usagef("an SLO search sets the rate or concurrency itself; leave out --ramp-up-strategy")
	}
	r.Ramp, r.Info.Ramp = ramp, ramp
	return nil
}

// defaultRequestIDPrefix is vLLM's: "bench-", 8 random hex digits, "-".
func defaultRequestIDPrefix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "bench-" + hex.EncodeToString(b) + "-"
}

// flagNames reads flag names as vLLM's parser does: underscores and dashes alike
// (--num_prompts is --num-prompts) and, once every flag is defined, a unique prefix for the
// whole name (--random-input is --random-input-len).
type flagNames struct{ defined bool }

func (n *flagNames) normalize(fs *pflag.FlagSet, name string) pflag.NormalizedName {
	name = strings.ReplaceAll(name, "_", "-")
	if !n.defined {
		return pflag.NormalizedName(name)
	}
	exact, match, matches := false, "", 0
	fs.VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Name == name:
			exact = true
		case strings.HasPrefix(f.Name, name):
			match, matches = f.Name, matches+1
		}
	})
	if !exact && matches == 1 {
		name = match
	}
	return pflag.NormalizedName(name)
}

// splitHeaders reads --header's values as vLLM's nargs reads them: several KEY=VALUE after one
// flag (gathered into one value, space-separated), a word without "=" continuing the value
// before it.
func splitHeaders(values []string) []string {
	var out []string
	for _, v := range values {
		for i, word := range strings.Fields(v) {
			if i > 0 && !strings.Contains(word, "=") {
				out[len(out)-1] += " " + word
				continue
			}
			out = append(out, word)
		}
	}
	return out
}

// startProfile starts the server's profiler for --profile and returns what stops it.
func (b *Bench) startProfile(ctx context.Context) (stop func()) {
	if !b.o.vf.profile {
		return func() {}
	}
	if b.client == nil {
		b.env.Note("--profile: the simulator on its virtual clock has no profiler")
		return func() {}
	}
	b.env.Note("Starting profiler...")
	if b.client.Profile(ctx, true) {
		b.env.Note("Profiler started")
	}
	return func() {
		b.env.Note("Stopping profiler...")
		if b.client.Profile(context.WithoutCancel(ctx), false) {
			b.env.Note("Profiler stopped")
		}
	}
}
