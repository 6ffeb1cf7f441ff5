package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hostile bundles are built here from code; testdata/hostile/bundles/README.md gives
// each recipe. VLLMTOP_HOSTILE_BUNDLES=DIR writes them to DIR too, to run the binary on.

// tarEntry is one entry of a crafted bundle: a header and its data (Size is set from data
// unless given).
type tarEntry struct {
	hdr  tar.Header
	data []byte
}

func reg(name string, data []byte) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Mode: 0o600, Typeflag: tar.TypeReg}, data: data}
}

// craft writes entries as a .tar.gz; a zero-filled entry of n bytes is zeros(n).
func craft(t testing.TB, entries ...tarEntry) []byte {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := e.hdr
		if h.Size > 0 && e.data == nil {
			// A header that lies about a size no one writes: the archive ends there.
			require.NoError(t, tw.WriteHeader(&h))
			require.NoError(t, gz.Close())
			return buf.Bytes()
		}
		if h.Size == 0 && h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		require.NoError(t, tw.WriteHeader(&h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write(e.data)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// manifestOf is a manifest.json naming scrapes: n endpoints, per scrapes each, every one
// pointing at file.
func manifestOf(n, per int, file string) []byte {
	type entry struct {
		Endpoint string    `json:"endpoint"`
		Time     time.Time `json:"time"`
		File     string    `json:"file"`
	}
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	var scrapes []entry
	for e := range n {
		for i := range per {
			scrapes = append(scrapes, entry{fmt.Sprintf("gpu-%d:8000", e), t0.Add(time.Duration(i) * 5 * time.Second), file})
		}
	}
	b, _ := json.Marshal(map[string]any{"format": 1, "created": t0, "scrapes": scrapes})
	return b
}

const tinyBody = "vllm:num_requests_running{model_name=\"m\"} 1\nvllm:num_requests_waiting{model_name=\"m\"} 0\n"

type hostileBundle struct {
	name string
	data func(t testing.TB) []byte
	// want is in stdout (exit 0) or, with fail, in the one error line (exit 1).
	want string
	fail bool
}

func hostileBundles() []hostileBundle {
	body := reg("b/scrapes/a/1.prom", []byte(tinyBody))
	man := func(n, per int) tarEntry { return reg("b/manifest.json", manifestOf(n, per, "scrapes/a/1.prom")) }
	verdicts := `[{"rule":"kv-bound","severity":"critical","subject":"gpu-0","text":"hot \u001b[2J","evidence":[{"name":"kv_cache_usage","value":1e308,"unit":"%"},{"name":"waiting","value":-1.7e308}]}]`
	return []hostileBundle{
		{"quadratic: 4000 endpoints x 2 scrapes of one body", func(t testing.TB) []byte { return craft(t, man(4000, 2), body) }, "gpu-3999:8000", false},
		{"one endpoint, 50000 scrapes of one body", func(t testing.TB) []byte { return craft(t, man(1, 50000), body) }, "gpu-0:8000", false},
		{"too many scrapes", func(t testing.TB) []byte { return craft(t, man(1, 100_001), body) }, "over 100000 scrapes", true},
		{"too many endpoints", func(t testing.TB) []byte { return craft(t, man(5000, 1), body) }, "over 4096 endpoints", true},
		{"bomb: 9 entries of 31 MiB of zeros", func(t testing.TB) []byte {
			var es []tarEntry
			for i := range 9 {
				es = append(es, reg(fmt.Sprintf("b/junk/%d", i), make([]byte, 31<<20)))
			}
			return craft(t, append(es, man(1, 2), body)...)
		}, "over 268435456 bytes uncompressed", true},
		{"entry declared over the cap", func(t testing.TB) []byte {
			return craft(t, tarEntry{hdr: tar.Header{Name: "b/scrapes/a/1.prom", Mode: 0o600, Typeflag: tar.TypeReg, Size: 1 << 40}})
		}, "over 33554432 bytes", true},
		{"manifest over its cap", func(t testing.TB) []byte {
			return craft(t, reg("b/manifest.json", append([]byte(`{"format":1,"x":"`), make([]byte, 17<<20)...)))
		}, "over 16777216 bytes", true},
		{"symlink", func(t testing.TB) []byte {
			return craft(t, tarEntry{hdr: tar.Header{Name: "b/manifest.json", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}})
		}, "is a link", true},
		{"hard link", func(t testing.TB) []byte {
			return craft(t, man(1, 2), tarEntry{hdr: tar.Header{Name: "b/scrapes/a/1.prom", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"}})
		}, "is a link", true},
		{"device", func(t testing.TB) []byte {
			return craft(t, tarEntry{hdr: tar.Header{Name: "b/dev", Typeflag: tar.TypeChar}})
		}, "not a regular file", true},
		{"escape", func(t testing.TB) []byte { return craft(t, reg("../../etc/cron.d/x", []byte("hi"))) }, "leaves the bundle", true},
		{"absolute", func(t testing.TB) []byte { return craft(t, reg("/etc/x", []byte("hi"))) }, "leaves the bundle", true},
		{"escape bytes in a name", func(t testing.TB) []byte { return craft(t, reg("b/\x1b[2Jx", []byte("hi"))) }, "has a name no bundle has", true},
		{"repeated manifest", func(t testing.TB) []byte { return craft(t, man(1, 2), man(2, 2), body) }, "appears twice", true},
		{"manifest names a non-scrape", func(t testing.TB) []byte {
			return craft(t, reg("b/manifest.json", manifestOf(1, 2, "../../../etc/passwd")))
		}, "not a scrape", true},
		{"body that does not parse", func(t testing.TB) []byte {
			return craft(t, man(1, 2), reg("b/scrapes/a/1.prom", []byte("vllm:x{ 1\n")))
		}, "does not parse", false},
		{"evidence 1e308 and escapes", func(t testing.TB) []byte { return craft(t, man(1, 2), body, reg("b/verdicts.json", []byte(verdicts))) },
			"[kv_cache_usage Inf%; waiting -1.7e+308]", false},
	}
}

// replayBundle runs `metrics --bundle file` through the command's own code path with ctx.
func replayBundle(ctx context.Context, file string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, prog: "vllmtop metrics"}
	fs := pflag.NewFlagSet("metrics", pflag.ContinueOnError)
	runMetrics := defineMetrics(fs, e)
	if err := fs.Parse([]string{"--bundle", file}); err != nil {
		return "", "", err
	}
	err = runMetrics(ctx, fs.Args())
	return out.String(), errb.String(), err
}

// peakHeap runs fn and returns the most heap in use while it ran, above what was in use
// before, sampled each millisecond.
func peakHeap(fn func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	sampled := make(chan uint64)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		p := peak
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			p = max(p, m.HeapInuse)
			select {
			case <-done:
				sampled <- p
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(done)
	peak = <-sampled
	if peak < base {
		return 0
	}
	return peak - base
}

func TestMetricsBundleHostile(t *testing.T) {
	dump := os.Getenv("VLLMTOP_HOSTILE_BUNDLES")
	for i, c := range hostileBundles() {
		t.Run(c.name, func(t *testing.T) {
			data := c.data(t)
			file := filepath.Join(t.TempDir(), "b.tar.gz")
			require.NoError(t, os.WriteFile(file, data, 0o600))
			if dump != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dump, fmt.Sprintf("%02d.tar.gz", i)), data, 0o600))
			}
			// Generous for a loaded machine under -race; the quadratic replay took over 600 s.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out string
			var err error
			heap := peakHeap(func() { out, _, err = replayBundle(ctx, file) })
			require.NoError(t, ctx.Err(), "the replay ends well within its deadline")
			assert.Less(t, heap, uint64(150<<20), "heap in use while replaying")
			if c.fail {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.want)
				assert.NotContains(t, err.Error(), "\n")
				return
			}
			require.NoError(t, err)
			assert.Contains(t, out, c.want)
			assert.NotContains(t, out, "\x1b", "no escape byte reaches the terminal")
			assert.NotRegexp(t, `[0-9]{20}`, out, "numbers stay short")
		})
	}
}

func TestMetricsBundleStopsWhenCancelled(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b.tar.gz")
	require.NoError(t, os.WriteFile(file, craft(t, reg("b/manifest.json", manifestOf(4000, 2, "scrapes/a/1.prom")), reg("b/scrapes/a/1.prom", []byte(tinyBody))), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as a SIGINT does through run's context
	_, _, err := replayBundle(ctx, file)
	assert.ErrorIs(t, err, context.Canceled)
}
