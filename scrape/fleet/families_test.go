package fleet

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/exposition"
	"github.com/vllmtop/vllmtop/scrape"
)

// TestFilteredScrapeGivesTheSameRows: on every real capture, the rows computed from the
// families kept equal the rows from the whole exposition.
func TestFilteredScrapeGivesTheSameRows(t *testing.T) {
	files, err := filepath.Glob("../../testdata/*.prom")
	require.NoError(t, err)
	more, _ := filepath.Glob("../../testdata/vllm-metrics-synthetic-*.txt")
	files = append(files, more...)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			before := string(raw)
			// Some activity between the two scrapes, on every histogram and counter a row reads.
			after := exposition.Add(before, "vllm:generation_tokens_total", 900)
			after = exposition.Add(after, "vllm:num_preemptions_total", 3)
			after = exposition.Observe(after, "vllm:time_to_first_token_seconds", 0.3, 10)
			after = exposition.Observe(after, "vllm:inter_token_latency_seconds", 0.02, 100)
			after = exposition.Observe(after, "vllm:request_queue_time_seconds", 0.1, 10)
			after = exposition.Observe(after, "sglang:time_to_first_token_seconds", 0.3, 10)
			rows := func(filter bool) []Row {
				var snaps [2]scrape.Snapshot
				for i, body := range []string{before, after} {
					parse := func() (scrape.Snapshot, error) { return scrape.Parse(strings.NewReader(body)) }
					if filter {
						parse = func() (scrape.Snapshot, error) { return scrape.ParseSelected([]byte(body), rowSelection) }
					}
					s, err := parse()
					require.NoError(t, err)
					s.Time = time.Unix(1000+10*int64(i), 0)
					s.Unmapped = nil
					snaps[i] = s
				}
				w := scrape.Compare(&snaps[0], &snaps[1])
				return engineRows("e", "u", &snaps[1], &w)
			}
			assert.Equal(t, rows(false), rows(true))
		})
	}
}

// TestRowFamiliesMatchThePromQL: the families a direct scrape keeps are the ones the
// Prometheus source asks for.
func TestRowFamiliesMatchThePromQL(t *testing.T) {
	sel, _ := parseSelector(DefaultSelector)
	var all strings.Builder
	for _, q := range rowQueries(sel, time.Minute) {
		all.WriteString(q.query)
	}
	iq := newInstanceQueries(sel, time.Minute, time.Minute)
	all.WriteString(iq.processStart)
	all.WriteString(strings.Join(iq.counterResets, " "))
	text := all.String()
	var missing []string
	for name := range rowFamilies {
		if !directOnly[name] && !strings.Contains(text, name+"{") && !strings.Contains(text, name+"_bucket{") && !strings.Contains(text, name+"_sum{") {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "kept for direct rows but never queried from Prometheus")
}

// TestRowSelection: the sums-only histograms are row families, and no row family is named
// like a histogram's series (the filter strips one _bucket, _sum or _count).
func TestRowSelection(t *testing.T) {
	for name := range rowMeansOnly {
		assert.True(t, rowFamilies[name], name)
	}
	for name := range rowFamilies {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			assert.False(t, strings.HasSuffix(name, suffix), name)
		}
	}
	assert.Len(t, rowSelection.Families(), len(rowFamilies))
}
