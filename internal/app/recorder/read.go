package recorder

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/vllmtop/vllmtop/internal/base/untrusted"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// Limits on a bundle being read: it may come from anyone. A bundle is read as a stream,
// once for its index and once for the scrape bodies a replay needs, so memory stays near
// one entry whatever the bundle holds.
const (
	// MaxBundleBytes caps what one pass decompresses (tar headers included): a
	// decompression bomb stops there. A full ring is 64 MiB of bodies.
	MaxBundleBytes = 256 << 20
	// MaxEntryBytes caps one scrape body (a live scrape is capped at 16 MiB).
	MaxEntryBytes = 32 << 20
	// MaxMetaBytes caps manifest.json, settings.json, verdicts.json, the client's JSONL
	// files and server.log, each.
	MaxMetaBytes = 16 << 20
	// MaxHeldBytes caps the scrape bodies Read keeps in memory.
	MaxHeldBytes = 128 << 20
	maxEntries   = 100_000
	maxScrapes   = 100_000
	maxEndpoints = 4096
	maxNameBytes = 512
	tarHeader    = 512
)

// Open reads a bundle's index (manifest, settings, verdicts, client results, canary probes
// and server log) without its scrape bodies, which Windows then streams from the file.
// It stops when ctx ends.
func Open(ctx context.Context, file string) (*Bundle, error) {
	b, err := open(ctx, file)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", untrusted.Text(file), err)
	}
	return b, nil
}

func open(ctx context.Context, file string) (*Bundle, error) {
	meta := map[string][]byte{}
	bodies := map[string]bool{}
	err := scanFile(ctx, file, func(name string, size int64, r io.Reader) error {
		if strings.HasPrefix(name, "scrapes/") {
			bodies[name] = true
			return nil
		}
		if _, ok := metaFiles[name]; !ok {
			return nil
		}
		if size > MaxMetaBytes {
			return fmt.Errorf("entry %q is over %d bytes", untrusted.Text(name), MaxMetaBytes)
		}
		data, err := io.ReadAll(r)
		meta[name] = data
		return err
	})
	if err != nil {
		return nil, err
	}
	b, err := decodeMeta(meta)
	if err != nil {
		return nil, err
	}
	for _, s := range b.Scrapes {
		if !bodies[s.file] {
			return nil, fmt.Errorf("manifest names %q, which the bundle lacks", untrusted.Text(s.file))
		}
	}
	b.file = file
	return b, nil
}

// Read opens a bundle and loads its scrape bodies too (at most MaxHeldBytes of them).
func Read(file string) (*Bundle, error) {
	ctx := context.Background()
	b, err := open(ctx, file)
	if err == nil {
		err = b.load(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", untrusted.Text(file), err)
	}
	return b, nil
}

// load reads the scrape bodies of an opened bundle into memory.
func (b *Bundle) load(ctx context.Context) error {
	want := b.byFile(nil)
	held := 0
	return scanFile(ctx, b.file, func(name string, _ int64, r io.Reader) error {
		idx, ok := want[name]
		if !ok {
			return nil
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if held += len(data); held > MaxHeldBytes {
			return fmt.Errorf("scrapes over %d bytes: replay with metrics --bundle", MaxHeldBytes)
		}
		for _, i := range idx {
			b.Scrapes[i].Body = data
		}
		return nil
	})
}

// byFile maps each entry name to the scrapes (indices) it holds, of those in keep (all
// when keep is nil).
func (b *Bundle) byFile(keep map[int]bool) map[string][]int {
	out := map[string][]int{}
	for i, s := range b.Scrapes {
		if keep == nil || keep[i] {
			out[s.file] = append(out[s.file], i)
		}
	}
	return out
}

// metaFiles are the entries Open keeps besides the scrapes.
var metaFiles = map[string]struct{}{"manifest.json": {}, "client/results.jsonl": {}, "client/canary.jsonl": {},
	"server.log": {}, "settings.json": {}, "verdicts.json": {}}

func decodeMeta(entries map[string][]byte) (*Bundle, error) {
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
		sc.Buffer(make([]byte, 64<<10), MaxMetaBytes)
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

// scanFile hands each regular entry of a .tar.gz file to visit, by its name below the root
// directory, with a reader of its data (visit need not read it all). Links, devices and
// names that leave the bundle are refused; so are repeated names.
func scanFile(ctx context.Context, file string, visit func(name string, size int64, r io.Reader) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	return scan(ctx, f, visit)
}

func scan(ctx context.Context, r io.Reader, visit func(name string, size int64, r io.Reader) error) error {
	gz, err := gzip.NewReader(&ctxReader{ctx: ctx, r: r})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("not a .tar.gz: %w", err)
	}
	// Everything decompressed counts, skipped entries and headers included.
	lim := &limitReader{ctx: ctx, r: gz, left: MaxBundleBytes}
	tr := tar.NewReader(lim)
	seen := map[string]bool{}
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return lim.cause(err)
		case n >= maxEntries:
			return fmt.Errorf("over %d entries", maxEntries)
		}
		name, skip, err := entry(hdr)
		if err != nil || skip {
			if err != nil {
				return err
			}
			continue
		}
		if seen[name] {
			return fmt.Errorf("entry %q appears twice", untrusted.Text(name))
		}
		seen[name] = true
		if hdr.Size > MaxEntryBytes {
			return fmt.Errorf("entry %q is over %d bytes", untrusted.Text(name), MaxEntryBytes)
		}
		if err := visit(name, hdr.Size, tr); err != nil {
			return lim.cause(err)
		}
	}
}

// entry checks a tar header: its name below the root, or skip for a directory.
func entry(hdr *tar.Header) (name string, skip bool, err error) {
	switch hdr.Typeflag {
	case tar.TypeReg:
	case tar.TypeDir, tar.TypeXGlobalHeader:
		return "", true, nil
	case tar.TypeSymlink, tar.TypeLink:
		return "", false, fmt.Errorf("entry %q is a link", untrusted.Text(hdr.Name))
	default:
		return "", false, fmt.Errorf("entry %q is not a regular file", untrusted.Text(hdr.Name))
	}
	name, err = entryName(hdr.Name)
	return name, false, err
}

// entryName is an entry's name below the bundle's root directory, refusing one that would
// leave the bundle or that no Write makes (control bytes, backslashes, invalid UTF-8).
func entryName(raw string) (string, error) {
	if len(raw) > maxNameBytes || !utf8.ValidString(raw) || strings.ContainsAny(raw, "\\\x00") || untrusted.Text(raw) != raw {
		return "", fmt.Errorf("entry %q has a name no bundle has", untrusted.Text(raw))
	}
	name := path.Clean(raw)
	if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
		return "", fmt.Errorf("entry %q leaves the bundle", untrusted.Text(raw))
	}
	// Names are root/rel; the root directory's name does not matter.
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name, nil
}

// ctxReader ends a read once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// errTooBig is what limitReader returns past its limit.
var errTooBig = fmt.Errorf("over %d bytes uncompressed", MaxBundleBytes)

// limitReader fails (rather than ends) past its limit, so a bomb is an error, not a
// truncated bundle; it also ends once ctx is done.
type limitReader struct {
	ctx  context.Context
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if err := l.ctx.Err(); err != nil {
		return 0, err
	}
	if l.left <= 0 {
		return 0, errTooBig
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// cause prefers the context's error and the limit's to what they made the reader say.
func (l *limitReader) cause(err error) error {
	if e := l.ctx.Err(); e != nil {
		return e
	}
	if l.left <= 0 {
		return errTooBig
	}
	return err
}

// readManifest reads manifest.json: the bundle's times and the scrapes it names.
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
	if len(m.Scrapes) > maxScrapes {
		return nil, fmt.Errorf("manifest.json names over %d scrapes", maxScrapes)
	}
	b := &Bundle{Created: m.Created, Span: m.SpanNanos}
	endpoints := map[string]bool{}
	for _, s := range m.Scrapes {
		file := path.Clean(s.File)
		if !strings.HasPrefix(file, "scrapes/") {
			return nil, fmt.Errorf("manifest names %q, not a scrape", untrusted.Text(s.File))
		}
		ep := untrusted.Text(s.Endpoint)
		if endpoints[ep] = true; len(endpoints) > maxEndpoints {
			return nil, fmt.Errorf("manifest.json names over %d endpoints", maxEndpoints)
		}
		b.Scrapes = append(b.Scrapes, Scrape{Endpoint: ep, Time: s.Time, file: file})
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
