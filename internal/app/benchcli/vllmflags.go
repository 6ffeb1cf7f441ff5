package benchcli

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
	fs.StringVar(&v.servedModel, "served-model-name", "", "The model name sent in requests, with --model naming the model in results (with --sim, also the name the simulator serves)")
}

// finishVLLM reads the request flags into the client's extras.
func (o *Options) finishVLLM(fs *pflag.FlagSet) error {
	v, e := &o.vf, &o.Client.Extras
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
	for _, h := range v.headers {
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
	if v.servedModel != "" && o.Sim {
		o.SimArgs = append(o.SimArgs, "--served-model-name="+v.servedModel)
	}
	return nil
}

// defaultRequestIDPrefix is vLLM's: "bench-", 8 random hex digits, "-".
func defaultRequestIDPrefix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "bench-" + hex.EncodeToString(b) + "-"
}

// normalizeFlag makes underscores and dashes alike in flag names, as argparse does
// (--num_prompts is --num-prompts).
func normalizeFlag(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}
