package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// multiTurn runs synthetic conversations through `vllmtop bench --sim --sim-clock virtual
// --json` and returns the result document. Each conversation opens with a 2,048-token
// document of its own and then asks short questions: on an L4 with a 7B model prefill is
// most of a turn's TTFT, so the prefix cache shows plainly.
func multiTurn(t *testing.T, prefixCaching string) map[string]any {
	t.Helper()
	code, out, errOut := benchRun(t, "--sim", "--sim-clock", "virtual", "--sim-gpu", "L4", "--model", "Qwen/Qwen2.5-7B-Instruct",
		"--max-model-len", "8192", prefixCaching, "--endpoint", "/v1/chat/completions", "--multi-turn", "--num-conversations", "12",
		"--num-turns", "4", "--max-concurrency", "2", "--random-input-len", "32", "--random-output-len", "16",
		"--turn-prefix-len", "2048", "--think-time", "1s", "--json")
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc
}

func TestBenchMultiTurnShowsThePrefixCache(t *testing.T) {
	benchNoKeys(t)
	on, off := multiTurn(t, "--enable-prefix-caching"), multiTurn(t, "--no-enable-prefix-caching")
	for _, doc := range []map[string]any{on, off} {
		assert.EqualValues(t, 12, doc["turn1_completed"])
		assert.EqualValues(t, 36, doc["later_turns_completed"])
		assert.EqualValues(t, 48, doc["completed"])
		assert.Greater(t, doc["later_turns_mean_prompt_tokens"], doc["turn1_mean_prompt_tokens"], "later turns carry the history")
	}
	first, later := on["turn1_median_ttft_ms"].(float64), on["later_turns_median_ttft_ms"].(float64)
	assert.Less(t, later, first/3, "prefix caching on: later turns find their history cached")
	first, later = off["turn1_median_ttft_ms"].(float64), off["later_turns_median_ttft_ms"].(float64)
	// Prefix caching off: every turn computes its prompt, so no turn comes near the cached
	// third. Later prompts are ~6% longer; the two first turns start together and share their
	// prefill steps, where later turns drift apart and mostly meet the other's decodes.
	assert.Greater(t, later, 0.8*first, "prefix caching off: later turns gain nothing from a cache")
	assert.Less(t, later, 1.25*first, "prefix caching off: later turns cost about what the first does")
}

func TestBenchMultiTurnTable(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, "--sim", "--sim-clock", "virtual", "--multi-turn", "--num-conversations", "3", "--num-turns", "2",
		"--random-input-len", "64", "--random-output-len", "8")
	require.Equal(t, 0, code, errOut)
	i := strings.Index(out, "=================== Multi-turn ===================")
	require.Positive(t, i, "the block follows vLLM's table:\n%s", out)
	assert.Contains(t, out[:i], "Serving Benchmark Result")
	assert.Regexp(t, `turn 1 \(ms\) +\d+\.\d\d +\d+\.\d\d +\d+ +3\n`, out[i:])
	assert.Regexp(t, `turns 2\+ \(ms\) +\d+\.\d\d +\d+\.\d\d +\d+ +3\n`, out[i:])
	assert.Contains(t, errOut, "3 conversations of 2 turns")
}

func TestBenchReplaysTraces(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, "--sim", "--sim-clock", "virtual", "--dataset-name", "mooncake", "--dataset-path", "testdata/mooncake-sample.jsonl",
		"--trace-speedup", "2", "--max-model-len", "8192", "--json")
	require.Equal(t, 0, code, errOut)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.EqualValues(t, 10, doc["completed"])
	assert.EqualValues(t, 40+12+64+3+180+1+90+25+8+16, doc["total_output_tokens"], "the trace's output lengths")
	assert.Contains(t, errOut, "10 requests at their timestamps, 2x speed")

	// BurstGPT as vLLM reads it: GPT-4 rows with a response; with --request-rate, sampled.
	code, out, errOut = benchRun(t, "--sim", "--sim-clock", "virtual", "--dataset-name", "burstgpt", "--dataset-path", "testdata/burstgpt-sample.csv", "--json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	gpt4 := 0
	for _, line := range strings.Split(readFile(t, "testdata/burstgpt-sample.csv"), "\n")[1:] {
		if f := strings.Split(line, ","); len(f) == 6 && f[1] == "GPT-4" && f[3] != "0" {
			gpt4++
		}
	}
	assert.EqualValues(t, gpt4, doc["completed"])
	code, _, errOut = benchRun(t, "--sim", "--sim-clock", "virtual", "--dataset-name", "burstgpt", "--dataset-path", "testdata/burstgpt-sample.csv",
		"--request-rate", "5", "--num-prompts", "6")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "sampled at the request rate")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestBenchTraceErrors(t *testing.T) {
	benchNoKeys(t)
	code, _, errOut := benchRun(t, "--sim", "--sim-clock", "virtual", "--dataset-name", "mooncake", "--dataset-path", "testdata/mooncake-malformed.jsonl")
	assert.Equal(t, 2, code)
	assert.Regexp(t, `testdata/mooncake-malformed\.jsonl:\d+: `, benchErrorLine(t, errOut), "a malformed line names file and line")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %s", errOut)

	code, _, errOut = benchRun(t, "--sim", "--sim-clock", "virtual", "--dataset-name", "mooncake", "--dataset-path", "testdata/mooncake-malformed.jsonl",
		"--trace-skip-malformed", "--max-model-len", "8192")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `skipped \d+ malformed lines of testdata/mooncake-malformed.jsonl`, errOut)

	big := filepath.Join(t.TempDir(), "t.jsonl")
	var b strings.Builder
	for i := range 3 {
		b.WriteString(`{"timestamp": ` + strconv.Itoa(i) + `, "input_length": 10, "output_length": 2}` + "\n")
	}
	require.NoError(t, os.WriteFile(big, []byte(b.String()), 0o600))
	for _, v := range []string{"-1", "0"} { // 0 given is a mistake, not the default's 1x
		code, _, errOut = benchRun(t, "--sim", "--sim-clock", "virtual", "--dataset-name", "mooncake", "--dataset-path", big, "--trace-speedup", v)
		assert.Equal(t, 2, code, v)
		assert.Contains(t, errOut, "--trace-speedup must be a number from 0.001", v)
	}
	code, _, errOut = benchRun(t, "--sim", "--sim-clock", "virtual", "--think-time", "1s")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--think-time goes with --multi-turn")
	// A replay's first request is part of what it replays: no warm-ups, no test request.
	for _, flag := range []string{"--num-warmups", "--ready-check-timeout-sec"} {
		code, _, errOut = benchRun(t, "--sim", "--sim-clock", "virtual", "--multi-turn", "--num-conversations", "2", flag, "5")
		assert.Equal(t, 2, code, flag)
		assert.Contains(t, errOut, flag+" does not go with a replay", flag)
	}
}
