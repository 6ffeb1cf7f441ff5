package main

// The hostile-server suite: vllmtop bench and vllmtop metrics, run as a user runs them, against
// in-process servers that misbehave in every way a broken or malicious server can. Each case
// must end with one line of error or a counted failure class, within a deadline, in bounded
// memory, with no escape byte in what vllmtop prints or in the names of the files it saves.

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/refused"
	"github.com/vllmtop/vllmtop/loadgen"
)

// hostileDeadline bounds every command of the suite: none may hang.
const hostileDeadline = 60 * time.Second

// evil is what a hostile server puts in every string: a title change, a screen clear, a
// backspace, a bell, a C1 CSI and a bidi override.
const evil = "\x1b]0;pwned\x07\x1b[2J\b\u009b31m\u202eevil"

// hostile is an in-process server: /v1/models lists model, completions are answered by
// complete, and every byte it writes is counted.
type hostile struct {
	*httptest.Server
	requests atomic.Int64 // completions asked for
	written  atomic.Int64 // bytes written, all routes
}

func newHostile(t *testing.T, model string, complete http.HandlerFunc) *hostile {
	t.Helper()
	h := &hostile{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%s,"object":"model","max_model_len":4096}]}`, jsonString(model))
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		complete(w, r)
	})
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(&countingWriter{ResponseWriter: w, n: &h.written}, r)
	}))
	t.Cleanup(h.Close)
	return h
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingWriter) Flush() { http.NewResponseController(c.ResponseWriter).Flush() }

// jsonString is s as a JSON string, its controls escaped as JSON escapes them (the server's
// client decodes them back to the raw bytes).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sse starts an event stream.
func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// okStream streams max_tokens tokens and the usage, as vLLM does.
func okStream(w http.ResponseWriter, tokens int, usage string) {
	sse(w)
	for i := 0; i < tokens; i++ {
		fmt.Fprint(w, `data: {"choices":[{"index":0,"text":" x","finish_reason":null}]}`+"\n\n")
	}
	fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\ndata: {\"choices\":[],\"usage\":%s}\n\ndata: [DONE]\n\n", usage)
}

// endless writes chunk until the client goes away (or, as a guard, 1 GiB).
func endless(w http.ResponseWriter, r *http.Request, chunk string) {
	b := []byte(strings.Repeat(chunk, max(1, 32<<10/len(chunk))))
	for sent := 0; sent < 1<<30 && r.Context().Err() == nil; sent += len(b) {
		if _, err := w.Write(b); err != nil {
			return
		}
	}
}

// outcome is what one command did.
type outcome struct {
	code           int
	stdout, stderr string
	heapGrowth     int64 // live heap after the command, less before
}

// hostileRun runs vllmtop args within hostileDeadline and measures the heap around it.
func hostileRun(t *testing.T, args ...string) outcome {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(args, &out, &errb) }()
	var o outcome
	select {
	case o.code = <-done:
	case <-time.After(hostileDeadline):
		t.Fatalf("vllmtop %s: no end within %v", strings.Join(args, " "), hostileDeadline)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	o.stdout, o.stderr = out.String(), errb.String()
	o.heapGrowth = int64(after.HeapAlloc) - int64(before.HeapAlloc)
	assertNoControls(t, "stdout", o.stdout)
	assertNoControls(t, "stderr", o.stderr)
	assert.Less(t, o.heapGrowth, int64(64<<20), "live heap after the command")
	return o
}

// assertNoControls fails if s holds anything a terminal acts on but newline and tab: C0, DEL,
// C1 (U+0080-U+009F), bidi controls.
func assertNoControls(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s is not valid UTF-8: %q", what, s)
	}
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f:
			t.Errorf("%s holds the control %U: %q", what, r, s)
			return
		}
	}
}

// oneLineError checks a failed command: exit 1, and stderr one line with the command's prefix.
func oneLineError(t *testing.T, o outcome, prefix string) string {
	t.Helper()
	assert.Equal(t, 1, o.code, "stderr: %s", o.stderr)
	assert.Equal(t, 1, strings.Count(o.stderr, "\n"), "one line: %q", o.stderr)
	assert.True(t, strings.HasPrefix(o.stderr, prefix), "%q", o.stderr)
	return strings.TrimSpace(o.stderr)
}

// tableCount reads a row of bench's result table ("  oversized:"), or "" when it is missing.
func tableCount(table, label string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + ` +(\S+) *$`).FindStringSubmatch(table)
	if m == nil {
		return ""
	}
	return m[1]
}

// benchArgs is a small bench against url: four short requests, two at a time.
func benchArgs(url string, more ...string) []string {
	return append([]string{"bench", "--base-url", url, "--num-prompts", "4", "--max-concurrency", "2",
		"--random-input-len", "8", "--random-output-len", "4", "--disable-tqdm"}, more...)
}

// TestHostileBench runs vllmtop bench against each hostile server; every request fails, so
// the run exits 1, and the failures are counted under the class the case names.
func TestHostileBench(t *testing.T) {
	benchNoKeys(t)
	cases := []struct {
		name  string
		serve http.HandlerFunc
		class loadgen.ErrorClass
		// maxBytes bounds what the server got to write for the whole run: each request's
		// cap and the sockets' buffers. A cap that did not hold would let it stream at
		// loopback speed until the request's deadline.
		maxBytes int64
	}{
		{"an endless SSE line", func(w http.ResponseWriter, r *http.Request) {
			sse(w)
			fmt.Fprint(w, "data: ")
			endless(w, r, "a")
		}, loadgen.ErrOversized, 4 * (loadgen.DefaultMaxEventBytes + 8<<20)},
		{"data lines without a blank line", func(w http.ResponseWriter, r *http.Request) {
			sse(w)
			endless(w, r, `data: {"choices":[{"index":0,"text":"x"}]}`+"\n")
		}, loadgen.ErrOversized, 4 * (loadgen.DefaultMaxEventBytes + 8<<20)},
		{"a huge JSON body for a stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"text":"`)
			endless(w, r, "a")
		}, loadgen.ErrOversized, 4 * (loadgen.DefaultMaxBodyBytes + 8<<20)},
		{"an error event", func(w http.ResponseWriter, _ *http.Request) {
			sse(w)
			fmt.Fprintf(w, "event: error\ndata: {\"error\":{\"message\":%s}}\n\n", jsonString("boom "+evil))
		}, loadgen.ErrStreamError, 1 << 20},
		{"9e18 output tokens", func(w http.ResponseWriter, _ *http.Request) {
			okStream(w, 4, `{"prompt_tokens":8,"completion_tokens":9000000000000000000,"total_tokens":9000000000000000008}`)
		}, loadgen.ErrProtocol, 1 << 20},
		{"an escape-laden error", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":%s}}`, jsonString(evil))
		}, loadgen.ErrHTTP400, 1 << 20},
		{"a stall after the first token", func(w http.ResponseWriter, r *http.Request) {
			sse(w)
			fmt.Fprint(w, `data: {"choices":[{"index":0,"text":" x","finish_reason":null}]}`+"\n\n")
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}, loadgen.ErrTimeout, 1 << 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostile(t, "org/"+evil, tc.serve)
			dir := t.TempDir()
			timeout := "1s"
			if tc.class == loadgen.ErrOversized {
				timeout = "45s" // the cap, not the clock, must end it, however loaded the machine
			}
			o := hostileRun(t, benchArgs(h.URL, "--request-timeout", timeout, "--save-result", "--result-dir", dir)...)
			assert.Equal(t, 1, o.code, "no request succeeded: %s", o.stderr)
			assert.Equal(t, "4", tableCount(o.stdout, "Failed requests:"), o.stdout)
			assert.Equal(t, "4", tableCount(o.stdout, "  "+string(tc.class)+":"), o.stdout)
			assert.Equal(t, "0", tableCount(o.stdout, "Total generated tokens:"), "nothing from a failed request is summed")
			assert.Contains(t, o.stderr, "vllmtop bench: 4 of 4 requests failed: "+string(tc.class)+" 4\n")
			// The last failure is named, in one line of text that the server's escapes do not reach.
			assert.Regexp(t, `vllmtop bench: no request succeeded \(last: (HTTP 4|`+string(tc.class)+`)[^\x1b\n]*\)\n`, o.stderr)
			assert.LessOrEqual(t, h.written.Load(), tc.maxBytes, "the server wrote %d bytes", h.written.Load())
			assertSavedNamesSafe(t, dir, 1, "evil")
		})
	}
}

// assertSavedNamesSafe checks the result files in dir: n of them, names without a control or a
// path in them, with model in them.
func assertSavedNamesSafe(t *testing.T, dir string, n int, model string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, n)
	for _, e := range entries {
		assertNoControls(t, "file name", e.Name())
		assert.False(t, e.IsDir(), "%s: a model id made a directory", e.Name())
		assert.NotContains(t, e.Name(), "..")
		assert.False(t, strings.HasPrefix(e.Name(), "."), "%s: a hidden file", e.Name())
		assert.Contains(t, e.Name(), "-"+model+"-")
	}
}

// refuseAll is a server that lists a model but answers every completion with a 401 whose
// message carries evil.
func refuseAll(t *testing.T) *hostile {
	return newHostile(t, "m", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":%s}}`, jsonString("Invalid API key "+evil))
	})
}

// TestHostileBench401Storm: a server that lists a model but refuses every request. The run of
// 100,000 prompts stops once the back-off's threshold is passed, with one line naming the class
// and the count, and the server saw only about that many requests.
func TestHostileBench401Storm(t *testing.T) {
	benchNoKeys(t)
	h := refuseAll(t)
	dir := t.TempDir()
	o := hostileRun(t, "bench", "--base-url", h.URL, "--num-prompts", "100000", "--max-concurrency", "64",
		"--random-input-len", "8", "--random-output-len", "4", "--disable-tqdm", "--save-result", "--result-dir", dir)
	assert.Equal(t, 1, o.code)
	seen := h.requests.Load()
	assert.LessOrEqual(t, seen, int64(loadgen.DefaultPauseAfter+64), "requests the server saw")
	assert.Equal(t, fmt.Sprint(seen), tableCount(o.stdout, "  http_401:"), "every request sent is counted")
	lines := strings.Split(strings.TrimSpace(o.stderr), "\n")
	last := lines[len(lines)-1]
	assert.Regexp(t, `^vllmtop bench: stopped early: \d+ requests in a row failed before any output \(http_401 \d+; last: HTTP 401 Unauthorized: Invalid API key .*evil\)$`, last)
	assert.NotContains(t, o.stderr, "no request succeeded", "the stop is the one line")
	assertSavedNamesSafe(t, dir, 1, "m")
}

// TestHostileSLOSearch401Storm: an SLO search against the same server ends at its first probe
// with the stop's one line, and no curve or knee: it does not go on probing.
func TestHostileSLOSearch401Storm(t *testing.T) {
	benchNoKeys(t)
	h := refuseAll(t)
	dir := t.TempDir()
	o := hostileRun(t, "bench", "--base-url", h.URL, "--num-prompts", "64", "--sla-variable", "max_concurrency", "--sla", "p99_ttft_ms<=500",
		"--random-input-len", "8", "--random-output-len", "4", "--disable-tqdm", "--result-dir", dir, "--plot", filepath.Join(dir, "c.svg"))
	assert.Equal(t, 1, o.code, o.stderr)
	assert.LessOrEqual(t, h.requests.Load(), int64(loadgen.DefaultPauseAfter+64), "requests the server saw: one probe's")
	lines := strings.Split(strings.TrimSpace(o.stderr), "\n")
	assert.Regexp(t, `^vllmtop bench: max_concurrency=64: stopped early: \d+ requests in a row failed before any output \(http_401 \d+; last: HTTP 401 Unauthorized: Invalid API key .*evil\)$`, lines[len(lines)-1])
	assert.Equal(t, 1, strings.Count(o.stderr, "Testing max_concurrency"), "one probe")
	assert.NotContains(t, o.stdout, "Maximum max_concurrency", "no knee to name")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotEqual(t, "c.svg", e.Name(), "no curve to draw")
	}
}

// TestHostileBenchServerFailsFirst: servers that fail before a run can start (the model list)
// end bench with one line.
func TestHostileBenchServerFailsFirst(t *testing.T) {
	benchNoKeys(t)
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":"`)
		endless(w, r, "m")
	}))
	defer huge.Close()
	empty := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer empty.Close()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":%s}}`, jsonString(evil))
	}))
	defer refuse.Close()

	for _, tc := range []struct {
		name, url, want string
	}{
		{"a huge model list", huge.URL, "the model list is too large: over 4 MiB"},
		{"an empty model list", empty.URL, "not an OpenAI-compatible model list"},
		{"401 on everything", refuse.URL, "401 Unauthorized: the server wants an API key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := hostileRun(t, benchArgs(tc.url)...)
			assert.Contains(t, oneLineError(t, o, "vllmtop bench: "), tc.want)
			assert.Empty(t, o.stdout)
		})
	}
}

// TestHostileSecretsInURLs: a base URL with a password, and a metrics URL with a token, appear
// in no message, whether the server answers or not.
func TestHostileSecretsInURLs(t *testing.T) {
	benchNoKeys(t)
	h := newHostile(t, "m", func(w http.ResponseWriter, _ *http.Request) {
		okStream(w, 4, `{"prompt_tokens":8,"completion_tokens":4,"total_tokens":12}`)
	})
	withPW := strings.Replace(h.URL, "http://", "http://user:PW-secret@", 1)
	o := hostileRun(t, "bench", "--base-url", withPW, "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "4")
	assert.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stdout+o.stderr, "PW-secret")
	assert.Contains(t, o.stderr, "Model: m (the first model of http://user:***@")

	dead := "http://user:PW-secret@" + refused.Addr(t)
	o = hostileRun(t, benchArgs(dead+"/?token=TOKEN-secret")...)
	line := oneLineError(t, o, "vllmtop bench: ")
	assert.NotContains(t, line, "PW-secret")
	assert.NotContains(t, line, "TOKEN-secret")

	m := serveBodies(t, readFixture(t, "vllm-metrics-synthetic-single-process.txt"))
	o = hostileRun(t, "metrics", strings.Replace(m.URL, "http://", "http://u:PW-secret@", 1)+"/metrics?token=TOKEN-secret")
	assert.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "http://u:***@")
	assert.Contains(t, o.stdout, "/metrics?token=***")
	o = hostileRun(t, "metrics", dead+"/metrics?token=TOKEN-secret")
	line = oneLineError(t, o, "vllmtop metrics: ")
	assert.NotContains(t, line, "PW-secret")
	assert.NotContains(t, line, "TOKEN-secret")
}

// TestHostileBenchHTTPS: bench refuses a certificate it cannot verify in one line, and takes it
// with --insecure or with the certificate in --ca-file.
func TestHostileBenchHTTPS(t *testing.T) {
	benchNoKeys(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		okStream(w, 4, `{"prompt_tokens":8,"completion_tokens":4,"total_tokens":12}`)
	}))
	defer srv.Close()
	o := hostileRun(t, benchArgs(srv.URL)...)
	assert.Contains(t, oneLineError(t, o, "vllmtop bench: "), "certificate")
	o = hostileRun(t, benchArgs(srv.URL, "--insecure")...)
	assert.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "4", tableCount(o.stdout, "Successful requests:"))

	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pemCertificate(srv), 0o600))
	o = hostileRun(t, benchArgs(srv.URL, "--ca-file", ca)...)
	assert.Equal(t, 0, o.code, o.stderr)
}

// TestHostileMaxEventSize: --max-event-size raises the cap for a server whose events are
// large but finite, and lowers it too.
func TestHostileMaxEventSize(t *testing.T) {
	benchNoKeys(t)
	big := strings.Repeat("y", 2<<20)
	h := newHostile(t, "m", func(w http.ResponseWriter, _ *http.Request) {
		sse(w)
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"text":"%s","finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n", big)
	})
	o := hostileRun(t, benchArgs(h.URL)...)
	assert.Equal(t, "4", tableCount(o.stdout, "  oversized:"), "2 MiB events are over the default 1 MiB")
	o = hostileRun(t, benchArgs(h.URL, "--max-event-size", "4MiB")...)
	assert.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "4", tableCount(o.stdout, "Successful requests:"))
	o = hostileRun(t, benchArgs(h.URL, "--max-event-size", "lots")...)
	assert.Equal(t, 2, o.code)
	assert.Contains(t, o.stderr, `--max-event-size "lots": want a size from 1KiB to 1GiB`)
}

// TestHostileMetrics runs vllmtop metrics against hostile /metrics servers.
func TestHostileMetrics(t *testing.T) {
	noKeyEnv(t)
	noWait(t)
	// The text format escapes only backslash, quote and newline: the controls go in raw.
	labels := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"" + evil + "\",engine=\"0\"} 3\n"
	dupsAndNaN := "# TYPE vllm:num_requests_running gauge\n" +
		"vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3\n" +
		"vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 4\n" +
		"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} NaN\n" +
		"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"m\",engine=\"0\"} +Inf\n" +
		"# TYPE other gauge\nother{a=\"1\"} 1\nother{a=\"1\"} 2\nother{a=\"2\"} 1\nother{a=\"2\"} 2\n"

	t.Run("escape sequences in labels", func(t *testing.T) {
		o := hostileRun(t, "metrics", serveBodies(t, []byte(labels)).URL)
		assert.Equal(t, 0, o.code, o.stderr)
		assert.Contains(t, o.stdout, "evil")
	})
	t.Run("duplicate series and values out of range", func(t *testing.T) {
		o := hostileRun(t, "metrics", serveBodies(t, []byte(dupsAndNaN)).URL)
		assert.Equal(t, 0, o.code, o.stderr)
		warnings := regexp.MustCompile(`(?m)^warning +(.*)\n((?: {15}.*\n)*)`).FindAllStringSubmatch(o.stdout, -1)
		require.Len(t, warnings, 2, o.stdout)
		// The table's rows wrap at 80 columns under the value column, whole.
		whole := func(m []string) string { return strings.Join(strings.Fields(m[1]+" "+m[2]), " ") }
		assert.Equal(t, "3 duplicate series, the last of each kept (2 families: other, vllm:num_requests_running)", whole(warnings[0]))
		assert.Regexp(t, `^2 values left out: NaN, infinite, negative or absurd \(2 families: vllm:`, whole(warnings[1]))
		for _, l := range strings.Split(o.stdout, "\n") {
			assert.LessOrEqual(t, len([]rune(l)), 80, "%q", l)
		}
		assert.Contains(t, o.stdout, "running 4, waiting --", "the last duplicate, and no NaN shown as a number")
	})
	t.Run("an empty body", func(t *testing.T) {
		o := hostileRun(t, "metrics", serveBodies(t, []byte("\n")).URL)
		assert.Contains(t, oneLineError(t, o, "vllmtop metrics: "), "/metrics: empty /metrics body")
	})
	t.Run("a huge body", func(t *testing.T) {
		var written atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cw := &countingWriter{ResponseWriter: w, n: &written}
			endless(cw, r, "# HELP padding padding\n")
		}))
		defer srv.Close()
		o := hostileRun(t, "metrics", srv.URL, "--timeout", "45s") // the cap must end it, not the clock
		assert.Contains(t, oneLineError(t, o, "vllmtop metrics: "), "body too large: more than 16 MiB; refused")
		assert.Less(t, written.Load(), int64(64<<20))
	})
	t.Run("401 on everything", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":%s}}`, jsonString(evil))
		}))
		defer srv.Close()
		o := hostileRun(t, "metrics", srv.URL)
		assert.Contains(t, oneLineError(t, o, "vllmtop metrics: "), "HTTP 401 Unauthorized")
	})
	t.Run("a stall", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			fmt.Fprint(w, "# TYPE a gauge\n")
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}))
		defer srv.Close()
		o := hostileRun(t, "metrics", "--timeout", "300ms", srv.URL)
		assert.Contains(t, oneLineError(t, o, "vllmtop metrics: "), "timed out after 300ms reading the body")
	})
	t.Run("100,000 series with --window", func(t *testing.T) {
		srv := serveBodies(t, hundredThousandSeries(1), hundredThousandSeries(2))
		o := hostileRun(t, "metrics", "--window", "1s", "--timeout", "40s", srv.URL)
		assert.Equal(t, 0, o.code, o.stderr)
		assertFits(t, o.stdout)
		assert.Equal(t, 6250, strings.Count(o.stdout, "\nmodel "), "every model is reported")
		assert.Contains(t, o.stdout, "TTFT")
	})
	t.Run("a window that never ends within --timeout", func(t *testing.T) {
		old := waitWindow
		waitWindow = func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return nil }
		t.Cleanup(func() { waitWindow = old })
		o := hostileRun(t, "metrics", "--window", "1s", "--timeout", "200ms", serveBodies(t, readFixture(t, "vllm-metrics-synthetic-single-process.txt")).URL)
		oneLineError(t, o, "vllmtop metrics: ")
	})
}

// pemCertificate is a TLS test server's certificate as a PEM file holds it.
func pemCertificate(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// hundredThousandSeries is a /metrics body of 100,000 series: 6,250 models of 16 series each
// (six counters and gauges, a histogram of eight buckets, its sum and count), the counters
// scaled by n so that two bodies make a window.
func hundredThousandSeries(n int) []byte {
	const models = 6250
	var b bytes.Buffer
	family := func(typ, name string, line func(m int)) {
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, typ)
		for m := range models {
			line(m)
		}
	}
	for _, g := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting"} {
		family("gauge", g, func(m int) { fmt.Fprintf(&b, "%s{model_name=\"m%d\",engine=\"0\"} %d\n", g, m, m%7) })
	}
	family("gauge", "vllm:kv_cache_usage_perc", func(m int) { fmt.Fprintf(&b, "vllm:kv_cache_usage_perc{model_name=\"m%d\",engine=\"0\"} 0.25\n", m) })
	for _, c := range []string{"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:num_preemptions_total"} {
		family("counter", c, func(m int) { fmt.Fprintf(&b, "%s{model_name=\"m%d\",engine=\"0\"} %d\n", c, m, 100*n) })
	}
	h := "vllm:time_to_first_token_seconds"
	family("histogram", h, func(m int) {
		for i, le := range []string{"0.001", "0.01", "0.05", "0.1", "0.5", "1.0", "5.0", "+Inf"} {
			fmt.Fprintf(&b, "%s_bucket{model_name=\"m%d\",engine=\"0\",le=\"%s\"} %d\n", h, m, le, (i+1)*10*n)
		}
		fmt.Fprintf(&b, "%s_sum{model_name=\"m%d\",engine=\"0\"} %d\n%s_count{model_name=\"m%d\",engine=\"0\"} %d\n", h, m, 4*n, h, m, 80*n)
	})
	return b.Bytes()
}
