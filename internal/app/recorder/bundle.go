package recorder

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/untrusted"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// Bundle is everything a flight-recorder bundle holds. Build it on the UI's goroutine from
// copies (Ring.Snapshot, the recorder of results, the log ring), then Write it elsewhere.
type Bundle struct {
	Created time.Time `json:"created"`
	// Span is how far back the scrapes were asked for.
	Span    time.Duration          `json:"span_ns"`
	Scrapes []Scrape               `json:"-"`
	Results []loadgen.Result       `json:"-"`
	Canary  []loadgen.CanarySample `json:"-"`
	// ServerLog is the tail of the server's log, oldest line first.
	ServerLog []string `json:"-"`
	// Settings are how vllmtop was run (flags, URLs, the server's command line). Values of
	// keys that name a secret are replaced, and URLs lose user info and query values.
	Settings map[string]string  `json:"-"`
	Verdicts []diagnose.Verdict `json:"-"`
	// Secrets are values (API keys) scrubbed from every text written. They are not written.
	Secrets []string `json:"-"`
	// file is the bundle Open read, where Windows streams the scrape bodies from.
	file string
}

// formatVersion is the bundle layout's version, in manifest.json.
const formatVersion = 1

// manifest is manifest.json: what the bundle holds, for Read.
type manifest struct {
	Format    int           `json:"format"`
	Created   time.Time     `json:"created"`
	SpanNanos time.Duration `json:"span_ns"`
	Endpoints []string      `json:"endpoints"`
	Scrapes   []scrapeEntry `json:"scrapes"`
	Results   int           `json:"results"`
	Canary    int           `json:"canary"`
	LogLines  int           `json:"log_lines"`
	Verdicts  int           `json:"verdicts"`
}

type scrapeEntry struct {
	Endpoint string    `json:"endpoint"`
	Time     time.Time `json:"time"`
	File     string    `json:"file"`
}

// Write writes the bundle as dir/vllmtop-bundle-TIME.tar.gz and returns its path. A
// .tar.gz is one file to copy off a jump host or attach to a ticket, the scrapes compress
// about tenfold, and the standard library reads and writes it. The file appears whole or
// not at all (written aside, then renamed), readable by its owner only.
func Write(dir string, b Bundle) (string, error) {
	if b.Created.IsZero() {
		b.Created = time.Now()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("flight recorder: %w", err)
	}
	name := "vllmtop-bundle-" + b.Created.UTC().Format("20060102T150405.000Z")
	var buf bytes.Buffer
	if err := b.archive(&buf, name); err != nil {
		return "", fmt.Errorf("flight recorder: %w", err)
	}
	final := filepath.Join(dir, name+".tar.gz")
	tmp, err := os.CreateTemp(dir, ".vllmtop-bundle-*")
	if err != nil {
		return "", fmt.Errorf("flight recorder: %w", err)
	}
	_, werr := tmp.Write(buf.Bytes())
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), final)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("flight recorder: %w", werr)
	}
	return final, nil
}

func (b *Bundle) archive(w *bytes.Buffer, root string) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	scrub := scrubber(b.Secrets)
	add := func(name string, data []byte) error {
		hdr := &tar.Header{Name: root + "/" + name, Mode: 0o600, Size: int64(len(data)), ModTime: b.Created, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	m := manifest{Format: formatVersion, Created: b.Created, SpanNanos: b.Span, Results: len(b.Results), Canary: len(b.Canary),
		LogLines: len(b.ServerLog), Verdicts: len(b.Verdicts)}
	scrapes := append([]Scrape(nil), b.Scrapes...)
	sort.SliceStable(scrapes, func(i, j int) bool { return scrapes[i].Time.Before(scrapes[j].Time) })
	dirs := map[string]string{} // endpoint -> its directory, unique after sanitising
	for i, s := range scrapes {
		d, ok := dirs[s.Endpoint]
		if !ok {
			d = uniqueName(untrusted.FileName(s.Endpoint), dirs)
			dirs[s.Endpoint] = d
			m.Endpoints = append(m.Endpoints, untrusted.Text(s.Endpoint))
		}
		file := fmt.Sprintf("scrapes/%s/%06d.prom", d, i)
		if err := add(file, s.Body); err != nil {
			return err
		}
		m.Scrapes = append(m.Scrapes, scrapeEntry{Endpoint: untrusted.Text(s.Endpoint), Time: s.Time, File: file})
	}
	results := jsonLines(len(b.Results), func(i int) any {
		r := b.Results[i]
		r.ErrorMessage = scrub(untrusted.Text(r.ErrorMessage))
		return r
	})
	canary := jsonLines(len(b.Canary), func(i int) any {
		c := b.Canary[i]
		c.ErrorMessage = scrub(untrusted.Text(c.ErrorMessage))
		return c
	})
	var log strings.Builder
	for _, l := range b.ServerLog {
		log.WriteString(scrub(untrusted.Text(l)))
		log.WriteByte('\n')
	}
	settings, _ := json.MarshalIndent(redactSettings(b.Settings, scrub), "", "  ")
	verdicts, _ := json.MarshalIndent(b.Verdicts, "", "  ")
	man, _ := json.MarshalIndent(m, "", "  ")
	files := []struct {
		name string
		data []byte
	}{
		{"README.txt", []byte(b.readme(len(m.Endpoints)))},
		{"manifest.json", man},
		{"client/results.jsonl", results},
		{"client/canary.jsonl", canary},
		{"server.log", []byte(log.String())},
		{"settings.json", settings},
		{"verdicts.json", verdicts},
	}
	for _, f := range files {
		if err := add(f.name, f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// readme is the line saying what the bundle holds.
func (b *Bundle) readme(endpoints int) string {
	covered := time.Duration(0)
	if n := len(b.Scrapes); n > 1 {
		first, last := b.Scrapes[0].Time, b.Scrapes[0].Time
		for _, s := range b.Scrapes {
			if s.Time.Before(first) {
				first = s.Time
			}
			if s.Time.After(last) {
				last = s.Time
			}
		}
		covered = last.Sub(first).Round(time.Second)
	}
	return fmt.Sprintf("vllmtop flight recorder, %s: %d raw /metrics scrapes of %d endpoints over %s (scrapes/, index in manifest.json), "+
		"%d client request results (client/results.jsonl), %d canary probes (client/canary.jsonl), the last %d server log lines (server.log), "+
		"the settings without secrets (settings.json) and %d verdicts (verdicts.json). Replay the scrapes with: vllmtop metrics --bundle FILE\n",
		b.Created.UTC().Format(time.RFC3339), len(b.Scrapes), endpoints, covered, len(b.Results), len(b.Canary), len(b.ServerLog), len(b.Verdicts))
}

func jsonLines(n int, item func(int) any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range n {
		_ = enc.Encode(item(i))
	}
	return buf.Bytes()
}

func uniqueName(name string, taken map[string]string) string {
	used := map[string]bool{}
	for _, v := range taken {
		used[v] = true
	}
	out := name
	for i := 2; used[out]; i++ {
		out = fmt.Sprintf("%s-%d", name, i)
	}
	return out
}

// secretKey matches setting names whose values are secrets.
var secretKey = regexp.MustCompile(`(?i)(key|token|secret|passw|auth|credential)`)

// secretInText matches an API key written into a command line or a log line: vLLM logs its
// arguments, --api-key included.
var secretInText = regexp.MustCompile(`(?i)((?:api[-_]key|token|authorization)['"]?\s*[:=]?\s*(?:bearer\s+)?)(\[[^\]]*\]|'[^']*'|"[^"]*"|[^\s,}]+)`)

// scrubber replaces the known secrets and anything that looks like a key in a text.
func scrubber(secrets []string) func(string) string {
	return func(s string) string {
		for _, k := range secrets {
			if len(k) >= 4 {
				s = strings.ReplaceAll(s, k, "***")
			}
		}
		return secretInText.ReplaceAllString(s, "${1}***")
	}
}

func redactSettings(in map[string]string, scrub func(string) string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		k = untrusted.Text(k)
		switch {
		case secretKey.MatchString(k) && !strings.HasSuffix(strings.ToLower(k), "_env"):
			v = "***"
		case strings.Contains(v, "://"):
			v = untrusted.URL(v)
		default:
			v = untrusted.Text(v)
		}
		out[k] = scrub(v)
	}
	return out
}
