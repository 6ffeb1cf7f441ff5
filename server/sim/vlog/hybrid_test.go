package vlog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

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
// from the engine core, worded as vLLM words them, and runs on the V1 model runner until 0.29.
func TestHybridStartupLines(t *testing.T) {
	ls := startupLines(t, sim.Config{Model: "Qwen/Qwen3.5-0.8B", GPU: "RTX-4060-8GB", MaxModelLen: 32768, VLLMVersion: "0.28.0"})
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
	loading := grep(ls, "Model loading took")[0]
	require.Regexp(t, `Model loading took [0-9.]+ GiB and [0-9.]+ seconds$`, loading)
	var weights float64
	_, err := fmt.Sscanf(loading[strings.Index(loading, "took ")+5:], "%f GiB", &weights)
	require.NoError(t, err)
	assert.InEpsilon(t, 17.2217, weights, 0.005, "the fixture's rank, within 0.5%: the experts counted with their padding")
	assert.Empty(t, grep(ls, "CUDA graph memory profiling"), "before 0.21")
	assert.Len(t, grep(ls, "quantization=mxfp4"), 1)
	kv := grep(ls, "GPU KV cache size: ")
	require.Len(t, kv, 4, "one per worker, as the fixture logs it")
	assert.Regexp(t, `GPU KV cache size: 2,6[34]\d,\d{3} tokens$`, kv[0], "the fixture logged 2,640,144")
	assert.Regexp(t, `Maximum concurrency for 16,384 tokens per request: 28[45]\.\d\dx$`, grep(ls, "Maximum concurrency")[0], "the fixture logged 284.25x")
}

// TestSpecDecodingLine: after the stats line of an interval with drafts comes vLLM's
// "SpecDecoding metrics" line, with the interval's totals and per-position rates.
func TestSpecDecodingLine(t *testing.T) {
	clk := newClock()
	t0 := time.Date(2026, 7, 24, 10, 15, 53, 0, time.UTC)
	clk.set(t0)
	var out bytes.Buffer
	l := New(&out, nil, clk.now, apiPID, enginePID)
	st := NewStats(l, 0)
	r := &sim.StepResult{Running: 4, Outputs: make([]sim.Output, 4), DecodeTokens: 16,
		SpecDrafts: 400, SpecDraftTokens: 1200, SpecAccepted: 720, SpecAcceptedPerPos: []int{320, 240, 160}}
	st.Observe(r)
	clk.set(t0.Add(10 * time.Second))
	st.Tick(t0.Add(10 * time.Second))
	ls := lines(out.String())
	require.Len(t, ls, 2)
	assert.Contains(t, ls[0], "Engine 000: Avg prompt throughput")
	assert.Equal(t, "(APIServer pid=4127) INFO 07-24 10:16:03 [metrics.py:97] SpecDecoding metrics: Mean acceptance length: 2.80, Accepted throughput: 72.00 tokens/s, Drafted throughput: 120.00 tokens/s, Accepted: 720 tokens, Drafted: 1200 tokens, Per-position acceptance rate: 0.800, 0.600, 0.400, Avg Draft acceptance rate: 60.0%", ls[1])

	// Without drafts in the next interval, no spec line.
	st.Observe(&sim.StepResult{Running: 1, Outputs: make([]sim.Output, 1), DecodeTokens: 1})
	clk.set(t0.Add(20 * time.Second))
	before := out.Len()
	st.Tick(t0.Add(20 * time.Second))
	assert.NotContains(t, out.String()[before:], "SpecDecoding")
}

// TestCompileLinesByRelease: torch.compile's lines in each era's wording, as public logs print
// them: "for dynamic shape" and "torch.compile takes" until 0.14 (a 0.10.1.1 restart loads the
// graph, a 0.11 first boot compiles it), the compile range from 0.14, "took" and the AOT artifact
// from 0.19; 0.10's before 0.10, as the rest of the log; nothing with --enforce-eager.
func TestCompileLinesByRelease(t *testing.T) {
	cfg := sim.Config{Model: "Qwen/Qwen2-7B-Instruct", GPU: "A100-SXM-80GB", MaxModelLen: 16384}
	for _, c := range []struct {
		version, cache string
		want, absent   []string
	}{
		{"0.10.1.1", sim.CompileWarm, []string{"Directly load the compiled graph(s) for dynamic shape from the cache, took", "torch.compile takes"}, []string{"AOT", "Compiling"}},
		{"0.11.0", sim.CompileCold, []string{"Cache the graph for dynamic shape for later use", "Compiling a graph for dynamic shape takes", "torch.compile takes"}, []string{"AOT", "Directly load"}},
		{"0.14.1", sim.CompileWarm, []string{"Directly load the compiled graph(s) for compile range (1, 2048) from the cache, took", "torch.compile takes"}, []string{"AOT", "dynamic shape"}},
		{"0.19.0", sim.CompileCold, []string{"Cache the graph of compile range (1, 2048) for later use", "saved AOT compiled function to", "torch.compile took"}, []string{"torch.compile takes", "dynamic shape"}},
		{"0.26.0", sim.CompileWarm, []string{"Directly load AOT compilation from path", "torch.compile took"}, []string{"Cache the graph", "Compiling"}},
	} {
		cfg.VLLMVersion, cfg.CompileCache = c.version, c.cache
		ls := startupLines(t, cfg)
		require.Len(t, grep(ls, "Using cache directory: /root/.cache/vllm/torch_compile_cache/"), 1, c.version)
		require.Len(t, grep(ls, "Dynamo bytecode transform time: "), 1, c.version)
		for _, w := range c.want {
			assert.Len(t, grep(ls, w), 1, "%s %s: %q", c.version, c.cache, w)
		}
		for _, a := range c.absent {
			assert.Empty(t, grep(ls, a), "%s %s: %q", c.version, c.cache, a)
		}
	}
	cfg.VLLMVersion, cfg.CompileCache = "0.9.2", sim.CompileWarm
	assert.Len(t, grep(startupLines(t, cfg), "for dynamic shape from the cache"), 1, "0.10's lines before 0.10")
	cfg.VLLMVersion, cfg.EnforceEager = "0.26.0", true
	assert.Empty(t, grep(startupLines(t, cfg), "torch.compile"), "--enforce-eager compiles nothing")
}

// The engine config names the drafter as SpeculativeConfig.__repr__ does: the target model for
// MTP, None for n-gram lookup.
func TestSpeculativeConfigRepr(t *testing.T) {
	for _, tc := range []struct {
		sp   sim.SpeculativeConfig
		want string
	}{
		{sim.SpeculativeConfig{Method: "mtp", NumSpeculativeTokens: 1}, "speculative_config=SpeculativeConfig(method='mtp', model='zai-org/GLM-4.7-FP8', num_spec_tokens=1)"},
		{sim.SpeculativeConfig{Method: "ngram", NumSpeculativeTokens: 3}, "speculative_config=SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3)"},
	} {
		sp := tc.sp
		ls := startupLines(t, sim.Config{Model: "zai-org/GLM-4.7-FP8", GPU: "H200", TensorParallelSize: 4, Speculative: &sp})
		found := grep(ls, "speculative_config=")
		require.Len(t, found, 1)
		assert.Contains(t, found[0], tc.want)
	}
}
