package vlog

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/server/sim"
)

// Version is the vLLM version the simulator reports by default (--sim-vllm-version picks
// another; a Setup's Version is the one in use).
const Version = sim.DefaultVersion

// Level is a Python logging level name.
type Level string

// The levels vLLM logs at.
const (
	Debug   Level = "DEBUG"
	Info    Level = "INFO"
	Warning Level = "WARNING"
	Error   Level = "ERROR"
)

// dateFormat is vLLM's "%m-%d %H:%M:%S".
const dateFormat = "01-02 15:04:05"

// Logger writes vLLM's log lines. It is safe for concurrent use: every call writes its lines
// under one mutex, so lines are never interleaved and the lines of one call stay together.
type Logger struct {
	mu        *sync.Mutex // shared with the Loggers of DPRank
	stdout    io.Writer
	stderr    io.Writer
	now       func() time.Time
	apiPID    int
	enginePID int
	dp        string       // "_DP1" in a data-parallel engine's process names, else ""
	dpRank    int          // the data-parallel rank of the engine
	names     naming       // how the release names its processes (UseRelease)
	release   *sim.Version // the release imitated, nil for the newest
	dpSize    int          // the data-parallel engines of the server, in each one's config line
	buf       []byte
}

// New returns a Logger writing vLLM's logger and uvicorn's access lines to stdout and
// uvicorn's server lines and Python's tracebacks to stderr. now stamps each line (time.Now if
// nil); apiPID and enginePID appear in the "(APIServer pid=N)" and "(EngineCore pid=M)" prefixes.
func New(stdout, stderr io.Writer, now func() time.Time, apiPID, enginePID int) *Logger {
	if now == nil {
		now = time.Now
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	return &Logger{mu: &sync.Mutex{}, stdout: stdout, stderr: stderr, now: now, apiPID: apiPID, enginePID: enginePID}
}

// proc is a process prefix: "(name pid=N) ", none where name is empty.
type proc struct {
	name string
	pid  int
}

// prefix is the text p's lines start with.
func (p proc) prefix() string {
	if p.name == "" {
		return ""
	}
	return fmt.Sprintf("(%s pid=%d) ", p.name, p.pid)
}

// API writes one line of vLLM's logger from the API server process; source is the
// "file.py:line" of the logging call. A message with newlines becomes several lines.
func (l *Logger) API(level Level, source, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(l.api(), level, source, msg)
}

// Engine writes one line of vLLM's logger from the engine core process.
func (l *Logger) Engine(level Level, source, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(l.engine(), level, source, msg)
}

// record writes a vLLM logger record to stdout. The caller holds l.mu.
func (l *Logger) record(p proc, level Level, source, msg string) {
	head := fmt.Sprintf("%s%s %s [%s] ", p.prefix(), level, l.now().Format(dateFormat), source)
	if l.names == namesBareV0 {
		// vLLM's formatter put the source in brackets from 0.8; before, only a closing one.
		head = fmt.Sprintf("%s %s %s] ", level, l.now().Format(dateFormat), source)
	}
	b := l.buf[:0]
	for i, line := range strings.Split(msg, "\n") {
		if i > 0 {
			b = append(b, '\r', '\n')
		}
		b = append(b, head...)
		b = append(b, line...)
	}
	b = append(b, '\n')
	l.flush(l.stdout, b)
}

// plain writes lines that bypass vLLM's formatter (a traceback Python prints itself) with
// the process prefix alone. The caller holds l.mu.
func (l *Logger) plain(w io.Writer, p proc, lines []string) {
	head := p.prefix()
	b := l.buf[:0]
	for _, line := range lines {
		b = append(b, head...)
		b = append(b, line...)
		b = append(b, '\n')
	}
	l.flush(w, b)
}

// uvicorn writes a line in uvicorn's default format, "%(levelprefix)s %(message)s", from the
// API server process. The caller holds l.mu.
func (l *Logger) uvicorn(w io.Writer, level Level, msg string) {
	pad := max(1, 8-len(level))
	l.plain(w, l.api(), []string{string(level) + ":" + strings.Repeat(" ", pad) + " " + msg})
}

// flush writes b in one Write call and keeps the buffer for reuse.
func (l *Logger) flush(w io.Writer, b []byte) {
	_, _ = w.Write(b)
	if cap(b) <= 64<<10 {
		l.buf = b[:0]
	}
}

// Route is one entry of vLLM's "Available routes are:" list.
type Route struct{ Path, Methods string }

// Serving writes what the API server prints once the engine is up: the supported tasks, the
// listen address (e.g. "http://0.0.0.0:8000"), the routes, and uvicorn's startup lines on stderr.
// "Application startup complete." is the line tools wait for.
func (l *Logger) Serving(listenURL string, routes []Route) {
	l.mu.Lock()
	defer l.mu.Unlock()
	api := l.api()
	// The wording of these two lines by release (docs/vllm-behaviour.md#startup-log-lines).
	tasks := "Supported tasks: ['generate']"
	if !l.atLeast("0.14.0") {
		tasks = "Supported_tasks: ['generate']"
	}
	l.record(api, Info, "api_server.py:673", tasks)
	start := "Starting vLLM server on "
	if !l.atLeast("0.18.0") {
		start = "Starting vLLM API server 0 on "
	}
	l.record(api, Info, "api_server.py:677", start+listenURL)
	l.record(api, Info, "launcher.py:37", "Available routes are:")
	for _, r := range routes {
		l.record(api, Info, "launcher.py:46", fmt.Sprintf("Route: %s, Methods: %s", r.Path, r.Methods))
	}
	l.uvicorn(l.stderr, Info, fmt.Sprintf("Started server process [%d]", l.apiPID))
	l.uvicorn(l.stderr, Info, "Waiting for application startup.")
	l.uvicorn(l.stderr, Info, "Application startup complete.")
}

// Shutdown writes uvicorn's shutdown lines on stderr.
func (l *Logger) Shutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.uvicorn(l.stderr, Info, "Shutting down")
	l.uvicorn(l.stderr, Info, "Waiting for application shutdown.")
	l.uvicorn(l.stderr, Info, "Application shutdown complete.")
	l.uvicorn(l.stderr, Info, fmt.Sprintf("Finished server process [%d]", l.apiPID))
}

// Access writes uvicorn's access line on stdout:
//
//	INFO:     127.0.0.1:51234 - "POST /v1/completions HTTP/1.1" 200 OK
//
// remote is the client's "host:port" (Go's http.Request.RemoteAddr; an IPv6 host loses its
// brackets, as uvicorn prints it); path includes the query string, if any.
func (l *Logger) Access(remote, method, path string, status int) {
	if host, port, err := net.SplitHostPort(remote); err == nil {
		remote = host + ":" + port
	}
	line := fmt.Sprintf("%s - \"%s %s HTTP/1.1\" %d", remote, method, path, status)
	if phrase := http.StatusText(status); phrase != "" {
		line += " " + phrase
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.uvicorn(l.stdout, Info, line)
}

// KV is one entry of vLLM's "non-default args" dict. Value is rendered as Python's repr:
// a string quoted, a bool True/False, nil None, numbers as Python prints them, slices as lists.
type KV struct {
	Key   string
	Value any
}

// PyDict renders kvs as Python's repr of a dict with string keys, in the given order:
// {'model_tag': 'Qwen/Qwen3-0.6B', 'max_model_len': 4096}.
func PyDict(kvs []KV) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, kv := range kvs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyStr(kv.Key))
		b.WriteString(": ")
		b.WriteString(pyRepr(kv.Value))
	}
	b.WriteByte('}')
	return b.String()
}

// pyRepr renders v as Python's repr() would render the corresponding Python value.
func pyRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return pyStr(x)
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(x)
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x)
	case float32:
		return pyFloat(float64(x))
	case float64:
		return pyFloat(x)
	case []string:
		return pyList(x, pyStr)
	case []int:
		return pyList(x, strconv.Itoa)
	case []KV:
		return PyDict(x)
	case []any:
		return pyList(x, pyRepr)
	case fmt.Stringer:
		return pyStr(x.String())
	}
	return fmt.Sprint(v)
}

// pyList is the repr of a Python list whose items repr writes.
func pyList[T any](xs []T, repr func(T) string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = repr(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pyStr is Python's repr of a str: single quotes unless the text has a single quote and no
// double quote; backslash, the quote and non-printable characters escaped.
func pyStr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += size
	}
	b.WriteByte(q)
	return b.String()
}

// pyFloat is Python's str(float), as vLLM prints numbers.
func pyFloat(f float64) string { return sim.PyFloat(f) }

// commas renders n with thousands separators, as Python's f"{n:,}".
func commas(n int) string { return textfmt.Thousands(int64(n)) }

// pyBool is Python's str of a bool.
func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}
