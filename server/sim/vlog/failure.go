package vlog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vllmtop/vllmtop/server/sim"
)

// Paths of a vLLM installation as they appear in tracebacks (the vllm/vllm-openai image).
const (
	sitePackages = "/usr/local/lib/python3.12/dist-packages/"
	vllmPkg      = sitePackages + "vllm/"
	pyStdlib     = "/usr/lib/python3.12/"
)

// frame is one entry of a Python traceback. underline is the part of code Python 3.12 marks
// with carets ("" when it marks nothing, i.e. the whole statement).
type frame struct {
	file      string
	line      int
	fn        string
	code      string
	underline string
}

var otelWrapper = frame{vllmPkg + "tracing/otel.py", 178, "sync_wrapper", "return func(*args, **kwargs)", "func(*args, **kwargs)"}

// engineCoreFrames is the engine core's stack from run_engine_core down to the raise, by
// failure kind.
func engineCoreFrames(err *sim.StartupError) []frame {
	fs := []frame{
		{vllmPkg + "v1/engine/core.py", 1200, "run_engine_core", "engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)", "EngineCoreProc(*args, engine_index=dp_rank, **kwargs)"},
		otelWrapper,
		{vllmPkg + "v1/engine/core.py", 966, "__init__", "super().__init__(", ""},
	}
	executor := []frame{
		{vllmPkg + "v1/engine/core.py", 108, "__init__", "self.model_executor = executor_class(vllm_config)", "executor_class(vllm_config)"},
		otelWrapper,
		{vllmPkg + "v1/executor/abstract.py", 103, "__init__", "self._init_executor()", ""},
	}
	// Both KV-cache failures are raised under EngineCore._initialize_kv_caches.
	initKV := []frame{
		{vllmPkg + "v1/engine/core.py", 133, "__init__", "kv_cache_config = self._initialize_kv_caches(vllm_config)", "self._initialize_kv_caches(vllm_config)"},
		otelWrapper,
	}
	// The device checks are raised as the worker initialises its device.
	initDevice := []frame{
		{vllmPkg + "v1/executor/uniproc_executor.py", 47, "_init_executor", "self.driver_worker.init_device()", ""},
		{vllmPkg + "v1/worker/worker_base.py", 326, "init_device", "self.worker.init_device()  # type: ignore", "self.worker.init_device()"},
	}
	switch err.Kind {
	case sim.FreeMemoryTooLow:
		fs = slices.Concat(fs, executor, initDevice, []frame{
			{vllmPkg + "v1/worker/gpu_worker.py", 262, "init_device", "self.requested_memory = request_memory(init_snapshot, self.cache_config)", "request_memory(init_snapshot, self.cache_config)"},
			{vllmPkg + "v1/worker/utils.py", 409, "request_memory", "raise ValueError(", ""},
		})
	case sim.DTypeUnsupported:
		fs = slices.Concat(fs, executor, initDevice, []frame{
			{vllmPkg + "v1/worker/gpu_worker.py", 236, "init_device", "current_platform.check_if_supports_dtype(self.model_config.dtype)", ""},
			{vllmPkg + "platforms/cuda.py", 520, "check_if_supports_dtype", "raise ValueError(", ""},
		})
	case sim.LoadOOM, sim.KVDTypeRefused, sim.KVDTypeUnsupported, sim.AttentionBackendInvalid:
		fs = append(fs, executor...)
		fs = append(fs,
			frame{vllmPkg + "v1/executor/uniproc_executor.py", 48, "_init_executor", "self.driver_worker.load_model()", ""},
			frame{vllmPkg + "v1/worker/worker_base.py", 337, "load_model", "self.worker.load_model()", ""},
			frame{vllmPkg + "v1/worker/gpu_worker.py", 310, "load_model", "self.model_runner.load_model(eep_scale_up=eep_scale_up)", ""},
		)
		fs = append(fs, loadFrames(err)...)
		fs = append(fs, buildFrames(err)...)
	case sim.KVCacheOOM:
		fs = append(append(fs, initKV...),
			frame{vllmPkg + "v1/engine/core.py", 318, "_initialize_kv_caches", "self.model_executor.initialize_from_config(kv_cache_configs)", ""},
			frame{vllmPkg + "v1/executor/abstract.py", 116, "initialize_from_config", "self.collective_rpc(\"initialize_from_config\", args=(kv_cache_configs,))", ""},
			frame{vllmPkg + "v1/worker/gpu_worker.py", 456, "initialize_from_config", "self.model_runner.initialize_kv_cache(kv_cache_config)", ""},
			frame{vllmPkg + "v1/worker/gpu_model_runner.py", 6402, "_allocate_kv_cache_tensors", "tensor = torch.zeros(", "torch.zeros("},
		)
	default: // NoKVMemory, MaxModelLenTooLarge: the KV-cache check
		fs = append(append(fs, initKV...),
			frame{vllmPkg + "v1/engine/core.py", 294, "_initialize_kv_caches", "kv_cache_configs = get_kv_cache_configs(", "get_kv_cache_configs("},
			frame{vllmPkg + "v1/core/kv_cache_utils.py", 2101, "get_kv_cache_configs", "_check_enough_kv_cache_memory(", ""},
			frame{vllmPkg + "v1/core/kv_cache_utils.py", 740, "_check_enough_kv_cache_memory", "raise ValueError(", ""},
		)
	}
	return fs
}

// loadFrames is the model runner's stack from load_model to the model's construction, where
// a parameter's allocation runs out of memory or a layer refuses a setting. The V1 runner catches the error, logs its advice
// and re-raises it (hence load_model twice); the V2 runner lets it through.
func loadFrames(err *sim.StartupError) []frame {
	runner := []frame{{vllmPkg + "v1/worker/gpu_model_runner.py", 4755, "load_model", "self.model = model_loader.load_model(", "model_loader.load_model("}}
	switch {
	case err.LoggedError != "":
		runner = append([]frame{{vllmPkg + "v1/worker/gpu_model_runner.py", 4820, "load_model", "raise e", ""}}, runner...)
	case err.Setup != nil && err.Setup.V2ModelRunner():
		runner = []frame{{vllmPkg + "v1/worker/gpu/model_runner.py", 305, "load_model", "self.model = model_loader.load_model(", "model_loader.load_model("}}
	}
	return append(runner,
		frame{vllmPkg + "model_executor/model_loader/base_loader.py", 50, "load_model", "model = initialize_model(", "initialize_model("},
		frame{vllmPkg + "model_executor/model_loader/utils.py", 55, "initialize_model", "return model_class(vllm_config=vllm_config, prefix=prefix)", "model_class(vllm_config=vllm_config, prefix=prefix)"},
	)
}

// processFrames is the top of the engine core process's stack, as Python prints it when the
// process's target raises.
var processFrames = []frame{
	{pyStdlib + "multiprocessing/process.py", 314, "_bootstrap", "self.run()", ""},
	{pyStdlib + "multiprocessing/process.py", 108, "run", "self._target(*self._args, **self._kwargs)", ""},
	{vllmPkg + "v1/engine/core.py", 1235, "run_engine_core", "raise e", ""},
}

// cliToEngineArgsFrames is the API server's stack from the `vllm` command into
// build_async_engine_client_from_engine_args, where the engine config is built and the engine
// client started.
var cliToEngineArgsFrames = []frame{
	{"/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())", "main()"},
	{vllmPkg + "entrypoints/cli/main.py", 95, "main", "args.dispatch_function(args)", ""},
	{vllmPkg + "entrypoints/cli/serve.py", 148, "cmd", "uvloop.run(run_server(args))", ""},
	{sitePackages + "uvloop/__init__.py", 96, "run", "return __asyncio.run(", "__asyncio.run("},
	{pyStdlib + "asyncio/runners.py", 195, "run", "return runner.run(main)", "runner.run(main)"},
	{pyStdlib + "asyncio/runners.py", 118, "run", "return self._loop.run_until_complete(task)", "self._loop.run_until_complete(task)"},
	{"uvloop/loop.pyx", 1518, "uvloop.loop.Loop.run_until_complete", "", ""},
	{sitePackages + "uvloop/__init__.py", 48, "wrapper", "return await main", "await main"},
	{vllmPkg + "entrypoints/openai/api_server.py", 698, "run_server", "await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)", ""},
	{vllmPkg + "entrypoints/openai/api_server.py", 712, "run_server_worker", "async with build_async_engine_client(", "build_async_engine_client("},
	{pyStdlib + "contextlib.py", 210, "__aenter__", "return await anext(self.gen)", "await anext(self.gen)"},
	{vllmPkg + "entrypoints/openai/api_server.py", 100, "build_async_engine_client", "async with build_async_engine_client_from_engine_args(", "build_async_engine_client_from_engine_args("},
	{pyStdlib + "contextlib.py", 210, "__aenter__", "return await anext(self.gen)", "await anext(self.gen)"},
}

// apiServerFrames is the API server's stack from the `vllm` command to the RuntimeError it
// raises when the engine core exits during startup.
var apiServerFrames = slices.Concat(cliToEngineArgsFrames, []frame{
	{vllmPkg + "entrypoints/openai/api_server.py", 136, "build_async_engine_client_from_engine_args", "async_llm = AsyncLLM.from_vllm_config(", "AsyncLLM.from_vllm_config("},
	{vllmPkg + "v1/engine/async_llm.py", 217, "from_vllm_config", "return cls(", "cls("},
	{vllmPkg + "v1/engine/async_llm.py", 146, "__init__", "self.engine_core = EngineCoreClient.make_async_mp_client(", "EngineCoreClient.make_async_mp_client("},
	otelWrapper,
	{vllmPkg + "v1/engine/core_client.py", 132, "make_async_mp_client", "return AsyncMPClient(*client_args)", "AsyncMPClient(*client_args)"},
	otelWrapper,
	{vllmPkg + "v1/engine/core_client.py", 963, "__init__", "super().__init__(", ""},
	{vllmPkg + "v1/engine/core_client.py", 573, "__init__", "with launch_core_engines(", "launch_core_engines("},
	{pyStdlib + "contextlib.py", 144, "__exit__", "next(self.gen)", ""},
	{vllmPkg + "v1/engine/utils.py", 1213, "launch_core_engines", "wait_for_engine_startup(", ""},
	{vllmPkg + "v1/engine/utils.py", 1272, "wait_for_engine_startup", "raise RuntimeError(", ""},
})

// traceback renders frames and the final exception line as Python 3.12 prints them.
func traceback(frames []frame, exception string) []string {
	lines := []string{"Traceback (most recent call last):"}
	for _, f := range frames {
		lines = append(lines, fmt.Sprintf("  File \"%s\", line %d, in %s", f.file, f.line, f.fn))
		if f.code == "" {
			continue
		}
		lines = append(lines, "    "+f.code)
		if i := strings.Index(f.code, f.underline); f.underline != "" && i >= 0 {
			lines = append(lines, strings.Repeat(" ", 4+i)+strings.Repeat("^", len(f.underline)))
		}
	}
	return append(lines, exception)
}

// FailedStartup writes a start-up that ends in err as `vllm serve` prints it: the start-up
// lines up to the point where vLLM raises err (the API server's, then the engine's: model
// loading, compilation, profiling), then StartupFailure's. nonDefaultArgs and loadSeconds are
// as for Startup. Without err.Setup it is StartupFailure alone.
func (l *Logger) FailedStartup(err *sim.StartupError, nonDefaultArgs []KV, loadSeconds float64) {
	if err == nil {
		return
	}
	if s := err.Setup; s != nil {
		l.mu.Lock()
		l.startupAPI(s, nonDefaultArgs)
		l.engineLines(s, StartupTimings(s, loadSeconds), err)
		l.mu.Unlock()
	}
	l.StartupFailure(err)
}

// StartupFailure writes what `vllm serve` prints when the engine core fails to start with err:
// for a KV-cache failure the worker's "Available KV cache memory" line first; then the engine
// core's logged "EngineCore failed to start." with its traceback ending in
// "<Exception>: <Message>" (stdout), the traceback Python prints as the engine core process
// exits (stderr), and the API server's traceback ending in the RuntimeError
// of engineStartupFailed (stderr). The process would then exit with status 1.
func (l *Logger) StartupFailure(err *sim.StartupError) {
	if err == nil {
		return
	}
	exception := err.Exception + ": " + err.Message
	frames := engineCoreFrames(err)
	l.mu.Lock()
	defer l.mu.Unlock()
	eng := l.engine()
	if err.LoggedError != "" {
		wrk := eng
		if err.Setup != nil {
			wrk = l.loadWorker(err.Setup)
		}
		l.record(wrk, Error, "gpu_model_runner.py:4818", err.LoggedError)
	}
	switch {
	case err.Kind == sim.KVCacheOOM && err.Setup != nil && err.Setup.NumGPUBlocksOverride > 0:
		profiled := profiledKVBytes(err.Setup, err.Capacity)
		l.record(eng, Info, "gpu_worker.py:547", fmt.Sprintf("Available KV cache memory: %s GiB", sim.FormatGiB(profiled)))
		l.overrideLine(err.Setup, err.Capacity, eng, profiled)
	case err.Capacity.KVPinned:
		l.record(eng, Info, "gpu_worker.py:520", pinnedKVLine(err.Capacity))
	case err.Kind == sim.NoKVMemory || err.Kind == sim.MaxModelLenTooLarge:
		l.record(eng, Info, "gpu_worker.py:547", fmt.Sprintf("Available KV cache memory: %s GiB", sim.FormatGiB(err.Capacity.AvailableKVBytes)))
	}
	l.record(eng, Error, "core.py:1231", "EngineCore failed to start.\n"+strings.Join(traceback(frames, exception), "\n"))
	l.plain(l.stderr, eng, append([]string{"Process " + l.engineTitle() + ":"}, traceback(append(append([]frame{}, processFrames...), frames...), exception)...))
	l.plain(l.stderr, l.api(), traceback(apiServerFrames, "RuntimeError: "+l.engineStartupFailed()))
}

// configFrames is the API server's stack from the `vllm` command to a config class rejecting
// a value while the engine config is built.
var configFrames = slices.Concat(cliToEngineArgsFrames, []frame{
	{vllmPkg + "entrypoints/openai/api_server.py", 122, "build_async_engine_client_from_engine_args", "vllm_config = engine_args.create_engine_config(usage_context=usage_context)", "engine_args.create_engine_config(usage_context=usage_context)"},
	{vllmPkg + "engine/arg_utils.py", 1693, "create_engine_config", "", ""},
	{sitePackages + "pydantic/_internal/_dataclasses.py", 121, "__init__", "s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)", ""},
})

// ConfigFailure writes what `vllm serve` prints when a config class rejects a flag's value:
// the API server's traceback ending in pydantic's ValidationError (stderr). The process then
// exits with status 1.
func (l *Logger) ConfigFailure(err *sim.ValidationError) {
	if err == nil {
		return
	}
	frames := append([]frame{}, configFrames...)
	if err.Class == "ModelConfig" {
		// The model's config is built by its own method of EngineArgs.
		frames = slices.Insert(frames, len(frames)-1, frame{vllmPkg + "engine/arg_utils.py", 1398, "create_model_config", "return ModelConfig(", "ModelConfig("})
		frames[len(frames)-3].code = "model_config = self.create_model_config()"
		frames[len(frames)-3].underline = "self.create_model_config()"
	} else {
		variable := map[string]string{"CacheConfig": "cache_config", "ParallelConfig": "parallel_config", "SchedulerConfig": "scheduler_config"}[err.Class]
		if variable == "" {
			variable = "config"
		}
		frames[len(frames)-2].code = variable + " = " + err.Class + "("
		frames[len(frames)-2].underline = err.Class + "("
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := traceback(frames, "pydantic_core._pydantic_core.ValidationError: "+err.Error())
	var split []string
	for _, ln := range lines {
		split = append(split, strings.Split(ln, "\n")...)
	}
	l.plain(l.stderr, l.api(), split)
}

// buildFrames are the frames below the model runner's load where the model's building fails:
// the first attention layer's refusal of the cache dtype or of the backend the flag names, else
// a parameter's allocation running out of memory.
func buildFrames(err *sim.StartupError) []frame {
	switch err.Kind {
	case sim.KVDTypeRefused:
		// The first attention layer built refuses the KV cache dtype.
		return []frame{
			{vllmPkg + "model_executor/layers/attention/attention.py", 298, "__init__", "_init_kv_cache_quant(self, quant_config, prefix)", ""},
			{vllmPkg + "model_executor/layers/attention/attention.py", 213, "_init_kv_cache_quant", `raise ValueError("fp8_e5m2 kv-cache is not supported with fp8 checkpoints.")`, ""},
		}
	case sim.AttentionBackendInvalid:
		// The first attention layer (an MLA model's MLAAttention) asks the selector for the
		// backend the flag names.
		layer := frame{vllmPkg + "model_executor/layers/attention/attention.py", 301, "__init__", "self.attn_backend = get_attn_backend(", "get_attn_backend("}
		if strings.Contains(err.Message, "'MLA not supported'") {
			layer.file, layer.line = vllmPkg+"model_executor/layers/attention/mla_attention.py", 372
		}
		return []frame{
			layer,
			{vllmPkg + "v1/attention/selector.py", 113, "get_attn_backend", "return _cached_get_attn_backend(", "_cached_get_attn_backend("},
			{vllmPkg + "v1/attention/selector.py", 146, "_cached_get_attn_backend", "attention_cls = current_platform.get_attn_backend_cls(", "current_platform.get_attn_backend_cls("},
			{vllmPkg + "platforms/cuda.py", 456, "get_attn_backend_cls", "raise ValueError(", ""}}
	case sim.KVDTypeUnsupported:
		// The first attention layer's Triton implementation refuses it.
		impl := frame{vllmPkg + "v1/attention/backends/triton_attn.py", 546, "__init__", "raise ValueError(", ""}
		if strings.Contains(err.Message, "Triton MLA") {
			impl.file, impl.line = vllmPkg+"v1/attention/backends/mla/triton_mla.py", 236
		}
		return []frame{
			{vllmPkg + "model_executor/layers/attention/attention.py", 331, "__init__", "self.impl = impl_cls(", "impl_cls("}, impl}
	default:
		// A parameter's allocation runs out of memory.
		return []frame{{sitePackages + "torch/utils/_device.py", 104, "__torch_function__", "return func(*args, **kwargs)", "func(*args, **kwargs)"}}
	}
}
