package metrics

import (
	"math"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/promtool"
	"github.com/vllmtop/vllmtop/server/sim"
)

const capture0251 = "../../../testdata/vllm-0.25.1-metrics-opt-125m-tp2-idle.prom"

// exposition serves one scrape of m and returns the body.
func exposition(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	return rec.Body.String()
}

var (
	sampleValueRE = regexp.MustCompile(` ([^ ]+)$`)
	cacheInfoRE   = regexp.MustCompile(`^(vllm:cache_config_info)\{.*\}`)
	// Python's repr of a float: digits with a point, or an exponent.
	pyFloatRE = regexp.MustCompile(`^(-?\d+\.\d+|-?\d(\.\d+)?e[+-]\d+|\+Inf|-Inf|NaN)$`)
)

// shape is an exposition with every sample value replaced by V and cache_config_info's
// label values dropped: names, types, HELP, label names, label values (le included) and
// order stay.
func shape(text string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(line, "# source:") {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			line = sampleValueRE.ReplaceAllString(line, " V")
			line = cacheInfoRE.ReplaceAllString(line, "$1{...}")
		}
		out = append(out, line)
	}
	return out
}

func labelKeys(line string) []string {
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	var keys []string
	for _, kv := range strings.Split(line[open+1:end], `",`) {
		keys = append(keys, kv[:strings.IndexByte(kv, '=')])
	}
	return keys
}

// TestExpositionMatchesVLLM0251 compares the simulator's /metrics, family by family and line
// by line, with a real vLLM 0.25.1 server's (opt-125m at TP 2, served as opt-125m-tp2, util
// 0.3, one GET /v1/models served): the same families in the same order, types, HELP texts,
// label names and values formatted identically (le="1.0", finished_reason in creation order),
// buckets, _created series and cache_config_info label names. Only values differ.
func TestExpositionMatchesVLLM0251(t *testing.T) {
	raw, err := os.ReadFile(capture0251)
	require.NoError(t, err)
	s, err := sim.Resolve(sim.Config{Model: "facebook/opt-125m", GPU: "H100", TensorParallelSize: 2,
		GPUMemoryUtilization: 0.3, VLLMVersion: "0.25.1"}, nil)
	require.NoError(t, err)
	require.Equal(t, 2048, s.MaxModelLen, "the capture's 1-2-5 token buckets stop at 2000")
	m := New(s, "opt-125m-tp2", true)
	m.ObserveHTTP("/v1/models", "GET", 200, 0, 463, 2*time.Millisecond)
	ours := exposition(t, m)

	want, got := shape(string(raw)), shape(ours)
	assert.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"))

	var wantInfo, gotInfo string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "vllm:cache_config_info{") {
			wantInfo = l
		}
	}
	for _, l := range strings.Split(ours, "\n") {
		if strings.HasPrefix(l, "vllm:cache_config_info{") {
			gotInfo = l
		}
	}
	assert.Equal(t, labelKeys(wantInfo), labelKeys(gotInfo), "cache_config_info label names")

	// Every value is written as Python writes floats; zeros as 0.0.
	for _, line := range strings.Split(ours, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v := sampleValueRE.FindStringSubmatch(line)[1]
		assert.Regexp(t, pyFloatRE, v, line)
		if f, _ := strconv.ParseFloat(v, 64); f == 0 {
			assert.Equal(t, "0.0", v, line)
		}
	}
}

func TestFloatToGoString(t *testing.T) {
	for f, want := range map[float64]string{
		0:                      "0.0",
		1:                      "1.0",
		0.001:                  "0.001",
		1e-05:                  "1e-05",
		2560:                   "2560.0",
		27453:                  "27453.0",
		999999:                 "999999.0",
		1e6:                    "1e+06",
		1234567:                "1.234567e+06",
		4.5223936e+07:          "4.5223936e+07",
		1.7960436259993434e+09: "1.7960436259993434e+09",
		1e10:                   "1e+010", // prometheus_client's own rendering
		0.00210602099832613:    "0.00210602099832613",
		-5:                     "-5.0",
		math.Inf(1):            "+Inf",
		math.Inf(-1):           "-Inf",
		1.0000000000000002:     "1.0000000000000002",
		2.121962e+06:           "2.121962e+06",
		123.456:                "123.456",
		0.30000000000000004:    "0.30000000000000004",
		9.099952128e+09:        "9.099952128e+09",
	} {
		assert.Equal(t, want, floatToGoString(f), "%v", f)
	}
	assert.Equal(t, "NaN", floatToGoString(math.NaN()))
}

// FuzzFloatToGoString: every rendering parses back to the same float (Prometheus reads it).
func FuzzFloatToGoString(f *testing.F) {
	for _, v := range []float64{0, 1, 1e-5, 1e6, 1e10, 1.7960436259993434e+09, -3.25, 1e300} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		s := floatToGoString(v)
		if math.IsNaN(v) {
			return
		}
		// Go parses "1e+010" and "+Inf" alike.
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != v {
			t.Fatalf("%v rendered as %q parses back as %v (%v)", v, s, back, err)
		}
	})
}

// TestExpositionByVersion: the families and labels follow the release imitated.
func TestExpositionByVersion(t *testing.T) {
	text := func(version string, spec *sim.SpeculativeConfig) string {
		s, err := sim.Resolve(sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: version, Speculative: spec}, nil)
		require.NoError(t, err)
		return exposition(t, New(s, "m", true))
	}
	newest := text("0.26.0", nil)
	has(t, newest, `prefix_match_unit="None"`)
	hasNot(t, newest, "hash_block_size")
	has(t, newest, "# TYPE vllm:num_requests_waiting_by_reason gauge")
	hasNot(t, newest, "prompt_tokens_recomputed")
	hasNot(t, newest, "spec_decode")

	v19 := text("0.19.0", nil)
	has(t, v19, "# TYPE vllm:prompt_tokens_recomputed_total counter")
	hasNot(t, v19, "waiting_by_reason")
	has(t, v19, `cpu_kvcache_space_bytes="None"`)
	hasNot(t, v19, "kv_cache_size_tokens")

	v10 := text("0.10.1.1", nil)
	has(t, v10, "# TYPE vllm:gpu_cache_usage_perc gauge")
	has(t, v10, "# TYPE vllm:time_per_output_token_seconds histogram")
	hasNot(t, v10, "vllm:inter_token_latency_seconds")
	hasNot(t, v10, "engine_sleep_state")
	hasNot(t, v10, `finished_reason="repetition"`)

	// Speculative decoding adds its four counters first, one per_pos series per draft position.
	spec := text("0.26.0", &sim.SpeculativeConfig{Method: "ngram", NumSpeculativeTokens: 3})
	vllmStart := strings.Index(spec, "# HELP vllm:")
	assert.True(t, strings.HasPrefix(spec[vllmStart:], "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts."))
	for _, p := range []string{"0", "1", "2"} {
		has(t, spec, `vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="`+p+`"} 0.0`)
	}
	hasNot(t, spec, `position="3"`)
	has(t, spec, "# TYPE vllm:spec_decode_num_draft_tokens_created gauge")
}

// TestHTTPFamilies: the instrumentator's families count what the API serves, not the probes.
func TestHTTPFamilies(t *testing.T) {
	m := New(resolve(t, sim.Config{}), modelName, true)
	before := exposition(t, m)
	has(t, before, "# TYPE http_requests_total counter")
	hasNot(t, before, "http_requests_total{", "no series before the first request")
	has(t, before, "http_request_duration_highr_seconds_count 0.0", "the unlabelled histogram exists from the start")

	m.ObserveHTTP("/v1/completions", "POST", 200, 120, 0, 1500*time.Millisecond)
	m.ObserveHTTP("/v1/completions", "POST", 400, 80, 200, 2*time.Millisecond)
	m.ObserveHTTP("/v1/completions", "GET", 405, 0, 31, time.Millisecond)
	m.ObserveHTTP("/metrics", "GET", 200, 0, 9000, time.Millisecond) // excluded
	m.ObserveHTTP("/health", "GET", 200, 0, 0, time.Millisecond)     // excluded
	after := exposition(t, m)
	for _, line := range []string{
		`http_requests_total{handler="/v1/completions",method="POST",status="2xx"} 1.0`,
		`http_requests_total{handler="/v1/completions",method="POST",status="4xx"} 1.0`,
		`http_requests_total{handler="/v1/completions",method="GET",status="4xx"} 1.0`,
		`http_request_size_bytes_count{handler="/v1/completions"} 3.0`,
		`http_request_size_bytes_sum{handler="/v1/completions"} 200.0`,
		`http_response_size_bytes_sum{handler="/v1/completions"} 231.0`,
		`http_request_duration_highr_seconds_count 3.0`,
		`http_request_duration_highr_seconds_bucket{le="1.0"} 2.0`,
		`http_request_duration_highr_seconds_bucket{le="1.5"} 3.0`,
		`http_request_duration_seconds_bucket{handler="/v1/completions",le="0.5",method="POST"} 1.0`,
		`http_request_duration_seconds_bucket{handler="/v1/completions",le="+Inf",method="POST"} 2.0`,
	} {
		assert.True(t, strings.Contains(after, line+"\n"), "missing %s", line)
	}
	hasNot(t, after, `handler="/metrics"`)
	hasNot(t, after, `handler="/health"`)
	has(t, after, "# TYPE http_requests_created gauge")
	// Children in first-seen order, as prometheus_client keeps them.
	assert.Less(t, strings.Index(after, `method="POST",status="2xx"`), strings.Index(after, `method="POST",status="4xx"`))
	assert.Less(t, strings.Index(after, `method="POST",status="4xx"`), strings.Index(after, `handler="/v1/completions",method="GET",status="4xx"`))
}

// has and hasNot check for a substring without printing the whole exposition on failure.
func has(t *testing.T, text, sub string, msg ...any) {
	t.Helper()
	if !strings.Contains(text, sub) {
		t.Errorf("missing %q %v", sub, msg)
	}
}

func hasNot(t *testing.T, text, sub string, msg ...any) {
	t.Helper()
	if strings.Contains(text, sub) {
		t.Errorf("unexpected %q %v", sub, msg)
	}
}

// TestPromtoolCheckMetrics: promtool finds nothing in the simulator's /metrics that it does not
// find in the real 0.25.1 capture (it warns about vLLM's own choices there: names with ':' and
// a histogram named iteration_tokens_total).
func TestPromtoolCheckMetrics(t *testing.T) {
	tool := promtool.Need(t, "promtool")
	raw, err := os.ReadFile(capture0251)
	require.NoError(t, err)
	real := promtool.Warnings(t, tool, string(raw))
	require.NotEmpty(t, real, "promtool does warn about the real capture")

	s, err := sim.Resolve(sim.Config{Model: "facebook/opt-125m", GPU: "H100", TensorParallelSize: 2,
		GPUMemoryUtilization: 0.3, VLLMVersion: "0.25.1"}, nil)
	require.NoError(t, err)
	m := New(s, "opt-125m-tp2", true)
	m.ObserveHTTP("/v1/models", "GET", 200, 0, 463, 2*time.Millisecond)
	for _, w := range promtool.Warnings(t, tool, exposition(t, m)) {
		assert.Contains(t, real, w, "promtool warns about the simulator only")
	}
	// The newest release with speculative decoding and traffic adds no other warning either.
	s2 := resolve(t, sim.Config{Speculative: &sim.SpeculativeConfig{Method: "ngram", NumSpeculativeTokens: 2}})
	m2 := New(s2, modelName, true)
	m2.ObserveHTTP("/v1/completions", "POST", 200, 100, 0, time.Second)
	for _, w := range promtool.Warnings(t, tool, exposition(t, m2)) {
		if strings.Contains(w, "metric names should not contain ':'") {
			continue // every vllm: family
		}
		assert.Contains(t, real, w, "promtool warns about the simulator only")
	}
}
