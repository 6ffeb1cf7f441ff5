package server

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ArgEdit is one change to a command line, made by EditArgs. Build it with Set, Remove or
// Switch.
type ArgEdit struct {
	flag   string
	value  string
	op     editOp
	enable bool
}

type editOp int

const (
	opSet editOp = iota + 1
	opRemove
	opSwitch
)

// Set sets a flag that takes one value, such as Set("--gpu-memory-utilization", "0.85"): every
// occurrence ("--flag value", "--flag=value", the underscore spelling "--flag_name", and vLLM's
// short alias such as -tp for --tensor-parallel-size) is removed and "--flag value" put where the
// first one was, or appended when there was none. A value that starts with '-' (and is not a
// number) is written "--flag=value".
func Set(flag, value string) ArgEdit { return ArgEdit{flag: flag, value: value, op: opSet} }

// Remove deletes every occurrence of a flag that takes one value, with its value, so the server
// falls back to its default.
func Remove(flag string) ArgEdit { return ArgEdit{flag: flag, op: opRemove} }

// Switch turns a boolean flag on or off: it removes "--flag" and its negation ("--no-flag", or
// "--flag" for Switch("--no-flag", ...)), then appends "--flag" if on.
func Switch(flag string, on bool) ArgEdit { return ArgEdit{flag: flag, op: opSwitch, enable: on} }

func (e ArgEdit) String() string {
	switch e.op {
	case opSet:
		return e.flag + " " + e.value
	case opRemove:
		return "remove " + e.flag
	case opSwitch:
		if e.enable {
			return e.flag
		}
		return "remove " + e.flag
	}
	return ""
}

// shortAliases maps vLLM's short spellings to their long flags.
var shortAliases = map[string]string{
	"-tp":  "--tensor-parallel-size",
	"-pp":  "--pipeline-parallel-size",
	"-dp":  "--data-parallel-size",
	"-q":   "--quantization",
	"-asc": "--api-server-count",
}

// canonicalFlag returns the flag's long name with dashes ("--max_num_seqs" -> "--max-num-seqs",
// "-tp" -> "--tensor-parallel-size"); vLLM's parser accepts underscores for dashes.
func canonicalFlag(f string) string {
	if long, ok := shortAliases[f]; ok {
		return long
	}
	if strings.HasPrefix(f, "--") {
		return "--" + strings.ReplaceAll(f[2:], "_", "-")
	}
	return f
}

// splitFlag splits "--flag=value" into its canonical flag and value; a token without '=' has
// hasValue false. Tokens that are not flags return "".
func splitFlag(tok string) (flag, value string, hasValue bool) {
	if !strings.HasPrefix(tok, "-") || tok == "-" || tok == "--" || isNumber(tok) {
		return "", "", false
	}
	if i := strings.IndexByte(tok, '='); i >= 0 {
		return canonicalFlag(tok[:i]), tok[i+1:], true
	}
	return canonicalFlag(tok), "", false
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// takesNext reports whether the token after a value flag is its value: anything but another
// flag (negative numbers such as "--max-model-len -1" are values).
func takesNext(args []string, i int) bool {
	if i >= len(args) {
		return false
	}
	t := args[i]
	return t == "-" || !strings.HasPrefix(t, "-") || isNumber(t)
}

// EditArgs returns a copy of args with the edits applied in order. Tokens after a bare "--" are
// left alone. It never modifies args.
func EditArgs(args []string, edits ...ArgEdit) []string {
	out := append([]string(nil), args...)
	for _, e := range edits {
		out = applyEdit(out, e)
	}
	return out
}

func applyEdit(args []string, e ArgEdit) []string {
	target := canonicalFlag(e.flag)
	var negation string
	if e.op == opSwitch {
		if rest, ok := strings.CutPrefix(target, "--no-"); ok {
			negation = "--" + rest
		} else {
			negation = "--no-" + strings.TrimPrefix(target, "--")
		}
	}
	out := make([]string, 0, len(args)+2)
	insertAt := -1
	i := 0
	for ; i < len(args); i++ {
		tok := args[i]
		if tok == "--" {
			break
		}
		flag, _, inline := splitFlag(tok)
		switch {
		case e.op == opSwitch && (flag == target || flag == negation):
			continue
		case e.op != opSwitch && flag == target:
			if insertAt < 0 {
				insertAt = len(out)
			}
			if !inline && takesNext(args, i+1) {
				i++ // its value
			}
			continue
		}
		out = append(out, tok)
	}
	tail := args[i:]
	switch e.op {
	case opSet:
		if insertAt < 0 {
			insertAt = len(out)
		}
		set := []string{target, e.value}
		if strings.HasPrefix(e.value, "-") && !isNumber(e.value) {
			set = []string{target + "=" + e.value} // "--flag -x" would read as two flags
		}
		out = append(out[:insertAt], append(set, out[insertAt:]...)...)
	case opSwitch:
		if e.enable {
			out = append(out, target)
		}
	}
	return append(out, tail...)
}

// ArgValue returns the value of a flag that takes one value (the last occurrence, as argparse
// does), accepting the same spellings as Set.
func ArgValue(args []string, flag string) (string, bool) {
	target := canonicalFlag(flag)
	var val string
	found := false
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			break
		}
		f, v, inline := splitFlag(args[i])
		if f != target {
			continue
		}
		switch {
		case inline:
			val, found = v, true
		case takesNext(args, i+1):
			val, found = args[i+1], true
			i++
		}
	}
	return val, found
}

// DefaultPort is vLLM's default --port.
const DefaultPort = 8000

// endpoint is where the supervised server answers HTTP, derived from its arguments.
type endpoint struct {
	base       string // "http://127.0.0.1:8000"
	socket     string // --uds path; base is then "http://localhost"
	portKnown  bool   // false with --port 0: the real port comes from the log
	explicitly bool   // --port or --host was given
}

// endpointFromArgs derives the URL to probe from vLLM's --host, --port, --uds and
// --ssl-certfile: the default port is 8000; a wildcard or missing host is probed on loopback.
func endpointFromArgs(args []string) endpoint {
	if p, ok := ArgValue(args, "--uds"); ok && p != "" {
		return endpoint{base: "http://localhost", socket: p, portKnown: true, explicitly: true}
	}
	scheme := "http"
	if _, ok := ArgValue(args, "--ssl-certfile"); ok {
		scheme = "https"
	}
	port := strconv.Itoa(DefaultPort)
	ep := endpoint{portKnown: true}
	if p, ok := ArgValue(args, "--port"); ok {
		if n, err := strconv.Atoi(p); err == nil && n >= 0 && n < 65536 {
			port = strconv.Itoa(n)
			ep.portKnown = n != 0
			ep.explicitly = true
		}
	}
	host, ok := ArgValue(args, "--host")
	if ok {
		ep.explicitly = true
	}
	ep.base = scheme + "://" + net.JoinHostPort(probeHost(host), port)
	return ep
}

// probeHost maps the host a server binds to the host a local client should connect to.
func probeHost(host string) string {
	host = strings.Trim(host, "[]")
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return host
}

// baseFromListenURL turns a logged listen address ("http://0.0.0.0:8000") into a URL to probe.
func baseFromListenURL(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Port() == "" || u.Port() == "0" {
		return "", false
	}
	return u.Scheme + "://" + net.JoinHostPort(probeHost(u.Hostname()), u.Port()), true
}
