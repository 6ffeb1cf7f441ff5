package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vLLM's --chat-template-kwargs runs here (nothing renders a template on the client); a value
// vLLM could not unpack is refused in a line.
func TestBenchTakesChatTemplateKwargs(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, append(benchVirtual, "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "2",
		"--chat-template-kwargs", `{"enable_thinking": false}`)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Serving Benchmark Result")
	for _, bad := range []string{"thinking", "[1]", "null"} {
		code, out, errOut = benchRun(t, append(benchVirtual, "--chat-template-kwargs", bad)...)
		assert.Equal(t, 2, code, bad)
		assert.Empty(t, out)
		assert.Contains(t, benchErrorLine(t, errOut), "--chat-template-kwargs: want a JSON object", bad)
	}
}

// vLLM refuses --no-self-timed, as --self-timed, outside timed_trace.
func TestBenchNoSelfTimedGoesWithTimedTrace(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, append(benchVirtual, "--no-self-timed")...)
	assert.Equal(t, 2, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, benchErrorLine(t, errOut), "--no-self-timed goes with --dataset-name timed_trace")
}

// vLLM hands --metric-percentiles to numpy, which takes 0 (the minimum) and 100 (the maximum).
func TestBenchTakesPercentilesZeroAndHundred(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, append(benchVirtual, "--num-prompts", "4", "--random-input-len", "8", "--random-output-len", "4",
		"--metric-percentiles", "0,100", "--percentile-metrics", "e2el")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "P0 E2EL (ms):")
	assert.Contains(t, out, "P100 E2EL (ms):")
}

// Without --model, vLLM sends the first model's id and names the results by its root (the
// model a --served-model-name server serves under another name).
func TestBenchNamesResultsByTheFirstModelsRoot(t *testing.T) {
	benchNoKeys(t)
	rec := newBenchRecorder(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen","object":"model","root":"Qwen/Qwen2.5-0.5B-Instruct","max_model_len":4096}]}`)
	})
	mux.Handle("/", rec.Config.Handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	code, out, errOut := benchRun(t, "--base-url", srv.URL, "--num-prompts", "2", "--random-input-len", "8", "--random-output-len", "2", "--json")
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, "Qwen/Qwen2.5-0.5B-Instruct", doc["model_id"])
	assert.Equal(t, "Qwen/Qwen2.5-0.5B-Instruct", doc["tokenizer_id"])
	require.Len(t, rec.bodies, 2)
	assert.Equal(t, "qwen", rec.bodies[0]["model"], "the requests name the served id")
}

// A ramp-up's result holds vLLM's rps_change_events: from the start rate, each whole rate once.
func TestBenchRampUpWritesRPSChangeEvents(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, "--sim", "--sim-clock", "virtual", "--num-prompts", "40", "--random-input-len", "32",
		"--random-output-len", "4", "--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "2", "--ramp-up-end-rps", "64", "--json")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Events []struct {
			RPS       int    `json:"rps"`
			Timestamp string `json:"timestamp"`
		} `json:"rps_change_events"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Len(t, doc.Events, 63, "2 to 64, each once")
	for i, e := range doc.Events {
		assert.Equal(t, 2+i, e.RPS)
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?$`, e.Timestamp)
		if i > 0 {
			assert.GreaterOrEqual(t, e.Timestamp, doc.Events[i-1].Timestamp)
		}
	}
}
