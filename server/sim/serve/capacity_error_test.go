package serve

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPrintCapacityErrorIsOneLineOnStderr(t *testing.T) {
	for _, args := range [][]string{
		{"--print-capacity", "--sim-profiles", filepath.Join(t.TempDir(), "missing.json")},
		{"--print-capacity", "--sim-gpu", "nope"},
		{"--print-capacity", "--gpu-memory-utilization", "1.5"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, &out, &errb, emptyEnv)
		assert.Equal(t, 2, code, "%q", args)
		assert.Empty(t, out.String(), "%q: nothing on stdout, where the report goes", args)
		assert.True(t, strings.HasPrefix(errb.String(), "vllmtop sim: error: "), "%q: %q", args, errb.String())
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%q: one line", args)
	}
}

// A --quantization vLLM's engine config rejects ends the simulator as vLLM ends: one line with
// vLLM's message and exit status 1, with or without --print-capacity.
func TestQuantizationRefusalExitsOne(t *testing.T) {
	for _, args := range [][]string{
		{"Qwen/Qwen3-8B", "--sim-gpu", "L4", "--quantization", "awq", "--print-capacity"},
		{"Qwen/Qwen3-8B", "--sim-gpu", "L4", "--quantization", "gptq"},
		{"openai/gpt-oss-20b", "--sim-gpu", "H100", "--quantization", "fp8", "--print-capacity"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, &out, &errb, emptyEnv)
		assert.Equal(t, 1, code, "%q", args)
		assert.Empty(t, out.String(), "%q", args)
		assert.Equal(t, 1, strings.Count(errb.String(), "\n"), "%q: one line: %q", args, errb.String())
		assert.Contains(t, errb.String(), "vllmtop sim: error: ", "%q", args)
	}
}
