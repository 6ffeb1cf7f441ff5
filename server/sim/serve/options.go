package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/vllmtop/vllmtop/internal/base/termwidth"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/metrics"
	"github.com/vllmtop/vllmtop/server/sim/vlog"
)

// Options is a parsed `vllmtop sim` command line.
type Options struct {
	Engine           sim.Config
	Host             string
	Port             int
	APIKeys          []string
	ServedModelNames []string
	DisableLogStats  bool
	ForceUsage       bool
	Speed            float64 // simulated seconds per wall second
	StartupSeconds   float64 // imitated model-load time before /health turns 200
	ProfilesPath     string
	// ModelConfigPath is --sim-model-config: a Hugging Face config.json to size the model from.
	ModelConfigPath string
	// MaxLogprobs is the largest logprobs / top_logprobs a request may ask for (vLLM's
	// --max-logprobs, default 20).
	MaxLogprobs int
	// SchedulingPolicy is --scheduling-policy: "fcfs" or "priority".
	SchedulingPolicy string
	// EnableLoRA, MaxLoras and LoRAModules are --enable-lora, --max-loras and --lora-modules.
	EnableLoRA  bool
	MaxLoras    int
	LoRAModules []LoRAModule
	// Pooling is the pooling runner (--runner pooling): /v1/embeddings, no completions.
	Pooling bool
	// PromptTokensDetails is --enable-prompt-tokens-details.
	PromptTokensDetails bool
	// Metrics are the metric families and buckets the observability flags ask for.
	Metrics metrics.Extras
	// NotSimulated lists the accepted but not simulated flags the command line gave.
	NotSimulated []string
	// NonDefault lists the flags the user set, in order, as vLLM logs them ("non-default args").
	NonDefault []NamedValue
	// atDefault are the keys of NonDefault given their default value: set, but not among what
	// vLLM logs as non-default (it compares the parsed arguments with the parser's defaults).
	atDefault map[string]bool
	// PrintCapacity is --print-capacity: print the KV cache's capacity for a workload of
	// CapacityPromptLen + CapacityOutputLen tokens a request (vllm bench's --random-input-len
	// and --random-output-len) instead of serving.
	PrintCapacity                        bool
	CapacityPromptLen, CapacityOutputLen int
	// DataParallelSize is --data-parallel-size: engines behind the API server (default 1).
	DataParallelSize, DataParallelSizeLocal int
	// EnableEPLB and EPLBConfig are --enable-eplb and --eplb-config (JSON), whose
	// num_redundant_experts reaches the memory plan.
	EnableEPLB bool
	EPLBConfig string
}

// OwnFlag marks the simulator's flags that are not vllm serve's and that a command passing
// the simulator's flags on (bench --sim, the dashboard) does not take.
const OwnFlag = "vllmtop-sim-only"

// NamedValue is one user-set argument.
type NamedValue struct {
	Key   string
	Value any
}

// UsageError is a command-line error: argparse prints usage and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// HelpRequested is returned when -h/--help was given; the help text is in Text, and Flags
// is the flag set it describes.
type HelpRequested struct {
	Text  string
	Flags *pflag.FlagSet
}

func (e *HelpRequested) Error() string { return "help requested" }

const usageLine = "usage: vllmtop sim [model_tag] [options]"

// accepted lists `vllm serve` flags the simulator takes and ignores, so real command lines
// run unchanged. Their values do not change the simulation.
var accepted = []string{"trust-remote-code", "disable-uvicorn-access-log", "disable-log-requests",
	"enable-log-requests", "no-enable-log-requests", "disable-frontend-multiprocessing", "enable-auto-tool-choice",
	"enable-dbo", "headless"}
var acceptedWithValue = []string{"uvicorn-log-level", "download-dir", "load-format", "tokenizer", "revision",
	"max-log-len", "generation-config", "tool-call-parser", "chat-template", "seed", "distributed-executor-backend",
	"reasoning-parser", "moe-backend", "stream-interval", "optimization-level",
	"compilation-config", "max-cudagraph-capture-size", "limit-mm-per-prompt", "mamba-ssm-cache-dtype",
	"hf-overrides", "override-generation-config", "long-prefill-token-threshold", "max-num-partial-prefills",
	"max-long-partial-prefills", "all2all-backend", "prefix-caching-hash-algo",
	"kv-offloading-size", "kv-offloading-backend", "kv-transfer-config", "kv-events-config", "mm-encoder-tp-mode",
	"mm-processor-cache-type", "mm-processor-kwargs", "tokenizer-mode", "config-format", "mamba-cache-mode",
	"structured-outputs-config", "default-chat-template-kwargs", "chat-template-content-format", "tool-server",
	"swap-space", "decode-context-parallel-size"}

// closestFlag is " (did you mean --x?)" for the defined flag nearest an unknown one, by edit
// distance up to a quarter of its name ("--gpu-memory-utilisation"), or "".
func closestFlag(fs *pflag.FlagSet, arg string) string {
	name, ok := strings.CutPrefix(arg, "--")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	best, bestDist := "", len(name)/4+1
	fs.VisitAll(func(f *pflag.Flag) {
		if d := textfmt.EditDistance(name, f.Name); d < bestDist && !f.Hidden {
			best, bestDist = f.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return " (did you mean --" + best + "?)"
}

// ParseArgs parses `vllm serve`'s flags with vLLM's names and defaults. getenv supplies
// VLLM_API_KEY and VLLM_ALLOW_LONG_MAX_MODEL_LEN.
func ParseArgs(args []string, getenv func(string) string) (*Options, error) {
	o := &Options{}
	fs := pflag.NewFlagSet("vllmtop sim", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.SetInterspersed(true)
	raw := defineFlags(fs, o)
	extra := defineExtraFlags(fs, o)
	runner := defineRunnerFlags(fs)

	args, err := flexibleArgs(args)
	if err != nil {
		return nil, err
	}
	if args, err = expandConfig(expandNargs(expandShortAliases(args))); err != nil {
		return nil, err
	}
	if bad := unrecognized(fs, args); len(bad) > 0 {
		return nil, &UsageError{"unrecognized arguments: " + strings.Join(bad, " ") + closestFlag(fs, bad[0])}
	}
	if err := fs.Parse(args); err != nil {
		return nil, &UsageError{argparseMessage(err)}
	}
	if err := checkIntLists(fs); err != nil {
		return nil, err
	}
	if *raw.help {
		return nil, &HelpRequested{Text: helpText(fs), Flags: fs}
	}
	if err := o.setModel(fs, *raw.model); err != nil {
		return nil, err
	}
	fs.Visit(func(f *pflag.Flag) {
		if nv, ok := nonDefault(f); ok {
			o.NonDefault = append(o.NonDefault, nv)
			if f.Value.String() == f.DefValue || atReleaseDefault(f, o.Engine.VLLMVersion) {
				if o.atDefault == nil {
					o.atDefault = map[string]bool{}
				}
				o.atDefault[nv.Key] = true
			}
		}
	})

	o.ServedModelNames = *raw.served
	o.APIKeys = *raw.apiKeys
	if len(o.APIKeys) == 0 {
		if k := getenv("VLLM_API_KEY"); k != "" {
			o.APIKeys = []string{k}
		}
	}
	if err := o.applyEngineArgs(fs, raw, args, getenv); err != nil {
		return nil, err
	}
	if err := o.checkServing(fs); err != nil {
		return nil, err
	}
	if err := o.applyExtraArgs(fs, extra); err != nil {
		return nil, err
	}
	if err := o.applyRunner(runner); err != nil {
		return nil, err
	}
	return o, nil
}

// rawArgs holds the flags ParseArgs interprets after parsing, rather than binding them to an
// Options field.
type rawArgs struct {
	model, maxModelLen, specConfig  *string
	maxBatchedTokens, kvCacheMemory *string
	served, apiKeys                 *[]string

	help           *bool
	specAcceptance *float64
}

// defineFlags declares vllm serve's flags, the simulator's own and those accepted for
// compatibility, binding what it can to o.
func defineFlags(fs *pflag.FlagSet, o *Options) *rawArgs {
	r := &rawArgs{}
	r.model = fs.String("model", sim.DefaultModel, "Name or path of the Hugging Face model to use (the simulator knows the profiles listed below)")
	r.served = fs.StringArray("served-model-name", nil, "The model name(s) used in the API; the first is the metrics label")
	fs.StringVar(&o.Host, "host", "127.0.0.1", "Host name to bind (vLLM binds all interfaces by default; the simulator binds loopback unless told)")
	fs.IntVar(&o.Port, "port", 8000, "Port number")
	r.apiKeys = fs.StringSlice("api-key", nil, "If provided, the server requires one of these keys in the Authorization header (also VLLM_API_KEY)")
	fs.Float64Var(&o.Engine.GPUMemoryUtilization, "gpu-memory-utilization", 0, "Fraction of GPU memory for this instance (0, 1] (default: the release's, 0.92 from 0.21, 0.9 before)")
	r.maxModelLen = fs.String("max-model-len", "", "Model context length; accepts 1k (1000), 1K (1024), 25.6k")
	fs.StringVar(&o.Engine.PerformanceMode, "performance-mode", "", "balanced (the default), interactivity or throughput, which doubles the default --max-num-seqs and --max-num-batched-tokens (from vLLM 0.17)")
	fs.IntVar(&o.Engine.MaxNumSeqs, "max-num-seqs", 0, "Maximum number of sequences per iteration (default by GPU: 1024 on >=70 GiB non-A100, else 256)")
	r.maxBatchedTokens = fs.String("max-num-batched-tokens", "", "Maximum tokens per iteration (default by GPU and release: 2048 on smaller GPUs; on >=70 GiB non-A100 ones 16384 from 0.28, 8192 before); accepts 8k (8000), 8K (8192)")
	fs.IntVar(&o.Engine.BlockSize, "block-size", sim.DefaultBlockSize, "Tokens per KV-cache block")
	fs.StringVar(&o.Engine.KVCacheDType, "kv-cache-dtype", "auto", "KV cache data type (auto, float16, bfloat16, fp8, ...)")
	fs.StringVar(&o.Engine.AttentionBackend, "attention-backend", "", "Attention backend (FLASH_ATTN, FLASHINFER, TRITON_ATTN, ...; default: vLLM's choice); the simulator refuses FLASH_ATTN and FLASHINFER where vLLM finds them not valid for the model and GPU, applies TRITON_ATTN's refusal of a KV-cache dtype the GPU cannot store, and times every backend alike")
	fs.StringVar(&o.Engine.DType, "dtype", "auto", "Model data type (auto, half, float16, bfloat16, float, float32)")
	fs.StringVarP(&o.Engine.Quantization, "quantization", "q", "", "Weight quantization: awq, awq_marlin, gptq or gptq_marlin for a checkpoint quantized that way, fp8 (any checkpoint, quantized as it loads), mxfp4")
	fs.StringVar(&o.Engine.CheckpointQuantization, "sim-checkpoint-quantization", "", "Size the model as a checkpoint quantized with this method (awq, gptq, fp8, mxfp4, nvfp4), as a quantized build of a catalogue model is")
	fs.IntVar(&o.Engine.TensorParallelSize, "tensor-parallel-size", 1, "Number of tensor-parallel GPUs (-tp)")
	fs.IntVar(&o.Engine.NumGPUBlocksOverride, "num-gpu-blocks-override", 0, "Use this many KV-cache blocks instead of the profiled number")
	r.kvCacheMemory = fs.String("kv-cache-memory-bytes", "", "KV cache of each GPU in bytes, instead of what the profiling leaves of --gpu-memory-utilization (also --kv-cache-memory); accepts 20G (20 GiB), 20g (20e9)")
	fs.BoolVar(&o.Engine.EnforceEager, "enforce-eager", false, "Run without CUDA graphs: none captured, none reserved in the KV budget; small batches wait on kernel launches")
	fs.Bool("enable-prefix-caching", false, "Enable prefix caching (default on; of --x and --no-x the later wins)")
	fs.Bool("no-enable-prefix-caching", false, "Disable prefix caching")
	fs.Bool("enable-chunked-prefill", false, "Enable chunked prefill (default on)")
	fs.Bool("no-enable-chunked-prefill", false, "Disable chunked prefill")
	fs.Bool("async-scheduling", false, "Schedule the next step while the GPU runs this one, hiding the scheduler's time behind the GPU's (default on from vLLM 0.14, but not with pipeline parallelism or drafts other than EAGLE and MTP)")
	fs.Bool("no-async-scheduling", false, "Schedule each step after the last one finishes")
	fs.BoolVar(&o.DisableLogStats, "disable-log-stats", false, "Disable the periodic stats line and the vllm: metrics")
	fs.BoolVar(&o.ForceUsage, "enable-force-include-usage", false, "Send usage on every streamed response")
	r.specConfig = fs.String("speculative-config", "", `Speculative decoding as JSON, e.g. '{"method": "ngram", "num_speculative_tokens": 3}' (method ngram, eagle, eagle3, mtp or draft_model)`)
	fs.IntVar(&o.MaxLogprobs, "max-logprobs", 20, "Largest logprobs or top_logprobs a request may ask for")

	fs.StringVar(&o.Engine.GPU, "sim-gpu", sim.DefaultGPU, "Simulated GPU profile")
	fs.StringVar(&o.Engine.Host, "sim-host-profile", sim.DefaultHost, "Simulated host profile: v1 (a GPU server), v1-4vcpu (a 4-vCPU host, whose scheduler cannot overlap the GPU) or legacy (vLLM up to 0.5)")
	fs.Int64Var(&o.Engine.Seed, "sim-seed", 0, "Seed for output lengths, text and step jitter")
	fs.Float64Var(&o.Engine.Jitter, "sim-jitter", 0, "Relative standard deviation of step times (0 = deterministic)")
	fs.Float64Var(&o.Speed, "sim-speed", 1, "Simulated seconds per wall-clock second (2 runs twice as fast; /metrics and the stats lines then report wall-clock times and rates, as of a faster GPU)")
	fs.Float64Var(&o.Engine.GPUUsedGiB, "sim-gpu-used-gib", 0, "GPU memory already held by other processes, in GiB")
	fs.Float64Var(&o.StartupSeconds, "sim-startup-seconds", 1, "Imitated start-up time (model load, profiling) before /health turns 200")
	fs.StringVar(&o.ProfilesPath, "sim-profiles", "", "JSON file of extra GPU, model and host profiles")
	fs.StringVar(&o.ModelConfigPath, "sim-model-config", "", "Hugging Face config.json (or a model directory holding one) to size the model from (else a model the catalogue lacks is looked for in the local Hugging Face cache)")
	fs.StringVar(&o.Engine.VLLMVersion, "sim-vllm-version", sim.DefaultVersion, "vLLM release to imitate (its /metrics families and labels, log formats, KV-cache size line), 0.10.0 to "+sim.NewestMinor()+"; served from 0.8 (the V1 engine), planned from 0.2 with --print-capacity")
	fs.StringVar(&o.Engine.EntryPoint, "sim-entry-point", sim.EntryServe, "How the imitated vLLM was started, for its scheduler defaults and memory plan: serve (vllm serve) or llm (the offline LLM class)")
	fs.StringVar(&o.Engine.DeepGEMM, "sim-deepgemm", sim.DeepGEMMInstalled, "Whether the imitated install has DeepGEMM, for block-scaled FP8 weights (DeepSeek-V3, Qwen3 FP8) on Hopper and Blackwell from 0.11: installed (the 8-bit rate) or absent (vLLM falls back to CUTLASS, about the 16-bit rate)")
	fs.StringVar(&o.Engine.FlashInfer, "sim-flashinfer", sim.FlashInferInstalled, "Whether the imitated install has FlashInfer, for the profile's sampler and the attention backend: installed (vLLM's images) or absent (the pip wheels of 0.10.1 to 0.11.0, or any install without it): the sampler takes the PyTorch-native top-k/top-p path, and an fp8 KV cache below compute capability 8.9 reaches Triton, which refuses it from 0.23")
	fs.StringVar(&o.Engine.CompileCache, "sim-compile-cache", sim.CompileWarm, "State of vLLM's torch.compile cache at start-up, for the memory plan: warm (the configuration was compiled before) or cold (its first boot, whose compile the V2 model runner charges to the profile: dense models from 0.25, every model from 0.29; not with --enforce-eager)")
	r.specAcceptance = fs.Float64("sim-spec-acceptance", 0, "Mean draft acceptance rate to simulate with --speculative-config (0: the method's default)")
	for _, name := range accepted {
		fs.Bool(name, false, notSimulatedUsage)
	}
	for _, name := range acceptedWithValue {
		fs.String(name, "", notSimulatedUsage)
	}
	for _, name := range intListFlags {
		fs.StringArray(name, nil, notSimulatedUsage)
	}
	fs.BoolVar(&o.PrintCapacity, "print-capacity", false, "Print the memory plan, the KV cache and how many requests of --random-input-len + --random-output-len tokens fit (with what-ifs), then exit")
	fs.IntVar(&o.CapacityPromptLen, "random-input-len", 1024, "Prompt tokens of a request, for --print-capacity")
	fs.IntVar(&o.CapacityOutputLen, "random-output-len", 128, "Output tokens of a request, for --print-capacity")
	for _, name := range []string{"print-capacity", "random-input-len", "random-output-len"} {
		_ = fs.SetAnnotation(name, OwnFlag, nil)
	}
	defineDPFlags(fs, o)
	definePPFlags(fs, o)
	defineCompatFlags(fs)
	r.help = fs.BoolP("help", "h", false, "Show this help")
	return r
}

// atReleaseDefault reports whether f holds the value vLLM's parser defaults it to where the
// flag's own default here stands for "the release's": --seed 0 from seedZeroRelease and
// --gpu-memory-utilization at the release's default, neither of which vLLM then logs as
// non-default.
func atReleaseDefault(f *pflag.Flag, release string) bool {
	v, err := sim.ParseVersion(release)
	if err != nil {
		return false
	}
	switch f.Name {
	case "seed":
		return f.Value.String() == "0" && v.AtLeast(seedZeroRelease)
	case "gpu-memory-utilization":
		x, _ := strconv.ParseFloat(f.Value.String(), 64)
		return x == sim.DefaultUtilization(v)
	}
	return false
}

// seedZeroRelease is the first release whose parser defaults --seed to 0: vllm#29165 and
// vllm#29185 (merged 2025-11-21) made the engine arguments' seed an int and deprecated None,
// which the V1 engine had replaced with 0 since vllm#17929. The 0.31.0 logs of a harness
// passing --seed 0 do not list it.
const seedZeroRelease = "0.12.0"

// setModel sets the model from --model or the positional model_tag, which overrides it as in
// `vllm serve`, and records it among the non-default args.
func (o *Options) setModel(fs *pflag.FlagSet, model string) error {
	pos := fs.Args()
	if len(pos) > 1 {
		return &UsageError{"unrecognized arguments: " + strings.Join(pos[1:], " ")}
	}
	if len(pos) == 1 {
		model = pos[0]
		o.NonDefault = append(o.NonDefault, NamedValue{"model_tag", pos[0]})
	}
	o.Engine.Model = model
	if len(pos) == 1 || fs.Changed("model") {
		o.NonDefault = append(o.NonDefault, NamedValue{"model", model})
	}
	return nil
}

// nonDefault is a user-set flag as vLLM logs it among its non-default args; ok is false for
// the flags it does not log.
func nonDefault(f *pflag.Flag) (nv NamedValue, ok bool) {
	switch f.Name {
	case "model", "help", "print-capacity", "random-input-len", "random-output-len":
		return NamedValue{}, false
	}
	key := strings.ReplaceAll(f.Name, "-", "_")
	if negated, ok := negatedToggles[f.Name]; ok {
		// argparse's BooleanOptionalAction stores --no-x in x's own field, as False.
		return NamedValue{negated, false}, true
	}
	if key == "api_key" {
		// Logged as vLLM logs it, but never the key itself.
		return NamedValue{key, "***"}, true
	}
	switch f.Value.Type() {
	case "int", "int64":
		n, _ := strconv.ParseInt(f.Value.String(), 10, 64)
		return NamedValue{key, n}, true
	case "float64":
		x, _ := strconv.ParseFloat(f.Value.String(), 64)
		return NamedValue{key, x}, true
	case "bool":
		return NamedValue{key, f.Value.String() == "true"}, true
	}
	var v any = f.Value.String()
	if slices.Contains(intAcceptedFlags, f.Name) {
		v, _ = strconv.Atoi(f.Value.String()) // checked by checkIntLists
	}
	if list, ok := f.Value.(pflag.SliceValue); ok {
		v = list.GetSlice() // argparse's nargs="+": a Python list
		if slices.Contains(intListFlags, f.Name) {
			v = intList(list.GetSlice())
		}
	}
	if key == "speculative_config" {
		// vLLM parses the JSON and logs the dict.
		if d, err := jsonAsPython(f.Value.String()); err == nil {
			v = d
		}
	}
	return NamedValue{key, v}, true
}

// negatedToggles are the --no- halves of the on/off flag pairs, with the field vLLM stores them
// in.
var negatedToggles = map[string]string{
	"no-enable-prefix-caching":  "enable_prefix_caching",
	"no-enable-chunked-prefill": "enable_chunked_prefill",
	"no-async-scheduling":       "async_scheduling",
	"no-enable-log-requests":    "enable_log_requests",
}

// setToggle sets *dst from an --name / --no-name pair. vLLM declares each boolean engine
// argument as one argparse BooleanOptionalAction (get_kwargs in vllm/engine/arg_utils.py), so
// given both, the later one wins.
func setToggle(dst *sim.Toggle, name string, args []string) {
	for _, a := range args {
		if a == "--" {
			break
		}
		switch a {
		case "--" + name:
			*dst = sim.On
		case "--no-" + name:
			*dst = sim.Off
		}
	}
}

// applyEngineArgs interprets the flags that shape the engine beyond a plain value, and checks
// the engine's ranges.
func (o *Options) applyEngineArgs(fs *pflag.FlagSet, r *rawArgs, args []string, getenv func(string) string) error {
	setToggle(&o.Engine.PrefixCaching, "enable-prefix-caching", args)
	setToggle(&o.Engine.ChunkedPrefill, "enable-chunked-prefill", args)
	setToggle(&o.Engine.AsyncScheduling, "async-scheduling", args)
	switch {
	case !o.PrintCapacity && (fs.Changed("random-input-len") || fs.Changed("random-output-len")):
		return &UsageError{"argument --random-input-len/--random-output-len: only with --print-capacity"}
	case o.CapacityPromptLen < 1 || o.CapacityOutputLen < 1:
		return &UsageError{"argument --random-input-len/--random-output-len: must be at least 1"}
	case o.CapacityPromptLen > maxCapacityLen || o.CapacityOutputLen > maxCapacityLen:
		// bench's bound on random lengths: past any model's context, and the what-if tables
		// would plan a context no config allows.
		return &UsageError{fmt.Sprintf("argument --random-input-len/--random-output-len: at most %d each, longer than any model's context", maxCapacityLen)}
	}
	if *r.maxModelLen != "" {
		if err := o.setMaxModelLen(*r.maxModelLen); err != nil {
			return err
		}
	}
	if fs.Changed("max-num-batched-tokens") {
		n, err := humanReadableInt("max-num-batched-tokens", *r.maxBatchedTokens)
		if err != nil {
			return err
		}
		if n < 0 || n > 1<<31 {
			return &UsageError{fmt.Sprintf("argument --max-num-batched-tokens: %d is out of range", n)}
		}
		o.Engine.MaxNumBatchedTokens = int(n)
		o.setNonDefault("max_num_batched_tokens", int(n))
	}
	if fs.Changed("kv-cache-memory-bytes") {
		n, err := humanReadableInt("kv-cache-memory-bytes", *r.kvCacheMemory)
		if err != nil {
			return err
		}
		o.Engine.KVCacheMemoryBytes = n
		o.setNonDefault("kv_cache_memory_bytes", n)
	}
	o.Engine.AllowLongMaxModelLen = getenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN") == "1" || strings.EqualFold(getenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN"), "true")
	fi, err := sim.ParseSamplerEnv(getenv("VLLM_USE_FLASHINFER_SAMPLER"))
	if err != nil {
		return &UsageError{err.Error()}
	}
	o.Engine.FlashInferSampler = fi
	if o.Engine.V2ModelRunnerEnv, err = sim.ParseEnvToggle("VLLM_USE_V2_MODEL_RUNNER", getenv("VLLM_USE_V2_MODEL_RUNNER")); err != nil {
		return &UsageError{err.Error()}
	}
	if err := o.checkPP(getenv); err != nil {
		return err
	}

	if *r.specConfig != "" {
		sp, err := parseSpeculativeConfig(*r.specConfig)
		if err != nil {
			return err
		}
		sp.AcceptanceRate = *r.specAcceptance
		o.Engine.Speculative = sp
	} else if fs.Changed("sim-spec-acceptance") {
		return &UsageError{"argument --sim-spec-acceptance: only with --speculative-config"}
	}
	return sim.ValidateRanges(o.Engine, fs.Changed)
}

// checkServing checks the flags of the API server around the engine.
func (o *Options) checkServing(fs *pflag.FlagSet) error {
	if err := o.checkDP(fs); err != nil {
		return err
	}
	if o.MaxLogprobs < -1 {
		return &UsageError{fmt.Sprintf("argument --max-logprobs: must be -1 or more, got %d", o.MaxLogprobs)}
	}
	if o.Port < 0 || o.Port > 65535 {
		return &UsageError{fmt.Sprintf("argument --port: %d is not a port number (0-65535)", o.Port)}
	}
	if !(o.Speed > 0) || math.IsInf(o.Speed, 0) || o.Speed > 1000 {
		return &UsageError{fmt.Sprintf("argument --sim-speed: must be greater than 0 and at most 1000, got %g", o.Speed)}
	}
	if !(o.StartupSeconds >= 0 && o.StartupSeconds <= 3600) { // NaN fails both
		return &UsageError{fmt.Sprintf("argument --sim-startup-seconds: must be between 0 and 3600, got %g", o.StartupSeconds)}
	}
	return nil
}

// parseSpeculativeConfig reads --speculative-config's JSON object. Keys the simulator does not
// model (draft_tensor_parallel_size, quantization, ...) are accepted and ignored, as they do
// not change what a client sees.
func parseSpeculativeConfig(text string) (*sim.SpeculativeConfig, error) {
	var raw map[string]any
	if err := json.Unmarshal([]byte(text), &raw); err != nil || raw == nil {
		return nil, &UsageError{fmt.Sprintf("argument --speculative-config: Value %s cannot be converted to <function loads>.", text)}
	}
	sp := &sim.SpeculativeConfig{}
	if v, ok := raw["method"]; ok {
		s, ok := v.(string)
		if !ok {
			return nil, &UsageError{"argument --speculative-config: method must be a string"}
		}
		sp.Method = s
	}
	if v, ok := raw["model"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return nil, &UsageError{"argument --speculative-config: model must be a string"}
		}
		sp.Model = s
	}
	if v, ok := raw["num_speculative_tokens"]; ok && v != nil {
		n, ok := v.(float64)
		if !ok || n != math.Trunc(n) || n < 0 || n > 1e6 {
			return nil, &UsageError{"argument --speculative-config: num_speculative_tokens must be a positive integer"}
		}
		sp.NumSpeculativeTokens = int(n)
	}
	return sp, nil
}

// jsonAsPython decodes JSON into the values vlog renders as Python's repr: objects become
// []vlog.KV in their key order, integers int64, other numbers float64.
func jsonAsPython(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := decodePython(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func decodePython(dec *json.Decoder, depth int) (any, error) {
	if depth > 32 {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			kvs := []vlog.KV{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodePython(dec, depth+1)
				if err != nil {
					return nil, err
				}
				kvs = append(kvs, vlog.KV{Key: fmt.Sprint(k), Value: v})
			}
			_, err := dec.Token()
			return kvs, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodePython(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return n, nil
		}
		return t.Float64()
	}
	return tok, nil
}

// ParseMaxModelLen accepts vLLM's forms: 4096, 1k (1000), 1K (1024), 25.6k, 2m, 1M.
func ParseMaxModelLen(s string) (int, error) {
	t := strings.TrimSpace(s)
	if t == "-1" || strings.EqualFold(t, "auto") {
		return 0, errors.New("auto (-1) fits the context to the KV cache; give a number here")
	}
	n, err := parseHumanInt(t)
	if err != nil || n <= 0 || n > 1<<31 {
		if err != nil && strings.HasPrefix(err.Error(), "Decimals") {
			return 0, err
		}
		return 0, fmt.Errorf("invalid value %q (a whole number of tokens up to 2147483648, optionally with k, K, m, M: 32k, 128K, 1M)", s)
	}
	return int(n), nil
}

// setMaxModelLen takes --max-model-len: a length, or auto (-1), which vLLM stores as -1 and
// fits to the KV cache once it is sized.
func (o *Options) setMaxModelLen(v string) error {
	if t := strings.TrimSpace(v); t == "-1" || strings.EqualFold(t, "auto") {
		o.Engine.AutoFitMaxModelLen = true
		o.setNonDefault("max_model_len", -1)
		return nil
	}
	n, err := ParseMaxModelLen(v)
	if err != nil {
		return &UsageError{fmt.Sprintf("argument --max-model-len: %v", err)}
	}
	o.Engine.MaxModelLen = n
	o.setNonDefault("max_model_len", n) // vLLM logs the parsed int: 8k is 8000
	return nil
}

// setNonDefault replaces the logged value of a non-default arg with the parsed one, as vLLM
// logs it (8k is 8000).
func (o *Options) setNonDefault(key string, v any) {
	for i := range o.NonDefault {
		if o.NonDefault[i].Key == key {
			o.NonDefault[i].Value = v
		}
	}
}

// humanReadableInt parses an integer flag as vLLM's human_readable_int does, with argparse's
// errors.
func humanReadableInt(flag, s string) (int64, error) {
	n, err := parseHumanInt(s)
	if err != nil {
		return 0, &UsageError{fmt.Sprintf("argument --%s: %v", flag, err)}
	}
	return n, nil
}

// parseHumanInt is vLLM's human_readable_int (vllm/utils/argparse_utils.py): a lowercase
// suffix is decimal and takes a fraction (25.6k is 25600), an uppercase one binary and takes
// whole numbers only (2K is 2048); else a plain integer.
func parseHumanInt(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if g := reHumanInt.FindStringSubmatch(t); g != nil {
		mult := map[string]float64{"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[g[2]]
		if strings.ToUpper(g[2]) == g[2] && strings.Contains(g[1], ".") {
			//lint:ignore ST1005 vLLM's message, word for word
			return 0, fmt.Errorf("Decimals are not allowed with binary suffixes like %s. Did you mean to use %s%s instead?", g[2], g[1], strings.ToLower(g[2]))
		}
		x, err := strconv.ParseFloat(g[1], 64)
		if err == nil && x*mult < 1<<62 {
			return int64(x * mult), nil
		}
	} else if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("invalid human_readable_int value: '%s'", s)
}

var reHumanInt = regexp.MustCompile(`^(\d+(?:\.\d+)?)([kKmMgGtT])$`)

// expandShortAliases turns vLLM's two-letter aliases into long flags (pflag shorthands are one letter).
func expandShortAliases(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		switch {
		case a == "-tp":
			a = "--tensor-parallel-size"
		case strings.HasPrefix(a, "-tp="):
			a = "--tensor-parallel-size=" + a[4:]
		case a == "-cc" || strings.HasPrefix(a, "-cc="):
			a = "--compilation-config" + strings.TrimPrefix(a, "-cc")
		case a == "-ep":
			a = "--enable-expert-parallel"
		case a == "-dcp" || strings.HasPrefix(a, "-dcp="):
			a = "--decode-context-parallel-size" + strings.TrimPrefix(a, "-dcp")
		case a == "-sc" || strings.HasPrefix(a, "-sc="):
			a = "--speculative-config" + strings.TrimPrefix(a, "-sc")
		case a == "-O":
			a = "--optimization-level"
		case strings.HasPrefix(a, "-O"):
			// -O3, -O.key=value: argparse's attached value of a short option.
			a = "--optimization-level=" + strings.TrimPrefix(strings.TrimPrefix(a, "-O"), "=")
		case a == "--kv-cache-memory" || strings.HasPrefix(a, "--kv-cache-memory="):
			// argparse takes a unique prefix of a long flag; vLLM's own advice spells this one.
			a = "--kv-cache-memory-bytes" + strings.TrimPrefix(a, "--kv-cache-memory")
		default:
			a = expandCompatAlias(expandPPAlias(expandDPAlias(a)))
		}
		out = append(out, a)
	}
	return out
}

// unrecognized lists unknown options and their values the way argparse reports them.
func unrecognized(fs *pflag.FlagSet, args []string) []string {
	var bad []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' || isNumber(a) {
			continue
		}
		var known bool
		var takesValue bool
		if strings.HasPrefix(a, "--") {
			name, _, hasEq := strings.Cut(a[2:], "=")
			f := fs.Lookup(name)
			known = f != nil
			takesValue = known && f.Value.Type() != "bool" && !hasEq
		} else {
			f := fs.ShorthandLookup(a[1:2])
			known = f != nil
			takesValue = known && f.Value.Type() != "bool" && len(a) == 2
		}
		if !known {
			bad = append(bad, a)
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.Contains(a, "=") {
				bad = append(bad, args[i+1])
				i++
			}
			continue
		}
		if takesValue {
			i++
		}
	}
	return bad
}

func isNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }

// argparseMessage rewrites pflag's errors in argparse's words.
func argparseMessage(err error) string {
	msg := err.Error()
	// pflag: `invalid argument "abc" for "--port" flag: strconv.ParseInt: parsing "abc": invalid syntax`
	if strings.HasPrefix(msg, "invalid argument ") {
		var value, flag string
		if _, e := fmt.Sscanf(msg, "invalid argument %q for %q flag:", &value, &flag); e == nil {
			kind := "value"
			switch {
			case strings.Contains(msg, "ParseInt"):
				kind = "int value"
			case strings.Contains(msg, "ParseFloat"):
				kind = "float value"
			}
			if i := strings.Index(flag, "--"); i >= 0 {
				flag = flag[i:]
			}
			return fmt.Sprintf("argument %s: invalid %s: '%s'", flag, kind, value)
		}
	}
	if strings.HasPrefix(msg, "flag needs an argument: ") {
		f := strings.TrimPrefix(msg, "flag needs an argument: ")
		if i := strings.Index(f, "--"); i >= 0 {
			f = f[i:]
		}
		return fmt.Sprintf("argument %s: expected one argument", strings.Trim(f, "'"))
	}
	return msg
}

// helpText is --help, laid out for the width of standard output.
func helpText(fs *pflag.FlagSet) string {
	width := termwidth.Stdout()
	var b strings.Builder
	b.WriteString(usageLine + "\n\n")
	b.WriteString(textfmt.Wrap("A simulated vLLM server: `vllm serve`'s flags, log lines, endpoints and /metrics, with a "+
		"continuous-batching engine and a GPU roofline model instead of a GPU. It binds 127.0.0.1 by "+
		"default (vLLM binds all interfaces): pass --host 0.0.0.0 to serve other machines.", width) + "\n\n")
	b.WriteString("Options:\n")
	b.WriteString(textfmt.FitFlagUsages(fs.FlagUsagesWrapped(width), width))
	b.WriteString(notSimulatedHelp(width))
	b.WriteString("\n" + wrapList("Simulated models: ", sim.BuiltinProfiles().ModelNames(), width))
	var gpus []string
	for _, g := range sim.BuiltinProfiles().GPUs {
		gpus = append(gpus, g.Name)
	}
	b.WriteString(wrapList("Simulated GPUs: ", gpus, width))
	return b.String()
}

// wrapList writes title and the comma-separated items in lines of at most width columns, the
// lines after the first indented by two.
func wrapList(title string, items []string, width int) string {
	var b strings.Builder
	line := title
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		if len(line)+1+len(it) > width && line != title {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = "  "
		} else if line != title {
			line += " "
		}
		line += it
	}
	return b.String() + line + "\n"
}

// maxCapacityLen bounds --print-capacity's request lengths as bench bounds random ones
// (16 Mi tokens).
const maxCapacityLen = 1 << 24
