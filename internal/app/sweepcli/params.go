package sweepcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/vllmtop/vllmtop/loadgen"
)

// nameKey names a combination in the dict form of a parameter file, as vLLM's.
const nameKey = "_benchmark_name"

// Combo is one combination of a --serve-params or --bench-params file: parameters in the
// file's order, each a JSON value (json.Number, string, bool, or an object for a nested
// config), and its name in the dict form.
type Combo struct {
	Name   string
	Params []Param
}

// Param is one parameter: its key as in the file (max_num_seqs, or a dotted nested key).
type Param struct {
	Key   string
	Value any
}

// ReadParams reads a parameter file as vllm bench sweep reads it: a list of objects, or an
// object of named objects ({"name": {...}}); names must be unique. An empty path is one
// empty combination (the command as given).
func ReadParams(path, flag string) ([]Combo, error) {
	if path == "" {
		return []Combo{{}}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	combos, err := parseParams(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return combos, nil
}

func parseParams(data []byte) ([]Combo, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("empty file: want a JSON list of objects")
	}
	var combos []Combo
	switch data[0] {
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return nil, err
		}
		for i, it := range items {
			ps, err := orderedObject(it)
			if err != nil {
				return nil, fmt.Errorf("item %d: each item in the parameter sweep should be an object: %v", i, err)
			}
			combos = append(combos, comboOf("", ps))
		}
	case '{':
		named, err := rawMembers(data)
		if err != nil {
			return nil, err
		}
		for _, n := range named {
			ps, err := orderedObject(n.raw) // raw, so that the file's order of keys is kept
			if err != nil {
				return nil, fmt.Errorf("%q: want an object of parameters: %v", n.key, err)
			}
			combos = append(combos, Combo{Name: n.key, Params: ps})
		}
	default:
		return nil, errors.New("the parameter sweep should be a list of objects (or an object of named objects)")
	}
	seen := map[string]bool{}
	for _, c := range combos {
		if c.Name != "" && seen[c.Name] {
			return nil, fmt.Errorf("duplicate _benchmark_name %q: names must be unique", c.Name)
		}
		seen[c.Name] = true
	}
	if len(combos) == 0 {
		return nil, errors.New("no combination: an empty list or object runs nothing (a list of one {} runs the command as it is)")
	}
	return combos, nil
}

// comboOf is a list item's combination; its _benchmark_name is the combination's name.
func comboOf(name string, ps []Param) Combo {
	c := Combo{Name: name}
	for _, p := range ps {
		if p.Key == nameKey {
			c.Name = fmt.Sprint(p.Value)
			continue
		}
		c.Params = append(c.Params, p)
	}
	return c
}

type rawMember struct {
	key string
	raw json.RawMessage
}

// rawMembers reads a JSON object's members in order, their values undecoded.
func rawMembers(data []byte) ([]rawMember, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []rawMember
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, rawMember{key: k.(string), raw: v})
	}
	return out, nil
}

// orderedObject reads a JSON object's members in order, numbers as json.Number.
func orderedObject(data []byte) ([]Param, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []Param
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, Param{Key: k.(string), Value: v})
	}
	return out, nil
}

// Has reports whether the combination sets key (in its - or _ spelling).
func (c Combo) Has(key string) bool {
	for _, p := range c.Params {
		if strings.ReplaceAll(p.Key, "-", "_") == strings.ReplaceAll(key, "-", "_") {
			return true
		}
	}
	return false
}

// Text is the parameters as k=v joined by sep (vLLM's as_text).
func (c Combo) Text(sep string) string {
	parts := make([]string, len(c.Params))
	for i, p := range c.Params {
		parts[i] = p.Key + "=" + pyStr(p.Value)
	}
	return strings.Join(parts, sep)
}

// Label is the combination's name, else its parameters as text ("" for none).
func (c Combo) Label() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Text("-")
}

// Fields are the parameters as result fields, numbers as Python writes them.
func (c Combo) Fields() []loadgen.Field {
	out := make([]loadgen.Field, len(c.Params))
	for i, p := range c.Params {
		out[i] = loadgen.Field{Key: p.Key, Value: fieldValue(p.Value)}
	}
	return out
}

func fieldValue(v any) any {
	if n, ok := v.(json.Number); ok {
		if i, err := strconv.Atoi(n.String()); err == nil {
			return i
		}
		f, _ := n.Float64()
		return loadgen.PyFloat(f)
	}
	if m, ok := v.(map[string]any); ok {
		return pyDict(m)
	}
	return v
}

// ApplyTo returns cmd with the parameters applied as vLLM's apply_to_cmd does: a flag already
// on the command line (in its - or _ spelling) gets the new value in place, another is
// appended; true is the bare flag and false its --no- form; an object is passed as JSON.
func (c Combo) ApplyTo(cmd []string) []string {
	out := append([]string(nil), cmd...)
	for _, p := range c.Params {
		out = applyOne(out, p.Key, p.Value)
	}
	return out
}

func applyOne(cmd []string, key string, v any) []string {
	value := pyStr(v)
	b, isBool := v.(bool)
	pair := []string{"--" + cliKey(key), value}
	if isBool {
		pair = []string{"--" + cliKey(key)}
		if strings.Contains(key, ".") {
			pair = []string{"--" + cliKey(key) + "=" + strings.ToLower(value)}
		} else if !b {
			pair = []string{"--no-" + cliKey(key)}
		}
	}
	for _, cand := range keyCandidates(key, isBool, b) {
		for i, a := range cmd {
			if a != cand {
				continue
			}
			cmd[i] = pair[0]
			if len(pair) == 2 && i+1 < len(cmd) {
				cmd[i+1] = pair[1]
			} else if len(pair) == 2 {
				cmd = append(cmd, pair[1])
			}
			return cmd
		}
	}
	return append(cmd, pair...)
}

// cliKey is the flag spelling vLLM prefers on a command line: dashes, except after a dot.
func cliKey(key string) string {
	head, rest, dotted := strings.Cut(key, ".")
	head = strings.ReplaceAll(head, "_", "-")
	if dotted {
		return head + "." + rest
	}
	return head
}

// keyCandidates are the spellings of key's flag that a command line may already hold.
func keyCandidates(key string, isBool, value bool) []string {
	head, rest, dotted := strings.Cut(key, ".")
	var out []string
	for _, h := range []string{strings.ReplaceAll(head, "_", "-"), head, strings.ReplaceAll(head, "-", "_")} {
		k := h
		if dotted {
			k += "." + rest
		}
		out = append(out, "--"+k)
		if isBool && !dotted {
			out = append(out, "--no-"+k)
		}
	}
	_ = value
	return out
}

// pyStr is str(v) as Python prints a JSON value: 0.9, 1.0, 8, True; objects as json.dumps.
func pyStr(v any) string {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if _, err := strconv.Atoi(s); err == nil {
			return s
		}
		f, _ := x.Float64()
		return loadgen.PyFloat(f).String()
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return x
	case nil:
		return "None"
	case map[string]any:
		return pyDict(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// pyDict is json.dumps of an object: keys sorted here (Go's maps have no order), ", " and
// ": " between items.
func pyDict(m map[string]any) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		kb, _ := json.Marshal(k)
		var vs string
		switch x := m[k].(type) {
		case map[string]any:
			vs = pyDict(x)
		case json.Number:
			vs = x.String()
		default:
			b, _ := json.Marshal(x)
			vs = string(b)
		}
		parts[i] = string(kb) + ": " + vs
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
