package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Bounds on a --config file: vLLM's config files are a few flags, so anything larger is a
// mistake or an attack (deep nesting, alias expansion).
const (
	maxConfigBytes = 1 << 20
	maxConfigDepth = 16
	maxConfigNodes = 100_000
)

// expandConfig replaces --config FILE in args with the flags the YAML file sets, as vLLM's
// FlexibleArgumentParser does: each key is a flag name (underscores or dashes), put before the
// command line's own flags so that those win; a flag the command line sets is not taken from
// the file at all (list flags would otherwise add up).
func expandConfig(args []string) ([]string, error) {
	path, rest, found, err := cutConfigArg(args)
	if err != nil || !found {
		return args, err
	}
	fileArgs, err := readConfigFile(path)
	if err != nil {
		return nil, &UsageError{fmt.Sprintf("argument --config: %s: %v", path, err)}
	}
	set := cliFlags(rest)
	var out []string
	for _, a := range fileArgs {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !set[name] {
			out = append(out, a)
		}
	}
	return append(out, rest...), nil
}

// cutConfigArg removes --config FILE (or --config=FILE) from args.
func cutConfigArg(args []string) (path string, rest []string, found bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		switch {
		case a == "--config":
			if i+1 >= len(args) {
				return "", nil, false, &UsageError{"argument --config: expected one argument"}
			}
			path, found = args[i+1], true
			i++
		case strings.HasPrefix(a, "--config="):
			path, found = a[len("--config="):], true
		default:
			rest = append(rest, a)
		}
	}
	return path, rest, found, nil
}

// cliFlags names the long flags args set, dashed.
func cliFlags(args []string) map[string]bool {
	set := map[string]bool{}
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[2:], "=")
			set[strings.ReplaceAll(name, "_", "-")] = true
		}
	}
	return set
}

// readConfigFile reads a YAML mapping of flag names to values into --name=value arguments, in
// the file's key order: true adds a switch, false leaves it out, a list repeats the flag, a
// mapping becomes its JSON (as --speculative-config takes it).
func readConfigFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, unwrapPathError(err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxConfigBytes)
	}
	return parseConfigYAML(data)
}

// parseConfigYAML is readConfigFile on the file's bytes.
func parseConfigYAML(data []byte) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	nodes := 0
	if err := checkYAMLBounds(doc.Content[0], 0, &nodes); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("want a mapping of flag names to values")
	}
	var out []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		key := strings.ReplaceAll(root.Content[i].Value, "_", "-")
		if key == "config" {
			continue
		}
		args, err := configValueArgs("--"+key, root.Content[i+1])
		if err != nil {
			return nil, fmt.Errorf("key %s: %v", root.Content[i].Value, err)
		}
		out = append(out, args...)
	}
	return out, nil
}

// checkYAMLBounds refuses nesting deeper than maxConfigDepth and more than maxConfigNodes
// nodes, aliases counted each time they are used.
func checkYAMLBounds(n *yaml.Node, depth int, count *int) error {
	*count++
	switch {
	case depth > maxConfigDepth:
		return fmt.Errorf("nested deeper than %d levels", maxConfigDepth)
	case *count > maxConfigNodes:
		return fmt.Errorf("more than %d values (aliases counted where used)", maxConfigNodes)
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return checkYAMLBounds(n.Alias, depth+1, count)
	}
	for _, c := range n.Content {
		if err := checkYAMLBounds(c, depth+1, count); err != nil {
			return err
		}
	}
	return nil
}

// configValueArgs renders one key's value as arguments.
func configValueArgs(flag string, v *yaml.Node) ([]string, error) {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!bool" {
			on, _ := strconv.ParseBool(v.Value)
			if on {
				return []string{flag}, nil
			}
			return nil, nil
		}
		if v.Tag == "!!null" {
			return nil, nil
		}
		return []string{flag + "=" + v.Value}, nil
	case yaml.SequenceNode:
		var out []string
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("a list of plain values is expected")
			}
			out = append(out, flag+"="+c.Value)
		}
		return out, nil
	case yaml.MappingNode:
		var m any
		if err := v.Decode(&m); err != nil {
			return nil, err
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return []string{flag + "=" + string(b)}, nil
	}
	return nil, fmt.Errorf("unsupported value")
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
