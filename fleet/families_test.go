package fleet

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/exposition"
	"github.com/vllmtop/vllmtop/scrape"
)

// TestFilteredScrapeGivesTheSameRows: on every real capture, the rows computed from the
// families kept equal the rows from the whole exposition.
func TestFilteredScrapeGivesTheSameRows(t *testing.T) {
	files, err := filepath.Glob("../testdata/*.prom")
	require.NoError(t, err)
	more, _ := filepath.Glob("../testdata/vllm-metrics-synthetic-*.txt")
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
					b := []byte(body)
					if kept := keepRowFamilies(b); filter && len(kept) > 0 {
						b = kept // as Direct does: a body with nothing kept is parsed whole
					}
					s, err := scrape.Parse(bytes.NewReader(b))
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
		if !strings.Contains(text, name+"{") && !strings.Contains(text, name+"_bucket{") && !strings.Contains(text, name+"_sum{") {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "kept for direct rows but never queried from Prometheus")
}

func TestKeepLine(t *testing.T) {
	for _, c := range []struct {
		line string
		keep bool
	}{
		{"# HELP vllm:num_requests_running Number of requests.\n", true},
		{"# TYPE vllm:time_to_first_token_seconds histogram\n", true},
		{"vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 3\n", true},
		{"vllm:time_to_first_token_seconds_count 3\n", true},
		{"vllm:num_requests_running 2", true},
		{"# TYPE vllm:num_preemptions_created gauge\n", false},
		{"vllm:e2e_request_latency_seconds_bucket{le=\"1\"} 3\n", false},
		{"vllm:num_requests_waiting_by_reason{reason=\"capacity\"} 1\n", false},
		{"\n", false},
		{"# EOF\n", false},
	} {
		assert.Equal(t, c.keep, keepLine([]byte(c.line)), c.line)
	}
}

func FuzzKeepRowFamilies(f *testing.F) {
	raw, _ := os.ReadFile("../testdata/vllm-0.24-single-engine-rust-vllmtop.prom")
	f.Add(raw[:4000])
	f.Add([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{a=\"\\n\"} 1\n# EOF"))
	f.Fuzz(func(t *testing.T, body []byte) {
		kept := keepRowFamilies(body)
		assert.Equal(t, kept, keepRowFamilies(kept), "keeping twice keeps the same")
		assert.LessOrEqual(t, len(kept), len(body))
		_, _ = scrape.Parse(bytes.NewReader(kept)) // never panics
	})
}
