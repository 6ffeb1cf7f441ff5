package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim"
)

// TestFailedStartupLogsWhatCameBefore: a start-up vLLM refuses prints its start-up lines up to
// the point of failure before the traceback, as vLLM does, so a supervisor reading the log
// learns the weights and the memory left before it learns why the engine died.
func TestFailedStartupLogsWhatCameBefore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		kind      sim.StartupKind
		loaded    bool // "Model loading took" precedes the failure
		available bool // "Available KV cache memory" precedes it
	}{
		{"no room for a max-model-len request", []string{"--model", "openai/gpt-oss-120b", "--sim-gpu", "H100-SXM-80GB", "--sim-vllm-version", "0.11.0",
			"--gpu-memory-utilization", "0.95", "--max-num-batched-tokens", "1024", "--sim-flashinfer", "absent"}, sim.MaxModelLenTooLarge, true, true},
		{"weights do not fit", []string{"--model", "Qwen/Qwen2.5-14B-Instruct", "--sim-gpu", "A10G"}, sim.LoadOOM, false, false},
		{"weights do not fit the V1 runner", []string{"--model", "Qwen/Qwen2.5-14B-Instruct", "--sim-gpu", "A10G", "--sim-vllm-version", "0.20.0"}, sim.LoadOOM, false, false},
		{"other processes hold the GPU", []string{"--model", "Qwen/Qwen3-0.6B", "--sim-gpu", "H100", "--sim-gpu-used-gib", "20"}, sim.FreeMemoryTooLow, false, false},
		{"bfloat16 on a T4", []string{"--model", "Qwen/Qwen3-0.6B", "--sim-gpu", "T4", "--dtype", "bfloat16"}, sim.DTypeUnsupported, false, false},
		{"fp8_e5m2 beside FP8 weights", []string{"--model", "Qwen/Qwen2.5-7B-Instruct", "--sim-gpu", "L4", "--max-model-len", "4096",
			"--quantization", "fp8", "--kv-cache-dtype", "fp8_e5m2"}, sim.KVDTypeRefused, false, false},
		{"an fp8 cache on a T4", []string{"--model", "Qwen/Qwen3-0.6B", "--sim-gpu", "T4", "--kv-cache-dtype", "fp8"}, sim.KVDTypeUnsupported, false, false},
		{"FlashAttention asked for on a T4", []string{"--model", "Qwen/Qwen3-0.6B", "--sim-gpu", "T4", "--attention-backend", "FLASH_ATTN"}, sim.AttentionBackendInvalid, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut syncBuffer
			inst, err := Start(context.Background(), append(tc.args, "--sim-startup-seconds", "0"), noEnv, WithLogs(&out, &errOut))
			if inst != nil {
				require.NoError(t, inst.Stop())
			}
			var se *StartupError
			require.True(t, errors.As(err, &se), "%v", err)
			require.Equal(t, tc.kind, se.Kind)
			require.NotNil(t, se.Setup)

			var order []string
			var weights float64
			for _, line := range strings.Split(out.String(), "\n") {
				ev, ok := server.ParseLogLine(line)
				if !ok {
					continue
				}
				switch e := ev.(type) {
				case server.LoadStarted:
					order = append(order, "load")
				case server.ModelLoaded:
					order = append(order, "loaded")
					weights = e.GiB
				case server.KVCacheMemory:
					order = append(order, "available")
				case server.KVCacheSize:
					order = append(order, "size")
				case server.Fatal:
					order = append(order, "fatal")
				default:
					order = append(order, fmt.Sprintf("%T", e))
				}
			}
			assert.Contains(t, out.String(), "non-default args: ")
			assert.Contains(t, out.String(), "Initializing a V1 LLM engine")
			require.NotEmpty(t, order)
			assert.Equal(t, "fatal", order[len(order)-1], "the failure is the last event: %v", order)
			assert.NotContains(t, order, "size", "a failed start-up sizes no cache")
			assert.Equal(t, tc.loaded, contains(order, "loaded"), "%v", order)
			assert.Equal(t, tc.available, contains(order, "available"), "%v", order)
			deviceCheck := tc.kind == sim.FreeMemoryTooLow || tc.kind == sim.DTypeUnsupported
			assert.Equal(t, !deviceCheck, contains(order, "load"), "the model starts loading unless the device check fails: %v", order)
			if tc.kind == sim.LoadOOM {
				// torch's error ends the traceback; the V1 model runner logs its advice first.
				log := out.String()
				assert.Contains(t, log, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ")
				advice := strings.Index(log, "] Failed to load model - not enough GPU memory.")
				assert.Equal(t, se.LoggedError != "", advice >= 0, "the advice is logged where vLLM logs it")
				if advice >= 0 {
					assert.Less(t, advice, strings.Index(log, "EngineCore failed to start."))
					assert.Contains(t, log, "ERROR", "at ERROR")
				}
			}
			if tc.kind == sim.KVDTypeRefused {
				// The first attention layer raises it as the model is built.
				log := out.String()
				assert.Regexp(t, `attention\.py", line \d+, in _init_kv_cache_quant\r?\n.*\n.*ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints\.`, log)
			}
			if tc.kind == sim.KVDTypeUnsupported {
				// The Triton backend's implementation raises it as the first attention layer is built.
				log := out.String()
				assert.Regexp(t, `triton_attn\.py", line \d+, in __init__\r?\n.*\n.*ValueError: FP8 KV cache is not supported by the Triton attention backend on Tesla T4 \(compute capability 7\.5\)`, log)
			}
			if tc.loaded {
				assert.InDelta(t, float64(se.Setup.Capacity.WeightsBytes)/(1<<30), weights, 0.01, "the weights logged are the plan's")
			}
		})
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
