package serve

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/server/sim"
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

// TestFlashInferSamplerEnv: VLLM_USE_FLASHINFER_SAMPLER is read as vLLM reads it, bool(int(x)).
// At 0.11.0, where FlashInfer is the default, 0 (as an install without FlashInfer) runs the
// sort-based sampler, 24 B an entry more: the KV cache shrinks by that much.
func TestFlashInferSamplerEnv(t *testing.T) {
	args := []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "H100", "--sim-vllm-version", "0.11.0", "--max-model-len", "4096"}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "VLLM_USE_FLASHINFER_SAMPLER" {
				return v
			}
			return ""
		}
	}
	on, err := ParseArgs(args, emptyEnv)
	require.NoError(t, err)
	assert.Equal(t, sim.SamplerEnvUnset, on.Engine.FlashInferSampler)
	off, err := ParseArgs(args, env("0"))
	require.NoError(t, err)
	assert.Equal(t, sim.SamplerEnvOff, off.Engine.FlashInferSampler)

	withFI, err := sim.Resolve(on.Engine, nil)
	require.NoError(t, err)
	without, err := sim.Resolve(off.Engine, nil)
	require.NoError(t, err)
	entries := int64(withFI.MaxNumSeqs) * 128256
	assert.Equal(t, 24*entries, withFI.Capacity.AvailableKVBytes-without.Capacity.AvailableKVBytes)

	_, err = ParseArgs(args, env("yes"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid literal for int()")

	// An install without FlashInfer falls back as the variable at 0 does.
	absent, err := ParseArgs(append(args, "--sim-flashinfer", "absent"), emptyEnv)
	require.NoError(t, err)
	noFI, err := sim.Resolve(absent.Engine, nil)
	require.NoError(t, err)
	assert.Equal(t, without.Capacity.AvailableKVBytes, noFI.Capacity.AvailableKVBytes)
	bad, err := ParseArgs(append(args, "--sim-flashinfer", "maybe"), emptyEnv)
	require.NoError(t, err)
	_, err = sim.Resolve(bad.Engine, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--sim-flashinfer must be installed or absent")
}
