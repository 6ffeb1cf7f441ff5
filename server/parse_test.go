package server

import (
	"math"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Event
	}{
		// The worker's memory account with the --kv-cache-memory advice: the current form (INFO
		// from 2026-07), one without the advice, and the 0.11-era form (weights and non-torch
		// apart, the cache in bytes). Lines of public 2025-10 to 2026-09 logs.
		{"memory advice", "(EngineCore pid=3403212) INFO 08-17 02:57:58 [gpu_worker.py:804] Free memory on device (79.99/80.0 GiB) on startup. Desired GPU memory utilization is (0.92, 73.6 GiB). Actual usage is 51.66 GiB for consumed memory (weights + non-torch), 2.4 GiB for peak activation, and 0.71 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=20064085607` (18.69 GiB) to fit into requested memory, or `--kv-cache-memory=26927570944` (25.08 GiB) to fully utilize gpu memory. Current kv cache memory in use is 19.54 GiB.",
			MemoryAdvice{FreeGiB: 79.99, TotalGiB: 80, Utilization: 0.92, RequestedGiB: 73.6, ConsumedGiB: 51.66, PeakActivationGiB: 2.4, CUDAGraphGiB: 0.71, KVCacheGiB: 19.54, FitRequestedBytes: 20064085607, FillGPUBytes: 26927570944}},
		{"memory account without advice", "(EngineCore pid=48111) INFO 09-18 22:31:20 [gpu_worker.py:298] Free memory on device (94.41/94.97 GiB) on startup. Desired GPU memory utilization is (0.98, 93.07 GiB). Actual usage is 81.7 GiB for consumed memory (weights + non-torch), 1.78 GiB for peak activation, and 0.66 GiB for CUDAGraph memory. Current kv cache memory in use is 9.59 GiB.",
			MemoryAdvice{FreeGiB: 94.41, TotalGiB: 94.97, Utilization: 0.98, RequestedGiB: 93.07, ConsumedGiB: 81.7, PeakActivationGiB: 1.78, CUDAGraphGiB: 0.66, KVCacheGiB: 9.59}},
		// Model loading: V1 runner (current and both older forms), V2 runner, V0.
		{"model loaded, V1 runner", "(EngineCore pid=4310) INFO 07-24 10:15:17 [gpu_model_runner.py:4290] Model loading took 1.12 GiB memory and 1.873204 seconds",
			ModelLoaded{GiB: 1.12, Seconds: 1.873204}},
		{"model loaded, V1 runner before format_gib", "(EngineCore_DP0 pid=9) INFO 11-20 08:00:00 [gpu_model_runner.py:3000] Model loading took 15.2316 GiB memory and 5.112233 seconds",
			ModelLoaded{GiB: 15.2316, Seconds: 5.112233}},
		{"model loaded, V2 runner", "(EngineCore pid=4310) INFO 07-24 10:15:17 [model_runner.py:309] Model loading took 130.5 GiB and 12.000001 seconds",
			ModelLoaded{GiB: 130.5, Seconds: 12.000001}},
		{"model loaded, 0.10.1.1", "(EngineCore_0 pid=1812) INFO 09-04 01:03:03 [gpu_model_runner.py:2007] Model loading took 14.2488 GiB and 4.422213 seconds",
			ModelLoaded{GiB: 14.2488, Seconds: 4.422213}},
		{"model loaded, V0", "INFO 03-06 18:15:32 model_runner.py:1067] Loading model weights took 2.4509 GB",
			ModelLoaded{GiB: 2.4509}},

		// KV-cache sizing.
		{"available KV memory", "(EngineCore pid=4310) INFO 07-24 10:15:35 [gpu_worker.py:547] Available KV cache memory: 130.5 GiB",
			KVCacheMemory{AvailableGiB: 130.5}},
		{"available KV memory, %.2f", "(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [gpu_worker.py:276] Available KV cache memory: 5.01 GiB",
			KVCacheMemory{AvailableGiB: 5.01}},
		{"available KV memory, negative", "(EngineCore pid=1) INFO 11-30 13:52:49 [gpu_worker.py:547] Available KV cache memory: -4.53 GiB",
			KVCacheMemory{AvailableGiB: -4.53}},
		{"available KV memory, explicit bytes", "(EngineCore pid=1) INFO 07-24 10:15:35 [gpu_worker.py:520] Initial free memory 78.5 GiB, reserved 20.0 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not respect the gpu_memory_utilization config.",
			KVCacheMemory{AvailableGiB: 20}},
		{"available KV memory, V0 profiling", "INFO 03-06 18:15:33 worker.py:262] Memory profiling results: total_gpu_memory=63.43GiB initial_memory_usage=12.48GiB peak_torch_memory=2.95GiB non_torch_memory=0.83GiB kv_cache_size=10.49GiB gpu_memory_utilization=0.23",
			KVCacheMemory{AvailableGiB: 10.49}},
		{"KV tokens", "(EngineCore pid=4310) INFO 07-24 10:15:35 [kv_cache_utils.py:2214] GPU KV cache size: 1,221,776 tokens",
			KVCacheSize{Tokens: 1221776}},
		{"KV tokens, small", "(EngineCore pid=1) INFO 07-24 10:15:35 [kv_cache_utils.py:2214] GPU KV cache size: 912 tokens",
			KVCacheSize{Tokens: 912}},
		{"KV tokens and concurrency on one line, 0.27 on", "(EngineCore pid=721647) INFO 10-08 18:24:15 [kv_cache_utils.py:2464] GPU KV cache size: 453,248 tokens, Maximum concurrency for 4,096 tokens per request: 110.66x",
			KVCacheSize{Tokens: 453248, Concurrency: 110.66, TokensPerRequest: 4096}},
		{"KV blocks, V0 and early V1", "INFO 03-06 18:15:33 gpu_executor.py:122] # GPU blocks: 3581, # CPU blocks: 1365",
			KVCacheSize{Blocks: 3581}},
		{"KV blocks, 0.10 cache_config_info", "(APIServer pid=1671) INFO 09-04 01:04:33 [loggers.py:142] Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 5867",
			KVCacheSize{Blocks: 5867}},
		{"max concurrency", "(EngineCore pid=4310) INFO 07-24 10:15:35 [kv_cache_utils.py:2215] Maximum concurrency for 40,960 tokens per request: 29.83x",
			MaxConcurrency{Concurrency: 29.83, TokensPerRequest: 40960}},
		{"max concurrency, V0 without commas", "INFO 03-06 18:15:33 gpu_executor.py:126] Maximum concurrency for 2048 tokens per request: 27.98x",
			MaxConcurrency{Concurrency: 27.98, TokensPerRequest: 2048}},

		// CUDA graphs and engine init.
		{"graphs captured", "(EngineCore pid=4310) INFO 07-24 10:15:41 [model_runner.py:766] Graph capturing finished in 5 secs, took 0.41 GiB",
			CUDAGraphMemory{GiB: 0.41, Seconds: 5}},
		{"graph estimate", "(EngineCore pid=4310) INFO 07-24 10:15:30 [gpu_model_runner.py:5000] Estimated CUDA graph memory: 1.25 GiB total",
			CUDAGraphMemory{GiB: 1.25, Estimated: true}},
		{"engine init with compilation", "(EngineCore pid=4310) INFO 07-24 10:15:41 [core.py:340] init engine (profile, create kv cache, warmup model) took 28.71 s (compilation: 14.02 s)",
			EngineInitialized{Seconds: 28.71, CompilationSeconds: 14.02}},
		{"engine init with per-part compilation", "(EngineCore pid=4310) INFO 07-24 10:15:41 [core.py:340] init engine (profile, create kv cache, warmup model) took 40.00 s (compilation: 20.50 s — language_model: 15.00 s, encoder: 5.50 s)",
			EngineInitialized{Seconds: 40, CompilationSeconds: 20.5}},
		{"engine init, 0.10", "(EngineCore_0 pid=1812) INFO 09-04 01:04:32 [core.py:214] init engine (profile, create kv cache, warmup model) took 89.58 seconds",
			EngineInitialized{Seconds: 89.58}},

		// Startup and address.
		{"load started", "(EngineCore_0 pid=1812) INFO 09-04 01:02:57 [gpu_model_runner.py:1953] Starting to load model Qwen2-7B-Instruct...",
			LoadStarted{Model: "Qwen2-7B-Instruct"}},
		{"load started, V2 runner", "(EngineCore pid=4310) INFO 07-24 10:15:15 [model_runner.py:288] Loading model from scratch...",
			LoadStarted{}},
		{"address", "(APIServer pid=4127) INFO 07-24 10:15:43 [api_server.py:677] Starting vLLM server on http://0.0.0.0:8000",
			ServerAddress{URL: "http://0.0.0.0:8000"}},
		{"address, IPv6", "(APIServer pid=4127) INFO 07-24 10:15:43 [api_server.py:677] Starting vLLM server on http://[::1]:8000",
			ServerAddress{URL: "http://[::1]:8000"}},
		{"address, unix socket", "(APIServer pid=4127) INFO 07-24 10:15:43 [api_server.py:677] Starting vLLM server on unix:/tmp/vllm.sock",
			ServerAddress{URL: "unix:/tmp/vllm.sock"}},
		{"address, with API server index", "(APIServer pid=1671) INFO 09-04 01:04:33 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8081",
			ServerAddress{URL: "http://0.0.0.0:8081"}},
		{"address, oldest form", "INFO 01-02 03:04:05 [api_server.py:1000] Starting vLLM API server on http://0.0.0.0:8000",
			ServerAddress{URL: "http://0.0.0.0:8000"}},
		{"address, uvicorn socket", "INFO:     Uvicorn running on socket ('0.0.0.0', 31311) (Press CTRL+C to quit)",
			ServerAddress{URL: "http://0.0.0.0:31311"}},
		{"address, uvicorn URL", "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
			ServerAddress{URL: "http://0.0.0.0:8000"}},
		{"startup complete", "(APIServer pid=4127) INFO:     Application startup complete.",
			StartupComplete{}},
		{"startup complete, no prefix", "INFO:     Application startup complete.",
			StartupComplete{}},
		{"version, banner", "(APIServer pid=4127) INFO 07-24 10:15:01 [api_utils.py:345]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.26.0",
			Version{Version: "0.26.0"}},
		{"version, no banner", "(APIServer pid=4127) INFO 07-24 10:15:01 [api_utils.py:350] vLLM server version 0.26.0, serving model Qwen/Qwen3-0.6B",
			Version{Version: "0.26.0"}},
		{"version, API server", "(APIServer pid=1671) INFO 09-04 01:02:21 [api_server.py:1805] vLLM API server version 0.10.1.1",
			Version{Version: "0.10.1.1"}},
		{"version, engine", "(EngineCore pid=4310) INFO 07-24 10:15:12 [core.py:116] Initializing a V1 LLM engine (v0.26.0) with config: model='Qwen/Qwen3-0.6B', max_seq_len=40960",
			Version{Version: "0.26.0"}},

		// Periodic stats.
		{"stats", "(APIServer pid=4127) INFO 07-24 10:16:03 [loggers.py:310] Engine 000: Avg prompt throughput: 61.2 tokens/s, Avg generation throughput: 1203.4 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.3%, Prefix cache hit rate: 0.0%",
			Stats{Engine: 0, PromptTokensPerSec: 61.2, GenerationTokensPerSec: 1203.4, Running: 16, KVCacheUsagePercent: 1.3}},
		{"stats with preemptions", "(APIServer pid=4127) INFO 07-24 10:16:13 [loggers.py:310] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 412.8 tokens/s, Running: 0 reqs, Waiting: 0 reqs, Preemptions: 3, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%",
			Stats{Engine: 0, GenerationTokensPerSec: 412.8, Preemptions: 3}},
		{"stats with deferred and preemptions, engine 1", "(APIServer pid=1) INFO 07-24 10:16:13 [loggers.py:310] Engine 001: Avg prompt throughput: 10.5 tokens/s, Avg generation throughput: 20.25 tokens/s, Running: 4 reqs, Waiting: 9 reqs, Deferred: 2 reqs, Preemptions: 7, GPU KV cache usage: 99.9%, Prefix cache hit rate: 12.5%, MM cache hit rate: 3.0%",
			Stats{Engine: 1, PromptTokensPerSec: 10.5, GenerationTokensPerSec: 20.25, Running: 4, Waiting: 9, Deferred: 2, Preemptions: 7, KVCacheUsagePercent: 99.9, PrefixCacheHitRatePercent: 12.5}},
		{"stats, aggregated engines", "(APIServer pid=1) INFO 07-24 10:16:13 [loggers.py:310] 2 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 4 reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 6.0%",
			Stats{Engine: -1, Engines: 2, PromptTokensPerSec: 1, GenerationTokensPerSec: 2, Running: 3, Waiting: 4, KVCacheUsagePercent: 5, PrefixCacheHitRatePercent: 6}},
		{"stats, V1 before the engine prefix", "INFO 02-20 10:00:00 [loggers.py:80] Avg prompt throughput: 5.0 tokens/s, Avg generation throughput: 6.0 tokens/s, Running: 1 reqs, Waiting: 2 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 4.0%",
			Stats{Engine: -1, PromptTokensPerSec: 5, GenerationTokensPerSec: 6, Running: 1, Waiting: 2, KVCacheUsagePercent: 3, PrefixCacheHitRatePercent: 4}},
		{"stats, V0", "INFO 03-06 18:16:05 metrics.py:360] Avg prompt throughput: 1314.0 tokens/s, Avg generation throughput: 5347.4 tokens/s, Running: 255 reqs, Swapped: 1 reqs, Pending: 168 reqs, GPU KV cache usage: 97.4%, CPU KV cache usage: 0.5%.",
			Stats{Engine: -1, Legacy: true, PromptTokensPerSec: 1314, GenerationTokensPerSec: 5347.4, Running: 255, Swapped: 1, Waiting: 168, KVCacheUsagePercent: 97.4, CPUKVCacheUsagePercent: 0.5}},

		// Failures.
		{"no KV memory", "(EngineCore pid=25) ERROR 08-18 02:57:12 [core.py:1231] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
			Fatal{Reason: KVCacheNoMemory, Line: "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."}},
		{"max_model_len does not fit", "(EngineCore pid=1) ERROR 07-24 10:15:35 [core.py:1231] ValueError: To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, which is larger than the available KV cache memory (4.53 GiB). Based on the available memory, the estimated maximum model length is 37088. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
			Fatal{Reason: MaxModelLenTooLarge, MaxModelLen: 131072, NeededGiB: 16, AvailableGiB: 4.53, EstimatedMaxModelLen: 37088,
				Line: "ValueError: To serve at least one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, which is larger than the available KV cache memory (4.53 GiB). Based on the available memory, the estimated maximum model length is 37088. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."}},
		{"max_model_len does not fit, older text", "ValueError: To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache is needed, which is larger than the available KV cache memory (1.50 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			Fatal{Reason: MaxModelLenTooLarge, MaxModelLen: 32768, NeededGiB: 4, AvailableGiB: 1.5,
				Line: "ValueError: To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache is needed, which is larger than the available KV cache memory (1.50 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."}},
		{"max_model_len does not fit, V0", "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens that can be stored in KV cache (4096). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			Fatal{Reason: MaxModelLenTooLarge, MaxModelLen: 8192, EstimatedMaxModelLen: 4096,
				Line: "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens that can be stored in KV cache (4096). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."}},
		{"free memory below requested", "ValueError: Free memory on device cuda:0 (70.0/79.19 GiB) on startup is less than desired GPU memory utilization (0.92, 72.85 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
			Fatal{Reason: FreeMemoryTooLow, FreeGiB: 70, TotalGiB: 79.19, Utilization: 0.92, RequestedGiB: 72.85,
				Line: "ValueError: Free memory on device cuda:0 (70.0/79.19 GiB) on startup is less than desired GPU memory utilization (0.92, 72.85 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."}},
		{"free memory below requested, without the device", "ValueError: Free memory on device (10.5/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
			Fatal{Reason: FreeMemoryTooLow, FreeGiB: 10.5, TotalGiB: 79.19, Utilization: 0.9, RequestedGiB: 71.27,
				Line: "ValueError: Free memory on device (10.5/79.19 GiB) on startup is less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."}},
		{"load OOM (quotes CUDA OOM)", "(EngineCore pid=1) ERROR 07-24 10:15:16 [gpu_model_runner.py:4300] Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. (original error: CUDA out of memory. Tried to allocate 2.00 GiB.)",
			Fatal{Reason: LoadOutOfMemory, Line: "Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. (original error: CUDA out of memory. Tried to allocate 2.00 GiB.)"}},
		{"CUDA OOM", "(EngineCore pid=1) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 3.06 MiB is free.",
			Fatal{Reason: CUDAOutOfMemory, Line: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 3.06 MiB is free."}},
		{"auto-fit impossible", "ValueError: Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. Try increasing `gpu_memory_utilization`.",
			Fatal{Reason: AutoFitImpossible, Line: "ValueError: Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. Try increasing `gpu_memory_utilization`."}},
		{"profiling race", "AssertionError: Error in memory profiling. Initial free memory 70.1 GiB, current free memory 75.3 GiB. This happens when other processes sharing the same container release GPU memory while vLLM is profiling during initialization.",
			Fatal{Reason: ProfilingFailed, Line: "AssertionError: Error in memory profiling. Initial free memory 70.1 GiB, current free memory 75.3 GiB. This happens when other processes sharing the same container release GPU memory while vLLM is profiling during initialization."}},
		{"simulator's usage error", "vllmtop sim: error: --gpu-memory-utilization must be greater than 0 and at most 1, got 1.5",
			Fatal{Reason: InvalidArguments, Line: "vllmtop sim: error: --gpu-memory-utilization must be greater than 0 and at most 1, got 1.5"}},
		{"unrecognized arguments", "vllm: error: unrecognized arguments: --no-such-flag 3",
			Fatal{Reason: InvalidArguments, Line: "vllm: error: unrecognized arguments: --no-such-flag 3"}},
		{"bad argument value", "vllm serve: error: argument --gpu-memory-utilization: invalid float value: 'lots'",
			Fatal{Reason: InvalidArguments, Line: "vllm serve: error: argument --gpu-memory-utilization: invalid float value: 'lots'"}},
		{"validation error", "(APIServer pid=1)   Value error, User-specified max_model_len (999999) is greater than the derived max_model_len (max_position_embeddings=2048.0 or model_max_length=None in model's config.json).",
			Fatal{Reason: InvalidConfig, Line: "Value error, User-specified max_model_len (999999) is greater than the derived max_model_len (max_position_embeddings=2048.0 or model_max_length=None in model's config.json)."}},
		{"engine core failed", "(EngineCore pid=25) ERROR 08-18 02:57:12 [core.py:1231] EngineCore failed to start.",
			Fatal{Reason: EngineFailed, Line: "EngineCore failed to start."}},
		{"engine initialization failed", "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}",
			Fatal{Reason: EngineFailed, Line: "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}"}},
		{"engine dead", "(APIServer pid=1) ERROR 07-24 11:00:00 [async_llm.py:500] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
			Fatal{Reason: EngineDead, Line: "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."}},
		{"engine proc died", "(APIServer pid=1) ERROR 07-24 11:00:00 [core_client.py:600] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
			Fatal{Reason: EngineDead, Line: "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."}},

		// ANSI colour and Ray prefixes are removed before matching.
		{"ANSI and nested Ray prefix", "\x1b[1;36m(EngineCore_0 pid=1159)\x1b[0;0m \x1b[36m(RayWorkerWrapper pid=345, ip=10.42.11.243)\x1b[0m INFO 09-10 23:47:50 [gpu_model_runner.py:2007] Model loading took 17.2217 GiB and 1219.491504 seconds",
			ModelLoaded{GiB: 17.2217, Seconds: 1219.491504}},
		{"Ray repeat suffix", "\x1b[1;36m(EngineCore_0 pid=1159)\x1b[0;0m \x1b[36m(RayWorkerWrapper pid=345, ip=10.42.11.243)\x1b[0m INFO 09-10 23:48:39 [gpu_worker.py:276] Available KV cache memory: 45.32 GiB\x1b[32m [repeated 3x across cluster]\x1b[0m",
			KVCacheMemory{AvailableGiB: 45.32}},
		{"trailing carriage return", "(EngineCore pid=1) INFO 07-24 10:15:35 [kv_cache_utils.py:2214] GPU KV cache size: 1,024 tokens\r",
			KVCacheSize{Tokens: 1024}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseLogLine(tc.line)
			require.True(t, ok, "no event")
			assert.Equal(t, tc.want, got)
			assertNumbersFromLine(t, tc.line, got)
		})
	}

	// SAD PATH: lines that look close but carry no event.
	for _, line := range []string{
		"",
		"(APIServer pid=1) ",
		"(EngineCore_0 pid=1812) ",
		// a utilisation above 1, and a byte count out of range
		"INFO 08-17 02:57:58 [gpu_worker.py:804] Free memory on device (79.99/80.0 GiB) on startup. Desired GPU memory utilization is (7, 73.6 GiB). Actual usage is 51.66 GiB for consumed memory (weights + non-torch), 2.4 GiB for peak activation, and 0.71 GiB for CUDAGraph memory. Current kv cache memory in use is 19.54 GiB.",
		"INFO 08-17 02:57:58 [gpu_worker.py:804] Free memory on device (79.99/80.0 GiB) on startup. Desired GPU memory utilization is (0.92, 73.6 GiB). Actual usage is 51.66 GiB for consumed memory (weights + non-torch), 2.4 GiB for peak activation, and 0.71 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=99999999999999999999999` (18.69 GiB) to fit into requested memory, or `--kv-cache-memory=26927570944` (25.08 GiB) to fully utilize gpu memory. Current kv cache memory in use is 19.54 GiB.",
		"INFO:     127.0.0.1:51234 - \"GET /health HTTP/1.1\" 200 OK",
		"(APIServer pid=1671) INFO 09-04 01:02:37 [__init__.py:1750] Using max model len 16384",
		"INFO 03-06 18:15:45 model_runner.py:1523] Graph capturing finished in 10 secs.",      // no memory figure
		"(EngineCore pid=1) INFO 07-24 10:15:35 [kv_cache_utils.py:2214] GPU KV cache size: ", // cut
		"(EngineCore pid=1) INFO 07-24 10:15:35 [kv_cache_utils.py:2214] GPU KV cache size: 1,221,7",
		"(EngineCore pid=1) INFO 07-24 10:15:35 [kv_cache_utils.py:2215] Maximum concurrency for 40,960 tokens per request: 29.8",
		"(EngineCore pid=1) INFO 07-24 10:15:35 [gpu_worker.py:547] Available KV cache memory: 130",
		"(EngineCore pid=1) INFO 07-24 10:15:17 [model_runner.py:309] Model loading took 1.12 GiB and 1.87",
		"(APIServer pid=1) INFO 07-24 10:16:03 [loggers.py:310] Engine 000: Avg prompt throughput: 61.2 tokens/s, Avg generation throughput: 1203.4 tokens/s, Running: 1",
		"(APIServer pid=1) INFO 07-24 10:16:03 [loggers.py:310] Engine 000: Iteration(12): 1 context requests, 100 context tokens, 3 generation requests, 3 generation tokens, iteration elapsed time: 10.00 ms, GPU KV cache usage: 1.0%",
		"(EngineCore pid=1) INFO 07-24 10:15:35 [kv_cache_utils.py:2214] GPU KV cache size: 99999999999999999999999 tokens", // overflow: no wrong number
		"Application startup complete, or so they say",
		"INFO:     Waiting for application startup.",
		"(APIServer pid=1) ValueError: some other problem",
		"ERROR 09-10 23:26:29 [config.py:130] Error retrieving safetensors: 'gpt-oss-120b' is not a safetensors repo.",
		"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:00<00:00,  1.55it/s]",
		"WARNING 08-18 02:56:59 [vllm.py:541] Model Runner V2 requires Triton; using the V1 model runner instead.",
		"it said: error: ",
		"(APIServer pid=1) INFO 07-24 10:15:43 [x.py:1] a message that ends in: error: ",
		"(EngineCore pid=25) ERROR 08-18 02:57:13 [multiproc_executor.py:284] Worker proc VllmWorker-0 died unexpectedly, shutting down executor.",
	} {
		ev, ok := ParseLogLine(line)
		assert.False(t, ok, "%q gave %#v", line, ev)
		assert.Nil(t, ev)
	}
}

func TestMessage(t *testing.T) {
	tests := []struct{ line, want string }{
		{"(APIServer pid=4127) INFO 07-24 10:15:43 [api_server.py:677] Starting vLLM server on http://0.0.0.0:8000", "Starting vLLM server on http://0.0.0.0:8000"},
		{"(EngineCore pid=1) DEBUG 07-24 10:15:43 [v1/core/kv_cache_utils.py:12] x", "x"},
		{"INFO 03-06 18:15:00 api_server.py:528] vLLM API server version 0.5.2", "vLLM API server version 0.5.2"},
		{"(APIServer pid=1) INFO:     Application startup complete.", "Application startup complete."},
		{"(APIServer pid=1671) `torch_dtype` is deprecated! Use `dtype` instead!", "`torch_dtype` is deprecated! Use `dtype` instead!"},
		{"\x1b[1;36m(APIServer pid=1009)\x1b[0;0m ERROR 09-10 23:26:31 [config.py:128] Error retrieving", "Error retrieving"},
		{"(A pid=1) (B pid=2, ip=10.0.0.1) WARNING 01-02 03:04:05 [x.py:1] y [repeated 2x across cluster]", "y"},
		{"(EngineCore pid=25)     raise ValueError(", "raise ValueError("},
		{"plain text (with parentheses pid=none)", "plain text (with parentheses pid=none)"},
		{"(not a prefix) INFO:     x", "(not a prefix) INFO:     x"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Message(tc.line), tc.line)
	}
}

// fixtureEvents parses every line of a file in testdata, split as the supervisor splits a pipe.
func fixtureEvents(t *testing.T, name string) (events []Event, lines []string) {
	t.Helper()
	b, err := os.ReadFile("../testdata/" + name)
	require.NoError(t, err)
	sp := newSplitter(DefaultMaxLineBytes, func(l []byte, _ bool) {
		lines = append(lines, string(l))
		if ev, ok := ParseLogLine(string(l)); ok {
			events = append(events, ev)
			assertNumbersFromLine(t, string(l), ev)
		}
	})
	_, _ = sp.Write(b)
	sp.Flush()
	return events, lines
}

func TestParseLogLineFixtures(t *testing.T) {
	qwen2 := []Event{ // vLLM 0.10.1.1, Qwen2-7B on an A100 at --gpu-memory-utilization 0.25
		Version{"0.10.1.1"},
		Version{"0.10.1.1"},
		LoadStarted{Model: "Qwen2-7B-Instruct"},
		LoadStarted{},
		ModelLoaded{GiB: 14.2488, Seconds: 4.422213},
		KVCacheMemory{AvailableGiB: 5.01},
		KVCacheSize{Tokens: 93872},
		MaxConcurrency{Concurrency: 5.73, TokensPerRequest: 16384},
		CUDAGraphMemory{GiB: 0.50, Seconds: 3},
		EngineInitialized{Seconds: 89.58},
		ServerAddress{URL: "http://0.0.0.0:8081"},
		StartupComplete{},
	}
	tests := []struct {
		file string
		want []Event
	}{
		{"vllm-log-synthetic-startup.txt", []Event{
			Version{"0.26.0"},
			Version{"0.26.0"},
			LoadStarted{},
			ModelLoaded{GiB: 1.12, Seconds: 1.873204},
			KVCacheMemory{AvailableGiB: 130.5},
			KVCacheSize{Tokens: 1221776},
			MaxConcurrency{Concurrency: 29.83, TokensPerRequest: 40960},
			CUDAGraphMemory{GiB: 0.41, Seconds: 5},
			MemoryAdvice{FreeGiB: 145.55, TotalGiB: 145.55, Utilization: 0.92, RequestedGiB: 133.91, ConsumedGiB: 1.37, PeakActivationGiB: 2.04,
				CUDAGraphGiB: 0.41, KVCacheGiB: 130.5, FitRequestedBytes: 139525787484, FillGPUBytes: 152024142315},
			EngineInitialized{Seconds: 28.71, CompilationSeconds: 14.02},
			ServerAddress{URL: "http://0.0.0.0:8000"},
			StartupComplete{},
			Stats{Engine: 0, PromptTokensPerSec: 61.2, GenerationTokensPerSec: 1203.4, Running: 16, KVCacheUsagePercent: 1.3},
			Stats{Engine: 0, GenerationTokensPerSec: 412.8, Preemptions: 3},
		}},
		// A terminal copy hard-wrapped at ~140 columns: the one line whose number was wrapped
		// onto the next line ("num_gpu_blocks is\n: 5867") yields nothing rather than a guess.
		{"vllm-0.10.1.1-serve-qwen2-7b-A100-gmu0.25-linewrapped.log", qwen2},
		{"vllm-0.10.1.1-periodic-stats-lines-qwen2-7b.log", []Event{
			Stats{Engine: 0, GenerationTokensPerSec: 6241.3, Running: 256, Waiting: 238, KVCacheUsagePercent: 96.4, PrefixCacheHitRatePercent: 47.2},
			Stats{Engine: 0, GenerationTokensPerSec: 5749.3, Running: 233, Waiting: 261, KVCacheUsagePercent: 99.8, PrefixCacheHitRatePercent: 46.1},
			Stats{Engine: 0, PromptTokensPerSec: 2966.2, GenerationTokensPerSec: 1134.0, Running: 178, Waiting: 208, KVCacheUsagePercent: 70.0, PrefixCacheHitRatePercent: 42.3},
			Stats{Engine: 0, PromptTokensPerSec: 9187.6, GenerationTokensPerSec: 829.2, Running: 142, Waiting: 118, KVCacheUsagePercent: 36.4, PrefixCacheHitRatePercent: 38.5},
			Stats{Engine: 0, PromptTokensPerSec: 9687.7, GenerationTokensPerSec: 968.4, Running: 230, Waiting: 23, KVCacheUsagePercent: 56.8, PrefixCacheHitRatePercent: 35.2},
			Stats{Engine: 0, PromptTokensPerSec: 2441.7, GenerationTokensPerSec: 4863.9, Running: 238, Waiting: 0, KVCacheUsagePercent: 66.1, PrefixCacheHitRatePercent: 34.5},
			Stats{Engine: 0, GenerationTokensPerSec: 6297.4, Running: 236, Waiting: 0, KVCacheUsagePercent: 78.8, PrefixCacheHitRatePercent: 34.5},
		}},
		{"vllm-0.10.1.1-serve-gpt-oss-120b-ray-4xA100-ansi.log", []Event{
			Version{"0.10.1.1"},
			Version{"0.10.1.1"},
			LoadStarted{Model: "gpt-oss-120b"},
			LoadStarted{},
			LoadStarted{Model: "gpt-oss-120b"},
			LoadStarted{},
			ModelLoaded{GiB: 17.2217, Seconds: 1219.491504},
			ModelLoaded{GiB: 17.2217, Seconds: 1219.554719},
			ModelLoaded{GiB: 17.2217, Seconds: 1229.728125},
			ModelLoaded{GiB: 17.2217, Seconds: 1229.597812},
			KVCacheMemory{AvailableGiB: 45.32},
			KVCacheSize{Tokens: 2640144},
			MaxConcurrency{Concurrency: 284.25, TokensPerRequest: 16384},
			KVCacheSize{Tokens: 2640144},
			MaxConcurrency{Concurrency: 284.25, TokensPerRequest: 16384},
			KVCacheSize{Tokens: 2640144},
			MaxConcurrency{Concurrency: 284.25, TokensPerRequest: 16384},
			KVCacheSize{Tokens: 2640144},
			MaxConcurrency{Concurrency: 284.25, TokensPerRequest: 16384},
			CUDAGraphMemory{GiB: 1.88, Seconds: 101},
			KVCacheMemory{AvailableGiB: 45.32}, // "[repeated 3x across cluster]"
			EngineInitialized{Seconds: 141.56},
			KVCacheSize{Blocks: 330018},
			ServerAddress{URL: "http://0.0.0.0:8081"},
			StartupComplete{},
		}},
		{"vllm-0.25.1-cli-unrecognized-argument.log", []Event{
			Fatal{Reason: InvalidArguments, Line: "vllm: error: unrecognized arguments: --no-such-flag 3"},
		}},
		{"vllm-0.6-fork-v0-serve-opt-1.3b-stderr.log", []Event{
			StartupComplete{},
			ServerAddress{URL: "http://0.0.0.0:31311"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got, _ := fixtureEvents(t, tc.file)
			assert.Equal(t, tc.want, got)
		})
	}

	t.Run("V0 stdout", func(t *testing.T) {
		got, _ := fixtureEvents(t, "vllm-0.6-fork-v0-serve-opt-1.3b-stdout.log")
		var stats []Stats
		var rest []Event
		for _, ev := range got {
			if s, ok := ev.(Stats); ok {
				stats = append(stats, s)
			} else {
				rest = append(rest, ev)
			}
		}
		assert.Equal(t, []Event{
			Version{"0.5.2.dev1210+g6f078ea3c"},
			Version{"0.5.2.dev1210+g6f078ea3c"},
			LoadStarted{Model: "/gpfs/scratch/bsc98/bsc098069/llm_benchmarking/models/opt/opt-1.3b"},
			ModelLoaded{GiB: 2.4509},
			KVCacheMemory{AvailableGiB: 10.49},
			KVCacheSize{Blocks: 3581},
			MaxConcurrency{Concurrency: 27.98, TokensPerRequest: 2048},
		}, rest)
		require.Len(t, stats, 13)
		assert.Equal(t, Stats{Engine: -1, Legacy: true, PromptTokensPerSec: 5630.8, GenerationTokensPerSec: 154.3, Running: 256, Waiting: 243, KVCacheUsagePercent: 52.9}, stats[1])
		assert.Equal(t, Stats{Engine: -1, Legacy: true, PromptTokensPerSec: 657.1, GenerationTokensPerSec: 4417.2, Running: 163, Waiting: 202, KVCacheUsagePercent: 99.5}, stats[3])
	})

	t.Run("crash: no KV cache memory", func(t *testing.T) {
		got, lines := fixtureEvents(t, "vllm-0.25.1-cpu-serve-crash-no-kv-cache-memory.log")
		var fatals []FatalReason
		for _, ev := range got {
			if f, ok := ev.(Fatal); ok {
				fatals = append(fatals, f.Reason)
			}
		}
		assert.Equal(t, []FatalReason{EngineFailed, KVCacheNoMemory, KVCacheNoMemory, EngineFailed}, fatals)
		// The supervisor's cause is the root cause, not the last line of the traceback.
		var c causeTracker
		for _, l := range lines {
			msg := Message(l)
			ev, ok := parseMessage(msg)
			c.observe(msg, ev, ok)
		}
		cause, reason := c.result(false)
		assert.Equal(t, KVCacheNoMemory, reason)
		assert.True(t, strings.HasPrefix(cause, "ValueError: No available memory for the cache blocks."), cause)
		assert.NotContains(t, lines[len(lines)-1], "No available memory", "the cause is not the last line")
	})

	t.Run("crash: max_model_len rejected", func(t *testing.T) {
		got, lines := fixtureEvents(t, "vllm-0.25.1-cpu-serve-crash-max-model-len-rejected.log")
		require.Len(t, got, 2)
		assert.Equal(t, Version{"0.25.1"}, got[0])
		f, ok := got[1].(Fatal)
		require.True(t, ok)
		assert.Equal(t, InvalidConfig, f.Reason)
		assert.True(t, strings.HasPrefix(f.Line, "Value error, User-specified max_model_len (999999) is greater than the derived max_model_len"), f.Line)
		var c causeTracker
		for _, l := range lines {
			msg := Message(l)
			ev, ok := parseMessage(msg)
			c.observe(msg, ev, ok)
		}
		cause, reason := c.result(false)
		assert.Equal(t, InvalidConfig, reason)
		assert.Equal(t, f.Line, cause)
	})
}

// TestParseWrappedLinesGiveNoWrongNumbers wraps the synthetic startup at every width a terminal
// might have: every event found in a fragment must agree with the event of the unwrapped line,
// though it may lack an optional part that was cut off (0 means "not reported"). (The two
// events whose value ends a line, the version and the listen address, can be cut inside the
// value undetectably; a supervisor reads pipes, which never wrap.)
func TestParseWrappedLinesGiveNoWrongNumbers(t *testing.T) {
	_, lines := fixtureEvents(t, "vllm-log-synthetic-startup.txt")
	_, statLines := fixtureEvents(t, "vllm-0.10.1.1-periodic-stats-lines-qwen2-7b.log")
	lines = append(lines, statLines...)
	for width := 20; width <= 200; width += 3 {
		for _, line := range lines {
			whole, wholeOK := ParseLogLine(line)
			r := []rune(line)
			for start := 0; start < len(r); start += width {
				frag := string(r[start:min(start+width, len(r))])
				ev, ok := ParseLogLine(frag)
				if !ok {
					continue
				}
				switch ev.(type) {
				case Version, ServerAddress:
					continue
				}
				if !assert.True(t, wholeOK, "fragment %q of a line without events gave %#v", frag, ev) {
					return
				}
				if !assert.True(t, agrees(ev, whole), "width %d, fragment %q gave %#v, the whole line %#v", width, frag, ev, whole) {
					return
				}
			}
		}
	}
}

// agrees reports whether part is whole with some fields left at their zero value.
func agrees(part, whole Event) bool {
	p, w := reflect.ValueOf(part), reflect.ValueOf(whole)
	if p.Type() != w.Type() {
		return false
	}
	for i := 0; i < p.NumField(); i++ {
		if !p.Field(i).IsZero() && !p.Field(i).Equal(w.Field(i)) {
			return false
		}
	}
	return true
}

var reNumber = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)

// assertNumbersFromLine checks that every non-zero number in ev is printed in line.
func assertNumbersFromLine(t *testing.T, line string, ev Event) {
	t.Helper()
	printed := map[float64]bool{}
	for _, m := range reNumber.FindAllString(StripANSI(line), -1) {
		if f, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimRight(m, ","), ",", ""), 64); err == nil {
			printed[f] = true
			printed[-f] = true
		}
	}
	v := reflect.ValueOf(ev)
	for i := 0; i < v.NumField(); i++ {
		var x float64
		switch f := v.Field(i); f.Type() {
		case reflect.TypeFor[int]():
			x = float64(f.Int())
		case reflect.TypeFor[float64]():
			x = f.Float()
		default:
			continue // enums such as FatalReason
		}
		if x == 0 || x == -1 && v.Type().Field(i).Name == "Engine" {
			continue
		}
		found := false
		for p := range printed {
			if math.Abs(p-x) < 1e-9 {
				found = true
				break
			}
		}
		assert.True(t, found, "%T.%s = %v is not printed in %q", ev, v.Type().Field(i).Name, x, line)
	}
}

// The 0.11-era memory account gives weights and non-torch memory apart and the cache in
// bytes; the event sums the one and converts the other.
func TestParseMemoryAdviceOldForm(t *testing.T) {
	ev, ok := ParseLogLine("(Worker_TP1 pid=1806414) INFO 10-23 15:14:56 [gpu_worker.py:391] Free memory on device (139.21/139.81 GiB) on startup. Desired GPU memory utilization is (0.9, 125.83 GiB). Actual usage is 74.28 GiB for weight, 5.58 GiB for peak activation, 1.38 GiB for non-torch memory, and 2.37 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=45175492096` to fit into requested memory, or `--kv-cache-memory=59540753920` to fully utilize gpu memory. Current kv cache memory in use is 47878721024 bytes.")
	require.True(t, ok)
	a := ev.(MemoryAdvice)
	assert.InDelta(t, 74.28+1.38, a.ConsumedGiB, 1e-9)
	assert.Equal(t, 5.58, a.PeakActivationGiB)
	assert.InDelta(t, 44.59, a.KVCacheGiB, 0.005)
	assert.Equal(t, int64(45175492096), a.FitRequestedBytes)
	assert.Equal(t, int64(59540753920), a.FillGPUBytes)
}

func FuzzParseLogLine(f *testing.F) {
	for _, b := range hostileseed.Files(f, "logs") {
		for _, l := range strings.Split(string(b), "\n") {
			f.Add(l)
		}
	}
	for _, name := range []string{
		"vllm-log-synthetic-startup.txt",
		"vllm-0.10.1.1-periodic-stats-lines-qwen2-7b.log",
		"vllm-0.10.1.1-serve-gpt-oss-120b-ray-4xA100-ansi.log",
		"vllm-0.25.1-cpu-serve-crash-no-kv-cache-memory.log",
		"vllm-0.6-fork-v0-serve-opt-1.3b-stdout.log",
		"vllm-0.25.1-cli-unrecognized-argument.log",
	} {
		b, err := os.ReadFile("../testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if i < 60 || strings.Contains(l, "took") || strings.Contains(l, "cache") || strings.Contains(l, "Error") {
				f.Add(l)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		ev, ok := ParseLogLine(line)
		if ok != (ev != nil) {
			t.Fatalf("ok=%v with event %#v", ok, ev)
		}
		if ok {
			assertNumbersFromLine(t, line, ev)
		}
		_ = Message(line)
	})
}

// The supervisor's status gets the maximum concurrency and max_model_len from either form of
// vLLM's capacity log: the two lines before 0.27, folded one at a time, or the one line after.
func TestStatusFoldsBothCapacityLineForms(t *testing.T) {
	for name, lines := range map[string][]string{
		"two lines, before 0.27": {
			"(EngineCore pid=1) INFO 07-24 10:15:35 [kv_cache_utils.py:2214] GPU KV cache size: 453,248 tokens",
			"(EngineCore pid=1) INFO 07-24 10:15:35 [kv_cache_utils.py:2215] Maximum concurrency for 4,096 tokens per request: 110.66x",
		},
		"one line, from 0.27": {
			"(EngineCore pid=1) INFO 10-08 18:24:15 [kv_cache_utils.py:2464] GPU KV cache size: 453,248 tokens, Maximum concurrency for 4,096 tokens per request: 110.66x",
		},
	} {
		s, err := New([]string{"vllm", "serve", "m"})
		require.NoError(t, err, name)
		r := &run{id: 1}
		s.run = r
		for _, l := range lines {
			s.handleLine(r, Stdout, l, false)
		}
		st := s.Status()
		assert.Equal(t, 453248, st.KVCacheTokens, name)
		assert.Equal(t, 110.66, st.MaxConcurrency, name)
		assert.Equal(t, 4096, st.MaxModelLen, name)
	}
}
