package scrape

import (
	"bytes"
	"context"
	"io"
	"sort"

	"github.com/prometheus/prom2json"
)

// RawFamilies parses a text exposition into prom2json's JSON shape (every family, nothing
// mapped or dropped, values as strings), sorted by family name.
//
// prom2json's own ParseReader is not used: it parses with a zero-value expfmt.TextParser,
// which panics with the prometheus/common this module builds with. Only its converter is.
func RawFamilies(r io.Reader) ([]*prom2json.Family, error) {
	fams, err := parseFamilies(r)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*prom2json.Family, 0, len(names))
	for _, n := range names {
		out = append(out, prom2json.NewFamily(fams[n]))
	}
	return out, nil
}

// ScrapeRaw fetches the exposition once and returns every family as RawFamilies does. Its
// errors are *Error.
func (c *Client) ScrapeRaw(ctx context.Context) ([]*prom2json.Family, error) {
	body, _, err := c.Fetch(ctx)
	if err != nil {
		return nil, err
	}
	fams, err := RawFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, &Error{URL: c.URL(), Err: err}
	}
	return fams, nil
}
