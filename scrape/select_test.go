package scrape

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

// testSelection keeps every family a rule maps, the queue, prefill and prompt-length
// histograms by their sums only, as a fleet row reads them.
func testSelection() *Selection {
	var whole, sums []string
	for name, ref := range ruleIndex {
		if ref.r.kind == kindHist && (ref.r.hist != nil) && isSumsOnly(ref.r.hist) {
			sums = append(sums, name)
		} else {
			whole = append(whole, name)
		}
	}
	return NewSelection(whole, sums)
}

func isSumsOnly(get func(*Stats) **Histogram) bool {
	var s Stats
	p := get(&s)
	return p == s.queue() || p == s.prefill() || p == s.promptLen()
}

// selectedFields is what a selective parse must give exactly as Parse does: everything but
// the unmapped families and the warnings and counts about them, with the sums-only
// histograms reduced to their count and sum per engine, and left out of the models' totals
// (whether engines' histograms merge depends on their bucket layouts, not all of which a
// sums-only parse sees).
func selectedFields(s Snapshot) Snapshot {
	sumsOnly := func(st *Stats) []**Histogram { return []**Histogram{st.queue(), st.prefill(), st.promptLen()} }
	out := Snapshot{Backend: s.Backend, Cache: s.Cache, Capacity: s.Capacity, ProcessStartSeconds: s.ProcessStartSeconds}
	for _, m := range s.Models {
		m.Engines = append([]EngineStats(nil), m.Engines...)
		for _, h := range sumsOnly(&m.Total) {
			*h = nil
		}
		for i := range m.Engines {
			for _, h := range sumsOnly(&m.Engines[i].Stats) {
				if *h != nil {
					*h = &Histogram{Count: (*h).Count, Sum: (*h).Sum}
				}
			}
		}
		out.Models = append(out.Models, m)
	}
	return out
}

func metricsFixtures(t testing.TB) []string {
	var files []string
	for _, pattern := range []string{"*.prom", "vllm-metrics-*.txt"} {
		more, err := filepath.Glob(filepath.Join(testdataDir, pattern))
		require.NoError(t, err)
		files = append(files, more...)
	}
	require.NotEmpty(t, files)
	return files
}

// TestParseSelectedMatchesParse: on every capture (vLLM, SGLang, TGI, Triton), the
// selective parse gives the mapped fields Parse gives, leaves the body as it was, and is not
// the whole-body fallback for any of them except a body with nothing kept.
func TestParseSelectedMatchesParse(t *testing.T) {
	sel := testSelection()
	for _, file := range metricsFixtures(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			body, err := os.ReadFile(file)
			require.NoError(t, err)
			orig := bytes.Clone(body)
			full, err := Parse(bytes.NewReader(body))
			require.NoError(t, err)
			got, err := ParseSelected(body, sel)
			require.NoError(t, err)
			assert.Equal(t, orig, body, "body modified")
			assert.Equal(t, selectedFields(full), selectedFields(got))
			var bp selectBuf
			kept, ok := sel.filter(&bp, body)
			if full.Backend != BackendUnknown {
				require.True(t, ok, "parsed whole")
				assert.Less(t, len(kept), len(body), "some of the body left out")
			}
		})
	}
}

// TestParseSelectedRefusesWhatParseRefuses: a fault in a family left out is still the
// parser's error, with its line number; odd lines the filter could misread make the body
// parsed whole.
func TestParseSelectedRefusesWhatParseRefuses(t *testing.T) {
	const good = "# HELP vllm:num_requests_running Running.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2\n"
	sel := testSelection()
	for _, c := range []struct{ name, body string }{
		{"bad value", good + "python_gc_objects_collected_total{generation=\"0\"} x\n"},
		{"bad escape in a label", good + "python_info{version=\"\\q\"} 1\n"},
		{"bad escape in help", good + "# HELP python_info a \\q\n"},
		{"second TYPE", good + "# TYPE python_info gauge\npython_info 1\n# TYPE python_info gauge\n"},
		{"TYPE after samples", good + "python_info 1\n# TYPE python_info gauge\n"},
		{"TYPE far apart", "# TYPE python_info gauge\n" + good + "# TYPE python_info gauge\npython_info 1\n"},
		{"negative bucket", good + "# TYPE http_seconds histogram\nhttp_seconds_bucket{le=\"1\"} -1\n"},
		{"bad le", good + "# TYPE http_seconds histogram\nhttp_seconds_bucket{le=\"x\"} 1\n"},
		{"bad quantile on a sum", good + "# TYPE rpc summary\nrpc_sum{quantile=\"x\"} 1\n"},
		{"duplicate label", good + "python_info{a=\"1\",a=\"2\"} 1\n"},
		{"unknown type", good + "# TYPE python_info gaugeish\n"},
		{"bad timestamp", good + "python_info 1 12x\n"},
		{"out of range", good + "python_info 1e400\n"},
		{"negative sums-only bucket", "# TYPE vllm:request_queue_time_seconds histogram\nvllm:request_queue_time_seconds_bucket{le=\"1\"} -1\n" + good},
		{"second HELP of a histogram by its count", good + "# TYPE rpc histogram\n# HELP rpc a\nrpc_count 1\n# HELP rpc_count b\n"},
		{"second HELP of a kept histogram", "# HELP vllm:time_to_first_token_seconds a\n# TYPE vllm:time_to_first_token_seconds histogram\n# HELP vllm:time_to_first_token_seconds_count b\n" + good},
		{"fault in a kept family", "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\" 2\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, want := Parse(strings.NewReader(c.body))
			require.Error(t, want, "the case must be one Parse refuses")
			_, got := ParseSelected([]byte(c.body), sel)
			require.Error(t, got)
			assert.Equal(t, want.Error(), got.Error())
		})
	}
	for _, odd := range []string{
		"#TYPE vllm:num_requests_running counter\n",         // the parser's TYPE line, not a comment
		"  vllm:num_requests_running{model_name=\"m\"} 3\n", // blanks before a name
	} {
		var bp selectBuf
		_, ok := sel.filter(&bp, []byte(good+odd))
		assert.False(t, ok, "%q is left to the parser", odd)
	}
}

// FuzzParseSelected: whatever the bytes, the selective parse refuses exactly what Parse
// refuses, with the same message, and otherwise gives the same mapped fields.
func FuzzParseSelected(f *testing.F) {
	for _, b := range hostileseed.Files(f, "metrics") {
		f.Add(b[:min(len(b), 6000)])
	}
	for _, file := range metricsFixtures(f) {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 6000)])
	}
	f.Add([]byte("# TYPE vllm:request_queue_time_seconds histogram\nvllm:request_queue_time_seconds_bucket{le=\"0.5\"} 1\nvllm:request_queue_time_seconds_bucket{le=\"+Inf\"} 2\nvllm:request_queue_time_seconds_sum 3\n# TYPE rpc summary\nrpc{quantile=\"0.5\"} 1\nrpc_count 1\n"))
	sel := testSelection()
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		full, wantErr := Parse(bytes.NewReader(body))
		got, err := ParseSelected(body, sel)
		require.Equal(t, orig, body, "body modified")
		if wantErr != nil {
			require.Error(t, err, "Parse refuses: %v", wantErr)
			require.Equal(t, wantErr.Error(), err.Error())
			return
		}
		require.NoError(t, err)
		require.Equal(t, selectedFields(full), selectedFields(got))
	})
}

// TestParseSelectedOnMutations is FuzzParseSelected's property over a fixed set of
// mutations of the captures (bytes changed, lines dropped, repeated or moved), so every
// `go test` tries the filter on broken input, not only the seeds.
func TestParseSelectedOnMutations(t *testing.T) {
	sel := testSelection()
	rng := rand.New(rand.NewPCG(1, 2))
	specials := []byte("\\\"{}=, \t\n#_:-+.eE0123456789xInfNa\xff")
	n := 25
	if testing.Short() {
		n = 10
	}
	for _, file := range metricsFixtures(t) {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		lines := bytes.SplitAfter(raw, []byte("\n"))
		for i := 0; i < n; i++ {
			ls := slices.Clone(lines)
			for range 1 + rng.IntN(3) {
				j := rng.IntN(len(ls))
				switch rng.IntN(4) {
				case 0: // change a byte
					l := bytes.Clone(ls[j])
					if len(l) > 0 {
						l[rng.IntN(len(l))] = specials[rng.IntN(len(specials))]
					}
					ls[j] = l
				case 1:
					ls = slices.Delete(ls, j, j+1)
				case 2:
					ls = slices.Insert(ls, rng.IntN(len(ls)), ls[j])
				case 3: // insert a byte
					l := bytes.Clone(ls[j])
					k := rng.IntN(len(l) + 1)
					ls[j] = slices.Insert(l, k, specials[rng.IntN(len(specials))])
				}
			}
			body := bytes.Join(ls, nil)
			full, wantErr := Parse(bytes.NewReader(body))
			got, err := ParseSelected(body, sel)
			if wantErr != nil {
				require.Error(t, err, "Parse refuses %q: %v", body, wantErr)
				require.Equal(t, wantErr.Error(), err.Error())
				continue
			}
			require.NoError(t, err)
			require.Equal(t, selectedFields(full), selectedFields(got))
		}
	}
}
