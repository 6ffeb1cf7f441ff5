package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --lora-modules: each measured request names one adapter as its model, in turn or at random
// (the same draw for the same --seed), as vllm bench serve assigns them.
func TestBenchLoRAModules(t *testing.T) {
	benchNoKeys(t)
	models := func(args ...string) []string {
		rec := newBenchRecorder(t)
		code, _, errOut := benchRun(t, append([]string{"--base-url", rec.URL, "--num-prompts", "9", "--random-input-len", "8",
			"--random-output-len", "2"}, args...)...)
		require.Equal(t, 0, code, errOut)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var got []string
		for _, b := range rec.bodies {
			m, _ := b["model"].(string)
			got = append(got, m)
		}
		return got
	}
	rr := models("--lora-modules", "a", "b", "c", "--lora-assignment", "round-robin", "--max-concurrency", "1")
	assert.Equal(t, []string{"a", "b", "c", "a", "b", "c", "a", "b", "c"}, rr)

	count := func(ms []string) map[string]int {
		c := map[string]int{}
		for _, m := range ms {
			c[m]++
		}
		return c
	}
	r1 := count(models("--lora-modules", "a", "b", "c", "--seed", "7"))
	r2 := count(models("--lora-modules", "a", "b", "c", "--seed", "7"))
	assert.Equal(t, r1, r2, "the same seed, the same adapters")
	assert.Equal(t, 9, r1["a"]+r1["b"]+r1["c"], "every request names an adapter: %v", r1)

	code, _, errOut := benchRun(t, "--base-url", "http://127.0.0.1:1", "--lora-modules", "a", "--lora-assignment", "sticky")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--lora-assignment "sticky": want random or round-robin`)
}

// Against the simulator serving two adapters: every request succeeds under its adapter's name.
func TestBenchLoRAOnTheSimulator(t *testing.T) {
	benchNoKeys(t)
	code, out, errOut := benchRun(t, append(benchFastSim, "--num-prompts", "6", "--random-input-len", "32", "--random-output-len", "4",
		"--lora-modules", "sql", "chat", "--lora-assignment", "round-robin", "--",
		"--enable-lora", "--lora-modules", "sql=/adapters/sql", "chat=/adapters/chat")...)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "0", benchTableValue(t, out, "Failed requests:"), errOut)
}
