//go:build linux

package main

// The dashboard as a user runs it against a Prometheus that answers badly: it keeps running,
// answers keys, stays under 150 MB, says what is wrong, sends the Prometheus's credential
// to no other host, and ends on SIGTERM.

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/refused"
	"github.com/vllmtop/vllmtop/server"
)

// maxDashboardRSS is the peak resident memory the dashboard may reach on any of them.
const maxDashboardRSS = 150 << 20

// hostileProm is one way a Prometheus answers, and what the dashboard must then show.
type hostileProm struct {
	name   string
	answer http.HandlerFunc // nil: nothing listens
	want   string           // on the screen once the answer has been read
}

func promFile(t *testing.T, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "hostile", "prometheus", name))
	require.NoError(t, err)
	return b
}

func answerJSON(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}
}

// manyVectorSeries is a vector answer of n series of distinct instances.
func manyVectorSeries(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"instance":"h%d:8000","model_name":"m"},"value":[1,"1"]}`, i)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// drip sends the headers, then one byte every interval until the client goes.
func drip(interval time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for _, c := range []byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`) {
			_, _ = w.Write([]byte{c})
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(interval):
			}
		}
	}
}

func hostileProms(t *testing.T) []hostileProm {
	series := manyVectorSeries(300_000)
	return []hostileProm{
		{"data null", answerJSON(promFile(t, "data-null.json")), "is DOWN"},
		{"wrong result type", answerJSON(promFile(t, "vector-result-object.json")), "is DOWN"},
		{"a string answer", answerJSON(promFile(t, "string.json")), "is DOWN"},
		{"NaN and Inf", answerJSON(promFile(t, "vector-nan-inf.json")), "nan:8000"},
		{"300,000 series", answerJSON(series), "series"},
		{"a 5 s drip", drip(5 * time.Second), "is DOWN"},
		{"a 500 with escape codes", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "\x1b[31mboom\x1b]0;pwned\x07\x1b[2J overloaded")
		}, "is DOWN"},
		{"nothing listening", nil, "is DOWN"},
	}
}

// promURL serves answer, or returns the address of a port where nothing listens.
func promURL(t *testing.T, answer http.HandlerFunc) string {
	if answer == nil {
		return "http://" + refused.Addr(t)
	}
	srv := httptest.NewServer(answer)
	t.Cleanup(srv.Close)
	return srv.URL
}

// peakRSS is a process's high-water resident memory, from /proc.
func peakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// statusLine is the screen's line that holds want, for the log.
func statusLine(screen, want string) string {
	i := strings.LastIndex(screen, want)
	if i < 0 {
		return ""
	}
	start := strings.LastIndexByte(screen[:i], '\n') + 1
	end := strings.IndexByte(screen[i:], '\n')
	if end < 0 {
		end = len(screen) - i
	}
	return strings.TrimSpace(screen[start : i+end])
}

func TestDashboardOnAHostilePrometheus(t *testing.T) {
	bin := buildDashboard(t, t.TempDir())
	for _, c := range hostileProms(t) {
		t.Run(c.name, func(t *testing.T) {
			d := startDashboard(t, bin, "--prometheus", promURL(t, c.answer))
			d.waitFor(t, c.want, 60*time.Second)
			t.Logf("status: %s", statusLine(d.scr.text(), c.want))
			_, err := d.master.Write([]byte("?"))
			require.NoError(t, err)
			d.waitFor(t, "Keys  (? or esc closes)", 20*time.Second)
			rss := peakRSS(t, d.cmd.Process.Pid)
			t.Logf("peak RSS %.0f MB", float64(rss)/(1<<20))
			assert.Less(t, rss, int64(maxDashboardRSS), "peak resident memory")
			assert.NotContains(t, d.scr.raw(), "\x1b]0;pwned", "no escape from the answer reaches the terminal")
			d.signalEnds(t, syscall.SIGTERM, server.DefaultGrace+5*time.Second)
		})
	}
}

// A Prometheus that redirects to another host: the other host gets no credential.
func TestDashboardPrometheusRedirectKeepsTheKey(t *testing.T) {
	var leaked, reached, sent atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		answerJSON(promFile(t, "data-null.json"))(w, r)
	}))
	t.Cleanup(other.Close)
	// localhost and 127.0.0.1 on another port: another origin.
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer secret-prom-token-1234" {
			sent.Add(1) // the origin gets it
		}
		http.Redirect(w, r, otherURL+r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(prom.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("[prometheus]\nurl = \""+prom.URL+"\"\napi_key_env = \"PROM_TOKEN\"\n"), 0o600))
	t.Setenv("PROM_TOKEN", "secret-prom-token-1234")
	bin := buildDashboard(t, t.TempDir())
	d := startDashboard(t, bin, "--config", cfg, "--prometheus", prom.URL)
	d.waitFor(t, "is DOWN", 60*time.Second)
	t.Logf("status: %s (the other host got %d requests)", statusLine(d.scr.text(), "is DOWN"), reached.Load())
	assert.NotContains(t, d.scr.text(), "secret-prom-token-1234")
	d.signalEnds(t, syscall.SIGTERM, server.DefaultGrace+5*time.Second)
	assert.Positive(t, sent.Load(), "the Prometheus configured gets its key")
	assert.Zero(t, leaked.Load(), "requests to the other host with a credential (of %d)", reached.Load())
}
