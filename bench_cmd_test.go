package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/benchcli"
	"github.com/vllmtop/vllmtop/internal/base/refused"
	"github.com/vllmtop/vllmtop/loadgen"
)

// benchRun runs `vllmtop bench args...` and returns its exit status, stdout and stderr.
func benchRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"bench"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// benchNoKeys keeps the environment's API keys out of a test.
func benchNoKeys(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("VLLM_API_KEY", "")
}

// benchTableValue reads a row of the result table, e.g. "Total generated tokens:".
func benchTableValue(t *testing.T, table, label string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(label)+` +(\S+) *$`).FindAllStringSubmatch(table, -1)
	require.NotEmpty(t, m, "no %q row in:\n%s", label, table)
	return m[0][1]
}

// A fast simulator: 50x real time, ready at once.
var benchFastSim = []string{"--sim", "--sim-args", "--sim-speed 50"}

func TestBenchSimPrintsVLLMsTable(t *testing.T) {
	benchNoKeys(t)
	// Slow enough that a loaded machine does not read a whole stream at once (its gaps would
	// all be 0, as they would be for vLLM's client).
	slowSim := []string{"--sim", "--sim-args", "--sim-speed 5"}
	code, out, errOut := benchRun(t, append(slowSim, "--num-prompts", "20", "--random-input-len", "64", "--random-output-len", "16")...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "20", benchTableValue(t, out, "Successful requests:"))
	assert.Equal(t, "0", benchTableValue(t, out, "Failed requests:"))
	// ignore_eos and exact prompts from the simulator's /tokenize: the counts are exact.
	assert.Equal(t, "320", benchTableValue(t, out, "Total generated tokens:"))
	assert.Equal(t, "1280", benchTableValue(t, out, "Total input tokens:"))
	assert.NotContains(t, out, "Maximum request concurrency:", "not set, so not printed")
	assert.NotContains(t, out, "Request rate configured", "inf is not printed")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.Equal(t, "============ Serving Benchmark Result ============", lines[0])
	assert.Equal(t, strings.Repeat("=", 50), lines[len(lines)-1])
	for _, l := range lines[1 : len(lines)-1] {
		if !strings.HasPrefix(l, "-") {
			assert.Regexp(t, `^.{40} \S+ *$`, l)
			assert.GreaterOrEqual(t, len(l), 51, "values are padded to 10 columns: %q", l)
		}
	}
	for _, want := range []string{"Median TTFT (ms):", "P99 TPOT (ms):", "P99 ITL (ms):"} {
		v, err := strconv.ParseFloat(benchTableValue(t, out, want), 64)
		require.NoError(t, err)
		assert.Positive(t, v, want)
	}
	assert.Contains(t, errOut, "Model: Qwen/Qwen2.5-0.5B-Instruct (the first model of")
	assert.Contains(t, errOut, "requests 20/20, 0 failed")
}

func TestBenchSweepSavesEachRunAndSummarises(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	// At 50x the simulator's steps are shorter than the wall-clock timer resolution, which
	// flattens the difference batching makes; 2x keeps it clear and the test short.
	code, out, errOut := benchRun(t, "--sim", "--sim-args", "--sim-speed 2", "--num-prompts", "16", "--random-input-len", "32", "--random-output-len", "16",
		"--max-concurrency", "1,8", "--save-result", "--result-dir", dir, "--metric-percentiles", "50,99")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 2, strings.Count(out, "Serving Benchmark Result"))
	assert.Regexp(t, `(?m)^Maximum request concurrency: +1 +$`, out)
	assert.Regexp(t, `(?m)^Maximum request concurrency: +8 +$`, out)

	// The summary table: its rows in sweep order, throughput rising with concurrency.
	i := strings.Index(out, "Sweep Summary")
	require.Positive(t, i, out)
	rows := strings.Split(strings.TrimSpace(out[i:]), "\n")
	require.Len(t, rows, 5, out[i:])
	// concurrency, then TTFT, TPOT and ITL at p50 and p99 (--metric-percentiles), then
	// output tok/s, req/s and failed.
	c1, c8 := strings.Fields(rows[2]), strings.Fields(rows[3])
	require.Len(t, c1, 10)
	assert.Equal(t, "1", c1[0])
	assert.Equal(t, "8", c8[0])
	tput1, _ := strconv.ParseFloat(c1[7], 64)
	tput8, _ := strconv.ParseFloat(c8[7], 64)
	assert.Greater(t, tput8, 1.5*tput1, "output tok/s at concurrency 8 vs 1")
	assert.Equal(t, "0", c1[9])

	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	for _, c := range []string{"1", "8"} {
		matches, _ := filepath.Glob(filepath.Join(dir, "openai-infqps-concurrency"+c+"-Qwen2.5-0.5B-Instruct-*.json"))
		require.Len(t, matches, 1, "concurrency %s", c)
		data, err := os.ReadFile(matches[0])
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(data, &m))
		for _, k := range []string{"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
			"request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
			"total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
			"max_output_tokens_per_s", "max_concurrent_requests", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms",
			"p50_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "p99_itl_ms"} {
			assert.Contains(t, m, k)
		}
		assert.Equal(t, 16.0, m["completed"])
		assert.Equal(t, 0.0, m["failed"])
		assert.Equal(t, 256.0, m["total_output_tokens"])
		assert.Equal(t, "inf", m["request_rate"])
		n, _ := strconv.ParseFloat(c, 64)
		assert.Equal(t, n, m["max_concurrency"])
		assert.Equal(t, "Qwen/Qwen2.5-0.5B-Instruct", m["model_id"])
	}
}

func TestBenchJSONOnStdout(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, append(benchFastSim, "--num-prompts", "20", "--random-input-len", "16", "--random-output-len", "4",
		"--json", "--request-rate", "2000", "--percentile-metrics", "ttft,e2el", "--goodput", "ttft:60000", "e2el:60000")...)
	require.Equal(t, 0, code, errOut)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	assert.Equal(t, 20.0, m["completed"])
	assert.Equal(t, 80.0, m["total_output_tokens"])
	assert.Equal(t, 2000.0, m["request_rate"])
	assert.Contains(t, m, "p99_e2el_ms")
	assert.NotContains(t, m, "mean_tpot_ms")
	assert.InDelta(t, m["request_throughput"], m["request_goodput"], 1e-9, "every request meets a one-minute objective")
}

func TestBenchOtherDatasets(t *testing.T) {
	benchNoKeys(t)
	path := filepath.Join(t.TempDir(), "sharegpt.json")
	long := strings.Repeat("word ", 20)
	require.NoError(t, os.WriteFile(path, []byte(`[
		{"conversations": [{"from": "human", "value": "`+long+`"}, {"from": "gpt", "value": "`+long+`"}]},
		{"conversations": [{"from": "human", "value": "`+long+long+`"}, {"from": "gpt", "value": "`+long+`"}]}]`), 0o644))
	code, out, errOut := benchRun(t, append(benchFastSim, "--dataset-name", "sharegpt", "--dataset-path", path, "--num-prompts", "6",
		"--sharegpt-output-len", "8", "--ignore-eos")...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "6", benchTableValue(t, out, "Successful requests:"))
	assert.Equal(t, "48", benchTableValue(t, out, "Total generated tokens:"))

	code, out, errOut = benchRun(t, append(benchFastSim, "--prompt", "Tell me about GPUs.", "--random-output-len", "5",
		"--ignore-eos", "--num-prompts", "3", "--endpoint", "/v1/chat/completions")...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "3", benchTableValue(t, out, "Successful requests:"))
	assert.Equal(t, "15", benchTableValue(t, out, "Total generated tokens:"))
}

// benchErrorLine asserts stderr holds exactly one line, the error, and returns it.
func benchErrorLine(t *testing.T, stderr string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	assert.True(t, strings.HasPrefix(last, "vllmtop bench: "), stderr)
	for _, l := range lines[:len(lines)-1] {
		assert.False(t, strings.HasPrefix(l, "vllmtop bench: "), "one error line only: %q", stderr)
	}
	return last
}

func TestBenchBadArgumentsExit2(t *testing.T) {
	benchNoKeys(t)
	notJSON := filepath.Join(t.TempDir(), "sharegpt.json")
	require.NoError(t, os.WriteFile(notJSON, []byte("this is not JSON\n"), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-concurrency", "1,8", "--request-rate", "1,2"}, "both lists"},
		{[]string{"--sim", "--base-url", "http://127.0.0.1:8000"}, "exclude each other"},
		{[]string{"--sim-args", "--sim-speed 2"}, "need --sim"},
		{[]string{"--num-prompts", "many"}, `invalid value "many" for --num-prompts`},
		{[]string{"--max-concurrency", "0"}, "--max-concurrency"},
		{[]string{"--request-rate", "-1"}, "--request-rate"},
		{[]string{"--random-range-ratio", "1.5"}, "--random-range-ratio"},
		{[]string{"--percentile-metrics", "ttft,speed"}, "unknown metric"},
		{[]string{"--goodput", "latency:5"}, "--goodput"},
		{[]string{"--dataset-name", "sharegpt"}, "--dataset-path"},
		{[]string{"--dataset-name", "sharegpt", "--dataset-path", notJSON}, "is not valid JSON"},
		{[]string{"--dataset-name", "sonnet"}, "sonnet"},
		{[]string{"--duration", "10s"}, "--max-concurrency"},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"--sim", "--", "--bogus", "1"}, "--sim: unrecognized arguments: --bogus 1"},
		{[]string{"--sim", "--model", "no/such-model"}, `unknown model "no/such-model"`},
	} {
		code, out, errOut := benchRun(t, c.args...)
		assert.Equal(t, 2, code, "%v: %s", c.args, errOut)
		assert.Empty(t, out, "%v", c.args)
		assert.Contains(t, benchErrorLine(t, errOut), c.want, "%v", c.args)
	}
}

func TestBenchHelp(t *testing.T) {
	code, out, _ := benchRun(t, "--help")
	assert.Equal(t, 0, code)
	for _, flag := range []string{"--max-concurrency", "--request-rate", "--save-result", "--sim-args", "--json"} {
		assert.Contains(t, out, flag)
	}
}

func TestBenchCannotRunExit1(t *testing.T) {
	benchNoKeys(t)
	// Nothing listens there.
	url := "http://" + refused.Addr(t)
	code, out, errOut := benchRun(t, "--base-url", url, "--num-prompts", "5")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "vllmtop bench: cannot reach "+url+": connection refused\n", errOut)

	// A model the server does not serve.
	f := newBenchFakeVLLM(t, 1000)
	code, _, errOut = benchRun(t, "--base-url", f.URL, "--model", "other-model", "--num-prompts", "5")
	assert.Equal(t, 1, code)
	assert.Contains(t, benchErrorLine(t, errOut), `model "other-model" is not served by `+f.URL+" (it serves fake-model)")

	// A simulator that wants a key: refused without it, served with it.
	code, _, errOut = benchRun(t, "--sim", "--sim-args", "--api-key s3cret --sim-speed 50", "--num-prompts", "4",
		"--random-input-len", "8", "--random-output-len", "2")
	assert.Equal(t, 1, code)
	assert.Contains(t, benchErrorLine(t, errOut), "401 Unauthorized: the server wants an API key")
	code, _, errOut = benchRun(t, "--sim", "--sim-args", "--api-key s3cret --sim-speed 50", "--num-prompts", "4",
		"--random-input-len", "8", "--random-output-len", "2", "--api-key", "wrong")
	assert.Equal(t, 1, code)
	assert.Contains(t, benchErrorLine(t, errOut), "401 Unauthorized: the server refused the API key")
	assert.NotContains(t, errOut, "wrong", "the key is never printed")
	t.Setenv("OPENAI_API_KEY", "s3cret")
	code, out, errOut = benchRun(t, "--sim", "--sim-args", "--api-key s3cret --sim-speed 50", "--num-prompts", "4",
		"--random-input-len", "8", "--random-output-len", "2")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "4", benchTableValue(t, out, "Successful requests:"))
	assert.NotContains(t, out+errOut, "s3cret")

	// A simulator that cannot start (no memory left for the KV cache): vLLM's reason, one line.
	code, _, errOut = benchRun(t, "--sim", "--", "--gpu-memory-utilization", "0.01")
	assert.Equal(t, 1, code)
	assert.Regexp(t, `the simulated server \(\S+ on \S+\) failed to start: ValueError: `, benchErrorLine(t, errOut), "it names the model and card, defaults included")
	// vLLM's config check refuses the card: the rule broken, without pydantic's wrapping.
	code, _, errOut = benchRun(t, "--sim", "--", "--model", "Qwen/Qwen2.5-7B-Instruct-AWQ", "--sim-gpu", "V100-32GB")
	assert.Equal(t, 1, code)
	line := benchErrorLine(t, errOut)
	assert.Contains(t, line, "the simulated server (Qwen/Qwen2.5-7B-Instruct-AWQ on V100-32GB) failed to start: The quantization method auto_awq is not supported for the current GPU. Minimum capability: 75. Current capability: 70.")
	assert.NotContains(t, line, "pydantic")
}

// benchFakeVLLM serves one model and streams max_tokens tokens for the first dieAfter completions;
// the next one breaks off after two tokens and the server goes away (connection hijacked and
// closed, listener closed).
type benchFakeVLLM struct {
	*httptest.Server
	served atomic.Int64
}

func newBenchFakeVLLM(t *testing.T, dieAfter int64) *benchFakeVLLM {
	f := &benchFakeVLLM{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model","root":"fake-model","max_model_len":4096}]}`)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		n := f.served.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		tokens := req.MaxTokens
		if n > dieAfter {
			tokens = 2
		}
		for i := 0; i < tokens; i++ {
			fmt.Fprint(w, `data: {"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" x","finish_reason":null}]}`+"\n\n")
			w.(http.Flusher).Flush()
		}
		if n > dieAfter {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			f.Listener.Close()
			f.CloseClientConnections()
			return
		}
		fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", 8+tokens, tokens)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func TestBenchServerDiesMidRun(t *testing.T) {
	benchNoKeys(t)
	f := newBenchFakeVLLM(t, 4)
	code, out, errOut := benchRun(t, "--base-url", f.URL, "--num-prompts", "10", "--max-concurrency", "1",
		"--random-input-len", "8", "--random-output-len", "4")
	assert.Equal(t, 0, code, "some requests succeeded: %s", errOut)
	assert.Equal(t, "4", benchTableValue(t, out, "Successful requests:"))
	assert.Equal(t, "6", benchTableValue(t, out, "Failed requests:"))
	// The broken stream is a reset; the requests after it find nothing listening (one may
	// still pick a pooled connection the server has just closed: a reset too).
	connect, _ := strconv.Atoi(benchTableValue(t, out, "  connect:"))
	reset, _ := strconv.Atoi(benchTableValue(t, out, "  reset:"))
	assert.Equal(t, 6, connect+reset)
	assert.GreaterOrEqual(t, reset, 1)
	assert.GreaterOrEqual(t, connect, 3)
	assert.Equal(t, "16", benchTableValue(t, out, "Total generated tokens:"))
	assert.Regexp(t, `(?m)^vllmtop bench: 6 of 10 requests failed: (connect \d, reset \d|reset \d, connect \d)$`, errOut)
	assert.Contains(t, errOut, "estimated lengths: the server has no /tokenize")

	// A server that dies on the first request: the table still shows it, and the exit status says so.
	f = newBenchFakeVLLM(t, 0)
	code, out, errOut = benchRun(t, "--base-url", f.URL, "--num-prompts", "5", "--max-concurrency", "1,2",
		"--random-input-len", "8", "--random-output-len", "4")
	assert.Equal(t, 1, code)
	assert.Equal(t, 1, strings.Count(out, "Serving Benchmark Result"), "the sweep stops at a run with no success")
	assert.Equal(t, "0", benchTableValue(t, out, "Successful requests:"))
	assert.Equal(t, "5", benchTableValue(t, out, "Failed requests:"))
	assert.Regexp(t, `vllmtop bench: no request succeeded \(last: (connect|reset): [^\n]*\); the sweep stops here\n`, errOut)
}

// parseBench reads a bench command line as vllmtop bench does, without running it.
func parseBench(t *testing.T, args []string, env map[string]string) (*benchcli.Options, error) {
	t.Helper()
	fs := pflag.NewFlagSet("vllmtop bench", pflag.ContinueOnError)
	o := benchFlags(fs)
	if err := fs.Parse(gatherValues(append([]string{"bench"}, args...))[1:]); err != nil {
		return nil, err
	}
	return o, o.Finish(fs, fs.Args(), func(k string) string { return env[k] })
}

func TestBenchArgumentsFollowVLLM(t *testing.T) {
	o, err := parseBench(t, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 1000, o.Runs.NumPrompts)
	assert.Equal(t, loadgen.DatasetRandom, o.Dataset.Name)
	assert.Equal(t, 1024, o.Dataset.Random.InputLen)
	assert.Equal(t, 128, o.Dataset.Random.OutputLen)
	assert.Equal(t, "http://127.0.0.1:8000", o.Client.BaseURL)
	assert.Equal(t, "/v1/completions", o.Client.Endpoint)
	assert.Equal(t, "openai", o.Runs.Info.Backend)
	assert.Equal(t, []string{"ttft", "tpot", "itl"}, o.Runs.Info.Metrics)
	assert.Equal(t, []float64{99}, o.Runs.Info.Percentiles)
	assert.Len(t, o.Runs.Rates, 1)
	assert.True(t, o.Runs.Rates[0] > 1e308, "request rate inf")
	assert.Empty(t, o.Runs.Concurrency)
	assert.Equal(t, 1.0, o.Runs.Burstiness)

	o, err = parseBench(t, []string{"--goodput", "ttft:200", "tpot:50", "--backend", "openai-chat", "--metadata", "a=1", "b=x",
		"--max-concurrency", "1,8,32", "--sim", "--", "--sim-speed", "4"}, map[string]string{"VLLM_API_KEY": "from-env"})
	require.NoError(t, err)
	assert.Equal(t, int64(200e6), int64(o.Runs.Info.Goodput.TTFT))
	assert.Equal(t, int64(50e6), int64(o.Runs.Info.Goodput.TPOT))
	assert.Equal(t, "/v1/chat/completions", o.Client.Endpoint)
	assert.Equal(t, []int{1, 8, 32}, o.Runs.Concurrency)
	assert.Equal(t, []string{"--sim-speed", "4"}, o.SimArgs)
	assert.Equal(t, "from-env", o.Client.APIKey)
	require.Len(t, o.Runs.Info.Metadata, 2)
	assert.Equal(t, "b", o.Runs.Info.Metadata[1].Key)
	assert.Equal(t, "x", o.Runs.Info.Metadata[1].Value)

	// The simulator's flags are accepted directly, in order, before those after --.
	o, err = parseBench(t, []string{"--sim", "--sim-gpu", "L4", "--gpu-memory-utilization", "0.8", "--enforce-eager", "-tp", "1",
		"--sim-args", "--sim-speed 2", "--", "Qwen/Qwen3-0.6B"}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"--sim-speed", "2", "--sim-gpu=L4", "--gpu-memory-utilization=0.8", "--enforce-eager",
		"--tensor-parallel-size=1", "Qwen/Qwen3-0.6B"}, o.SimArgs)
	_, err = parseBench(t, []string{"--gpu-memory-utilization", "lots"}, nil)
	assert.EqualError(t, err, `invalid argument "lots" for "--gpu-memory-utilization" flag: strconv.ParseFloat: parsing "lots": invalid syntax`,
		"the simulator's own type check, when the flag is read")
	_, err = parseBench(t, []string{"--sim-gpu", "L4"}, nil)
	assert.ErrorContains(t, err, "they need --sim")
}

// On the virtual clock each request passes the simulated server's front end as its body
// would over HTTP, so a run the server would refuse, or whose --extra-body changes what it
// asks, comes out as it does against the simulator on the wall clock.
func TestBenchVirtualClockAnswersAsTheServer(t *testing.T) {
	benchNoKeys(t)
	for _, tc := range []struct {
		name      string
		args      []string
		completed float64
		tokens    float64
		failure   string
	}{
		{"unknown endpoint", []string{"--endpoint", "/v1/foo"}, 0, 0, "http_404"},
		{"top-p out of range", []string{"--top-p", "5"}, 0, 0, "http_400"},
		{"negative max_tokens in the extra body", []string{"--extra-body", `{"max_tokens":-5}`}, 0, 0, "http_400"},
		{"max_tokens from the extra body", []string{"--extra-body", `{"max_tokens":4}`}, 5, 20, ""},
		{"max_tokens above the output length", []string{"--extra-body", `{"max_tokens":20}`, "--ignore-eos"}, 5, 100, ""},
		{"n choices", []string{"--extra-body", `{"n":2}`}, 5, 80, ""},
		{"a list of prompts", []string{"--extra-body", `{"prompt":[[1,2],[3]]}`}, 5, 80, ""},
		{"an endpoint with a query", []string{"--endpoint", "/v1/completions?api-version=1"}, 5, 40, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, clock := range [][]string{benchVirtual, benchFastSim} {
				args := append(append(append([]string{}, clock...), "--num-prompts", "5", "--random-input-len", "16", "--random-output-len", "8", "--json"), tc.args...)
				_, out, errOut := benchRun(t, args...)
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(out), &m), "%s\n%s", out, errOut)
				assert.Equal(t, tc.completed, m["completed"], "%v", clock)
				assert.Equal(t, tc.tokens, m["total_output_tokens"], "%v", clock)
				if tc.failure != "" {
					assert.Contains(t, errOut, tc.failure, "%v", clock)
				}
			}
		})
	}
}

// --save-detailed's generated_texts hold the responses' text, as vLLM's do: the simulator's
// words, one a token, the same on either clock.
func TestBenchSaveDetailedKeepsTheText(t *testing.T) {
	benchNoKeys(t)
	texts := map[string][]string{}
	for name, clock := range map[string][]string{"virtual": benchVirtual, "wall": benchFastSim} {
		dir := t.TempDir()
		args := append(append([]string{}, clock...), "--num-prompts", "3", "--random-input-len", "16", "--random-output-len", "6", "--save-result", "--save-detailed", "--result-dir", dir)
		code, _, errOut := benchRun(t, args...)
		require.Equal(t, 0, code, errOut)
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		require.Len(t, files, 1)
		b, err := os.ReadFile(files[0])
		require.NoError(t, err)
		var m struct {
			Texts []string `json:"generated_texts"`
		}
		require.NoError(t, json.Unmarshal(b, &m))
		require.Len(t, m.Texts, 3)
		for _, s := range m.Texts {
			assert.Len(t, strings.Fields(s), 6, "%s: six tokens, six words: %q", name, s)
		}
		sort.Strings(m.Texts)
		texts[name] = m.Texts
	}
	assert.Equal(t, texts["wall"], texts["virtual"])
}

// A simulator started with --api-key refuses a client without one on either clock, at the
// model list, before any request.
func TestBenchVirtualClockAsksForTheKey(t *testing.T) {
	benchNoKeys(t)
	for _, args := range [][]string{
		{"--sim", "--sim-clock", "virtual", "--sim-args", "--api-key secret"},
		{"--sim", "--sim-args", "--api-key secret --sim-speed 50"},
	} {
		code, _, errOut := benchRun(t, append(args, "--num-prompts", "2", "--random-input-len", "16", "--random-output-len", "4")...)
		assert.Equal(t, 1, code, "%v", args)
		assert.Contains(t, errOut, "401 Unauthorized: the server wants an API key", "%v", args)
	}
	t.Setenv("OPENAI_API_KEY", "secret")
	code, _, errOut := benchRun(t, "--sim", "--sim-clock", "virtual", "--sim-args", "--api-key secret", "--num-prompts", "2", "--random-input-len", "16", "--random-output-len", "4")
	assert.Equal(t, 0, code, errOut)
}

// --model picks among the names the simulated server lists, on the virtual clock as over HTTP.
func TestBenchVirtualClockServesEveryListedName(t *testing.T) {
	benchNoKeys(t)
	for _, clock := range [][]string{benchVirtual, {"--sim"}} {
		args := append(append([]string{}, clock...), "--sim-args", "--served-model-name foo bar --sim-speed 50", "--num-prompts", "2", "--random-input-len", "16", "--random-output-len", "4")
		code, _, errOut := benchRun(t, append(args, "--model", "bar")...)
		assert.Equal(t, 0, code, "%v: %s", clock, errOut)
		code, _, errOut = benchRun(t, append(args, "--model", "baz")...)
		assert.Equal(t, 1, code, "%v", clock)
		assert.Contains(t, errOut, `model "baz" is not served by`, "%v", clock)
	}
}

// --request-timeout ends a request on the virtual clock as the HTTP client's deadline does on
// the wall clock: those still going at their deadline fail as timeouts, and the run is over
// when the last one is.
func TestBenchVirtualClockTimesRequestsOut(t *testing.T) {
	benchNoKeys(t)
	run := func(timeout string) map[string]any {
		t.Helper()
		args := append(append([]string{}, benchVirtual...), "--num-prompts", "40", "--random-input-len", "512", "--random-output-len", "200",
			"--request-timeout", timeout, "--json", "--", "meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--max-num-seqs", "8", "--max-model-len", "4096")
		_, out, errOut := benchRun(t, args...)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), "%s\n%s", out, errOut)
		return m
	}
	all := run("1h")
	require.Equal(t, 40.0, all["completed"])
	whole := all["duration"].(float64)
	cut := run(fmt.Sprintf("%.3fs", whole/2))
	completed, failed := cut["completed"].(float64), cut["failed"].(float64)
	assert.Greater(t, completed, 0.0, "the first waves finish within half the run")
	assert.Greater(t, failed, 0.0, "the requests queued behind them do not")
	assert.Equal(t, 40.0, completed+failed)
	assert.InDelta(t, whole/2, cut["duration"].(float64), 0.01*whole, "the run ends at the deadline of the last request")
}

// --sim-speed means nothing on the virtual clock, and bench says so rather than take it silently.
func TestBenchVirtualClockSaysSimSpeedIsIgnored(t *testing.T) {
	benchNoKeys(t)
	args := append(append([]string{}, benchVirtual...), "--num-prompts", "2", "--random-input-len", "16", "--random-output-len", "4")
	code, _, errOut := benchRun(t, append(args, "--", "--sim-speed", "10")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "vllmtop bench: --sim-speed paces the wall clock; the virtual clock takes no time, so it is ignored\n")
	_, _, errOut = benchRun(t, args...)
	assert.NotContains(t, errOut, "--sim-speed")
}

// Images to a text-only simulated model would be refused one by one; bench --sim says so
// before the run, on either clock.
func TestBenchSimRefusesImagesForATextModel(t *testing.T) {
	benchNoKeys(t)
	for _, clock := range [][]string{benchVirtual, benchFastSim} {
		args := append(append([]string{}, clock...), "--dataset-name", "random-mm", "--backend", "openai-chat",
			"--endpoint", "/v1/chat/completions", "--num-prompts", "2")
		code, out, errOut := benchRun(t, args...)
		assert.Equal(t, 2, code, "%v: %s", clock, errOut)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "is text-only", "%v", clock)
	}
}

// --save-detailed on its own saves nothing, as vLLM's only adds to what --save-result saves.
func TestBenchSaveDetailedAloneSavesNothing(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	args := append(append([]string{}, benchVirtual...), "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "2", "--save-detailed", "--result-dir", dir)
	code, _, errOut := benchRun(t, args...)
	require.Equal(t, 0, code, errOut)
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	assert.Empty(t, files)
}
