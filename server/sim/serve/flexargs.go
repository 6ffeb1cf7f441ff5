package serve

import (
	"encoding/json"
	"strings"
)

// vLLM's FlexibleArgumentParser (vllm/utils/argparse_utils.py) rewrites the command line before
// argparse sees it, and published command lines rely on both rewrites
// (docs/vllm-behaviour.md#serving-flags):
//   - underscores in a long flag's name are dashes: --tensor_parallel_size 8;
//   - a dotted flag sets one key of a JSON flag: --speculative-config.method mtp,
//     -cc.pass_config.fuse_rope_kvcache=True, --x.list+ a,b appends to a list. The keys of one
//     flag merge into one JSON object, passed after the other arguments.

// flexibleArgs applies both rewrites.
func flexibleArgs(args []string) ([]string, error) {
	return mergeDottedArgs(dashedNames(args))
}

// dashedNames turns the underscores of every long flag's name into dashes, up to the first
// dot (a dotted flag's keys keep theirs) and never in an attached value.
func dashedNames(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "--" {
			copy(out[i:], args[i:])
			return out
		}
		if !strings.HasPrefix(a, "--") {
			out[i] = a
			continue
		}
		key, value, eq := strings.Cut(a, "=")
		name, keys, dotted := strings.Cut(key, ".")
		key = strings.ReplaceAll(name, "_", "-")
		if dotted {
			key += "." + keys
		}
		if eq {
			key += "=" + value
		}
		out[i] = key
	}
	return out
}

// mergeDottedArgs folds the dotted flags into one JSON argument per flag.
func mergeDottedArgs(args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	merged := map[string]map[string]any{}
	var order, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = args[i:] // positional from here on; the merged flags go before
			break
		}
		key, value, eq := strings.Cut(a, "=")
		flag, path, dotted := strings.Cut(key, ".")
		if !strings.HasPrefix(a, "-") || isNumber(a) || !dotted || strings.Trim(flag, "-") == "" {
			out = append(out, a)
			continue
		}
		if !eq {
			if i+1 >= len(args) {
				return nil, &UsageError{"argument " + key + ": expected one argument"}
			}
			i++
			value = args[i]
		}
		if merged[flag] == nil {
			merged[flag] = map[string]any{}
			order = append(order, flag)
		}
		setDotted(merged[flag], strings.Split(path, "."), value)
	}
	for _, flag := range order {
		b, err := json.Marshal(merged[flag])
		if err != nil {
			return nil, &UsageError{"argument " + flag + ": " + err.Error()}
		}
		out = append(out, flag, string(b))
	}
	return append(out, rest...), nil
}

// setDotted sets the value at keys in m, creating the objects on the way; a last key ending in
// "+" appends the value's comma-separated items to a list there.
func setDotted(m map[string]any, keys []string, raw string) {
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	last := keys[len(keys)-1]
	if name, ok := strings.CutSuffix(last, "+"); ok {
		list, _ := m[name].([]any)
		for _, item := range strings.Split(raw, ",") {
			list = append(list, item)
		}
		m[name] = list
		return
	}
	m[last] = dottedValue(raw)
}

// dottedValue reads a dotted flag's value as vLLM does: JSON where it parses, else a
// human-readable integer (80g), else the string itself.
func dottedValue(raw string) any {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err == nil {
		return v
	}
	if n, err := parseHumanInt(raw); err == nil {
		return n
	}
	return raw
}

// MergeDotted sets the key path ("pass_config.x", "sizes+") of a dotted flag in m as vLLM's
// parser does, reading raw as JSON, a human-readable integer or a string.
func MergeDotted(m map[string]any, path, raw string) {
	setDotted(m, strings.Split(path, "."), raw)
}
