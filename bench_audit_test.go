package main

import (
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
