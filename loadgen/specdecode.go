package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// specCounts are a server's speculative-decoding counters (vllm:spec_decode_*_total), summed
// over their labels, as vllm bench serve reads them from /metrics.
type specCounts struct {
	drafts, draftTokens, accepted int64
	perPos                        map[int]int64
}

// SpecDecode is what the server's drafts did during a run (current vllm bench serve's
// spec_decode_* keys and "Speculative Decoding" section): the counters' growth over the run.
type SpecDecode struct {
	AcceptanceRate   float64 // accepted ÷ draft tokens, in percent
	AcceptanceLength float64 // 1 + accepted ÷ drafts
	Drafts           int64
	DraftTokens      int64
	AcceptedTokens   int64
	PerPosition      []float64 // accepted at each draft position ÷ drafts
}

// specDecodeCounts reads the server's counters; false when it has none (no drafting) or
// cannot be read.
func (c *Client) specDecodeCounts(ctx context.Context) (specCounts, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL()+"/metrics", nil)
	if err != nil {
		return specCounts{}, false
	}
	c.cfg.Extras.setHeaders(req.Header, "")
	resp, err := c.hc.Do(req)
	if err != nil {
		return specCounts{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return specCounts{}, false
	}
	return parseSpecCounts(io.LimitReader(resp.Body, int64(c.cfg.MaxBodyBytes)))
}

// parseSpecCounts sums the spec_decode counters of an exposition.
func parseSpecCounts(r io.Reader) (specCounts, bool) {
	sc, found := specCounts{perPos: map[int]int64{}}, false
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if !strings.HasPrefix(line, "vllm:spec_decode") {
			continue
		}
		fields := strings.Fields(line)
		name, _, _ := strings.Cut(fields[0], "{")
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if !strings.HasSuffix(name, "_total") || err != nil {
			continue
		}
		found = true
		switch n := int64(v); {
		case strings.Contains(name, "num_drafts"):
			sc.drafts += n
		case strings.Contains(name, "num_draft_tokens"):
			sc.draftTokens += n
		case strings.Contains(name, "num_accepted_tokens_per_pos"):
			if pos, ok := labelInt(line, "position"); ok {
				sc.perPos[pos] += n
			}
		case strings.Contains(name, "num_accepted_tokens"):
			sc.accepted += n
		}
	}
	return sc, found
}

// labelInt reads an integer label's value from a sample line.
func labelInt(line, label string) (int, bool) {
	_, rest, ok := strings.Cut(line, label+`="`)
	if !ok {
		return 0, false
	}
	val, _, _ := strings.Cut(rest, `"`)
	n, err := strconv.Atoi(val)
	return n, err == nil
}

// specDecodeDelta is the run's drafting from the counters before and after it; nil when no
// draft token was made.
func specDecodeDelta(before, after specCounts) *SpecDecode {
	d := &SpecDecode{Drafts: after.drafts - before.drafts, DraftTokens: after.draftTokens - before.draftTokens,
		AcceptedTokens: after.accepted - before.accepted}
	if d.DraftTokens <= 0 {
		return nil
	}
	d.AcceptanceRate = float64(d.AcceptedTokens) / float64(d.DraftTokens) * 100
	if d.Drafts > 0 {
		d.AcceptanceLength = 1 + float64(d.AcceptedTokens)/float64(d.Drafts)
		var positions []int
		for p := range after.perPos {
			positions = append(positions, p)
		}
		sort.Ints(positions)
		for _, p := range positions {
			d.PerPosition = append(d.PerPosition, float64(after.perPos[p]-before.perPos[p])/float64(d.Drafts))
		}
	}
	return d
}

// specFields are the spec_decode_* keys of a result.
func (d *SpecDecode) fields() []Field {
	if d == nil {
		return nil
	}
	return []Field{{"spec_decode_acceptance_rate", PyFloat(d.AcceptanceRate)}, {"spec_decode_acceptance_length", PyFloat(d.AcceptanceLength)},
		{"spec_decode_num_drafts", d.Drafts}, {"spec_decode_draft_tokens", d.DraftTokens}, {"spec_decode_accepted_tokens", d.AcceptedTokens},
		{"spec_decode_per_position_acceptance_rates", pyFloats(d.PerPosition)}}
}

// printSpecDecode writes the table's "Speculative Decoding" section.
func printSpecDecode(b io.Writer, d *SpecDecode) {
	if d == nil {
		return
	}
	row := func(label, value string) { fmt.Fprintf(b, "%-40s %-10s\n", label, value) }
	fmt.Fprintln(b, center("Speculative Decoding", '-', tableWidth))
	row("Acceptance rate (%):", fixed2(d.AcceptanceRate))
	row("Acceptance length:", fixed2(d.AcceptanceLength))
	row("Drafts:", strconv.FormatInt(d.Drafts, 10))
	row("Draft tokens:", strconv.FormatInt(d.DraftTokens, 10))
	row("Accepted tokens:", strconv.FormatInt(d.AcceptedTokens, 10))
	if len(d.PerPosition) > 0 {
		fmt.Fprintln(b, "Per-position acceptance (%):")
		for i, r := range d.PerPosition {
			row(fmt.Sprintf("  Position %d:", i), fixed2(r*100))
		}
	}
}
