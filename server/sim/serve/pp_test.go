package serve

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPipelineParallelFlags(t *testing.T) {
	for _, args := range [][]string{{"--pipeline-parallel-size", "2"}, {"-pp", "2"}, {"-pp=2"}} {
		o, err := ParseArgs(args, noEnv)
		require.NoError(t, err, args)
		assert.Equal(t, 2, o.Engine.PipelineParallelSize, args)
		assert.Contains(t, o.NonDefault, NamedValue{"pipeline_parallel_size", int64(2)})
	}
	_, err := ParseArgs([]string{"-pp", "0"}, noEnv)
	var cfg *ConfigError
	assert.ErrorAs(t, err, &cfg)
	env := func(k string) string {
		if k == "VLLM_PP_LAYER_PARTITION" {
			return "10,18"
		}
		return ""
	}
	o, err := ParseArgs([]string{"-pp", "2"}, env)
	require.NoError(t, err)
	assert.Equal(t, "10,18", o.Engine.PPLayerPartition)
}

// TestPipelineParallelStartupLog: the engine config names the pipeline size, each stage's
// first worker reports its own KV budget, and the cache line comes once (per worker before 0.27,
// which the vlog tests check).
func TestPipelineParallelStartupLog(t *testing.T) {
	var out, errOut syncBuffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	inst, err := Start(context.Background(), []string{"Qwen/Qwen3-0.6B", "-pp", "2", "-tp", "2", "--sim-startup-seconds", "0"}, noEnv,
		WithLogs(&out, &errOut), WithListener(ln), WithGrace(1))
	require.NoError(t, err)
	require.Eventually(t, inst.Ready, 10*time.Second, time.Millisecond)
	require.NoError(t, inst.Stop())
	log := out.String()
	assert.Contains(t, log, "'pipeline_parallel_size': 2")
	assert.Regexp(t, `Initializing a V1 LLM engine .*tensor_parallel_size=2, pipeline_parallel_size=2,`, log)
	assert.Regexp(t, `(?m)^\(Worker_PP0_TP0 pid=\d+\) INFO .*Available KV cache memory: `, log)
	assert.Regexp(t, `(?m)^\(Worker_PP1_TP0 pid=\d+\) INFO .*Available KV cache memory: `, log)
	assert.Equal(t, 1, bytes.Count([]byte(log), []byte("GPU KV cache size: ")), "one line for the whole engine")
}

func TestPipelineParallelPrintCapacity(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "-pp", "2", "-tp", "2", "--print-capacity"}, &out, &errb, emptyEnv)
	require.Equal(t, 0, code, errb.String())
	s := out.String()
	assert.Contains(t, s, "Parallel layout: world size 4 = --tensor-parallel-size 2 x --pipeline-parallel-size 2")
	assert.Contains(t, s, "stage 0: layers 0-15 (16, embedding)")
	assert.Contains(t, s, "stage 1: layers 16-31 (16, LM head and sampler)")
	assert.Contains(t, s, "the KV cache takes the fewest blocks of any stage")

	// Refused as given: the layout still says which stage ran short.
	out.Reset()
	code = Main(context.Background(), []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "-pp", "2", "--max-model-len", "32768",
		"--gpu-memory-utilization", "0.4", "--print-capacity"}, &out, &errb, emptyEnv)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "stage 1: layers 16-31")
	assert.True(t, strings.Contains(out.String(), "REFUSED"))
}

// TestPipelineWithDataParallel: each data-parallel engine runs the same pipeline, so its
// cache is the one-engine pipeline's.
func TestPipelineWithDataParallel(t *testing.T) {
	s := startServer(t, "-dp", "2", "-pp", "2", "--max-model-len", "4096")
	require.Len(t, s.drvs, 2)
	one := startServer(t, "-pp", "2", "--max-model-len", "4096")
	assert.Equal(t, one.drv.engine.BlocksTotal(), s.drvs[1].engine.BlocksTotal())
	flat := startServer(t, "--max-model-len", "4096")
	assert.Greater(t, one.drv.engine.BlocksTotal(), flat.drv.engine.BlocksTotal(), "half the layers a GPU: more blocks")
}
