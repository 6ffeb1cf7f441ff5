package config

import (
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// file finds the lines of keys, for messages: toml reports positions of syntax errors only.
type file struct {
	name, data string
	index      map[string][]int // key path -> lines where it is set, in order
}

// errorf is "FILE:LINE: message" for the nth occurrence of key (FILE: when not found).
func (f *file) errorf(key toml.Key, nth int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line := f.line(key, nth); line > 0 {
		return fmt.Errorf("%s:%d: %s", f.name, line, msg)
	}
	return fmt.Errorf("%s: %s", f.name, msg)
}

func (f *file) line(key toml.Key, nth int) int {
	if f.index == nil {
		f.index = indexKeys(f.data)
	}
	lines := f.index[strings.Join(key, ".")]
	if len(lines) == 0 {
		return 0
	}
	return lines[min(nth, len(lines)-1)]
}

// indexKeys maps each key path to the lines that set it: table headers ([a], [[a]]) and
// "key = value" lines under them, dotted and quoted keys included. Lines inside multi-line
// strings can be mistaken for keys; the first match is only used to point at a line.
func indexKeys(data string) map[string][]int {
	idx := map[string][]int{}
	var table []string
	for i, raw := range strings.Split(data, "\n") {
		l := strings.TrimSpace(raw)
		switch {
		case l == "" || l[0] == '#':
			continue
		case strings.HasPrefix(l, "[[") || strings.HasPrefix(l, "["):
			head := strings.Trim(strings.SplitN(l, "#", 2)[0], " \t[]")
			table = splitKey(head)
			k := strings.Join(table, ".")
			idx[k] = append(idx[k], i+1)
			continue
		}
		eq := strings.IndexByte(l, '=')
		if eq <= 0 {
			continue
		}
		path := append(append([]string(nil), table...), splitKey(l[:eq])...)
		k := strings.Join(path, ".")
		idx[k] = append(idx[k], i+1)
	}
	return idx
}

func splitKey(s string) []string {
	parts := strings.Split(s, ".")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, strings.Trim(strings.TrimSpace(p), `"'`))
	}
	return out
}
