package vlog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"

	"github.com/vllmtop/vllmtop/server/sim"
)

// logo is vLLM's startup banner (api_utils.py log_version_and_model), without the version and
// model that follow its second and third rows.
var logo = [4]string{
	"       █     █     █▄   ▄█",
	" ▄▄ ▄█ █     █     █ ▀▄▀ █",
	"  █▄█▀ █     █     █     █",
	"   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀",
}

// Timings are the durations the startup lines report, in seconds.
type Timings struct {
	WeightsLoad  float64 // "Loading weights took %.2f seconds"
	ModelLoad    float64 // "Model loading took ... GiB and %.6f seconds"
	GraphCapture float64 // "Graph capturing finished in %.0f secs"
	Compilation  float64 // torch.compile, "(compilation: %.2f s)"
	InitEngine   float64 // "init engine (profile, create kv cache, warmup model) took %.2f s"
}

// StartupTimings derives the reported durations from the model-loading time: reading the
// weights is about 28% of it (as in a typical small-model startup); torch.compile, the
// profiling run and CUDA-graph capture grow with the number of layers. The init-engine time
// (profile, compile, KV-cache allocation, graph capture) excludes model loading, as in vLLM.
func StartupTimings(s *sim.Setup, loadSeconds float64) Timings {
	// The whole imitated start-up is split as a real one is spent: about a third loading
	// weights, the rest profiling, compiling and capturing CUDA graphs.
	return Timings{
		WeightsLoad:  0.28 * loadSeconds,
		ModelLoad:    0.30 * loadSeconds,
		Compilation:  0.35 * loadSeconds,
		GraphCapture: 0.15 * loadSeconds,
		InitEngine:   0.70 * loadSeconds,
	}
}

// graphPoolGiB is the CUDA-graph pool reported after capture. The V2 model runner does not
// take it out of the KV-cache budget, so unless the setup reserves graph memory it is an
// estimate that grows slowly with depth (about 0.4 GiB for a 28-layer model).
func graphPoolGiB(s *sim.Setup) float64 {
	if b := s.Capacity.CUDAGraphBytes; b > 0 {
		return float64(b) / (1 << 30)
	}
	return float64(sim.CUDAGraphEstimateBytes(s)) / (1 << 30)
}

// Startup writes a successful `vllm serve` startup up to the engine being ready: the logo,
// the non-default args (a Python dict, keys in the given order), the max model len and
// chunked-prefill lines, the engine config, model loading (loadSeconds is the whole
// start-up, split by StartupTimings), the KV-cache sizing lines, CUDA-graph capture and "init engine ... took". The numbers
// are the setup's, formatted as vLLM formats them.
func (l *Logger) Startup(s *sim.Setup, nonDefaultArgs []KV, loadSeconds float64) {
	t := StartupTimings(s, loadSeconds)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.startupAPI(s, nonDefaultArgs)
	l.startupEngine(s, t)
}

// startupAPI writes the API server's start-up lines. The caller holds l.mu.
func (l *Logger) startupAPI(s *sim.Setup, nonDefaultArgs []KV) {
	version := s.Version.String()
	api := l.api()

	at := l.openingLines()
	if n := s.APIServers(); s.APIServerCount == 0 && n > 1 {
		// vllm serve's own process, before it starts the API servers (0.15.1's line number).
		l.record(proc{pid: l.apiPID}, Info, "serve.py:100", fmt.Sprintf("Defaulting api_server_count to data_parallel_size (%d).", n))
	}
	if at.banner {
		l.record(api, Info, at.version, strings.Join([]string{
			"",
			logo[0],
			logo[1] + "  version " + version,
			logo[2] + "  model   " + s.Model,
			logo[3],
			"",
		}, "\n"))
	} else {
		l.record(api, Info, at.version, "vLLM API server version "+version)
	}
	l.record(api, Info, at.args, "non-default args: "+PyDict(nonDefaultArgs))
	// ModelConfig's dtype resolution, on a card without bfloat16 (0.11's line numbers).
	for i, line := range s.DTypeFallbackLines() {
		l.record(api, Warning, []string{"model.py:1682", "model.py:1733"}[i], line)
	}
	l.record(api, Info, "model.py:1792", fmt.Sprintf("Using max model len %d", s.MaxModelLen))
	if s.ChunkedPrefillEnabled() {
		l.record(api, Info, "scheduler.py:242", fmt.Sprintf("Chunked prefill is enabled with max_num_batched_tokens=%d.", s.MaxNumBatchedTokens))
	}
	if lay := s.Capacity.Layout; lay.BlockSizeForcedBy != "" {
		// CudaPlatform.check_and_update_config, for the MLA decode backend it will pick.
		l.record(api, Info, "cuda.py:210", fmt.Sprintf("Forcing kv cache block size to %d for %s backend.", lay.BlockSize, lay.BlockSizeForcedBy))
	}
}

// startupEngine writes one engine core's start-up lines, under its process names. The caller
// holds l.mu.
func (l *Logger) startupEngine(s *sim.Setup, t Timings) {
	l.engineLines(s, t, nil)
}

// engineLines writes an engine core's start-up lines. With fail, it stops where vLLM raises
// that failure: a GPU with too little free memory fails as the worker initialises its device,
// before the model loads; weights that do not fit fail while they load; a KV cache that cannot
// be sized fails after profiling, before the "Available KV cache memory" line, which
// StartupFailure writes with the error. The caller holds l.mu.
func (l *Logger) engineLines(s *sim.Setup, t Timings, fail *sim.StartupError) {
	c := s.Capacity
	version := s.Version.String()
	eng, wrk := l.engine(), l.loadWorker(s)
	weights := c.WeightsBytes
	if len(c.Stages) > 1 {
		weights = c.Stages[0].WeightsBytes
	}

	l.record(eng, Info, "core.py:116", fmt.Sprintf("Initializing a V1 LLM engine (v%s) with config: %s", version, engineConfig(s, max(1, l.dpSize))))
	if lay := c.Layout; lay.BlockSizeRaised {
		// The hybrid alignment (Platform._align_hybrid_block_size), before the model loads.
		l.record(eng, Info, "interface.py:911", fmt.Sprintf("Setting attention block size to %d tokens to ensure that attention page size is >= mamba page size.", lay.BlockSize))
	}
	if lay := c.Layout; lay.MambaPaddingPercent > 0 {
		l.record(eng, Info, "interface.py:935", fmt.Sprintf("Padding mamba page size by %.2f%% to ensure that mamba page size and attention page size are exactly equal.", lay.MambaPaddingPercent))
	}
	if fail != nil && (fail.Kind == sim.FreeMemoryTooLow || fail.Kind == sim.DTypeUnsupported) {
		return // both are checked as the worker initialises its device
	}
	l.partitionLines(s)
	if !l.loadLines(s, wrk, weights, t, fail != nil && (fail.Kind == sim.LoadOOM || fail.Kind == sim.KVDTypeRefused || fail.Kind == sim.KVDTypeUnsupported || fail.Kind == sim.AttentionBackendInvalid)) {
		return
	}
	l.compileLines(s, wrk, t)
	if s.CUDAGraphProfiled() && !s.V2ModelRunner() {
		// The V1 runner's own estimate line; the V2 runner's wording is not modelled.
		l.record(wrk, Info, "gpu_model_runner.py:5993", fmt.Sprintf("Estimated CUDA graph memory: %.2f GiB total", float64(sim.CUDAGraphEstimateBytes(s))/(1<<30)))
	}
	if fail != nil {
		return
	}

	// With --num-gpu-blocks-override the capacity is sized from the override, but the worker
	// still reports the profiled budget and the override line shows the profiled block count.
	profiled := profiledKVBytes(s, c)
	switch {
	case c.KVPinned:
		l.record(wrk, Info, "gpu_worker.py:520", pinnedKVLine(c))
	case len(c.Stages) > 1:
		l.stageKVLines(s)
	default:
		l.record(wrk, Info, "gpu_worker.py:547", fmt.Sprintf("Available KV cache memory: %s GiB", sim.FormatGiB(profiled)))
	}
	l.graphProfilingLine(s, wrk)
	l.overrideLine(s, c, eng, profiled)
	if c.AutoFitFrom > 0 {
		l.record(eng, Info, "kv_cache_utils.py:1373", fmt.Sprintf("Auto-fit max_model_len: reduced from %d to %d to fit in available GPU memory (%s GiB available for KV cache)",
			c.AutoFitFrom, s.MaxModelLen, sim.FormatGiB(c.AvailableKVBytes)))
	}
	l.kvCapacityLines(s, eng)
	l.graphCaptureLines(s, wrk, t)
	l.memoryAdviceLine(s, wrk, profiled)
	initEngine := fmt.Sprintf("init engine (profile, create kv cache, warmup model) took %.2f s (compilation: %.2f s)", t.InitEngine, t.Compilation)
	if !l.atLeast("0.20.0") {
		initEngine = fmt.Sprintf("init engine (profile, create kv cache, warmup model) took %.2f seconds", t.InitEngine)
	}
	l.record(eng, Info, "core.py:340", initEngine)
}

// kvCapacityRelease is the first release that reports the KV cache's capacity on one line, once
// the scheduler's configuration is resolved (vllm#50462, merged 2026-07-30); the 0.31.0 logs
// show it (docs/vllm-behaviour.md#startup-log-lines).
const kvCapacityRelease = "0.27.0"

// kvCapacityLines reports the cache's tokens and the maximum concurrency: on one line from
// kvCapacityRelease, before it on two lines, once per worker (get_kv_cache_configs). The
// caller holds l.mu.
func (l *Logger) kvCapacityLines(s *sim.Setup, eng proc) {
	c := s.Capacity
	tokens, perRequest := commas(c.KVCacheTokens), commas(s.MaxModelLen)
	if s.Version.AtLeast(kvCapacityRelease) {
		l.record(eng, Info, "kv_cache_utils.py:2464", fmt.Sprintf("GPU KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx", tokens, perRequest, c.MaxConcurrency))
		return
	}
	for range s.WorldSize() {
		l.record(eng, Info, "kv_cache_utils.py:2214", fmt.Sprintf("GPU KV cache size: %s tokens", tokens))
		l.record(eng, Info, "kv_cache_utils.py:2215", fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", perRequest, c.MaxConcurrency))
	}
}

// loadWorker is the process of the model runner's lines: the first worker, or with pipeline
// stages the first stage's, whose weights those lines report.
func (l *Logger) loadWorker(s *sim.Setup) proc {
	if len(s.Capacity.Stages) > 1 {
		return l.stageWorker(s.TensorParallelSize, 0)
	}
	return l.worker(s.TensorParallelSize)
}

// loadLines writes the model runner's loading lines and reports whether the weights loaded: a
// load that runs out of memory stops after the load's first line. The caller holds l.mu.
func (l *Logger) loadLines(s *sim.Setup, wrk proc, weights int64, t Timings, oom bool) bool {
	if s.V2ModelRunner() {
		l.record(wrk, Info, "gpu_worker.py:373", "Using V2 Model Runner")
		l.record(wrk, Info, "model_runner.py:288", "Loading model from scratch...")
		if oom {
			return false
		}
		l.record(wrk, Info, "default_loader.py:430", fmt.Sprintf("Loading weights took %.2f seconds", t.WeightsLoad))
		// The V2 runner's line gained "memory" as the V1 runner's has it: the source now says so,
		// the newest log we hold without it is 0.30.0's (0.31 by our mapping).
		loaded, at := "Model loading took %s GiB and %.6f seconds", "model_runner.py:309"
		if s.Version.AtLeast("0.31.0") {
			loaded, at = "Model loading took %s GiB memory and %.6f seconds", "model_runner.py:428"
		}
		l.record(wrk, Info, at, fmt.Sprintf(loaded, sim.FormatGiB(weights), t.ModelLoad))
		return true
	}
	l.record(wrk, Info, "gpu_model_runner.py:4302", "Starting to load model "+s.Model+"...")
	if oom {
		return false
	}
	l.record(wrk, Info, "default_loader.py:430", fmt.Sprintf("Loading weights took %.2f seconds", t.WeightsLoad))
	l.record(wrk, Info, "gpu_model_runner.py:4384", v1ModelLoading(s, weights, t.ModelLoad))
	return true
}

// compileLines are torch.compile's lines between model loading and the KV-cache sizing, in the
// wording of the release imitated: on a cold compile cache (--sim-compile-cache cold) the graph
// is compiled, on a warm one it is loaded. Until 0.14 the graph is the one "for dynamic shape";
// from 0.14 it is the "compile range (1, B)" of max_num_batched_tokens; from 0.19 the total is
// "took" where it was "takes", and the AOT artifact is saved or loaded. 0.19 to 0.25 also log that
// they cache the graph, which 0.26 no longer does at INFO. The wording is the public logs' (0.10.1.1,
// 0.11, 0.14.1, 0.19.0 and 0.26.0; releases before 0.10 print 0.10's, as the rest of their log).
// The paths are under the cache root of the vllm/vllm-openai image, whose user is root
// (/root/.cache/vllm, as vLLM prints it: expanded), named by a hash of the settings. None with
// --enforce-eager.
// The caller holds l.mu.
func (l *Logger) compileLines(s *sim.Setup, wrk proc, t Timings) {
	if s.EnforceEager {
		return
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%d|%d|%d|%s|%s", s.Model, s.Version, s.TensorParallelSize,
		s.PipelineParallelSize, s.MaxNumBatchedTokens, s.ModelDType, s.KVDType)))
	key := hex.EncodeToString(sum[:])
	cache := "/root/.cache/vllm/torch_compile_cache"
	cold := s.CompileCache == sim.CompileCold
	dir := "Using cache directory: " + cache + "/" + key[:10] + "/rank_0_0/backbone for vLLM's torch.compile"
	dynamo := fmt.Sprintf("Dynamo bytecode transform time: %.2f s", 0.4*t.Compilation)
	if !s.Version.AtLeast("0.19.0") {
		span, at := "dynamic shape", [4]string{"backends.py:548", "backends.py:559", "backends.py:161", "backends.py:218"}
		cacheLine := "Cache the graph for dynamic shape for later use"
		if s.Version.AtLeast("0.14.0") {
			span = fmt.Sprintf("compile range (1, %d)", s.MaxNumBatchedTokens)
			at = [4]string{"backends.py:644", "backends.py:704", "backends.py:226", "backends.py:257"}
			cacheLine = "Cache the graph of " + span + " for later use"
		}
		l.record(wrk, Info, at[0], dir)
		l.record(wrk, Info, at[1], dynamo)
		if cold {
			l.record(wrk, Info, "backends.py:197", cacheLine)
			l.record(wrk, Info, at[3], fmt.Sprintf("Compiling a graph for %s takes %.2f s", span, 0.45*t.Compilation))
		} else {
			l.record(wrk, Info, at[2], fmt.Sprintf("Directly load the compiled graph(s) for %s from the cache, took %.3f s", span, 0.35*t.Compilation))
		}
		l.record(wrk, Info, "monitor.py:34", fmt.Sprintf("torch.compile takes %.2f s in total", t.Compilation))
		return
	}
	span := fmt.Sprintf("compile range (1, %d)", s.MaxNumBatchedTokens)
	aot := cache + "/torch_aot_compile/" + key + "/rank_0_0/model"
	l.record(wrk, Info, "backends.py:1089", dir)
	l.record(wrk, Info, "backends.py:1155", dynamo)
	if cold {
		if !s.Version.AtLeast("0.26.0") {
			l.record(wrk, Info, "backends.py:372", "Cache the graph of "+span+" for later use")
		}
		l.record(wrk, Info, "backends.py:393", fmt.Sprintf("Compiling a graph for %s takes %.2f s", span, 0.45*t.Compilation))
		l.record(wrk, Info, "decorators.py:708", "saved AOT compiled function to "+aot)
	} else {
		l.record(wrk, Info, "backends.py:292", fmt.Sprintf("Directly load the compiled graph(s) for %s from the cache, took %.3f s", span, 0.35*t.Compilation))
		l.record(wrk, Info, "decorators.py:311", "Directly load AOT compilation from path "+aot)
	}
	l.record(wrk, Info, "monitor.py:53", fmt.Sprintf("torch.compile took %.2f s in total", t.Compilation))
	l.record(wrk, Info, "monitor.py:81", fmt.Sprintf("Initial profiling/warmup run took %.2f s", 0.04*t.Compilation))
}

// graphProfilingLine is the worker's note, after "Available KV cache memory", that the
// CUDA-graph estimate came out of the KV budget (Worker.determine_available_memory logs it
// whenever the estimate is positive). The caller holds l.mu.
func (l *Logger) graphProfilingLine(s *sim.Setup, wrk proc) {
	if !s.CUDAGraphProfiled() {
		return
	}
	est := float64(sim.CUDAGraphEstimateBytes(s)) / (1 << 30)
	total := float64(s.Capacity.TotalBytes) / (1 << 30)
	u := s.GPUMemoryUtilization
	l.record(wrk, Info, "gpu_worker.py:497", fmt.Sprintf("CUDA graph memory profiling is enabled (default since v0.21.0). The current --gpu-memory-utilization=%.4f is equivalent to --gpu-memory-utilization=%.4f without CUDA graph memory profiling. To maintain the same effective KV cache size as before, increase --gpu-memory-utilization to %.4f. To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.", u, u-est/total, u+est/total))
}

// graphCaptureLines are the lines of the CUDA-graph capture after the KV cache is allocated:
// the runner's "Graph capturing finished" and, when an estimate was reserved, the worker's
// comparison of the pool with it (Worker.compile_or_warm_up_model). --enforce-eager captures
// nothing and logs neither. The caller holds l.mu.
func (l *Logger) graphCaptureLines(s *sim.Setup, wrk proc, t Timings) {
	if s.EnforceEager {
		return
	}
	file := "gpu_model_runner.py:5768"
	if s.V2ModelRunner() {
		file = "model_runner.py:766"
	}
	actual := graphPoolGiB(s)
	l.record(wrk, Info, file, fmt.Sprintf("Graph capturing finished in %.0f secs, took %.2f GiB", t.GraphCapture, actual))
	if !s.CUDAGraphProfiled() {
		return
	}
	est := float64(sim.CUDAGraphEstimateBytes(s)) / (1 << 30)
	diff := math.Abs(actual - est)
	l.record(wrk, Info, "gpu_worker.py:792", fmt.Sprintf("CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), difference: %s GiB (%.1f%%).",
		sim.PyFloat(round2(actual)), sim.PyFloat(round2(est)), sim.PyFloat(round2(diff)), 100*diff/max(actual, 1.0/(1<<30))))
}

// pinnedKVLine is the worker's line when --kv-cache-memory-bytes sized the cache and the
// memory profiling was skipped (Worker.determine_available_memory).
func pinnedKVLine(c sim.Capacity) string {
	return fmt.Sprintf("Initial free memory %.2f GiB, reserved %.2f GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. "+
		"This does not respect the gpu_memory_utilization config. Only use kv_cache_memory_bytes config when you want manual control of KV cache memory size. "+
		"If OOM'ed, check the difference of initial free memory between the current run and the previous run where kv_cache_memory_bytes is suggested and update it correspondingly.",
		float64(c.FreeBytes)/(1<<30), float64(c.AvailableKVBytes)/(1<<30))
}

// adviceMargin is the 150 MiB the worker keeps out of both --kv-cache-memory suggestions
// ("the memory profiling may slightly underestimate the memory consumption").
const adviceMargin = 150 << 20

// memoryAdviceLine is the worker's account of the memory after the graphs are captured, with
// the two --kv-cache-memory values that would fit the requested budget or the whole free
// memory (Worker.compile_or_warm_up_model). It is logged at INFO from 0.25 (vLLM PR #47374,
// 2026-07-03; at DEBUG before), only when the cache was profiled, and with pipeline stages
// not at all (each stage's worker would print its own). The profile run's peak holds the
// CUDA-graph estimate, and the graphs actually captured are counted again, as vLLM does.
// The caller holds l.mu.
func (l *Logger) memoryAdviceLine(s *sim.Setup, wrk proc, kv int64) {
	c := s.Capacity
	if c.KVPinned || len(c.Stages) > 1 || !s.Version.AtLeast("0.25.0") {
		return
	}
	consumed := c.WeightsBytes + c.NonTorchBytes
	peak := c.ActivationBytes + c.CUDAGraphBytes
	var graphs int64
	if !s.EnforceEager {
		graphs = int64(graphPoolGiB(s) * (1 << 30))
	}
	nonKV := consumed + peak + graphs
	toRequested := c.RequestedBytes - nonKV - adviceMargin
	toGPU := c.FreeBytes - nonKV - adviceMargin
	l.record(wrk, Info, "gpu_worker.py:804", fmt.Sprintf("Free memory on device (%s/%s GiB) on startup. Desired GPU memory utilization is (%s, %s GiB). "+
		"Actual usage is %s GiB for consumed memory (weights + non-torch), %s GiB for peak activation, and %s GiB for CUDAGraph memory. "+
		"Replace gpu_memory_utilization config with `--kv-cache-memory=%d` (%s GiB) to fit into requested memory, or `--kv-cache-memory=%d` (%s GiB) to fully utilize gpu memory. "+
		"Current kv cache memory in use is %s GiB.",
		sim.FormatGiB(c.FreeBytes), sim.FormatGiB(c.TotalBytes), sim.PyFloat(s.GPUMemoryUtilization), sim.FormatGiB(c.RequestedBytes),
		sim.FormatGiB(consumed), sim.FormatGiB(peak), sim.FormatGiB(graphs),
		toRequested, sim.FormatGiB(toRequested), toGPU, sim.FormatGiB(toGPU), sim.FormatGiB(kv)))
}

// round2 is Python's round(x, 2) for the figures vLLM prints that way.
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// v1ModelLoading is the V1 model runner's "Model loading took" line in the format of the
// release: %.4f GiB until 0.12, "GiB memory" from 0.12 (PR #28178), format_gib from 0.15
// (PR #31865).
func v1ModelLoading(s *sim.Setup, weights int64, seconds float64) string {
	switch {
	case s.Version.AtLeast("0.15.0"):
		return fmt.Sprintf("Model loading took %s GiB memory and %.6f seconds", sim.FormatGiB(weights), seconds)
	case s.Version.AtLeast("0.12.0"):
		return fmt.Sprintf("Model loading took %.4f GiB memory and %.6f seconds", float64(weights)/(1<<30), seconds)
	}
	return fmt.Sprintf("Model loading took %.4f GiB and %.6f seconds", float64(weights)/(1<<30), seconds)
}

// profiledKVBytes is the KV budget the worker reports: the profiled one, also where
// --num-gpu-blocks-override then sizes the cache.
func profiledKVBytes(s *sim.Setup, c sim.Capacity) int64 {
	if s.NumGPUBlocksOverride > 0 {
		return c.RequestedBytes - c.WeightsBytes - c.ActivationBytes - c.NonTorchBytes - c.CUDAGraphBytes
	}
	return c.AvailableKVBytes
}

// overrideLine is the engine's "Overriding num_gpu_blocks" line, with the profiled count.
func (l *Logger) overrideLine(s *sim.Setup, c sim.Capacity, eng proc, profiled int64) {
	if o := s.NumGPUBlocksOverride; o > 0 && c.BlockBytes > 0 {
		l.record(eng, Info, "kv_cache_utils.py:2161", fmt.Sprintf("Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d", floorDiv(profiled, c.BlockBytes), o))
	}
}

// floorDiv is Python's a // b for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// engineConfig is the config string of "Initializing a V1 LLM engine", with the nested config
// objects abbreviated.
func engineConfig(s *sim.Setup, dpSize int) string {
	quant := "None"
	if q := s.QuantizationMethod(); q != "" {
		quant = q
	}
	specCfg := "None"
	if sp := s.Speculative; sp != nil {
		// SpeculativeConfig.__repr__: an MTP drafter is the target model itself; n-gram
		// lookup has no model.
		model := pyStr(sp.Model)
		switch {
		case sp.Method == "mtp" && sp.Model == "":
			model = pyStr(s.Model)
		case sp.Method == "ngram":
			model = "None"
		}
		specCfg = fmt.Sprintf("SpeculativeConfig(method=%s, model=%s, num_spec_tokens=%d)", pyStr(sp.Method), model, sp.NumSpeculativeTokens)
	}
	kv := s.EngineConfigKVDType()
	fields := []string{
		"model=" + pyStr(s.Model),
		"speculative_config=" + specCfg,
		"tokenizer=" + pyStr(s.Model),
		"skip_tokenizer_init=False",
		"tokenizer_mode=auto",
		"revision=None",
		"tokenizer_revision=None",
		"trust_remote_code=False",
		"dtype=torch." + s.ModelDType,
		fmt.Sprintf("max_seq_len=%d", s.MaxModelLen),
		"download_dir=None",
		"load_format=auto",
		fmt.Sprintf("tensor_parallel_size=%d", s.TensorParallelSize),
		fmt.Sprintf("pipeline_parallel_size=%d", max(1, s.PipelineParallelSize)),
		fmt.Sprintf("data_parallel_size=%d", dpSize),
		"decode_context_parallel_size=1",
		"dcp_comm_backend=ag_rs",
		"disable_custom_all_reduce=False",
		"quantization=" + quant,
		"quantization_config=None",
		"enforce_eager=" + pyBool(s.EnforceEager),
		"enable_return_routed_experts=False",
		"kv_cache_dtype=" + kv,
		"device_config=cuda",
		"structured_outputs_config=StructuredOutputsConfig(...)",
		"observability_config=ObservabilityConfig(...)",
		"seed=0",
		"served_model_name=" + s.Model,
		"enable_prefix_caching=" + pyBool(s.PrefixCachingEnabled()),
		"enable_chunked_prefill=" + pyBool(s.ChunkedPrefillEnabled()),
		"pooler_config=None",
		"compilation_config={...}",
		"kernel_config=KernelConfig(...)",
	}
	return strings.Join(fields, ", ")
}

// opening is where a release logs its first two lines: the version (a line, or from 0.15 the
// banner) and the non-default args.
type opening struct {
	from          string // the first release these apply to
	banner        bool
	version, args string
}

// openings are the first lines' places as public logs of each release show them (the
// file and line of "vLLM API server version", of the banner and of "non-default args"); a
// release takes the latest entry at or before it.
var openings = []opening{
	{"0.0.0", false, "api_server.py:1755", "cli_args.py:261"}, // 0.10.0
	{"0.10.1", false, "api_server.py:1805", "utils.py:326"},
	{"0.10.2", false, "api_server.py:1896", "utils.py:328"},
	{"0.11.0", false, "api_server.py:1839", "utils.py:233"},
	{"0.11.1", false, "api_server.py:1977", "utils.py:253"},
	{"0.13.0", false, "api_server.py:1351", "utils.py:253"},
	{"0.14.0", false, "api_server.py:1272", "utils.py:263"},
	{"0.15.0", true, "utils.py:325", "utils.py:261"},
	{"0.16.0", true, "utils.py:293", "utils.py:261"},
	{"0.17.0", true, "utils.py:302", "utils.py:261"},
	{"0.19.0", true, "utils.py:299", "utils.py:261"},
	{"0.24.0", true, "api_utils.py:339", "api_utils.py:273"},
	{"0.26.0", true, "api_utils.py:345", "api_utils.py:273"},
	{"0.28.0", true, "api_utils.py:345", "api_utils.py:286"},
}

// openingLines is the opening of the release l imitates (the newest without one).
func (l *Logger) openingLines() opening {
	o := openings[0]
	for _, e := range openings {
		if l.atLeast(e.from) {
			o = e
		}
	}
	return o
}
