package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchRecorder is an OpenAI-compatible server that keeps each completion request's body and
// headers and answers max_tokens tokens.
type benchRecorder struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	models  []http.Header
	events  []string // profiler calls and completions, in order
}

func newBenchRecorder(t *testing.T) *benchRecorder {
	b := &benchRecorder{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.models = append(b.models, r.Header.Clone())
		b.mu.Unlock()
		fmt.Fprint(w, `{"object":"list","data":[{"id":"served","object":"model","root":"served","max_model_len":4096}]}`)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		b.mu.Lock()
		b.bodies, b.headers = append(b.bodies, body), append(b.headers, r.Header.Clone())
		b.events = append(b.events, "completion")
		b.mu.Unlock()
		n, _ := body["max_tokens"].(float64)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < int(n); i++ {
			fmt.Fprint(w, `data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":" x","finish_reason":null}]}`+"\n\n")
		}
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", int(n))
	})
	for _, path := range []string{"/start_profile", "/stop_profile"} {
		mux.HandleFunc("POST "+path, func(http.ResponseWriter, *http.Request) {
			b.mu.Lock()
			b.events = append(b.events, path)
			b.mu.Unlock()
		})
	}
	b.Server = httptest.NewServer(mux)
	t.Cleanup(b.Close)
	return b
}

func TestBenchProfileAndAbbreviatedFlags(t *testing.T) {
	benchNoKeys(t)
	rec := newBenchRecorder(t)
	// vLLM's parser takes a unique prefix of a flag (its profiling guide writes --random-input).
	code, _, errOut := benchRun(t, "--base-url", rec.URL, "--num-prom", "2", "--random-input", "8", "--random-output", "2", "--profile")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"/start_profile", "completion", "completion", "/stop_profile"}, rec.events)
	assert.Contains(t, errOut, "Profiler started")
	assert.Contains(t, errOut, "Profiler stopped")

	// vLLM starts the profiler after the initial test run and the warm-ups.
	rec.events = nil
	code, _, errOut = benchRun(t, "--base-url", rec.URL, "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "2",
		"--profile", "--num-warmups", "2", "--ready-check-timeout-sec", "5")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, []string{"completion", "completion", "completion", "/start_profile", "completion", "completion", "/stop_profile"}, rec.events)

	code, _, errOut = benchRun(t, "--base-url", rec.URL, "--random", "8")
	assert.Equal(t, 2, code, "an ambiguous prefix is refused: %s", errOut)
}

func TestBenchVLLMRequestFlagsReachTheServer(t *testing.T) {
	benchNoKeys(t)
	rec := newBenchRecorder(t)
	code, out, errOut := benchRun(t, "--base-url", rec.URL, "--num_prompts", "3", "--max_concurrency", "1",
		"--random-input-len", "8", "--random_output_len", "2", "--json",
		"--temperature", "0", "--top-p", "0.9", "--top_k", "20", "--min-p", "0.1", "--frequency-penalty", "0.5",
		"--presence-penalty", "0.25", "--repetition-penalty", "1.1", "--extra-body", `{"top_k": 5, "seed": 7}`,
		"--header", "x-a=1", "X-B= two", "--header", "x-c=3", "--request-id-prefix", "run-", "--logprobs", "2",
		"--model", "org/named", "--served-model-name", "served")
	require.Equal(t, 0, code, errOut)
	require.Len(t, rec.bodies, 3)
	ids := map[string]bool{}
	for i, body := range rec.bodies {
		assert.Equal(t, map[string]any{"temperature": 0.0, "top_p": 0.9, "top_k": 5.0, "min_p": 0.1, "frequency_penalty": 0.5,
			"presence_penalty": 0.25, "repetition_penalty": 1.1, "seed": 7.0, "logprobs": 2.0, "model": "served"},
			pick(body, "temperature", "top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "seed", "logprobs", "model"), "request %d", i)
		assert.Equal(t, 2.0, body["max_tokens"], "the standard fields stay")
		h := rec.headers[i]
		assert.Equal(t, "1", h.Get("X-A"))
		assert.Equal(t, "two", h.Get("X-B"), "several after one --header, as vLLM's nargs; trimmed, as vLLM trims")
		assert.Equal(t, "3", h.Get("X-C"))
		ids[h.Get("X-Request-Id")] = true
	}
	assert.Equal(t, map[string]bool{"run-0": true, "run-1": true, "run-2": true}, ids)
	require.NotEmpty(t, rec.models)
	assert.Equal(t, "1", rec.models[0].Get("X-A"), "--header goes to /v1/models too")
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, "org/named", doc["model_id"], "--model names the results, --served-model-name the requests")
	assert.Equal(t, 1.0, doc["max_concurrent_requests"])
}

func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func TestBenchSendsNoSamplingParametersUnlessGiven(t *testing.T) {
	benchNoKeys(t)
	rec := newBenchRecorder(t)
	code, _, errOut := benchRun(t, "--base-url", rec.URL, "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "2")
	require.Equal(t, 0, code, errOut)
	require.Len(t, rec.bodies, 2)
	for i, body := range rec.bodies {
		assert.Empty(t, pick(body, "temperature", "top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty", "logprobs"), "request %d: %v", i, body)
		// vLLM's completions request always sends no repetition penalty, so the model's
		// generation_config.json does not apply one.
		assert.Equal(t, 1.0, body["repetition_penalty"], "request %d", i)
		assert.Regexp(t, `^bench-[0-9a-f]{8}-[01]$`, rec.headers[i].Get("X-Request-Id"), "vLLM's default prefix")
	}
}

func TestBenchSimPeakConcurrencyIsExact(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, append(benchFastSim, "--max-concurrency", "4", "--num-prompts", "50", "--json",
		"--random-input-len", "64", "--random-output-len", "16")...)
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, 4.0, doc["max_concurrent_requests"], "the exact peak: never above --max-concurrency, and reached")
	lat, _ := doc["latencies"].([]any)
	queue, _ := doc["queue_times"].([]any)
	assert.Len(t, lat, 50, "vLLM keeps latencies without --save-detailed")
	assert.Len(t, queue, 50)
	assert.Positive(t, queue[49], "the last request waited for a slot: every request arrives at once at rate inf")
	assert.NotContains(t, doc, "ttfts", "the detailed arrays still need --save-detailed")
}

func TestBenchRefusesBackendsItCannotRunInOneLine(t *testing.T) {
	for _, b := range []string{"openai-audio", "vllm-rerank", "infinity-embeddings", "tgi"} {
		code, out, errOut := benchRun(t, "--sim", "--backend", b)
		assert.Equal(t, 2, code, b)
		assert.Empty(t, out)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
		assert.Contains(t, errOut, "--backend")
	}
}

func TestBenchRampUpSetsArrivalsAndResultKeys(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, "--sim", "--sim-clock", "virtual", "--num-prompts", "40", "--random-input-len", "32",
		"--random-output-len", "4", "--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "2", "--ramp-up-end-rps", "64", "--json")
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, "exponential", doc["ramp_up_strategy"])
	assert.Equal(t, 2.0, doc["ramp_up_start_rps"])
	assert.Equal(t, 64.0, doc["ramp_up_end_rps"])
	assert.Equal(t, "inf", doc["request_rate"])
	// The gaps average 1/rate: from 2 to 64 requests per second the 40 arrivals take about
	// (39/ln 32) * (1/2 - 1/64) = 5.4 s; at 2 per second throughout they would take 20.
	d, _ := doc["duration"].(float64)
	assert.Greater(t, d, 2.0)
	assert.Less(t, d, 12.0)

	for _, bad := range [][]string{
		{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"},
		{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "4", "--request-rate", "3"},
		{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "5", "--ramp-up-end-rps", "4"},
		{"--ramp-up-strategy", "steep", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "4"},
	} {
		code, _, errOut := benchRun(t, append([]string{"--sim"}, bad...)...)
		assert.Equal(t, 2, code, "%v: %s", bad, errOut)
	}
}

func TestBenchQueueMetricsNeedMaxConcurrency(t *testing.T) {
	benchNoKeys(t)
	args := []string{"--sim", "--sim-clock", "virtual", "--num-prompts", "12", "--random-input-len", "16", "--random-output-len", "4",
		"--percentile-metrics", "e2el,client_queue_time,e2el_including_client_queue", "--metric-percentiles", "50"}
	code, out, errOut := benchRun(t, append(args, "--max-concurrency", "2", "--request-rate", "100")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "---------------Client-side Queueing---------------\n")
	assert.Regexp(t, regexp.MustCompile(`(?m)^P50 Client Queue Time \(ms\): +[0-9.]+ +$`), out)
	assert.Regexp(t, regexp.MustCompile(`(?m)^Mean E2EL incl\. Client Queue \(ms\): +[0-9.]+ +$`), out)

	code, out, errOut = benchRun(t, args...)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "Client", "vLLM reports client queueing only with --max-concurrency")
}

func TestBenchReportsTheServersSpeculativeDecoding(t *testing.T) {
	benchNoKeys(t)
	args := append(benchFastSim, "--num-prompts", "10", "--random-input-len", "32", "--random-output-len", "16", "--json",
		"--speculative-config", `{"method":"ngram","num_speculative_tokens":3}`)
	code, out, errOut := benchRun(t, args...)
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	drafts, _ := doc["spec_decode_num_drafts"].(float64)
	draftTokens, _ := doc["spec_decode_draft_tokens"].(float64)
	accepted, _ := doc["spec_decode_accepted_tokens"].(float64)
	require.Positive(t, drafts, "the drafting server's /metrics, before and after the run: %v", doc)
	assert.LessOrEqual(t, draftTokens, 3*drafts, "at most 3 draft tokens a draft")
	assert.InDelta(t, 100*accepted/draftTokens, doc["spec_decode_acceptance_rate"], 1e-9)
	assert.InDelta(t, 1+accepted/drafts, doc["spec_decode_acceptance_length"], 1e-9)
	perPos, _ := doc["spec_decode_per_position_acceptance_rates"].([]any)
	assert.Len(t, perPos, 3)

	code, out, errOut = benchRun(t, append(benchFastSim, "--num-prompts", "10", "--random-input-len", "32", "--random-output-len", "16",
		"--speculative-config", `{"method":"ngram","num_speculative_tokens":3}`)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "---------------Speculative Decoding---------------\n")
	assert.Regexp(t, `(?m)^  Position 2: +[0-9.]+ +$`, out)

	code, out, errOut = benchRun(t, append(benchFastSim, "--num-prompts", "4", "--random-input-len", "32", "--random-output-len", "4")...)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "Speculative", "a server that does not draft has no such section")
}

func TestBenchProbesBesideTheLoad(t *testing.T) {
	benchNoKeys(t)
	rec := newBenchRecorder(t)
	code, out, errOut := benchRun(t, "--base-url", rec.URL, "--num-prompts", "4", "--max-concurrency", "1", "--random-input-len", "8",
		"--random-output-len", "2", "--probe-request-rate", "1000", "--header", "x-a=1", "--json")
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	completed, _ := doc["probe_completed"].(float64)
	require.GreaterOrEqual(t, completed, 1.0, "the first probe goes at the start: %v", doc)
	assert.Equal(t, 0.0, doc["probe_failed"])
	assert.Positive(t, doc["probe_max_e2el_ms"])
	assert.Equal(t, 4.0, doc["completed"], "probes are not the run's requests")
	probes := 0
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, body := range rec.bodies {
		if body["prompt"] == "Hi" {
			probes++
			assert.Equal(t, 1.0, body["max_tokens"])
			assert.Empty(t, rec.headers[i].Get("X-Request-Id"), "a probe has no request id, as vLLM's")
			assert.Equal(t, "1", rec.headers[i].Get("X-A"), "but the run's headers")
		}
	}
	assert.Equal(t, int(completed), probes)
}

func TestBenchAppendResultSavesAlone(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	for range 2 {
		code, _, errOut := benchRun(t, "--sim", "--sim-clock", "virtual", "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "2",
			"--append-result", "--result-dir", dir, "--result-filename", "r.json")
		require.Equal(t, 0, code, "vLLM saves with --append-result alone: %s", errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(strings.TrimSpace(string(b)), "\n")+1, "one JSON line a run: %s", b)
}
