package server

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The facts ParseLogLine finds in vLLM's log lines. Each comes from one line; the Supervisor
// folds them into its Status. Numbers are the ones printed, in the units printed.

// Version is the vLLM version, from "vLLM API server version X", "vLLM server version X, serving
// model M", the startup banner, or "Initializing a V1 LLM engine (vX) with config: ...".
type Version struct {
	Version string
}

// LoadStarted says the model runner began loading the model ("Starting to load model M...",
// "Loading model from scratch..."). Model is empty when the line does not name it.
type LoadStarted struct {
	Model string
}

// ModelLoaded reports the weights' memory and the loading time:
// "Model loading took %s GiB memory and %.6f seconds" (V1 runner), "Model loading took %s GiB and
// %.6f seconds" (V2 runner and older V1), or V0's "Loading model weights took %.4f GB" (binary
// gigabytes despite the unit; Seconds is 0 because V0 does not say).
type ModelLoaded struct {
	GiB     float64
	Seconds float64
}

// KVCacheMemory is the memory left for the KV cache: "Available KV cache memory: %s GiB", the
// explicit --kv-cache-memory-bytes form, or V0's "Memory profiling results: ... kv_cache_size=XGiB".
// It is negative when the weights and activations already exceed the budget.
type KVCacheMemory struct {
	AvailableGiB float64
}

// KVCacheSize is the KV cache's capacity: Tokens from "GPU KV cache size: N tokens", or Blocks from
// the older "# GPU blocks: N" and "num_gpu_blocks is: N". The other field is 0. From vLLM 0.27
// the tokens line goes on with the maximum concurrency ("GPU KV cache size: N tokens, Maximum
// concurrency for M tokens per request: X.XXx"), which fills Concurrency and TokensPerRequest
// as a MaxConcurrency event would; on the older two lines they are 0.
type KVCacheSize struct {
	Tokens           int
	Blocks           int
	Concurrency      float64
	TokensPerRequest int
}

// MaxConcurrency is "Maximum concurrency for N tokens per request: X.XXx": how many requests of
// TokensPerRequest (max_model_len) tokens fit in the KV cache at once.
type MaxConcurrency struct {
	Concurrency      float64
	TokensPerRequest int
}

// CUDAGraphMemory is the memory CUDA graphs take: measured after capture ("Graph capturing
// finished in N secs, took X GiB") or estimated before it by the V1 runner's profiler
// ("Estimated CUDA graph memory: X GiB total"; Estimated is true and Seconds 0).
type CUDAGraphMemory struct {
	GiB       float64
	Seconds   float64
	Estimated bool
}

// MemoryAdvice is a worker's account of its memory once the CUDA graphs are captured, with
// vLLM's advice on --kv-cache-memory (Worker.compile_or_warm_up_model; INFO from about 0.25,
// DEBUG before, and in a form with weights and non-torch memory apart in the 0.11 era):
//
//	Free memory on device (79.99/80.0 GiB) on startup. Desired GPU memory utilization is (0.92, 73.6 GiB). Actual usage is 51.66 GiB for consumed memory (weights + non-torch), 2.4 GiB for peak activation, and 0.71 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=20064085607` (18.69 GiB) to fit into requested memory, or `--kv-cache-memory=26927570944` (25.08 GiB) to fully utilize gpu memory. Current kv cache memory in use is 19.54 GiB.
//
// FitRequestedBytes and FillGPUBytes are the two suggested sizes, 0 when the line gives none
// (some builds leave the advice out); they are negative when nothing would fit.
type MemoryAdvice struct {
	FreeGiB, TotalGiB float64
	Utilization       float64
	RequestedGiB      float64
	ConsumedGiB       float64 // weights and non-torch memory
	PeakActivationGiB float64
	CUDAGraphGiB      float64
	KVCacheGiB        float64 // the cache in use
	FitRequestedBytes int64   // --kv-cache-memory that keeps to total x utilisation
	FillGPUBytes      int64   // --kv-cache-memory that uses the free memory whole
}

// EngineInitialized is "init engine (profile, create kv cache, warmup model) took X s": the engine
// finished profiling, allocating the KV cache and warming up. CompilationSeconds is 0 when the
// line does not report it.
type EngineInitialized struct {
	Seconds            float64
	CompilationSeconds float64
}

// ServerAddress is where the API server listens, as it logs it: "Starting vLLM server on URL"
// (and the older "Starting vLLM API server [N] on URL"), or uvicorn's "Uvicorn running on ...".
// The host is as logged, typically 0.0.0.0.
type ServerAddress struct {
	URL string
}

// StartupComplete is uvicorn's "Application startup complete.": the server is about to accept
// connections. Readiness itself is decided by GET /health.
type StartupComplete struct{}

// Stats is vLLM's periodic stats line (every VLLM_LOG_STATS_INTERVAL, 10 s by default, and only
// while there is traffic):
//
//	Engine 000: Avg prompt throughput: 61.2 tokens/s, Avg generation throughput: 1203.4 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.3%, Prefix cache hit rate: 0.0%
//
// and its older forms: V1 without "Engine NNN: ", and V0's "..., Running: N reqs, Swapped: N reqs,
// Pending: N reqs, GPU KV cache usage: X%, CPU KV cache usage: Y%." (Legacy; Waiting holds Pending).
type Stats struct {
	Engine  int // engine index from "Engine NNN: "; -1 when absent or aggregated
	Engines int // N from "N Engines Aggregated: "; 0 otherwise

	PromptTokensPerSec     float64
	GenerationTokensPerSec float64
	Running                int
	Waiting                int // includes Deferred, as vLLM counts it
	Deferred               int // "Deferred: N reqs", 0 when absent
	Preemptions            int // preemptions in this interval; 0 when absent

	KVCacheUsagePercent       float64 // GPU KV cache usage, 0..100 as printed
	PrefixCacheHitRatePercent float64 // 0..100 as printed; 0 for Legacy lines

	Legacy                 bool    // the V0 form
	Swapped                int     // Legacy only
	CPUKVCacheUsagePercent float64 // Legacy only
}

// FatalReason classifies a line that explains why vLLM failed.
type FatalReason int

// The reasons ParseLogLine recognises. All but EngineFailed and EngineDead name a root cause;
// those two are vLLM saying that a root cause was printed above.
const (
	ReasonUnknown       FatalReason = iota
	KVCacheNoMemory                 // "No available memory for the cache blocks"
	MaxModelLenTooLarge             // one max_model_len request does not fit in the KV cache
	FreeMemoryTooLow                // free GPU memory at start below the requested utilisation
	LoadOutOfMemory                 // "Failed to load model - not enough GPU memory"
	CUDAOutOfMemory                 // torch's "CUDA out of memory" (profiling, graph capture, ...)
	AutoFitImpossible               // "Cannot auto-fit max_model_len"
	ProfilingFailed                 // "Error in memory profiling": other processes changed GPU memory meanwhile
	InvalidArguments                // argparse's "prog: error: ...": unrecognized arguments, bad values
	InvalidConfig                   // a configuration rejected by validation ("Value error, ...")
	EngineFailed                    // "EngineCore failed to start." / "Engine core initialization failed"
	EngineDead                      // the engine died while serving (EngineDeadError)
)

func (r FatalReason) String() string {
	switch r {
	case ReasonUnknown:
		return "unknown"
	case KVCacheNoMemory:
		return "no memory for the KV cache"
	case MaxModelLenTooLarge:
		return "max_model_len does not fit in the KV cache"
	case FreeMemoryTooLow:
		return "free GPU memory below the requested utilisation"
	case LoadOutOfMemory:
		return "not enough GPU memory to load the model"
	case CUDAOutOfMemory:
		return "CUDA out of memory"
	case AutoFitImpossible:
		return "max_model_len cannot be auto-fitted"
	case ProfilingFailed:
		return "GPU memory changed during profiling"
	case InvalidArguments:
		return "invalid arguments"
	case InvalidConfig:
		return "invalid configuration"
	case EngineFailed:
		return "engine core failed to start"
	case EngineDead:
		return "engine core died"
	}
	return fmt.Sprintf("FatalReason(%d)", int(r))
}

// RootCause reports whether r names a cause, as opposed to vLLM's generic "see the root cause
// above" messages (EngineFailed, EngineDead).
func (r FatalReason) RootCause() bool {
	switch r {
	case ReasonUnknown, EngineFailed, EngineDead:
		return false
	}
	return true
}

// Fatal is a line that explains why vLLM failed. The numeric fields are set for the reasons whose
// messages carry them and are 0 otherwise.
type Fatal struct {
	Reason FatalReason
	// Line is the message: the log line without its process prefix and log header.
	Line string

	MaxModelLen          int     // MaxModelLenTooLarge
	EstimatedMaxModelLen int     // MaxModelLenTooLarge: the largest length that would fit
	NeededGiB            float64 // MaxModelLenTooLarge: KV memory one request needs
	AvailableGiB         float64 // MaxModelLenTooLarge: KV memory available
	FreeGiB              float64 // FreeMemoryTooLow
	TotalGiB             float64 // FreeMemoryTooLow
	Utilization          float64 // FreeMemoryTooLow: the requested --gpu-memory-utilization
	RequestedGiB         float64 // FreeMemoryTooLow
}

func (Version) event()           {}
func (LoadStarted) event()       {}
func (ModelLoaded) event()       {}
func (KVCacheMemory) event()     {}
func (KVCacheSize) event()       {}
func (MaxConcurrency) event()    {}
func (CUDAGraphMemory) event()   {}
func (MemoryAdvice) event()      {}
func (EngineInitialized) event() {}
func (ServerAddress) event()     {}
func (StartupComplete) event()   {}
func (Stats) event()             {}
func (Fatal) event()             {}

// Number patterns. vLLM prints floats with %.Nf or str(round(x, 2)) and token counts with
// thousands separators ({:,}); a negative GiB appears when the budget is exhausted.
const (
	num   = `(-?\d+(?:\.\d+)?)`
	unum  = `(\d+(?:\.\d+)?)`
	count = `(\d{1,3}(?:,\d{3})+|\d+)`
)

var (
	// "(APIServer pid=4127) ", "(EngineCore_DP0 pid=4310) ", Ray's "(RayWorkerWrapper pid=345, ip=10.0.0.1) ".
	reProcPrefix = regexp.MustCompile(`^\([A-Za-z_][^()]*\bpid=\d+[^()]*\) ?`)
	// vLLM's "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] " and V0's "... file.py:123] ".
	reHeader = regexp.MustCompile(`^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? (?:\[[^\]\s]+:\d+\]|[^\s\]]+:\d+\])(?: |$)`)
	// uvicorn's "%(levelprefix)s %(message)s": "INFO:     Application startup complete."
	reUvicorn = regexp.MustCompile(`^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL|TRACE):\s+`)
	// Ray's log deduplication suffix.
	reRepeated = regexp.MustCompile(`\s*\[repeated \d+x across cluster\]$`)

	reVersion       = regexp.MustCompile(`^vLLM (?:API )?server version (\S+?)(?:,|$| )`)
	reVersionLogo   = regexp.MustCompile(`[█▄▀]\s+version (\S+)$`)
	reVersionEngine = regexp.MustCompile(`^Initializing an? (?:V1 )?LLM engine \(v([^)\s]+)\)`)
	reLoadStarted   = regexp.MustCompile(`^Starting to load model (.+?)\.\.\.$`)
	reModelLoaded   = regexp.MustCompile(`Model loading took ` + num + ` GiB(?: memory)? and ` + unum + ` seconds`)
	reModelLoadedV0 = regexp.MustCompile(`Loading model weights took ` + num + ` GB\b`)
	reKVMemory      = regexp.MustCompile(`Available KV cache memory: ` + num + ` GiB`)
	reKVMemoryBytes = regexp.MustCompile(`reserved ` + num + ` GiB memory for KV Cache as specified by kv_cache_memory_bytes`)
	reKVMemoryV0    = regexp.MustCompile(`^Memory profiling results: .*\bkv_cache_size=` + num + `GiB`)
	reKVTokens      = regexp.MustCompile(`GPU KV cache size: ` + count + ` tokens(?:, Maximum concurrency for ` + count + ` tokens per request: ` + unum + `x)?`)
	reKVBlocks      = regexp.MustCompile(`^# GPU blocks: (\d+)`)
	reKVBlocksInfo  = regexp.MustCompile(`cache_config_info with initialization after num_gpu_blocks is: (\d+)$`)
	reConcurrency   = regexp.MustCompile(`Maximum concurrency for ` + count + ` tokens per request: ` + unum + `x`)
	reGraphs        = regexp.MustCompile(`Graph capturing finished in ` + unum + ` secs?, took ` + num + ` GiB`)
	reGraphEstimate = regexp.MustCompile(`Estimated CUDA graph memory: ` + num + ` GiB total`)
	reEngineInit    = regexp.MustCompile(`init engine \(profile, create kv cache, warmup model\) took ` + unum + ` (?:s|secs|seconds)\b(?: \(compilation: ` + unum + ` s)?`)
	reListening     = regexp.MustCompile(`^Starting vLLM (?:API )?server (?:\d+ )?on (\S+)$`)
	reUvicornURL    = regexp.MustCompile(`^Uvicorn running on (\S+://\S+)`)
	reUvicornSocket = regexp.MustCompile(`^Uvicorn running on socket \('([^']*)', (\d+)\)`)

	reStats = regexp.MustCompile(`^(?:(?:Engine (\d+)|(\d+) Engines Aggregated): )?` +
		`Avg prompt throughput: ` + unum + ` tokens/s, Avg generation throughput: ` + unum + ` tokens/s, ` +
		`Running: (\d+) reqs, Waiting: (\d+) reqs(?:, Deferred: (\d+) reqs)?(?:, Preemptions: (\d+))?, ` +
		`GPU KV cache usage: ` + unum + `%, Prefix cache hit rate: ` + unum + `%`)
	reStatsV0 = regexp.MustCompile(`^Avg prompt throughput: ` + unum + ` tokens/s, Avg generation throughput: ` + unum + ` tokens/s, ` +
		`Running: (\d+) reqs, Swapped: (\d+) reqs, Pending: (\d+) reqs, ` +
		`GPU KV cache usage: ` + unum + `%, CPU KV cache usage: ` + unum + `%`)

	reMaxLen = regexp.MustCompile(`max seq len \((\d+)\), \(` + num + ` GiB KV cache is needed, which is larger than the available KV cache memory \(` + num + ` GiB\)\.` +
		`(?: Based on the available memory, the estimated maximum model length is (\d+)\.)?`)
	reMaxLenV0     = regexp.MustCompile(`The model's max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)`)
	reMemoryAdvice = regexp.MustCompile(`^Free memory on device(?: \S+)? \(` + unum + `/` + unum + ` GiB\) on startup\. ` +
		`Desired GPU memory utilization is \(` + unum + `, ` + num + ` GiB\)\. Actual usage is ` +
		`(?:` + num + ` GiB for consumed memory \(weights \+ non-torch\), ` + num + ` GiB for peak activation|` +
		num + ` GiB for weight, ` + num + ` GiB for peak activation, ` + num + ` GiB for non-torch memory), ` +
		`and ` + num + ` GiB for CUDAGraph memory\.` +
		"(?: Replace gpu_memory_utilization config with `--kv-cache-memory=(-?\\d+)`(?: \\(" + num + " GiB\\))? to fit into requested memory, " +
		"or `--kv-cache-memory=(-?\\d+)`(?: \\(" + num + " GiB\\))? to fully utilize gpu memory\\.)?" +
		` Current kv cache memory in use is ` + num + ` (GiB|bytes)\.$`)
	reFreeMemory = regexp.MustCompile(`Free memory on device(?: \S+)? \(` + num + `/` + num + ` GiB\) on startup is less than desired GPU memory utilization \(` + unum + `, ` + num + ` GiB\)`)
	// argparse's "%(prog)s: error: %(message)s": "vllm: error: unrecognized arguments: --x",
	// "vllm serve: error: argument --port: invalid int value: 'x'".
	reArgparse   = regexp.MustCompile(`^[A-Za-z][\w .-]{0,60}: error: \S`)
	reValueError = regexp.MustCompile(`^\s*Value error, \S`)
	reException  = regexp.MustCompile(`^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)(?::|$)`)
)

// matcher finds one kind of event in a message. hint is a substring every matching message
// contains, so most lines are rejected without running a regular expression.
type matcher struct {
	hint  string
	match func(msg string) (Event, bool)
}

// onMatch is a matcher that builds its event from the submatches of re, when it matches.
func onMatch(re *regexp.Regexp, build func(g []string) (Event, bool)) func(string) (Event, bool) {
	return func(m string) (Event, bool) {
		g := re.FindStringSubmatch(m)
		if g == nil {
			return nil, false
		}
		return build(g)
	}
}

var matchers = []matcher{
	{"throughput:", parseStats},
	{"Model loading took", onMatch(reModelLoaded, func(g []string) (Event, bool) {
		return ModelLoaded{GiB: toFloat(g[1]), Seconds: toFloat(g[2])}, true
	})},
	{"Loading model weights took", onMatch(reModelLoadedV0, func(g []string) (Event, bool) {
		return ModelLoaded{GiB: toFloat(g[1])}, true
	})},
	{"Available KV cache memory", onMatch(reKVMemory, kvMemory)},
	{"kv_cache_memory_bytes", onMatch(reKVMemoryBytes, kvMemory)},
	{"kv_cache_size=", onMatch(reKVMemoryV0, kvMemory)},
	{"GPU KV cache size", onMatch(reKVTokens, func(g []string) (Event, bool) {
		n, ok := integer(g[1])
		ev := KVCacheSize{Tokens: n}
		if g[2] != "" {
			per, perOK := integer(g[2])
			ev.Concurrency, ev.TokensPerRequest, ok = toFloat(g[3]), per, ok && perOK
		}
		return ev, ok
	})},
	{"# GPU blocks", onMatch(reKVBlocks, kvBlocks)},
	{"num_gpu_blocks is", onMatch(reKVBlocksInfo, kvBlocks)},
	{"Maximum concurrency", onMatch(reConcurrency, func(g []string) (Event, bool) {
		n, ok := integer(g[1])
		return MaxConcurrency{Concurrency: toFloat(g[2]), TokensPerRequest: n}, ok
	})},
	{"Graph capturing finished", onMatch(reGraphs, func(g []string) (Event, bool) {
		return CUDAGraphMemory{Seconds: toFloat(g[1]), GiB: toFloat(g[2])}, true
	})},
	{"Estimated CUDA graph memory", onMatch(reGraphEstimate, func(g []string) (Event, bool) {
		return CUDAGraphMemory{GiB: toFloat(g[1]), Estimated: true}, true
	})},
	{"init engine", onMatch(reEngineInit, func(g []string) (Event, bool) {
		return EngineInitialized{Seconds: toFloat(g[1]), CompilationSeconds: toFloat(g[2])}, true
	})},
	{"Starting vLLM", onMatch(reListening, func(g []string) (Event, bool) {
		return ServerAddress{URL: g[1]}, true
	})},
	{"Uvicorn running on", func(m string) (Event, bool) {
		if g := reUvicornURL.FindStringSubmatch(m); g != nil {
			return ServerAddress{URL: g[1]}, true
		}
		if g := reUvicornSocket.FindStringSubmatch(m); g != nil {
			return ServerAddress{URL: "http://" + hostPort(g[1], g[2])}, true
		}
		return nil, false
	}},
	{"Application startup complete", func(m string) (Event, bool) {
		return StartupComplete{}, strings.TrimSuffix(m, ".") == "Application startup complete"
	}},
	{"version", parseVersion},
	{"LLM engine (v", onMatch(reVersionEngine, func(g []string) (Event, bool) {
		return Version{Version: g[1]}, true
	})},
	{"Starting to load model", onMatch(reLoadStarted, func(g []string) (Event, bool) {
		return LoadStarted{Model: g[1]}, true
	})},
	{"Loading model from scratch", func(m string) (Event, bool) {
		return LoadStarted{}, m == "Loading model from scratch..."
	}},

	// Failures. Order matters where one message quotes another: the load OOM message carries
	// "(original error: CUDA out of memory ...)".
	{"Failed to load model - not enough GPU memory", fatal(LoadOutOfMemory)},
	{"No available memory for the cache blocks", fatal(KVCacheNoMemory)},
	{"max seq len", parseMaxLen},
	{"Free memory on device", parseFreeMemory},
	{"Cannot auto-fit max_model_len", fatal(AutoFitImpossible)},
	{"Error in memory profiling", fatal(ProfilingFailed)},
	{"CUDA out of memory", fatal(CUDAOutOfMemory)},
	{": error: ", func(m string) (Event, bool) {
		return Fatal{Reason: InvalidArguments, Line: m}, reArgparse.MatchString(m)
	}},
	{"Value error, ", func(m string) (Event, bool) {
		return Fatal{Reason: InvalidConfig, Line: strings.TrimSpace(m)}, reValueError.MatchString(m)
	}},
	{"EngineCore failed to start", fatal(EngineFailed)},
	{"Engine core initialization failed", fatal(EngineFailed)},
	{"EngineCore encountered an issue", fatal(EngineDead)},
	{"died unexpectedly", func(m string) (Event, bool) {
		return Fatal{Reason: EngineDead, Line: m}, strings.HasPrefix(m, "Engine core proc ")
	}},
}

// ParseLogLine recognises the vLLM log lines that matter to a supervisor: model loading, the
// KV-cache sizing lines, CUDA-graph memory, the listen address, uvicorn's startup line, the
// periodic stats line and the messages of startup failures, in the current format and the older
// ones. The line may carry vLLM's process prefix ("(EngineCore pid=4310) "), its log header
// ("INFO 07-24 10:15:35 [kv_cache_utils.py:2214] "), uvicorn's level prefix and ANSI colour; they
// are removed before matching. It returns false for every other line, including fragments of a
// line that a terminal wrapped. It is safe for concurrent use.
func ParseLogLine(line string) (Event, bool) {
	return parseMessage(Message(line))
}

// parseMessage is ParseLogLine on a line already reduced by Message.
func parseMessage(msg string) (Event, bool) {
	if msg == "" {
		return nil, false
	}
	for _, m := range matchers {
		if !strings.Contains(msg, m.hint) {
			continue
		}
		if ev, ok := m.match(msg); ok {
			return ev, true
		}
	}
	return nil, false
}

// Message returns the message of a log line: the line without ANSI escapes, process prefixes
// ("(APIServer pid=1) ", nested Ray prefixes), vLLM's log header or uvicorn's level prefix, and
// Ray's "[repeated Nx across cluster]" suffix. A line without those is returned unchanged (less
// any trailing '\r' and spaces).
func Message(line string) string {
	s := StripANSI(line)
	for {
		loc := reProcPrefix.FindStringIndex(s)
		if loc == nil {
			break
		}
		s = s[loc[1]:]
	}
	s = strings.TrimLeft(s, " ")
	if loc := reHeader.FindStringIndex(s); loc != nil {
		s = s[loc[1]:]
	} else if loc := reUvicorn.FindStringIndex(s); loc != nil {
		s = s[loc[1]:]
	}
	s = strings.TrimRight(s, " \t\r\n")
	if strings.HasSuffix(s, "across cluster]") {
		s = reRepeated.ReplaceAllString(s, "")
	}
	return s
}

func fatal(r FatalReason) func(string) (Event, bool) {
	return func(m string) (Event, bool) {
		return Fatal{Reason: r, Line: m}, true
	}
}

func parseStats(m string) (Event, bool) {
	if g := reStats.FindStringSubmatch(m); g != nil {
		st := Stats{Engine: -1}
		var ok [6]bool
		if g[1] != "" {
			st.Engine, ok[0] = integer(g[1])
		} else {
			ok[0] = true
		}
		if g[2] != "" {
			st.Engines, ok[1] = integer(g[2])
		} else {
			ok[1] = true
		}
		st.PromptTokensPerSec = toFloat(g[3])
		st.GenerationTokensPerSec = toFloat(g[4])
		st.Running, ok[2] = integer(g[5])
		st.Waiting, ok[3] = integer(g[6])
		st.Deferred, ok[4] = optInteger(g[7])
		st.Preemptions, ok[5] = optInteger(g[8])
		st.KVCacheUsagePercent = toFloat(g[9])
		st.PrefixCacheHitRatePercent = toFloat(g[10])
		return st, allTrue(ok[:])
	}
	if g := reStatsV0.FindStringSubmatch(m); g != nil {
		st := Stats{Engine: -1, Legacy: true}
		var ok [3]bool
		st.PromptTokensPerSec = toFloat(g[1])
		st.GenerationTokensPerSec = toFloat(g[2])
		st.Running, ok[0] = integer(g[3])
		st.Swapped, ok[1] = integer(g[4])
		st.Waiting, ok[2] = integer(g[5])
		st.KVCacheUsagePercent = toFloat(g[6])
		st.CPUKVCacheUsagePercent = toFloat(g[7])
		return st, allTrue(ok[:])
	}
	return nil, false
}

func parseVersion(m string) (Event, bool) {
	if g := reVersion.FindStringSubmatch(m); g != nil {
		return Version{Version: g[1]}, true
	}
	if g := reVersionLogo.FindStringSubmatch(m); g != nil {
		return Version{Version: g[1]}, true
	}
	return nil, false
}

func parseMaxLen(m string) (Event, bool) {
	if g := reMaxLen.FindStringSubmatch(m); g != nil {
		f := Fatal{Reason: MaxModelLenTooLarge, Line: m, NeededGiB: toFloat(g[2]), AvailableGiB: toFloat(g[3])}
		var ok1, ok2 bool
		f.MaxModelLen, ok1 = integer(g[1])
		f.EstimatedMaxModelLen, ok2 = optInteger(g[4])
		return f, ok1 && ok2
	}
	if g := reMaxLenV0.FindStringSubmatch(m); g != nil {
		f := Fatal{Reason: MaxModelLenTooLarge, Line: m}
		var ok1, ok2 bool
		f.MaxModelLen, ok1 = integer(g[1])
		f.EstimatedMaxModelLen, ok2 = integer(g[2])
		return f, ok1 && ok2
	}
	return nil, false
}

func parseFreeMemory(m string) (Event, bool) {
	g := reFreeMemory.FindStringSubmatch(m)
	if g == nil {
		return parseMemoryAdvice(m)
	}
	return Fatal{Reason: FreeMemoryTooLow, Line: m,
		FreeGiB: toFloat(g[1]), TotalGiB: toFloat(g[2]), Utilization: toFloat(g[3]), RequestedGiB: toFloat(g[4])}, true
}

// parseMemoryAdvice reads a MemoryAdvice line in either of its forms.
func parseMemoryAdvice(m string) (Event, bool) {
	g := reMemoryAdvice.FindStringSubmatch(m)
	if g == nil {
		return nil, false
	}
	a := MemoryAdvice{FreeGiB: toFloat(g[1]), TotalGiB: toFloat(g[2]), Utilization: toFloat(g[3]), RequestedGiB: toFloat(g[4]),
		CUDAGraphGiB: toFloat(g[10]), KVCacheGiB: toFloat(g[15])}
	if g[5] != "" {
		a.ConsumedGiB, a.PeakActivationGiB = toFloat(g[5]), toFloat(g[6])
	} else {
		a.ConsumedGiB, a.PeakActivationGiB = toFloat(g[7])+toFloat(g[9]), toFloat(g[8])
	}
	if g[16] == "bytes" {
		a.KVCacheGiB /= 1 << 30
	}
	var ok1, ok2 bool
	if a.FitRequestedBytes, ok1 = bytesFigure(g[11]); ok1 {
		a.FillGPUBytes, ok2 = bytesFigure(g[13])
		if !ok2 {
			return nil, false
		}
	} else if g[11] != "" {
		return nil, false
	}
	if a.TotalGiB <= 0 || a.TotalGiB > maxGiB || a.FreeGiB > a.TotalGiB || a.Utilization > 1 {
		return nil, false
	}
	return a, true
}

// maxGiB bounds the memory figures a log line may claim: no device has a petabyte.
const maxGiB = 1 << 20

// bytesFigure parses a byte count of a log line, bounded by maxGiB; false for "" or one out
// of range.
func bytesFigure(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > maxGiB<<30 || n < -(maxGiB<<30) {
		return 0, false
	}
	return n, true
}

func kvMemory(g []string) (Event, bool) {
	return KVCacheMemory{AvailableGiB: toFloat(g[1])}, true
}

func kvBlocks(g []string) (Event, bool) {
	n, ok := integer(g[1])
	return KVCacheSize{Blocks: n}, ok
}

// toFloat parses a number the patterns above already validated; "" (an optional group that did not
// match) is 0.
func toFloat(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}

// integer parses a count with optional thousands separators. It fails on overflow, so a line
// with an absurd number yields no event rather than a wrong one.
func integer(s string) (int, bool) {
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n, err == nil
}

func optInteger(s string) (int, bool) {
	if s == "" {
		return 0, true
	}
	return integer(s)
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}

func hostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// exceptionLine reports whether msg is the last line of a Python traceback ("ValueError: ...",
// "torch.OutOfMemoryError: ...", "KeyboardInterrupt").
func exceptionLine(msg string) bool {
	return reException.MatchString(msg)
}
