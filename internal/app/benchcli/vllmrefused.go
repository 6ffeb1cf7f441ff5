package benchcli

import (
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
	for _, f := range vllmRefused {
		fs.String(f.name, "", "Refused: "+f.why)
		fs.Lookup(f.name).NoOptDefVal = "true" // given without a value, still refused
	}
}

// checkRefused refuses a flag of vllmRefused that was given.
func checkRefused(fs *pflag.FlagSet) error {
	for _, f := range vllmRefused {
		if fs.Changed(f.name) {
			return cliflag.Usagef("--%s: %s", f.name, f.why)
		}
	}
	return nil
}
