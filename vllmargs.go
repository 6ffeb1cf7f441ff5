package main

import (
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// vllmArgs reads a command's own flags the way vLLM's FlexibleArgumentParser reads its
// (docs/vllm-behaviour.md#serving-flags), so that vllm serve and vllm bench flags pasted onto
// a vllmtop command line work there as they do under vllmtop sim: a flag spelled with
// underscores (--tensor_parallel_size 2) becomes the command's dashed flag, and the keys of a
// JSON flag given one by one (--speculative-config.method ngram) become one JSON value. Only
// names the command defines are rewritten, and a flag's value is never read as a flag; the
// arguments after -- are left alone.
func vllmArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	fs := cmd.Flags()
	out := make([]string, 0, len(args))
	merged := map[string]map[string]any{}
	var order []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(appendMerged(out, merged, order), args[i:]...)
		}
		name, value, eq := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || name == "" {
			out = append(out, a)
			continue
		}
		flag, key, dotted := strings.Cut(name, ".")
		f := fs.Lookup(strings.ReplaceAll(flag, "_", "-"))
		switch {
		case f == nil:
			out = append(out, a)
		case dotted && jsonFlag(f) && key != "":
			if !eq && i+1 < len(args) {
				i++
				value = args[i]
			}
			if merged[f.Name] == nil {
				merged[f.Name] = map[string]any{}
				order = append(order, f.Name)
			}
			serve.MergeDotted(merged[f.Name], key, value)
		default:
			out = append(out, "--"+f.Name+strings.TrimPrefix(a, "--"+flag))
			if !eq && f.NoOptDefVal == "" && i+1 < len(args) && !dotted {
				i++ // its value, whatever it looks like
				out = append(out, args[i])
			}
		}
	}
	return appendMerged(out, merged, order)
}

// jsonFlag reports a flag that can take a JSON object: a string, or a value typed as JSON.
func jsonFlag(f *pflag.Flag) bool {
	t := f.Value.Type()
	return t == "string" || strings.Contains(t, "json")
}

// appendMerged adds one JSON argument for each flag whose keys were given one by one.
func appendMerged(out []string, merged map[string]map[string]any, order []string) []string {
	for _, name := range order {
		b, err := json.Marshal(merged[name])
		if err == nil {
			out = append(out, "--"+name, string(b))
		}
	}
	return out
}
