package recorder

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/untrusted"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// Limits on a bundle being read: it may come from anyone.
const (
	MaxBundleBytes = 1 << 30  // all entries, uncompressed
	MaxEntryBytes  = 64 << 20 // one entry
	maxEntries     = 1 << 20
)

// Read opens a bundle written by Write. Entries are read within MaxEntryBytes each and
// MaxBundleBytes in all; names that would leave the bundle are refused.
func Read(file string) (*Bundle, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	defer f.Close()
	b, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", untrusted.Text(file), err)
	}
	return b, nil
}

func read(r io.Reader) (*Bundle, error) {
	entries, err := readEntries(r)
	if err != nil {
		return nil, err
	}
	b, err := readManifest(entries)
	if err != nil {
		return nil, err
	}
	if b.Results, err = decodeLines[loadgen.Result](entries["client/results.jsonl"]); err != nil {
		return nil, fmt.Errorf("client/results.jsonl: %w", err)
	}
	if b.Canary, err = decodeLines[loadgen.CanarySample](entries["client/canary.jsonl"]); err != nil {
		return nil, fmt.Errorf("client/canary.jsonl: %w", err)
	}
	if log := entries["server.log"]; len(log) > 0 {
		sc := bufio.NewScanner(bytes.NewReader(log))
		sc.Buffer(make([]byte, 64<<10), MaxEntryBytes)
		for sc.Scan() {
			b.ServerLog = append(b.ServerLog, sc.Text())
		}
	}
	if raw := entries["settings.json"]; len(raw) > 0 {
		if err := json.Unmarshal(raw, &b.Settings); err != nil {
			return nil, fmt.Errorf("settings.json: %w", err)
		}
	}
	if raw := entries["verdicts.json"]; len(raw) > 0 {
		var vs []diagnose.Verdict
		if err := json.Unmarshal(raw, &vs); err != nil {
			return nil, fmt.Errorf("verdicts.json: %w", err)
		}
		b.Verdicts = vs
	}
	return b, nil
}

// readEntries reads the regular files of a .tar.gz by their name below the root directory,
// within the limits on entries and bytes.
func readEntries(r io.Reader) (map[string][]byte, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not a .tar.gz: %w", err)
	}
	tr := tar.NewReader(gz)
	entries := map[string][]byte{}
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, err
		}
		if n > maxEntries {
			return nil, errors.New("too many entries")
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(io.LimitReader(tr, MaxEntryBytes+1))
		if err != nil {
			return nil, err
		}
		if len(data) > MaxEntryBytes {
			return nil, fmt.Errorf("entry %q is over %d bytes", untrusted.Text(name), MaxEntryBytes)
		}
		if total += int64(len(data)); total > MaxBundleBytes {
			return nil, fmt.Errorf("over %d bytes uncompressed", MaxBundleBytes)
		}
		entries[name] = data
	}
}

// entryName is an entry's name below the bundle's root directory, refusing one that would
// leave the bundle.
func entryName(raw string) (string, error) {
	name := path.Clean(raw)
	if path.IsAbs(name) || strings.HasPrefix(name, "..") {
		return "", fmt.Errorf("entry %q leaves the bundle", untrusted.Text(raw))
	}
	// Names are root/rel; the root directory's name does not matter.
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name, nil
}

// readManifest reads manifest.json and the scrapes it names.
func readManifest(entries map[string][]byte) (*Bundle, error) {
	var m manifest
	raw, ok := entries["manifest.json"]
	if !ok {
		return nil, errors.New("no manifest.json: not a vllmtop bundle")
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if m.Format != formatVersion {
		return nil, fmt.Errorf("bundle format %d; this vllmtop reads format %d", m.Format, formatVersion)
	}
	b := &Bundle{Created: m.Created, Span: m.SpanNanos}
	for _, s := range m.Scrapes {
		body, ok := entries[path.Clean(s.File)]
		if !ok {
			return nil, fmt.Errorf("manifest names %q, which the bundle lacks", untrusted.Text(s.File))
		}
		b.Scrapes = append(b.Scrapes, Scrape{Endpoint: untrusted.Text(s.Endpoint), Time: s.Time, Body: body})
	}
	return b, nil
}

// decodeLines decodes a JSON-lines entry.
func decodeLines[T any](data []byte) ([]T, error) {
	var out []T
	d := json.NewDecoder(bytes.NewReader(data))
	for d.More() {
		var v T
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Endpoints lists the endpoints that have scrapes, sorted.
func (b *Bundle) Endpoints() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range b.Scrapes {
		if !seen[s.Endpoint] {
			seen[s.Endpoint] = true
			out = append(out, s.Endpoint)
		}
	}
	sort.Strings(out)
	return out
}

// Replay parses the scrapes in time order and hands each to fn as a Snapshot whose Time is
// when it was taken, so scrape.Compare and the tables work as on a live server. A scrape
// that does not parse is passed to onError and skipped.
func (b *Bundle) Replay(fn func(endpoint string, s *scrape.Snapshot) error, onError func(endpoint string, at time.Time, err error)) error {
	order := append([]Scrape(nil), b.Scrapes...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].Time.Before(order[j].Time) })
	for _, raw := range order {
		s, err := scrape.Parse(bytes.NewReader(raw.Body))
		if err != nil {
			if onError != nil {
				onError(raw.Endpoint, raw.Time, err)
			}
			continue
		}
		s.Time = raw.Time
		if err := fn(raw.Endpoint, &s); err != nil {
			return err
		}
	}
	return nil
}

// Window is what an endpoint did over the last span of the bundle: its last snapshot and
// the window from the newest one at least span older (or its first). ok is false with
// fewer than two scrapes of the endpoint.
func (b *Bundle) Window(endpoint string, span time.Duration) (cur scrape.Snapshot, w scrape.Window, ok bool, err error) {
	var snaps []scrape.Snapshot
	err = b.Replay(func(e string, s *scrape.Snapshot) error {
		if e == endpoint {
			s.Unmapped = nil
			snaps = append(snaps, *s)
		}
		return nil
	}, nil)
	if err != nil || len(snaps) < 2 {
		return scrape.Snapshot{}, scrape.Window{}, false, err
	}
	cur = snaps[len(snaps)-1]
	base := snaps[0]
	for _, s := range snaps[:len(snaps)-1] {
		if cur.Time.Sub(s.Time) >= span {
			base = s
		}
	}
	return cur, scrape.Compare(&base, &cur), true, nil
}
