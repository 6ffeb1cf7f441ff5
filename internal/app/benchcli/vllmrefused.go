package benchcli

import (
	"encoding/json"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
)

// vllmNoEffect are vllm bench serve flags that change nothing here: vllmtop sizes prompts with
// the server's /tokenize and renders no chat template itself, and vLLM reads --use-beam-search
// nowhere.
var vllmNoEffect = []struct{ name, usage string }{
	{"tokenizer-mode", "Accepted for compatibility; no effect (prompts are sized by the server's /tokenize)"},
	{"skip-tokenizer-init", "Accepted for compatibility; no effect (no tokenizer is loaded here)"},
	{"use-beam-search", "Accepted for compatibility; no effect (vllm bench serve reads it nowhere either)"},
}

// vllmRefused are vllm bench serve flags vllmtop does not carry out, each with why: giving one
// is a usage error that says so.
var vllmRefused = []struct{ name, why string }{}

// defineVLLMCompat adds the flags above.
func defineVLLMCompat(fs *pflag.FlagSet) {
	for _, f := range vllmNoEffect {
		if f.name == "tokenizer-mode" {
			fs.String(f.name, "auto", f.usage)
			continue
		}
		fs.Bool(f.name, false, f.usage)
	}
	fs.String("chat-template-kwargs", "", "Accepted for compatibility (a JSON object); no effect: vLLM passes it to the chat template it renders on the client, and vllmtop renders none (give the chat endpoint's server chat_template_kwargs with --extra-body)")
	for _, f := range vllmRefused {
		fs.String(f.name, "", "Refused: "+f.why)
		fs.Lookup(f.name).NoOptDefVal = "true" // given without a value, still refused
	}
}

// checkRefused refuses a flag of vllmRefused that was given, and a --chat-template-kwargs
// vLLM could not pass on (its json.loads, then a keyword unpacking, needs an object).
func checkRefused(fs *pflag.FlagSet) error {
	if kw, _ := fs.GetString("chat-template-kwargs"); fs.Changed("chat-template-kwargs") {
		var m map[string]any
		if json.Unmarshal([]byte(kw), &m) != nil || m == nil {
			return cliflag.Usagef(`--chat-template-kwargs: want a JSON object, e.g. '{"enable_thinking": false}'`)
		}
	}
	for _, f := range vllmRefused {
		if fs.Changed(f.name) {
			return cliflag.Usagef("--%s: %s", f.name, f.why)
		}
	}
	return nil
}

// VLLMRequestTimeout is vllm bench serve's deadline for a request, its aiohttp session's total
// timeout (vllm/benchmarks/lib/endpoint_request_func.py, AIOHTTP_TIMEOUT).
const VLLMRequestTimeout = 6 * time.Hour
