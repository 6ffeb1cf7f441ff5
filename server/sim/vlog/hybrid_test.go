package vlog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
)

func startupLines(t *testing.T, cfg sim.Config) []string {
	t.Helper()
	s, err := sim.Resolve(cfg, nil)
	require.NoError(t, err)
	var out bytes.Buffer
	New(&out, &out, newClock().now, apiPID, enginePID).Startup(s, nil, 10)
	return lines(out.String())
}

func grep(ls []string, sub string) []string {
	var out []string
	for _, l := range ls {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// TestHybridStartupLines: a Qwen3.5 hybrid prints the block-size alignment and padding lines
// from the engine core, worded as vLLM words them, and runs on the V1 model runner.
func TestHybridStartupLines(t *testing.T) {
	ls := startupLines(t, sim.Config{Model: "Qwen/Qwen3.5-0.8B", GPU: "RTX-4060-8GB", MaxModelLen: 32768})
	block := grep(ls, "Setting attention block size")
	require.Len(t, block, 1)
	assert.True(t, strings.HasSuffix(block[0], "[interface.py:911] Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size."), block[0])
	assert.Contains(t, block[0], "(EngineCore pid=")
	pad := grep(ls, "Padding mamba page size")
	require.Len(t, pad, 1)
	assert.True(t, strings.HasSuffix(pad[0], "Padding mamba page size by 2.64% to ensure that mamba page size and attention page size are exactly equal."), pad[0])
	assert.Empty(t, grep(ls, "Using V2 Model Runner"), "hybrids use the V1 model runner")
	require.Len(t, grep(ls, "Model loading took"), 1)
	assert.Regexp(t, `Model loading took [0-9.]+ GiB memory and [0-9.]+ seconds$`, grep(ls, "Model loading took")[0])
	assert.Len(t, grep(ls, "Estimated CUDA graph memory: "), 1, "the V1 runner's graph estimate comes out of the KV budget from 0.21")
	assert.Len(t, grep(ls, "CUDA graph memory profiling is enabled (default since v0.21.0)."), 1)
}

// TestGptOssStartupLines: the gpt-oss fixture's flags on its release print its capacity lines.
func TestGptOssStartupLines(t *testing.T) {
	ls := startupLines(t, sim.Config{Model: "openai/gpt-oss-120b", GPU: "A100-SXM-80GB", TensorParallelSize: 4,
		GPUMemoryUtilization: 0.8, MaxModelLen: 16384, VLLMVersion: "0.10.1.1"})
	assert.Len(t, grep(ls, "version 0.10.1.1"), 1)
	assert.Empty(t, grep(ls, "Setting attention block size"), "no mamba layers, no alignment")
	assert.Regexp(t, `Model loading took 17\.2217 GiB and [0-9.]+ seconds$`, grep(ls, "Model loading took")[0])
	assert.Empty(t, grep(ls, "CUDA graph memory profiling"), "before 0.21")
	assert.Len(t, grep(ls, "quantization=mxfp4"), 1)
	kv := grep(ls, "GPU KV cache size: ")
	require.Len(t, kv, 1)
	assert.Regexp(t, `GPU KV cache size: 2,6[34]\d,\d{3} tokens$`, kv[0], "the fixture logged 2,640,144")
	assert.Regexp(t, `Maximum concurrency for 16,384 tokens per request: 28[45]\.\d\dx$`, grep(ls, "Maximum concurrency")[0], "the fixture logged 284.25x")
}
