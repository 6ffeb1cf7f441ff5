package recorder

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/exposition"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

var t0 = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

func TestRingBounds(t *testing.T) {
	r := NewRing(time.Minute, 100, 5*time.Second)
	body := bytes.Repeat([]byte("x"), 30)
	r.Add("a", t0, body)
	r.Add("a", t0.Add(time.Second), body) // within every: dropped
	r.Add("b", t0.Add(time.Second), body)
	n, size := r.Len()
	assert.Equal(t, 2, n)
	assert.Equal(t, 60, size)
	r.Add("a", t0.Add(6*time.Second), body)
	r.Add("b", t0.Add(6*time.Second), body) // 120 bytes > 100: the oldest goes
	n, size = r.Len()
	assert.Equal(t, 3, n)
	assert.Equal(t, 90, size)
	assert.Equal(t, "b", r.Snapshot(t0, 0)[0].Endpoint)
	r.Add("a", t0.Add(70*time.Second), body) // a minute later: the rest are too old
	got := r.Snapshot(t0.Add(70*time.Second), 0)
	require.Len(t, got, 1)
	assert.Equal(t, t0.Add(70*time.Second), got[0].Time)
	assert.Empty(t, r.Snapshot(t0.Add(200*time.Second), time.Second), "span")
	r.Add("huge", t0.Add(71*time.Second), bytes.Repeat([]byte("x"), 101))
	n, _ = r.Len()
	assert.Equal(t, 1, n, "a body over the whole cap is not kept")
}

func TestRingKeepsAFairSharePerEndpoint(t *testing.T) {
	// One endpoint of 400-byte bodies beside five of 20 bytes, in a ring of 1,000 bytes.
	r := NewRing(time.Hour, 1000, -1)
	small := bytes.Repeat([]byte("x"), 20)
	huge := bytes.Repeat([]byte("y"), 400)
	for i := range 100 {
		at := t0.Add(time.Duration(i) * time.Second)
		r.Add("huge", at, huge)
		for e := range 5 {
			r.Add(fmt.Sprint("small-", e), at, small)
		}
	}
	n, size := r.Len()
	assert.LessOrEqual(t, size, 1000)
	per := map[string][]time.Time{}
	for _, s := range r.Snapshot(t0.Add(time.Hour), 0) {
		per[s.Endpoint] = append(per[s.Endpoint], s.Time)
	}
	assert.Len(t, per, 6, "every endpoint is kept")
	require.Len(t, per["huge"], 1, "the huge endpoint keeps its newest")
	assert.Equal(t, t0.Add(99*time.Second), per["huge"][0])
	for e := range 5 {
		got := per[fmt.Sprint("small-", e)]
		assert.Len(t, got, 6, "the rest is shared evenly: (1000-400)/5 bytes each")
		assert.Equal(t, t0.Add(99*time.Second), got[len(got)-1], "the most recent are kept")
	}
	assert.Equal(t, 31, n)
}

func capture(t *testing.T) string {
	b, err := os.ReadFile("../../../testdata/vllm-0.24-single-engine-rust-vllmtop.prom")
	require.NoError(t, err)
	return string(b)
}

const secret = "sk-live-0123456789"

func sample(t *testing.T) Bundle {
	base := capture(t)
	r := NewRing(0, 0, -1)
	for i := range 3 {
		body := exposition.Add(base, "vllm:generation_tokens_total", float64(1000*i))
		r.Add("gpu-a", t0.Add(time.Duration(i)*10*time.Second), []byte(body))
		r.Add("../evil\x1b[2J", t0.Add(time.Duration(i)*10*time.Second), []byte(base))
	}
	return Bundle{
		Created: t0.Add(30 * time.Second), Span: 10 * time.Minute,
		Scrapes: r.Snapshot(t0.Add(30*time.Second), 0),
		Results: []loadgen.Result{{Index: 1, TTFT: 20 * time.Millisecond, OutputTokens: 16}, {Index: 2, Error: loadgen.ErrHTTP401, ErrorMessage: "HTTP 401: bad key " + secret}},
		Canary:  []loadgen.CanarySample{{At: t0, TTFT: 30 * time.Millisecond}},
		ServerLog: []string{
			"INFO 11-30 03:00:00 [api_server.py:1] non-default args: {'model': 'm', 'api_key': ['" + secret + "']}",
			"INFO started with --api-key " + secret + " --port 8000",
			"\x1b[31mERROR\x1b[0m engine dead",
		},
		Settings: map[string]string{"api_key": secret, "api_key_env": "VLLM_API_KEY", "url": "http://user:pw@h:8000/metrics?token=" + secret, "concurrency": "8"},
		Verdicts: []diagnose.Verdict{{Rule: diagnose.RuleDown, Severity: diagnose.Critical, Subject: "gpu-b", Text: "gpu-b is DOWN: connection refused"}},
		Secrets:  []string{secret},
	}
}

// untar lists a bundle's files and their contents.
func untar(t *testing.T, file string) map[string]string {
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[h.Name] = string(b)
	}
}

func TestWriteAndRead(t *testing.T) {
	dir := t.TempDir()
	b := sample(t)
	file, err := Write(dir, b)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "vllmtop-bundle-20261130T030030.000Z.tar.gz"), file)
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	files := untar(t, file)
	root := "vllmtop-bundle-20261130T030030.000Z/"
	for name, content := range files {
		assert.True(t, strings.HasPrefix(name, root), name)
		assert.NotContains(t, name, "..", "file names are sanitised")
		assert.NotContains(t, name, "\x1b")
		assert.NotContains(t, content, secret, "%s holds the secret", name)
		assert.NotContains(t, content, ":pw@")
	}
	_, ok := files[root+"scrapes/gpu-a/000000.prom"]
	assert.True(t, ok, "gpu-a's first scrape")
	_, ok = files[root+"scrapes/_evil/000001.prom"]
	assert.True(t, ok, "the hostile name's scrape, under a safe name")
	assert.Contains(t, files[root+"README.txt"], "6 raw /metrics scrapes of 2 endpoints over 20s")
	assert.Contains(t, files[root+"README.txt"], "vllmtop metrics --bundle FILE")
	assert.Contains(t, files[root+"server.log"], "'api_key': ***}")
	assert.Contains(t, files[root+"server.log"], "--api-key *** --port 8000")
	assert.Contains(t, files[root+"server.log"], "\nERROR engine dead", "escape sequences dropped")
	assert.Contains(t, files[root+"settings.json"], `"api_key": "***"`)
	assert.Contains(t, files[root+"settings.json"], `"api_key_env": "VLLM_API_KEY"`, "a variable's name is not a secret")
	assert.Contains(t, files[root+"settings.json"], `"url": "http://user:***@h:8000/metrics?token=***"`)

	got, err := Read(file)
	require.NoError(t, err)
	assert.Equal(t, b.Created, got.Created)
	assert.Len(t, got.Scrapes, 6)
	assert.Equal(t, []string{"../evil", "gpu-a"}, got.Endpoints())
	require.Len(t, got.Results, 2)
	assert.Equal(t, loadgen.ErrHTTP401, got.Results[1].Error)
	assert.Equal(t, "HTTP 401: bad key ***", got.Results[1].ErrorMessage)
	assert.Len(t, got.Canary, 1)
	assert.Len(t, got.ServerLog, 3)
	assert.Equal(t, b.Verdicts, got.Verdicts)
	assert.Equal(t, "8", got.Settings["concurrency"])

	// Replayed through scrape: the same window as live, streamed or from memory.
	opened, err := Open(context.Background(), file)
	require.NoError(t, err)
	assert.Nil(t, opened.Scrapes[0].Body, "Open leaves the bodies in the file")
	for _, from := range []*Bundle{opened, got} {
		ws, err := from.Windows(context.Background(), 20*time.Second)
		require.NoError(t, err)
		require.Len(t, ws, 2)
		assert.Equal(t, "../evil", ws[0].Endpoint)
		cur, w := ws[1].Cur, ws[1].Window
		require.True(t, ws[1].OK)
		assert.Equal(t, t0.Add(20*time.Second), cur.Time)
		assert.Equal(t, 20.0, w.ElapsedSeconds)
		require.Len(t, w.Models, 1)
		assert.Equal(t, scrape.Some(100), w.Models[0].Total.GenerationTokensPerSec)
	}
	ws, err := got.Windows(context.Background(), 10*time.Second)
	require.NoError(t, err)
	w := ws[1].Window
	assert.Equal(t, 10.0, w.ElapsedSeconds, "the newest scrape at least --window before the last")
	var n int
	require.NoError(t, got.Replay(func(string, *scrape.Snapshot) error { n++; return nil }, nil))
	assert.Equal(t, 6, n)
}

func tarGz(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(content)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func TestReadRefusesBadBundles(t *testing.T) {
	for _, c := range []struct {
		name  string
		data  []byte
		error string
	}{
		{"not gzip", []byte("hello"), "not a .tar.gz"},
		{"no manifest", tarGz(t, map[string]string{"x/README.txt": "hi"}), "no manifest.json"},
		{"escape", tarGz(t, map[string]string{"../../etc/x": "hi"}), "leaves the bundle"},
		{"absolute", tarGz(t, map[string]string{"/etc/x": "hi"}), "leaves the bundle"},
		{"newer format", tarGz(t, map[string]string{"x/manifest.json": `{"format": 9}`}), "bundle format 9"},
		{"missing scrape", tarGz(t, map[string]string{"x/manifest.json": `{"format": 1, "scrapes": [{"endpoint":"a","file":"scrapes/a/1.prom"}]}`}), "lacks"},
	} {
		_, err := readBytes(t, c.data)
		assert.ErrorContains(t, err, c.error, c.name)
	}
	_, err := Read(filepath.Join(t.TempDir(), "none.tar.gz"))
	assert.ErrorContains(t, err, "no such file")
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("hello"))
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	man := `{"format":1,"scrapes":[{"endpoint":"a","file":"scrapes/a/1.prom"}]}`
	_ = tw.WriteHeader(&tar.Header{Name: "x/manifest.json", Size: int64(len(man)), Mode: 0o600, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(man))
	body := "vllm:num_requests_running{model_name=\"m\"} 1\n"
	_ = tw.WriteHeader(&tar.Header{Name: "x/scrapes/a/1.prom", Size: int64(len(body)), Mode: 0o600, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	_ = gz.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := readBytes(t, data)
		if err != nil {
			return
		}
		_ = b.Replay(func(string, *scrape.Snapshot) error { return nil }, func(string, time.Time, error) {})
		_, _ = b.Windows(context.Background(), time.Second)
	})
}

// readBytes reads a bundle given as bytes, through a file as the command reads it.
func readBytes(t testing.TB, data []byte) (*Bundle, error) {
	file := filepath.Join(t.TempDir(), "b.tar.gz")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	return Read(file)
}

func TestResultsKeepsTheNewestWithinTheCap(t *testing.T) {
	k := NewResults(3)
	assert.Empty(t, k.Snapshot())
	for i := range 5 {
		k.Add(loadgen.Result{Index: i, ITLs: make([]time.Duration, 1000), ErrorMessage: strings.Repeat("e", 10<<10)})
	}
	got := k.Snapshot()
	require.Len(t, got, 3)
	for i, r := range got {
		assert.Equal(t, i+2, r.Index, "oldest first, the oldest two dropped")
		assert.Nil(t, r.ITLs)
		assert.LessOrEqual(t, len(r.ErrorMessage), 4100)
	}
}

// A window that reaches back across a restart begins at the restarted server's first scrape,
// found among those between, whether the bundle is in memory or streamed from its file.
func TestWindowsBeginAfterARestart(t *testing.T) {
	base := capture(t)
	const start = "process_start_time_seconds 1.78702152187e+09"
	require.Contains(t, base, start)
	r := NewRing(0, 0, -1)
	for i := range 7 {
		body, gen := base, 1000*i
		if i >= 3 { // the server restarted between the third and fourth scrapes
			body, gen = strings.Replace(base, start, "process_start_time_seconds 1.78702160000e+09", 1), 1000*(i-3)
		}
		r.Add("gpu-a", t0.Add(time.Duration(i)*10*time.Second), []byte(exposition.Add(body, "vllm:generation_tokens_total", float64(gen))))
	}
	b := Bundle{Created: t0.Add(70 * time.Second), Span: 10 * time.Minute, Scrapes: r.Snapshot(t0.Add(70*time.Second), 0)}
	file, err := Write(t.TempDir(), b)
	require.NoError(t, err)
	opened, err := Open(context.Background(), file)
	require.NoError(t, err)
	for _, from := range []*Bundle{&b, opened} {
		ws, err := from.Windows(context.Background(), 5*time.Minute)
		require.NoError(t, err)
		require.Len(t, ws, 1)
		w := ws[0].Window
		assert.False(t, w.Restarted)
		assert.True(t, w.SinceRestart)
		assert.Equal(t, 30.0, w.ElapsedSeconds, "from the fourth scrape, the restarted server's first, to the seventh")
		require.Len(t, w.Models, 1)
		assert.Equal(t, scrape.Some(100), w.Models[0].Total.GenerationTokensPerSec)
	}
	ws, err := b.Windows(context.Background(), 20*time.Second)
	require.NoError(t, err)
	assert.False(t, ws[0].Window.SinceRestart, "a span after the restart needs no shortening")
	assert.Equal(t, 20.0, ws[0].Window.ElapsedSeconds)
}

// Without process_start_time_seconds a restart shows only as counters that went down, which
// says nothing of the scrapes between: a short-lived server there would pass for the last.
// Such a window keeps its restart and no rates rather than guess.
func TestWindowsAcrossARestartWithoutAProcessStartTimeKeepNoRates(t *testing.T) {
	var kept []string
	for _, l := range strings.Split(capture(t), "\n") {
		if !strings.HasPrefix(l, "process_start_time_seconds") {
			kept = append(kept, l)
		}
	}
	base := strings.Join(kept, "\n")
	r := NewRing(0, 0, -1)
	// Three servers: A's counters, then a short-lived B's, then C's.
	for i, gen := range []int{5000, 8000, 0, 100, 200, 1200, 2200, 3200} {
		r.Add("gpu-a", t0.Add(time.Duration(i)*10*time.Second), []byte(exposition.Add(base, "vllm:generation_tokens_total", float64(gen))))
	}
	b := Bundle{Created: t0.Add(80 * time.Second), Span: 10 * time.Minute, Scrapes: r.Snapshot(t0.Add(80*time.Second), 0)}
	ws, err := b.Windows(context.Background(), 5*time.Minute)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	assert.True(t, ws[0].Window.Restarted)
	assert.False(t, ws[0].Window.SinceRestart)
}
