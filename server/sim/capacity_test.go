package sim

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func within(t *testing.T, want, got, tol float64, what string) {
	t.Helper()
	assert.InDelta(t, 0, math.Abs(got-want)/want, tol, "%s: want %v, got %v (%.2f%% off)", what, want, got, 100*math.Abs(got-want)/want)
}

// rtx3090 is the GPU of the worked example in vllm#10517 (total_gpu_memory=23.58GiB).
func rtx3090Profiles(t *testing.T) *Profiles {
	p := BuiltinProfiles()
	p.merge(Profiles{GPUs: []GPU{{Name: "RTX-3090", MemoryGiB: 23.58, BandwidthTBps: 0.936, BF16TFLOPS: 71,
		EtaBandwidth: 0.8, EtaGEMM: 0.55, EtaAttention: 0.45, LayerFloorUS: 40,
		DefaultMaxNumBatchedTokens: 2048, DefaultMaxNumSeqs: 256}}})
	require.NoError(t, p.validate())
	return p
}

// TestCapacityMatchesRealLogs checks the whole memory plan against what real vLLM servers logged.
func TestCapacityMatchesRealLogs(t *testing.T) {
	cases := []struct {
		name       string
		cfg        Config
		profiles   func(*testing.T) *Profiles
		wantKVGiB  float64
		wantTokens int
		wantBlocks int
		wantConc   float64
		source     string
	}{
		{
			name:       "Qwen2-7B A100-80GB util 0.25",
			cfg:        Config{Model: "Qwen/Qwen2-7B-Instruct", GPU: "A100-SXM-80GB", GPUMemoryUtilization: 0.25, MaxModelLen: 16384, VLLMVersion: "0.10.1.1"},
			wantKVGiB:  5.01,
			wantTokens: 93872,
			wantConc:   5.73,
			source:     "testdata/vllm-0.10.1.1-serve-qwen2-7b-A100-gmu0.25-linewrapped.log",
		},
		{
			name:       "Llama-3.1-8B RTX 3090 util 0.9, 20k batched tokens",
			cfg:        Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "RTX-3090", GPUMemoryUtilization: 0.9, MaxModelLen: 20000, MaxNumBatchedTokens: 20000, VLLMVersion: "0.6.4"},
			profiles:   rtx3090Profiles,
			wantKVGiB:  3.81,
			wantBlocks: 1952,
			source:     "vllm#10517 (docs/calibration.md#activation-memory)",
		},
		{
			name:      "Llama-3.1-8B RTX 3090 util 0.9, 29k batched tokens",
			cfg:       Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "RTX-3090", GPUMemoryUtilization: 0.9, MaxModelLen: 8192, MaxNumBatchedTokens: 29000, VLLMVersion: "0.6.4"},
			profiles:  rtx3090Profiles,
			wantKVGiB: 2.89,
			source:    "vllm#10517: 0.92 GiB more activation, 2.89 GiB of KV",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p *Profiles
			if tc.profiles != nil {
				p = tc.profiles(t)
			}
			s, err := Resolve(tc.cfg, p)
			require.NoError(t, err, tc.source)
			c := s.Capacity
			within(t, tc.wantKVGiB, float64(c.AvailableKVBytes)/gib, 0.01, "available KV GiB")
			if tc.wantTokens > 0 {
				within(t, float64(tc.wantTokens), float64(c.KVCacheTokens), 0.01, "KV cache tokens")
			}
			if tc.wantBlocks > 0 {
				within(t, float64(tc.wantBlocks), float64(c.NumGPUBlocks), 0.01, "GPU blocks")
			}
			if tc.wantConc > 0 {
				within(t, tc.wantConc, c.MaxConcurrency, 0.01, "max concurrency")
			}
		})
	}
}

// TestKVCacheSizeArithmetic checks the blocks/tokens/concurrency arithmetic on the worked examples.
func TestKVCacheSizeArithmetic(t *testing.T) {
	cases := []struct {
		name          string
		availableGiB  float64
		bytesPerToken int64
		blockSize     int
		maxModelLen   int
		wantBlocks    int
		wantConc      string
		wantTokens    int
	}{
		// docs/vllm-behaviour.md#blocks-tokens-and-concurrency: Qwen3-0.6B (112 KiB/token), 130.5 GiB available, max_model_len 40960.
		{"Qwen3-0.6B H200", 130.5, 2 * 28 * 8 * 128 * 2, 16, 40960, 76361, "29.83", 1221776},
		// Qwen2-7B on A100: 5867 blocks give the logged 93,872 tokens and 5.73x.
		{"Qwen2-7B A100", 5867.5 * 16 * 57344 / gib, 2 * 28 * 4 * 128 * 2, 16, 16384, 5867, "5.73", 93872},
		// V0 fork log: opt-1.3b, kv_cache_size=10.49GiB, "# GPU blocks: 3581", 27.98x for 2048 tokens.
		{"opt-1.3b V0 fork", 3581.2 * 16 * 196608 / gib, 2 * 24 * 32 * 64 * 2, 16, 2048, 3581, "27.98", 3581 * 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blocks, conc, tokens := KVCacheSize(int64(tc.availableGiB*gib), tc.bytesPerToken, tc.blockSize, tc.maxModelLen)
			assert.Equal(t, tc.wantBlocks, blocks)
			assert.Equal(t, tc.wantConc, formatConcurrency(conc))
			assert.Equal(t, tc.wantTokens, tokens)
		})
	}
}

func formatConcurrency(c float64) string { return fmtFloat2(c) }

func TestBytesPerTokenAndTensorParallel(t *testing.T) {
	s, err := Resolve(Config{Model: "Llama-3.1-8B-Instruct", GPU: "H100"}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(131072), s.Capacity.BytesPerToken, "Llama-3.1-8B bf16 is 128 KiB per token")
	assert.Equal(t, 16384, s.MaxNumBatchedTokens, "H100 defaults to 16384 batched tokens from 0.28")
	assert.Equal(t, 1024, s.MaxNumSeqs)
	assert.Equal(t, 131072, s.MaxModelLen)

	tp2, err := Resolve(Config{Model: "Llama-3.1-8B-Instruct", GPU: "H100", TensorParallelSize: 2}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(65536), tp2.Capacity.BytesPerToken, "KV heads divide across ranks")
	assert.Greater(t, tp2.Capacity.KVCacheTokens, 2*s.Capacity.KVCacheTokens, "half the weights per GPU and half the bytes per token")

	fp8, err := Resolve(Config{Model: "Llama-3.1-8B-Instruct", GPU: "H100", KVCacheDType: "fp8"}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(65536), fp8.Capacity.BytesPerToken)

	a100, err := Resolve(Config{Model: "Llama-3.1-8B-Instruct", GPU: "a100_80gb"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 2048, a100.MaxNumBatchedTokens, "vLLM keeps A100 at 2048/256")
	assert.Equal(t, 256, a100.MaxNumSeqs)
}

func TestQuantizationShrinksWeightsAndGrowsKV(t *testing.T) {
	base, err := Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "L4", MaxModelLen: 4096, GPUMemoryUtilization: 0.9}, nil)
	require.NoError(t, err)
	for _, q := range []string{"awq", "gptq", "fp8"} {
		s, err := Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "L4", MaxModelLen: 4096, GPUMemoryUtilization: 0.9, CheckpointQuantization: q}, nil)
		require.NoError(t, err, q)
		assert.Less(t, s.Capacity.WeightsBytes, base.Capacity.WeightsBytes, q)
		assert.Greater(t, s.Capacity.KVCacheTokens, base.Capacity.KVCacheTokens, q)
	}
	online, err := Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "L4", MaxModelLen: 4096, GPUMemoryUtilization: 0.9, Quantization: "fp8"}, nil)
	require.NoError(t, err, "fp8 quantizes a 16-bit checkpoint as it loads")
	assert.Less(t, online.Capacity.WeightsBytes, base.Capacity.WeightsBytes)
	awq, _ := Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "L4", MaxModelLen: 4096, CheckpointQuantization: "awq"}, nil)
	fp8, _ := Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "L4", MaxModelLen: 4096, Quantization: "fp8"}, nil)
	assert.Less(t, awq.Capacity.WeightsBytes, fp8.Capacity.WeightsBytes, "4-bit weights are smaller than 8-bit")
}

func TestStartupErrorsUseVLLMMessages(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		kind StartupKind
		msg  string
	}{
		{"utilisation too low for the weights", Config{Model: "Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.5}, NoKVMemory,
			"No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine (this flag also controls CPU memory reservation on the CPU backend, despite its name). See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."},
		{"max_model_len does not fit", Config{Model: "Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.9}, MaxModelLenTooLarge,
			"To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, which is larger than the available KV cache memory ("},
		{"weights larger than the GPU", Config{Model: "Llama-3.1-70B-Instruct", GPU: "H100"}, LoadOOM,
			"CUDA out of memory. Tried to allocate 896.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which "},
		{"other processes hold the GPU", Config{Model: "Qwen3-0.6B", GPU: "H100", GPUUsedGiB: 10}, FreeMemoryTooLow,
			"Free memory on device cuda:0 (69.19/79.19 GiB) on startup is less than desired GPU memory utilization (0.92, 72.85 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.cfg, nil)
			var se *StartupError
			require.True(t, errors.As(err, &se), "want a StartupError, got %v", err)
			assert.Equal(t, tc.kind, se.Kind)
			assert.Contains(t, se.Message, tc.msg)
		})
	}

	_, err := Resolve(Config{Model: "Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.9}, nil)
	var se *StartupError
	require.ErrorAs(t, err, &se)
	assert.Regexp(t, `estimated maximum model length is \d+\. `, se.Message)
	assert.Positive(t, se.EstimatedMaxModelLen)
	assert.Zero(t, se.EstimatedMaxModelLen%16, "the estimate is whole blocks")
	ok, err := Resolve(Config{Model: "Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.9, MaxModelLen: se.EstimatedMaxModelLen}, nil)
	require.NoError(t, err, "the estimated length fits")
	assert.InDelta(t, 1.0, ok.Capacity.MaxConcurrency, 0.01)
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		msg  string
	}{
		{"unknown model says where the known ones are", Config{Model: "acme/Nonexistent-7B"}, "known models are listed by vllmtop help sim"},
		{"a misspelt model", Config{Model: "meta-llama/Llama-3.1-8B-Instrct"}, "(did you mean meta-llama/Llama-3.1-8B-Instruct?)"},
		{"a suffix past a known model", Config{Model: "Qwen/Qwen3-8B-Base"}, "(did you mean Qwen/Qwen3-8B?)"},
		{"a quantized build of a known model", Config{Model: "Qwen/Qwen3-8B-AWQ"}, "(a build of Qwen/Qwen3-8B quantized with awq? --model Qwen/Qwen3-8B --sim-checkpoint-quantization awq)"},
		{"an FP8 build, maybe block-scaled", Config{Model: "Qwen/Qwen3-30B-A3B-FP8"}, "--sim-checkpoint-quantization fp8 for per-channel scales; for block-scaled weights give its config.json with --sim-model-config)"},
		{"an 8-bit GPTQ build", Config{Model: "Qwen/Qwen3-8B-GPTQ-Int8"}, "(an 8-bit GPTQ build of Qwen/Qwen3-8B? give its config.json with --sim-model-config; --sim-checkpoint-quantization gptq sizes 4-bit weights)"},
		{"a dynamic FP8 build", Config{Model: "Qwen/Qwen3-8B-FP8-dynamic"}, "(a build of Qwen/Qwen3-8B quantized with fp8? --model Qwen/Qwen3-8B --sim-checkpoint-quantization fp8)"},
		{"a name lower case makes shorter", Config{Model: "ȺȺȺȺȺȺ-awq"}, "known models are listed by vllmtop help sim"},
		{"a misspelt GPU", Config{GPU: "MI300"}, "unknown GPU \"MI300\" (did you mean MI300X?); known GPUs: H200"},
		{"the start of a GPU's alias", Config{GPU: "A100-80G"}, "(did you mean A100-SXM-80GB?)"},
		{"unknown gpu", Config{GPU: "TPU-v5"}, "known GPUs: H200, H100-SXM-80GB"},
		{"utilisation above 1", Config{GPUMemoryUtilization: 1.5}, "--gpu-memory-utilization must be greater than 0 and at most 1"},
		{"utilisation negative", Config{GPUMemoryUtilization: -0.1}, "--gpu-memory-utilization must be greater than 0"},
		{"bad block size", Config{BlockSize: 7}, "--block-size must be one of"},
		{"bad dtype", Config{DType: "int3"}, "argument --dtype: invalid choice: 'int3'"},
		{"bad kv dtype", Config{KVCacheDType: "fp3"}, "argument --kv-cache-dtype: invalid choice"},
		{"unsupported quantization", Config{Quantization: "bitsandbytes"}, "not simulated"},
		{"used memory not a number", Config{GPUUsedGiB: math.NaN()}, "--sim-gpu-used-gib must be between 0 and the GPU's"},
		{"fp8 KV before 0.3", Config{KVCacheDType: "fp8", VLLMVersion: "0.2.7"}, "argument --kv-cache-dtype: invalid choice: 'fp8' (choose from 'auto')"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.cfg, nil)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, ce.Msg, tc.msg)
		})
	}
	// What vLLM's argument parser takes and its engine configuration refuses with a ValueError
	// (exit status 1, not argparse's 2).
	_, err := Resolve(Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", TensorParallelSize: 4}, nil)
	var ee *EngineConfigError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "Total number of attention heads (14) must be divisible by tensor parallel size (4).", ee.Msg)
}

// SchedulerConfig's cross-checks are its model validator's ValueErrors, which pydantic reports
// (vllm serve exits 1 with the traceback), not settings the simulator cannot take.
func TestSchedulerCrossChecksAreValidationErrors(t *testing.T) {
	for cfg, msg := range map[*Config]string{
		{ChunkedPrefill: Off, MaxNumBatchedTokens: 1024, MaxModelLen: 4096}: "max_num_batched_tokens (1024) is smaller than max_model_len (4096)",
		{MaxNumBatchedTokens: 100, MaxNumSeqs: 256}:                         "max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (256).",
	} {
		_, err := Resolve(*cfg, nil)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, msg)
		assert.Equal(t, "SchedulerConfig", ve.Class)
		assert.Contains(t, ve.Short(), msg)
		assert.Contains(t, ve.Error(), "1 validation error for SchedulerConfig\n  Value error, "+msg)
	}
}

// TestMaxModelLenAboveTheModelsIsAValidationError: vLLM's ModelConfig rejects it (exit 1, its
// pydantic error), which is vLLM refusing, not a setting the simulator cannot take.
func TestMaxModelLenAboveTheModelsIsAValidationError(t *testing.T) {
	_, err := Resolve(Config{Model: "facebook/opt-125m", MaxModelLen: 999999}, nil)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "ModelConfig", ve.Class)
	assert.Contains(t, ve.Short(), "User-specified max_model_len (999999) is greater than the derived max_model_len (max_position_embeddings=2048.0")
	_, err = Resolve(Config{Model: "facebook/opt-125m", MaxModelLen: 999999, AllowLongMaxModelLen: true}, nil)
	assert.NoError(t, err, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lets it through")
}

func TestModelAndGPULookup(t *testing.T) {
	p := BuiltinProfiles()
	for _, name := range []string{"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b-instruct", "META-LLAMA/LLAMA-3.1-8B-INSTRUCT", "/models/Llama-3.1-8B-Instruct/"} {
		m, err := p.Model(name)
		require.NoError(t, err, name)
		assert.Equal(t, "meta-llama/Llama-3.1-8B-Instruct", m.Name)
	}
	for _, name := range []string{"h100", "H100-SXM-80GB", "h100_sxm", "a100", "A100-40GB", "l4", "4090", "rtx-4090", "L40S", "a10g", "h200", "RTX-4060-8GB", "rtx4060"} {
		_, err := p.GPU(name)
		assert.NoError(t, err, name)
	}
	assert.GreaterOrEqual(t, len(p.GPUs), 24)
	assert.GreaterOrEqual(t, len(p.Models), 50)
}

func TestFormatGiB(t *testing.T) {
	assert.Equal(t, "5.0", FormatGiB(5*gib))
	assert.Equal(t, "1.12", FormatGiB(1206240000))
	assert.Equal(t, "130.5", FormatGiB(int64(130.5*float64(gib))))
	assert.Equal(t, "0.92", PyFloat(0.92))
	assert.Equal(t, "1.0", PyFloat(1))
}

// --quantization is checked against the checkpoint as vLLM checks it: a quantized checkpoint's
// method, or the faster kernel vLLM runs it with; on a 16-bit checkpoint only the methods that
// quantize as they load.
func TestQuantizationMustMatchTheCheckpoint(t *testing.T) {
	for _, c := range []struct {
		model, ckpt, flag, err string
	}{
		{"Qwen/Qwen2.5-7B-Instruct", "", "awq", "Cannot find the config file for awq"},
		{"Qwen/Qwen2.5-7B-Instruct", "", "gptq_marlin", "Cannot find the config file for gptq_marlin"},
		{"Qwen/Qwen2.5-7B-Instruct", "", "fp8", ""},
		{"Qwen/Qwen2.5-7B-Instruct", "awq", "awq_marlin", ""},
		{"Qwen/Qwen2.5-7B-Instruct", "awq", "awq", ""},
		{"Qwen/Qwen2.5-7B-Instruct", "awq", "gptq", "Quantization method specified in the model config (awq) does not match the quantization method specified in the `quantization` argument (gptq)."},
		{"Qwen/Qwen2.5-7B-Instruct", "gptq", "fp8", "(gptq) does not match the quantization method specified in the `quantization` argument (fp8)."},
		{"openai/gpt-oss-20b", "", "mxfp4", ""},
		{"Qwen/Qwen2.5-7B-Instruct", "", "mxfp4", "Mxfp4 linear layer is not implemented"},
		{"openai/gpt-oss-20b", "", "fp8", "model config (mxfp4) does not match"},
		{"Qwen/Qwen2.5-7B-Instruct", "int3", "", `--sim-checkpoint-quantization "int3" is not simulated`},
	} {
		_, err := Resolve(Config{Model: c.model, GPU: "H100", MaxModelLen: 4096, CheckpointQuantization: c.ckpt, Quantization: c.flag}, nil)
		name := c.model + "/" + c.ckpt + "/" + c.flag
		if c.err == "" {
			assert.NoError(t, err, name)
			continue
		}
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.err, name)
		var engine *EngineConfigError
		assert.Equal(t, c.ckpt != "int3", errors.As(err, &engine), "%s: vLLM's engine config refuses it, not its parser", name)
	}
}

// The method vLLM's engine config line names: an AWQ or GPTQ checkpoint runs on the Marlin
// kernels where the GPU has them, unless the flag names the plain method; from 0.22 (GPTQ) and
// 0.24 (AWQ) it is auto_gptq or auto_awq.
func TestQuantizationMethodMovesToMarlin(t *testing.T) {
	for _, c := range []struct{ gpu, ckpt, flag, release, want string }{
		{"L4", "awq", "", "0.19.0", "awq_marlin"},
		{"H100", "gptq", "", "0.19.0", "gptq_marlin"},
		{"T4", "awq", "", "0.19.0", "awq"},
		{"L4", "awq", "awq", "0.19.0", "awq"},
		{"L4", "", "fp8", "0.19.0", "fp8"},
		{"L4", "", "", "0.19.0", ""},
		// One method each from 0.22 (GPTQ) and 0.24 (AWQ), whatever the flag's spelling or the GPU.
		{"H100", "gptq", "", "0.21.0", "gptq_marlin"},
		{"H100", "gptq", "", "0.22.0", "auto_gptq"},
		{"T4", "gptq", "gptq", "0.31.0", "auto_gptq"},
		{"L4", "awq", "", "0.23.0", "awq_marlin"},
		{"L4", "awq", "awq_marlin", "0.24.0", "auto_awq"},
		{"T4", "awq", "", "0.31.0", "auto_awq"},
		{"L4", "", "fp8", "0.31.0", "fp8"},
	} {
		s, err := Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: c.gpu, MaxModelLen: 4096, CheckpointQuantization: c.ckpt, Quantization: c.flag, VLLMVersion: c.release}, nil)
		require.NoError(t, err, "%+v", c)
		assert.Equal(t, c.want, s.QuantizationMethod(), "%+v", c)
	}
	// The new names are not flags of the releases before them.
	_, err := Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct-AWQ", GPU: "L4", Quantization: "auto_awq", VLLMVersion: "0.23.0"}, nil)
	assert.ErrorContains(t, err, "invalid choice: 'auto_awq': it is in vLLM 0.24 at the earliest (--sim-vllm-version is 0.23.0)")
	_, err = Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", GPU: "L4", Quantization: "auto_gptq", VLLMVersion: "0.21.0"}, nil)
	assert.ErrorContains(t, err, "invalid choice: 'auto_gptq': it is in vLLM 0.22 at the earliest")
	_, err = Resolve(Config{Model: "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", GPU: "L4", Quantization: "auto_gptq", VLLMVersion: "0.22.0"}, nil)
	assert.NoError(t, err)
}

func TestAutoFitMaxModelLen(t *testing.T) {
	s, err := Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", AutoFitMaxModelLen: true}, nil)
	require.NoError(t, err, "auto fits where 131,072 tokens would be refused")
	c := s.Capacity
	assert.Equal(t, 131072, c.AutoFitFrom)
	assert.Less(t, s.MaxModelLen, 131072)
	assert.LessOrEqual(t, s.MaxModelLen, c.KVCacheTokens, "one request of the fitted length fits")
	_, err = Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", MaxModelLen: s.MaxModelLen + 16*64}, nil)
	var se *StartupError
	require.ErrorAs(t, err, &se, "a longer context is refused")
	assert.Equal(t, s.MaxModelLen, se.EstimatedMaxModelLen, "auto takes the length the refusal estimates")

	s, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100-SXM-80GB", AutoFitMaxModelLen: true}, nil)
	require.NoError(t, err)
	assert.Equal(t, 40960, s.MaxModelLen, "the model's context when it fits")
	assert.Zero(t, s.Capacity.AutoFitFrom)

	_, err = Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.7, AutoFitMaxModelLen: true}, nil)
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Message, "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token.")

	_, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", AutoFitMaxModelLen: true, VLLMVersion: "0.13.0"}, nil)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce, "auto came with 0.14")
}

// --performance-mode throughput doubles the batch limits left to their defaults (vllm#34936,
// from 0.17), before the budget caps the sequences; given limits stay; older releases refuse it.
func TestPerformanceModeThroughputDoublesTheDefaults(t *testing.T) {
	base, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "L4"}, nil)
	require.NoError(t, err)
	s, err := Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "L4", PerformanceMode: "throughput"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 2*base.MaxNumBatchedTokens, s.MaxNumBatchedTokens)
	assert.Equal(t, min(2*base.MaxNumSeqs, s.MaxNumBatchedTokens), s.MaxNumSeqs)
	s, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "L4", PerformanceMode: "throughput", MaxNumSeqs: 64, MaxNumBatchedTokens: 4096}, nil)
	require.NoError(t, err)
	assert.Equal(t, 64, s.MaxNumSeqs, "a given limit is not doubled")
	assert.Equal(t, 4096, s.MaxNumBatchedTokens)
	for _, mode := range []string{"balanced", "interactivity"} {
		s, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", GPU: "L4", PerformanceMode: mode}, nil)
		require.NoError(t, err)
		assert.Equal(t, base.MaxNumSeqs, s.MaxNumSeqs, mode)
	}
	var ce *ConfigError
	_, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", PerformanceMode: "throughput", VLLMVersion: "0.16.0"}, nil)
	require.ErrorAs(t, err, &ce, "came with 0.17")
	_, err = Resolve(Config{Model: "Qwen/Qwen3-0.6B", PerformanceMode: "fast"}, nil)
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Error(), "choose from balanced, interactivity, throughput")
}

// An 8-bit GPTQ checkpoint stores a byte a weight, not the four bits of every other AWQ or
// GPTQ build: Qwen2.5-7B-Instruct-GPTQ-Int8, which vLLM 0.31.0 loads as 8.29 GiB
// (docs/calibration.md#quantized-weights). A what-if of another method is that method's.
func TestEightBitGPTQWeights(t *testing.T) {
	gib := func(s *Setup) float64 { return float64(s.Capacity.WeightsBytes) / (1 << 30) }
	eight := mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", GPU: "A40"})
	assert.InDelta(t, 8.29, gib(eight), 0.05, "a byte a weight, fp16 embeddings and LM head")
	marlin := mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", GPU: "A40", Quantization: "gptq_marlin"})
	assert.Equal(t, eight.Capacity.WeightsBytes, marlin.Capacity.WeightsBytes, "the kernel does not change the storage")
	int4 := mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "A40", CheckpointQuantization: "gptq"})
	assert.InDelta(t, 5.3, gib(int4), 0.1, "--sim-checkpoint-quantization gptq is 4-bit")
	awq := mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct-AWQ", GPU: "A40"})
	assert.InDelta(t, gib(int4), gib(awq), 0.01)
	same := mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", GPU: "A40", CheckpointQuantization: "gptq"})
	assert.Equal(t, eight.Capacity.WeightsBytes, same.Capacity.WeightsBytes, "naming the checkpoint's own method keeps its bits")
	other := mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", GPU: "A40", CheckpointQuantization: "awq"})
	assert.InDelta(t, gib(awq), gib(other), 0.01, "a what-if of another method stores that method's bits")

	base := `"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
		"num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768, "torch_dtype": "float16"`
	for bits, want := range map[int]int{4: 0, 8: 8} {
		cfg := fmt.Sprintf(`{%s, "quantization_config": {"quant_method": "gptq", "bits": %d, "group_size": 128}}`, base, bits)
		m, err := ModelFromHFConfig("acme/q", []byte(cfg))
		require.NoError(t, err)
		assert.Equal(t, "gptq", m.Quantization)
		assert.Equal(t, want, m.QuantizationBits, "bits %d", bits)
	}
}
