package serve

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/metrics"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// LoRAModule is one --lora-modules adapter, served as a model of its own.
type LoRAModule struct {
	Name, Path, BaseModel string
}

// notSimulated are the vllm serve flags the simulator accepts so that real command lines run
// unchanged, although they change nothing it simulates. `vllmtop sim --help` marks them and
// the start-up log lists the ones given.
var notSimulated = []string{"trust-remote-code", "disable-uvicorn-access-log", "disable-log-requests",
	"enable-log-requests", "disable-frontend-multiprocessing", "enable-auto-tool-choice", "uvicorn-log-level",
	"download-dir", "load-format", "tokenizer", "revision", "max-log-len", "generation-config", "tool-call-parser",
	"chat-template", "seed", "distributed-executor-backend", "max-lora-rank",
	"max-num-queued-reqs", "max-num-queued-tokens", "no-enable-log-requests",
	"reasoning-parser", "moe-backend", "stream-interval",
	"optimization-level", "compilation-config", "max-cudagraph-capture-size", "limit-mm-per-prompt",
	"mamba-ssm-cache-dtype", "hf-overrides", "override-generation-config", "long-prefill-token-threshold",
	"max-num-partial-prefills", "max-long-partial-prefills", "cuda-graph-sizes",
	"cudagraph-capture-sizes", "enable-dbo", "headless", "all2all-backend", "prefix-caching-hash-algo",
	"kv-offloading-size", "kv-offloading-backend", "kv-transfer-config", "kv-events-config", "mm-encoder-tp-mode",
	"mm-processor-cache-type", "mm-processor-kwargs", "tokenizer-mode", "config-format", "mamba-cache-mode",
	"structured-outputs-config", "default-chat-template-kwargs", "chat-template-content-format", "tool-server",
	"swap-space"}

// flagChoices are the choices of accepted flags whose values vLLM checks (vllm/config/parallel.py,
// cache.py and multimodal.py).
var flagChoices = map[string][]string{
	"all2all-backend": {"allgather_reducescatter", "deepep_high_throughput", "deepep_low_latency", "deepep_v2",
		"flashinfer_all2allv", "flashinfer_nvlink_one_sided", "flashinfer_nvlink_two_sided", "mori_high_throughput",
		"mori_low_latency", "naive", "nixl_ep", "pplx"},
	"prefix-caching-hash-algo": {"sha256", "sha256_cbor", "xxhash", "xxhash_cbor"},
	"kv-offloading-backend":    {"native", "lmcache"},
	"mm-encoder-tp-mode":       {"data", "weights"},
	"mamba-cache-mode":         {"all", "align", "none"},
}

// removedFlags are flags of older releases and the release that dropped them, so that a command
// line of an older vLLM runs under its --sim-vllm-version and fails as vLLM fails from then on.
var removedFlags = map[string]string{
	"disable-log-requests":  "0.17.0", // deprecated in vllm#21739; still in 0.12.0's CLI reference, gone by 0.17.0
	"swap-space":            "0.18.0", // vllm#36216: V1 never swaps
	"cuda-graph-sizes":      "0.13.0", // its deprecation notice named v0.13 (--cudagraph-capture-sizes since)
	"num-redundant-experts": "0.12.0", // its deprecation notice named v0.12 (--eplb-config since)
}

const notSimulatedUsage = "accepted, not simulated"

// extraArgs are the flags of the serving features added to the simulator as vLLM grew them.
type extraArgs struct {
	loraModules   *[]string
	customBuckets *string
	showHidden    *string
	kvSample      *float64
}

// defineExtraFlags declares the LoRA, scheduling and observability flags.
func defineExtraFlags(fs *pflag.FlagSet, o *Options) *extraArgs {
	x := &extraArgs{}
	fs.String("config", "", "YAML file of flags (keys are flag names, underscores or dashes); the command line wins")
	// Commands that pass the simulator's flags on have a --config of their own.
	_ = fs.SetAnnotation("config", OwnFlag, nil)
	fs.StringVar(&o.SchedulingPolicy, "scheduling-policy", "fcfs", "fcfs, or priority: the request's priority field orders the queue, lower first")
	fs.BoolVar(&o.EnableLoRA, "enable-lora", false, "Serve LoRA adapters (--lora-modules) and export vllm:lora_requests_info")
	fs.IntVar(&o.MaxLoras, "max-loras", 1, "Largest number of LoRA adapters in one batch (the max_lora label)")
	fs.Int("max-lora-rank", 16, notSimulatedUsage)
	x.loraModules = fs.StringArray("lora-modules", nil, `LoRA adapters as name=path or JSON {"name": ..., "path": ..., "base_model_name": ...}`)
	fs.IntVarP(&o.Engine.APIServerCount, "api-server-count", "", 0, "API server processes, each one event loop that processes inputs and streams outputs (default: the data-parallel size from vLLM 0.15, else 1)")
	fs.BoolVar(&o.Engine.LanguageModelOnly, "language-model-only", false, "Serve a multimodal model as text only: its encoders are neither loaded nor profiled (from vLLM 0.10.1)")
	fs.Float64Var(&o.Engine.CPUOffloadGiB, "cpu-offload-gb", 0, "GiB of each GPU's decoder weights kept in host memory (their space goes to the KV cache)")
	fs.Int("max-num-queued-reqs", 0, notSimulatedUsage)
	fs.Int("max-num-queued-tokens", 0, notSimulatedUsage)
	fs.BoolVar(&o.PromptTokensDetails, "enable-prompt-tokens-details", false, "Report usage.prompt_tokens_details.cached_tokens")
	fs.BoolVar(&o.Metrics.KVCacheMetrics, "kv-cache-metrics", false, "Export the KV block residency histograms (vllm:kv_block_*_seconds) of the prefix cache's sampled blocks")
	x.kvSample = fs.Float64("kv-cache-metrics-sample", 0.01, "Fraction of KV cache blocks whose residency --kv-cache-metrics records")
	fs.BoolVar(&o.Metrics.MFU, "enable-mfu-metrics", false, "Count the roofline model's FLOPs and bytes in vllm:estimated_*_per_gpu_total")
	x.customBuckets = fs.String("custom-histogram-buckets", "", `Histogram buckets by family as JSON, e.g. '{"request_latency": [0.1, 0.5, 1]}'`)
	x.showHidden = fs.String("show-hidden-metrics-for-version", "", "Bring back the metrics hidden since that release (the previous minor one)")
	return x
}

// applyExtraArgs interprets the extra flags.
func (o *Options) applyExtraArgs(fs *pflag.FlagSet, x *extraArgs) error {
	switch o.SchedulingPolicy {
	case "fcfs", sim.PolicyPriority:
	default:
		return &UsageError{fmt.Sprintf("argument --scheduling-policy: invalid choice: '%s' (choose from 'fcfs', 'priority')", o.SchedulingPolicy)}
	}
	o.Engine.SchedulingPolicy = o.SchedulingPolicy
	if o.MaxLoras < 1 {
		return &UsageError{fmt.Sprintf("argument --max-loras: must be at least 1, got %d", o.MaxLoras)}
	}
	for _, m := range *x.loraModules {
		lm, err := parseLoRAModule(m)
		if err != nil {
			return err
		}
		o.LoRAModules = append(o.LoRAModules, lm)
	}
	if len(o.LoRAModules) > 0 && !o.EnableLoRA {
		return &UsageError{"argument --lora-modules: needs --enable-lora"}
	}
	if *x.customBuckets != "" {
		b, err := metrics.ParseCustomBuckets(*x.customBuckets)
		if err != nil {
			return &UsageError{"argument --custom-histogram-buckets: " + err.Error()}
		}
		o.Metrics.Buckets = b
	}
	if *x.showHidden != "" {
		if _, err := sim.ParseVersion(*x.showHidden); err != nil {
			return &UsageError{"argument --show-hidden-metrics-for-version: " + err.Error()}
		}
		o.Metrics.ShowHiddenFor = *x.showHidden
	}
	if !(*x.kvSample > 0 && *x.kvSample <= 1) {
		return &UsageError{fmt.Sprintf("argument --kv-cache-metrics-sample: must be in (0, 1], got %g", *x.kvSample)}
	}
	if o.Metrics.KVCacheMetrics {
		o.Engine.KVCacheMetricsSample = *x.kvSample
	}
	o.Metrics.MaxLoras = o.MaxLoras
	o.Metrics.CacheLabels = cacheLabelsOf(fs)
	o.Metrics.LoRA = o.EnableLoRA
	o.NotSimulated = givenNotSimulated(fs)
	if err := checkContextParallel(fs); err != nil {
		return err
	}
	return checkAcceptedFlags(fs, o.Engine.VLLMVersion)
}

// checkAcceptedFlags refuses what vLLM would among the flags accepted without simulation: a
// value not among the choices, a flag the imitated release no longer has, and a decode
// context-parallel size above 1, which splits the KV cache in a way the plan does not model.
func checkAcceptedFlags(fs *pflag.FlagSet, release string) error {
	var err error
	v, verr := sim.ParseVersion(release)
	fs.Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		val := f.Value.String()
		if choices, ok := flagChoices[f.Name]; ok && !slices.Contains(choices, val) {
			err = &UsageError{fmt.Sprintf("argument --%s: invalid choice: '%s' (choose from %s)", f.Name, val, quoteChoices(choices))}
		}
		if gone, ok := removedFlags[f.Name]; ok && verr == nil && v.AtLeast(gone) {
			err = &UsageError{fmt.Sprintf("unrecognized arguments: --%s (removed in vLLM %s; --sim-vllm-version is %s)", f.Name, strings.TrimSuffix(gone, ".0"), v)}
		}
		switch {
		case f.Name == "decode-context-parallel-size" && val != "1":
			err = &ConfigError{Msg: fmt.Sprintf("--decode-context-parallel-size %s is not simulated: it splits the KV cache over the tensor-parallel ranks", val)}
		case f.Name == "headless" && val == "true":
			// vLLM's headless node runs engines for another node's API server.
			err = &ConfigError{Msg: "--headless starts no API server, and the simulator is one: run it without --headless"}
		case f.Name == "api-server-count":
			err = checkAPIServerCount(val)
		case f.Name == "max-num-partial-prefills" && val != "1" && verr == nil && v.V1Engine():
			err = &sim.EngineConfigError{Msg: "Concurrent Partial Prefill is not supported. We recommend to remove Concurrent Partial Prefill from your config."}
		}
	})
	return err
}

// checkAPIServerCount refuses what --api-server-count cannot simulate: fewer than one API
// server is vllm serve's headless mode; more than 256 is out of the simulator's range.
func checkAPIServerCount(val string) error {
	n, _ := strconv.Atoi(val)
	switch {
	case n < 1:
		return &ConfigError{Msg: fmt.Sprintf("--api-server-count %s starts no API server (vLLM runs headless), and the simulator is one: give 1 or more", val)}
	case n > 256:
		return &ConfigError{Msg: fmt.Sprintf("--api-server-count must be between 1 and 256, got %d", n)}
	}
	return nil
}

// quoteChoices lists choices as argparse does: 'a', 'b'.
func quoteChoices(choices []string) string {
	q := make([]string, len(choices))
	for i, c := range choices {
		q[i] = "'" + c + "'"
	}
	return strings.Join(q, ", ")
}

// expandNargs rewrites a list flag's "--lora-modules a b" (argparse's nargs="+") as one flag per
// value; the values are the arguments up to the next option.
func expandNargs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			return append(out, args[i:]...)
		}
		if !listFlags[args[i]] {
			out = append(out, args[i])
			continue
		}
		j := i + 1
		for ; j < len(args) && !strings.HasPrefix(args[j], "-"); j++ {
			out = append(out, args[i]+"="+args[j])
		}
		if j == i+1 {
			out = append(out, args[i]) // no value: pflag reports it
		}
		i = j - 1
	}
	return out
}

// intListFlags are the list flags of integers, which the simulator accepts without simulating:
// 0.10's --cuda-graph-sizes and its successor, in the order --help lists them.
var intListFlags = []string{"cuda-graph-sizes", "cudagraph-capture-sizes"}

// listFlags take a list of values (argparse's nargs="+"): LoRA adapters, the names a model is
// served under, and intListFlags.
var listFlags = func() map[string]bool {
	m := map[string]bool{"--lora-modules": true, "--served-model-name": true}
	for _, name := range intListFlags {
		m["--"+name] = true
	}
	return m
}()

// intAcceptedFlags are the accepted, not simulated flags vLLM types as integers (type=int):
// argparse refuses another value, and the non-default args log the number.
var intAcceptedFlags = []string{"seed", "max-log-len", "max-cudagraph-capture-size", "long-prefill-token-threshold",
	"max-num-partial-prefills", "max-long-partial-prefills", "stream-interval", "decode-context-parallel-size",
	"max-lora-rank", "max-num-queued-reqs", "max-num-queued-tokens"}

// checkIntLists refuses a value of an integer flag or integer list flag that is not an
// integer, as argparse's type=int does.
func checkIntLists(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if slices.Contains(intAcceptedFlags, f.Name) && err == nil {
			if _, e := strconv.Atoi(f.Value.String()); e != nil {
				err = &UsageError{fmt.Sprintf("argument --%s: invalid int value: '%s'", f.Name, f.Value.String())}
			}
			return
		}
		list, ok := f.Value.(pflag.SliceValue)
		if !ok || !slices.Contains(intListFlags, f.Name) || err != nil {
			return
		}
		for _, v := range list.GetSlice() {
			if _, e := strconv.Atoi(v); e != nil {
				err = &UsageError{fmt.Sprintf("argument --%s: invalid int value: '%s'", f.Name, v)}
				return
			}
		}
	})
	return err
}

// intList is the integers of an integer list flag, as vLLM logs them.
func intList(vals []string) []int {
	out := make([]int, 0, len(vals))
	for _, v := range vals {
		n, _ := strconv.Atoi(v)
		out = append(out, n)
	}
	return out
}

// parseLoRAModule reads name=path or vLLM's JSON form.
func parseLoRAModule(s string) (LoRAModule, error) {
	if strings.HasPrefix(strings.TrimSpace(s), "{") {
		var j struct {
			Name      string `json:"name"`
			Path      string `json:"path"`
			BaseModel string `json:"base_model_name"`
		}
		if err := json.Unmarshal([]byte(s), &j); err != nil || j.Name == "" || j.Path == "" {
			return LoRAModule{}, &UsageError{fmt.Sprintf("argument --lora-modules: invalid JSON format for --lora-modules: %s", s)}
		}
		return LoRAModule{j.Name, j.Path, j.BaseModel}, nil
	}
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return LoRAModule{}, &UsageError{fmt.Sprintf("argument --lora-modules: invalid format %q (name=path or JSON)", s)}
	}
	return LoRAModule{Name: name, Path: path}, nil
}

// givenNotSimulated lists, sorted, the not-simulated flags the command line gave.
func givenNotSimulated(fs *pflag.FlagSet) []string {
	var out []string
	for _, name := range notSimulated {
		if fs.Changed(name) {
			out = append(out, "--"+name)
		}
	}
	sort.Strings(out)
	return out
}

// notSimulatedHelp is the help's list of the flags accepted but not simulated, wrapped.
func notSimulatedHelp(width int) string {
	var b strings.Builder
	b.WriteString("\n" + textfmt.Wrap("Accepted but not simulated (a command line with them runs; they change nothing here):", width) + "\n")
	line := " "
	for i, name := range notSimulated {
		item := " --" + name
		if i < len(notSimulated)-1 {
			item += ","
		}
		if len(line)+len(item) > width {
			b.WriteString(line + "\n")
			line = " "
		}
		line += item
	}
	b.WriteString(line + "\n")
	return b.String()
}

// notSimulatedLine is the start-up warning naming the not-simulated flags given ("" if none).
func notSimulatedLine(flags []string) string {
	if len(flags) == 0 {
		return ""
	}
	return "vllmtop sim accepts but does not simulate: " + strings.Join(flags, ", ")
}

// cacheLabelsOf renders the CacheConfig fields set by flags the simulator does not model as
// vllm:cache_config_info shows them (Python's str() of each field).
func cacheLabelsOf(fs *pflag.FlagSet) map[string]string {
	out := map[string]string{}
	for _, name := range []string{"prefix-caching-hash-algo", "kv-offloading-backend", "mamba-cache-dtype"} {
		if fs.Changed(name) {
			out[strings.ReplaceAll(name, "-", "_")] = fs.Lookup(name).Value.String()
		}
	}
	if fs.Changed("kv-offloading-size") {
		if gib, err := strconv.ParseFloat(fs.Lookup("kv-offloading-size").Value.String(), 64); err == nil {
			out["kv_offloading_size"] = sim.PyFloat(gib)
		}
	}
	if fs.Changed("kv-sharing-fast-prefill") {
		out["kv_sharing_fast_prefill"] = "True"
	}
	if fs.Changed("kv-cache-dtype-skip-layers") {
		layers, _ := fs.GetStringArray("kv-cache-dtype-skip-layers")
		q := make([]string, len(layers))
		for i, l := range layers {
			q[i] = "'" + strings.ReplaceAll(l, "'", "") + "'"
		}
		out["kv_cache_dtype_skip_layers"] = "[" + strings.Join(q, ", ") + "]"
	}
	return out
}
