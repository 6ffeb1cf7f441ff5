package loadgen

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reportSummary is a hand-built run: 98 requests in 24.5 s.
func reportSummary() Summary {
	d := func(mean, median float64, ps map[float64]float64) Dist {
		return Dist{Mean: mean, Median: median, Std: mean / 10, Percentiles: ps, N: 98}
	}
	return Summary{
		Duration:             24500 * time.Millisecond,
		Completed:            98,
		FailuresByClass:      map[ErrorClass]int{},
		TotalInputTokens:     100352,
		TotalOutputTokens:    12544,
		RequestThroughput:    98 / 24.5,
		RequestGoodput:       90 / 24.5,
		OutputThroughput:     12544 / 24.5,
		TotalTokenThroughput: (100352 + 12544) / 24.5,
		MaxOutputTokensPerS:  812,
		MaxConcurrent:        9,
		TTFT:                 d(123.456, 120, map[float64]float64{50: 120, 99.9: 456.789, 99: 400}),
		TPOT:                 d(7.125, 7, map[float64]float64{50: 7, 99.9: 12.5, 99: 11}),
		ITL:                  d(7.2, 6.9, map[float64]float64{50: 6.9, 99.9: 30, 99: 25}),
		E2EL:                 d(1012.345, 1000, map[float64]float64{50: 1000, 99.9: 2345.678, 99: 2000}),
	}
}

func reportInfo() RunInfo {
	return RunInfo{
		Date:           time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Backend:        BackendCompletions,
		ModelID:        "Qwen/Qwen2.5-0.5B-Instruct",
		NumPrompts:     100,
		RequestRate:    4,
		Burstiness:     1,
		MaxConcurrency: 8,
		Goodput:        Goodput{TTFT: 200 * time.Millisecond},
		Metrics:        []string{"ttft", "tpot", "itl", "e2el"},
		Percentiles:    []float64{50, 99.9},
	}
}

// vllmTable was printed by Python with vllm bench serve's own format strings and these values.
const vllmTable = `============ Serving Benchmark Result ============
Successful requests:                     98        
Failed requests:                         0         
Maximum request concurrency:             8         
Request rate configured (RPS):           4.00      
Benchmark duration (s):                  24.50     
Total input tokens:                      100352    
Total generated tokens:                  12544     
Request throughput (req/s):              4.00      
Request goodput (req/s):                 3.67      
Output token throughput (tok/s):         512.00    
Peak output token throughput (tok/s):    812.00    
Peak concurrent requests:                9.00      
Total token throughput (tok/s):          4608.00   
---------------Time to First Token----------------
Mean TTFT (ms):                          123.46    
Median TTFT (ms):                        120.00    
P50 TTFT (ms):                           120.00    
P99.9 TTFT (ms):                         456.79    
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          7.12      
Median TPOT (ms):                        7.00      
P50 TPOT (ms):                           7.00      
P99.9 TPOT (ms):                         12.50     
---------------Inter-token Latency----------------
Mean ITL (ms):                           7.20      
Median ITL (ms):                         6.90      
P50 ITL (ms):                            6.90      
P99.9 ITL (ms):                          30.00     
----------------End-to-end Latency----------------
Mean E2EL (ms):                          1012.35   
Median E2EL (ms):                        1000.00   
P50 E2EL (ms):                           1000.00   
P99.9 E2EL (ms):                         2345.68   
==================================================
`

func TestPrintResultIsVLLMsTable(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, PrintResult(&b, reportSummary(), reportInfo()))
	assert.Equal(t, vllmTable, b.String())
}

func TestPrintResultDefaultsOmitOptionalRows(t *testing.T) {
	info := reportInfo()
	info.RequestRate, info.MaxConcurrency, info.Goodput = math.Inf(1), 0, Goodput{}
	info.Metrics, info.Percentiles = []string{"ttft", "tpot", "itl"}, []float64{99}
	var b bytes.Buffer
	require.NoError(t, PrintResult(&b, reportSummary(), info))
	out := b.String()
	for _, absent := range []string{"Maximum request concurrency", "Request rate configured", "goodput", "End-to-end", "P50"} {
		assert.NotContains(t, out, absent)
	}
	assert.Contains(t, out, "P99 TTFT (ms):                           400.00    \n")
	assert.Contains(t, out, "P99 ITL (ms):                            25.00     \n")
	assert.Len(t, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), 1+2+8+3*4+1)
}

func TestPrintResultCountsFailuresByClass(t *testing.T) {
	s := reportSummary()
	s.Failed = 7
	s.FailuresByClass = map[ErrorClass]int{ErrConnect: 5, ErrReset: 2}
	var b bytes.Buffer
	require.NoError(t, PrintResult(&b, s, reportInfo()))
	lines := strings.Split(b.String(), "\n")
	assert.Equal(t, "Failed requests:                         7         ", lines[2])
	assert.Equal(t, "  connect:                               5         ", lines[3])
	assert.Equal(t, "  reset:                                 2         ", lines[4])
	assert.Equal(t, "Maximum request concurrency:             8         ", lines[5])
	assert.Equal(t, "connect 5, reset 2", FailureSummary(s.FailuresByClass))
}

func TestResultJSONHasVLLMsKeys(t *testing.T) {
	raw, err := json.Marshal(ResultJSON(reportSummary(), reportInfo(), nil))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))

	want := map[string]any{
		"date": "20250102-030405", "endpoint_type": "openai", "backend": "openai", "label": nil,
		"model_id": "Qwen/Qwen2.5-0.5B-Instruct", "tokenizer_id": "Qwen/Qwen2.5-0.5B-Instruct",
		"num_prompts": 100.0, "request_rate": 4.0, "burstiness": 1.0, "max_concurrency": 8.0,
		"duration": 24.5, "completed": 98.0, "failed": 0.0, "total_input_tokens": 100352.0,
		"total_output_tokens": 12544.0, "request_throughput": 4.0, "request_goodput": 90 / 24.5,
		"output_throughput": 512.0, "total_token_throughput": 4608.0, "max_output_tokens_per_s": 812.0,
		"max_concurrent_requests": 9.0, "rtfx": 0.0,
		"mean_ttft_ms": 123.456, "median_ttft_ms": 120.0, "std_ttft_ms": 12.3456, "p50_ttft_ms": 120.0, "p99.9_ttft_ms": 456.789,
		"mean_tpot_ms": 7.125, "median_tpot_ms": 7.0, "p99.9_tpot_ms": 12.5,
		"mean_itl_ms": 7.2, "p99.9_itl_ms": 30.0,
		"mean_e2el_ms": 1012.345, "median_e2el_ms": 1000.0, "p99.9_e2el_ms": 2345.678,
	}
	for k, v := range want {
		if assert.Contains(t, m, k) {
			if f, ok := v.(float64); ok {
				assert.InDelta(t, f, m[k], 1e-9, k)
			} else {
				assert.Equal(t, v, m[k], k)
			}
		}
	}
	for _, absent := range []string{"p99_ttft_ms", "input_lens", "ttfts"} {
		assert.NotContains(t, m, absent)
	}
	// Keys in vLLM's order; floats written as Python writes them.
	s := string(raw)
	assert.True(t, strings.HasPrefix(s, `{"date":"20250102-030405","endpoint_type":"openai","backend":"openai","label":null,"model_id":`), s)
	assert.Less(t, strings.Index(s, `"num_prompts"`), strings.Index(s, `"request_rate"`))
	assert.Less(t, strings.Index(s, `"rtfx"`), strings.Index(s, `"mean_ttft_ms"`))
	assert.Less(t, strings.Index(s, `"std_ttft_ms"`), strings.Index(s, `"p50_ttft_ms"`))
	assert.Contains(t, s, `"burstiness":1.0,`)
	assert.Contains(t, s, `"rtfx":0.0,`)
}

func TestResultJSONDefaultsAndDetail(t *testing.T) {
	info := reportInfo()
	info.RequestRate, info.MaxConcurrency, info.Goodput = math.Inf(1), 0, Goodput{}
	info.Label, info.TokenizerID = "baseline", "my/tokenizer"
	info.Metadata = []Field{{"tp", "1"}}
	s := reportSummary()
	s.Failed, s.FailuresByClass = 1, map[ErrorClass]int{ErrReset: 1}
	t0 := time.Unix(1000, 0)
	results := []Result{
		{Index: 1, Start: t0.Add(time.Second), Error: ErrReset, ErrorMessage: "connection reset", PromptTokens: 5},
		{Index: 0, Start: t0, TTFT: 100 * time.Millisecond, ITLs: []time.Duration{10 * time.Millisecond}, PromptTokens: 4, OutputTokens: 2},
		{Index: 2, Warmup: true},
	}
	tally := NewTally(Goodput{})
	require.NoError(t, tally.EnableDetail(t.TempDir()))
	defer tally.Close()
	for _, r := range results {
		tally.Add(r)
	}
	raw, err := json.Marshal(ResultJSON(s, info, tally.DetailFields()))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	assert.Equal(t, "inf", m["request_rate"])
	assert.Nil(t, m["max_concurrency"])
	assert.Nil(t, m["request_goodput"])
	assert.Equal(t, "baseline", m["label"])
	assert.Equal(t, "my/tokenizer", m["tokenizer_id"])
	assert.Equal(t, "1", m["tp"])
	assert.Equal(t, map[string]any{"reset": 1.0}, m["failures_by_class"])
	assert.Equal(t, []any{4.0, 5.0}, m["input_lens"])
	assert.Equal(t, []any{2.0, 0.0}, m["output_lens"])
	assert.Equal(t, []any{0.1, 0.0}, m["ttfts"])
	assert.Equal(t, []any{[]any{0.01}, []any{}}, m["itls"])
	assert.Equal(t, []any{0.0, 1.0}, m["start_times"])
	assert.Equal(t, []any{"", "reset: connection reset"}, m["errors"])
}

func TestResultFilenameIsVLLMsPattern(t *testing.T) {
	info := reportInfo()
	assert.Equal(t, "openai-4.0qps-concurrency8-Qwen2.5-0.5B-Instruct-20250102-030405.json", ResultFilename(info))
	info.RequestRate, info.MaxConcurrency, info.Label = math.Inf(1), 0, "mine"
	assert.Equal(t, "mine-infqps-Qwen2.5-0.5B-Instruct-20250102-030405.json", ResultFilename(info))
	info.ModelID, info.RequestRate = "opt-125m", 0.5
	assert.Equal(t, "mine-0.5qps-opt-125m-20250102-030405.json", ResultFilename(info))
	// A model id from a hostile server: no escape, no path, no hidden file.
	info.ModelID = "org/\x1b]0;pwned\x07../../..\x1b[2Jevil"
	assert.Equal(t, "mine-0.5qps-evil-20250102-030405.json", ResultFilename(info))
	info.ModelID = "org/..\u202e\x1b[31mred:x"
	assert.Equal(t, "mine-0.5qps-red_x-20250102-030405.json", ResultFilename(info))
}

func TestPythonNumberFormats(t *testing.T) {
	for _, c := range []struct {
		x          float64
		repr, fix2 string
	}{
		{1, "1.0", "1.00"},
		{0.5, "0.5", "0.50"},
		{4096, "4096.0", "4096.00"},
		{1e-05, "1e-05", "0.00"},
		{2.675, "2.675", "2.67"}, // the binary value is below 2.675
		{0.125, "0.125", "0.12"}, // an exact tie rounds to even
		{math.Inf(1), "inf", "inf"},
		{math.NaN(), "nan", "nan"},
	} {
		assert.Equal(t, c.repr, pyRepr(c.x), "%v", c.x)
		assert.Equal(t, c.fix2, fixed2(c.x), "%v", c.x)
	}
	assert.Equal(t, "99", percentileWord(99))
	assert.Equal(t, "99.9", percentileWord(99.9))
	assert.Equal(t, "-----Time per Output Token (excl. 1st token)------", center("Time per Output Token (excl. 1st token)", '-', 50))
	b, _ := json.Marshal(PyFloat(math.NaN()))
	assert.Equal(t, "null", string(b))
}

func TestPrintSweepRowsInOrder(t *testing.T) {
	s1, s8 := reportSummary(), reportSummary()
	s8.OutputThroughput, s8.Failed = 4000, 3
	var b bytes.Buffer
	info := RunInfo{Metrics: []string{"ttft", "tpot", "itl"}, Percentiles: []float64{99}}
	require.NoError(t, PrintSweep(&b, "concurrency", []SweepRow{{1, s1}, {8, s8}}, info))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 5)
	assert.Contains(t, lines[0], " Sweep Summary (times in ms) ")
	assert.Equal(t, strings.Fields("concurrency TTFT p50 TTFT p99 TPOT p50 TPOT p99 ITL p50 ITL p99 output tok/s req/s failed"), strings.Fields(lines[1]))
	itl50 := fixed2(s1.ITL.Median)
	assert.Equal(t, []string{"1", "120.00", "400.00", "7.00", "11.00", itl50, "25.00", "512.00", "4.00", "0"}, strings.Fields(lines[2]))
	assert.Equal(t, []string{"8", "120.00", "400.00", "7.00", "11.00", itl50, "25.00", "4000.00", "4.00", "3"}, strings.Fields(lines[3]))
	for _, l := range lines {
		assert.Len(t, l, len(lines[0]), "every line as wide as the rules")
	}

	// The summary follows --percentile-metrics and --metric-percentiles.
	b.Reset()
	info = RunInfo{Metrics: []string{"ttft", "e2el"}, Percentiles: []float64{50, 90}}
	require.NoError(t, PrintSweep(&b, "concurrency", []SweepRow{{1, s1}}, info))
	lines = strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	assert.Equal(t, strings.Fields("concurrency TTFT p50 TTFT p90 E2EL p50 E2EL p90 output tok/s req/s failed"), strings.Fields(lines[1]))

	// p0 is the minimum, not the median.
	b.Reset()
	s0 := reportSummary()
	s0.TTFT.Percentiles[0] = 1
	require.NoError(t, PrintSweep(&b, "concurrency", []SweepRow{{1, s0}}, RunInfo{Metrics: []string{"ttft"}, Percentiles: []float64{0}}))
	lines = strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	assert.Equal(t, strings.Fields("concurrency TTFT p50 TTFT p0 output tok/s req/s failed"), strings.Fields(lines[1]))
	assert.Equal(t, []string{"1", fixed2(s0.TTFT.Median), "1.00"}, strings.Fields(lines[2])[:3])
}

func TestParsePercentileFlags(t *testing.T) {
	m, err := ParsePercentileMetrics("ttft, e2el")
	require.NoError(t, err)
	assert.Equal(t, []string{"ttft", "e2el"}, m)
	p, err := ParsePercentiles("50,90,99.9")
	require.NoError(t, err)
	assert.Equal(t, []float64{50, 90, 99.9}, p)

	// Sad paths.
	for _, bad := range []string{"", "ttft,latency", ","} {
		_, err := ParsePercentileMetrics(bad)
		assert.Error(t, err, bad)
	}
	p, err = ParsePercentiles("0,100")
	require.NoError(t, err, "numpy takes 0 and 100, so vLLM does")
	assert.Equal(t, []float64{0, 100}, p)
	for _, bad := range []string{"", "101", "p99", "-5", "-0.1", "nan"} {
		_, err := ParsePercentiles(bad)
		assert.Error(t, err, bad)
	}
}
