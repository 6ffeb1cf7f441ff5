package serve

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// The rest of `vllm serve`'s flags at 0.33 (its CLI reference; docs/vllm-behaviour.md#serving-flags),
// accepted so that real command lines run, named as not simulated and left out of the option
// list of --help, which names them in its list of flags accepted without simulation. Their kinds
// are argparse's: a switch, a --x/--no-x pair, one value (JSON ones included), or a list of values.
var (
	compatSwitches = []string{
		"grpc", "aggregate-engine-logging", "data-parallel-multi-port-external-lb",
	}
	compatToggles = []string{
		"fail-on-environ-validation", "trust-request-chat-template", "return-tokens-as-token-ids",
		"exclude-tools-when-tool-choice-none", "enable-per-request-metrics",
		"enable-server-load-tracking", "enable-tokenizer-info-endpoint", "enable-log-outputs",
		"enable-log-deltas", "log-error-stack", "tokens-only", "allow-credentials", "enable-ssl-refresh",
		"enable-request-id-headers", "disable-fastapi-docs", "enable-offline-docs",
		"allow-deprecated-quantization", "enable-return-routed-experts", "return-sampling-mask",
		"disable-sliding-window", "disable-cascade-attn", "skip-tokenizer-init", "enable-prompt-embeds",
		"enable-sleep-mode", "enable-cumem-allocator", "use-tqdm-on-load", "numa-bind",
		"data-parallel-hybrid-lb", "data-parallel-external-lb", "enable-batch-sharded-sampling",
		"enable-ep-weight-filter", "enable-elastic-ep", "disable-nccl-for-dp-synchronization",
		"ray-workers-use-nsight", "disable-custom-all-reduce", "enable-fault-tolerance",
		"kv-sharing-fast-prefill", "enable-mm-embeds", "mm-encoder-only", "interleave-mm-strings",
		"skip-mm-profiling", "fully-sharded-loras", "cudagraph-metrics", "enable-layerwise-nvtx-tracing",
		"enable-logging-iteration-details", "disable-chunked-mm-input", "disable-hybrid-kv-cache-manager",
		"enable-flashinfer-autotune",
	}
	compatValues = []string{
		"grpc-port", "shutdown-timeout", "gdn-prefill-backend", "kda-prefill-backend",
		"kda-decode-backend", "response-role", "tool-parser-plugin", "tool-strict-level",
		"log-config-file", "sse-keep-alive-interval", "uds", "disable-access-log-for-endpoints",
		"allowed-origins", "allowed-methods", "allowed-headers", "ssl-keyfile", "ssl-certfile",
		"ssl-ca-certs", "ssl-cert-reqs", "ssl-ciphers", "root-path", "middleware",
		"h11-max-incomplete-event-size", "h11-max-header-count", "hf-config-path",
		"allowed-local-media-path", "code-revision", "tokenizer-revision", "quantization-config",
		"logprobs-mode", "model-class-overrides", "pooler-config", "model-impl", "io-processor-plugin",
		"renderer-num-workers", "safetensors-load-strategy", "model-loader-extra-config",
		"pt-load-map-location", "mamba-backend", "reasoning-parser-plugin", "master-addr", "master-port",
		"nnodes", "node-rank", "distributed-timeout-seconds", "dcp-comm-backend",
		"cp-kv-cache-interleave-size", "dcp-kv-cache-interleave-size", "data-parallel-rank",
		"ubatch-size", "dbo-decode-token-threshold", "dbo-prefill-token-threshold",
		"expert-placement-strategy", "max-parallel-loading-workers", "worker-cls", "worker-extension-cls",
		"fault-tolerance-config", "mamba-cache-dtype", "mamba-block-size", "prefix-match-unit",
		"prefix-cache-retention-interval", "offload-backend", "offload-group-size",
		"offload-num-in-group", "offload-prefetch-step", "media-io-kwargs", "mm-processor-cache-gb",
		"mm-hasher-algorithm", "mm-encoder-attn-backend", "video-pruning-rate", "lora-dtype",
		"max-cpu-loras", "default-mm-loras", "otlp-traces-endpoint", "max-num-scheduled-tokens",
		"scheduler-cls", "linear-backend", "ec-transfer-config", "attention-config", "reasoning-config",
		"kernel-config", "additional-config", "profiler-config", "weight-transfer-config",
	}
	compatLists = []string{
		"allowed-media-domains", "sleep-preserve-parameter-names", "logits-processors", "ignore-patterns",
		"numa-bind-nodes", "numa-bind-cpus", "kv-cache-dtype-skip-layers", "cpu-offload-params",
		"offload-params", "lora-target-modules", "collect-detailed-traces",
	}
)

// compatAliases are the short forms of flags that have no other simulated meaning.
var compatAliases = map[string]string{
	"-asc": "--api-server-count", "-n": "--nnodes", "-r": "--node-rank", "-dpn": "--data-parallel-rank",
	"-dph": "--data-parallel-hybrid-lb", "-dpe": "--data-parallel-external-lb",
	"-dpm": "--data-parallel-multi-port-external-lb", "-ac": "--attention-config", "-q": "--quantization",
	"-pcp": "--prefill-context-parallel-size", "--device-memory-utilization": "--gpu-memory-utilization",
}

func init() {
	for _, names := range [][]string{compatSwitches, compatToggles, compatValues, compatLists} {
		notSimulated = append(notSimulated, names...)
	}
	for _, name := range compatLists {
		listFlags["--"+name] = true
	}
}

// defineCompatFlags declares them, hidden from the option list.
func defineCompatFlags(fs *pflag.FlagSet) {
	hide := func(name string) { _ = fs.MarkHidden(name) }
	for _, name := range compatSwitches {
		fs.Bool(name, false, notSimulatedUsage)
		hide(name)
	}
	for _, name := range compatToggles {
		fs.Bool(name, false, notSimulatedUsage)
		fs.Bool("no-"+name, false, notSimulatedUsage)
		hide(name)
		hide("no-" + name)
	}
	for _, name := range compatValues {
		fs.String(name, "", notSimulatedUsage)
		hide(name)
	}
	for _, name := range compatLists {
		fs.StringArray(name, nil, notSimulatedUsage)
		hide(name)
	}
	fs.Int("prefill-context-parallel-size", 1, "Prefill context-parallel ranks (-pcp); only 1 is simulated")
}

// checkContextParallel refuses a prefill context-parallel size above 1, which splits each
// prompt's KV cache over more ranks in a way the plan does not model.
func checkContextParallel(fs *pflag.FlagSet) error {
	if n, _ := fs.GetInt("prefill-context-parallel-size"); n != 1 {
		return &ConfigError{Msg: fmt.Sprintf("--prefill-context-parallel-size %d is not simulated: it splits each prompt's KV cache over more ranks", n)}
	}
	return nil
}

// expandCompatAlias turns a short form of compatAliases ("-asc 2", "-asc=2") into the long flag.
func expandCompatAlias(a string) string {
	name, value, eq := strings.Cut(a, "=")
	long, ok := compatAliases[name]
	switch {
	case !ok:
		return a
	case eq:
		return long + "=" + value
	}
	return long
}
