package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// defineDPFlags declares vllm serve's data- and expert-parallel flags. --data-parallel-size
// runs that many engines; the multi-node ones are accepted, and the simulator runs every rank
// itself. A mixture-of-experts model's experts span all the engines' ranks (sim's experts.go).
func defineDPFlags(fs *pflag.FlagSet, o *Options) {
	fs.BoolVar(&o.Engine.ExpertParallel, "enable-expert-parallel", false, "Deal a mixture-of-experts model's routed experts out whole over the TP x DP ranks (-ep); without it each rank holds a slice of every expert")
	fs.BoolVar(&o.EnableEPLB, "enable-eplb", false, "Expert-parallel load balancing (needs --enable-expert-parallel); only its redundant experts are simulated, as memory")
	fs.StringVar(&o.EPLBConfig, "eplb-config", "", `EPLB settings as JSON, e.g. '{"num_redundant_experts": 32}': that many expert copies more over the ranks`)
	fs.Int("num-redundant-experts", 0, "The releases before 0.12: --eplb-config's num_redundant_experts")
	fs.IntVar(&o.DataParallelSize, "data-parallel-size", 1, "Number of data-parallel engines, each with its own GPUs, KV cache and scheduler (-dp)")
	fs.IntVar(&o.DataParallelSizeLocal, "data-parallel-size-local", 0, "Data-parallel engines on this node (-dpl); the simulator runs them all here, so it must equal --data-parallel-size")
	for _, name := range []string{"data-parallel-address", "data-parallel-rpc-port", "data-parallel-backend", "data-parallel-start-rank"} {
		fs.String(name, "", "accepted for compatibility; no effect in the simulator")
	}
}

// dpAliases are vLLM's short forms of the data-parallel flags.
var dpAliases = map[string]string{
	"-dp": "--data-parallel-size", "-dpl": "--data-parallel-size-local", "-dpa": "--data-parallel-address",
	"-dpp": "--data-parallel-rpc-port", "-dpb": "--data-parallel-backend", "-dpr": "--data-parallel-start-rank",
}

// checkDP checks the data-parallel sizes.
func (o *Options) checkDP(fs *pflag.FlagSet) error {
	if o.DataParallelSize < 1 || o.DataParallelSize > 64 {
		return &ConfigError{Msg: fmt.Sprintf("--data-parallel-size must be between 1 and 64, got %d", o.DataParallelSize)}
	}
	if l := o.DataParallelSizeLocal; l != 0 && l != o.DataParallelSize {
		return &ConfigError{Msg: fmt.Sprintf("--data-parallel-size-local %d: the simulator runs all %d data-parallel engines on one node", l, o.DataParallelSize)}
	}
	o.Engine.DataParallelSize = o.DataParallelSize
	return o.checkEPLB(fs)
}

// checkEPLB reads --eplb-config and checks it against --enable-eplb as vLLM's ParallelConfig
// does.
func (o *Options) checkEPLB(fs *pflag.FlagSet) error {
	n, _ := fs.GetInt("num-redundant-experts")
	if o.EPLBConfig != "" {
		var cfg map[string]any
		if err := json.Unmarshal([]byte(o.EPLBConfig), &cfg); err != nil || cfg == nil {
			return &UsageError{"argument --eplb-config: not a JSON object: " + o.EPLBConfig}
		}
		if v, ok := cfg["num_redundant_experts"]; ok {
			var err error
			if n, err = wholeNumber(v); err != nil {
				return &UsageError{fmt.Sprintf("argument --eplb-config: num_redundant_experts must be a whole number, got %v", v)}
			}
		}
	}
	switch {
	case n < 0:
		return &ConfigError{Msg: fmt.Sprintf("num_redundant_experts must be non-negative, but got %d.", n)}
	case o.EnableEPLB && !o.Engine.ExpertParallel:
		return &ConfigError{Msg: "enable_expert_parallel must be True to use EPLB."}
	case n > 0 && !o.EnableEPLB:
		return &ConfigError{Msg: fmt.Sprintf("num_redundant_experts is set to %d but EPLB is not enabled. Either enable EPLB or unset num_redundant_experts.", n)}
	}
	o.Engine.RedundantExperts, o.Engine.EPLB = n, o.EnableEPLB
	return nil
}

// wholeNumber reads a JSON number or numeric string that is a whole number, as pydantic
// coerces an int field.
func wholeNumber(v any) (int, error) {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<31 {
			return int(x), nil
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("not a whole number: %v", v)
}

// expandDPAlias turns "-dp 2" and "-dp=2" (and the other short forms) into the long flag.
func expandDPAlias(a string) string {
	name, value, eq := strings.Cut(a, "=")
	long, ok := dpAliases[name]
	if !ok {
		return a
	}
	if eq {
		return long + "=" + value
	}
	return long
}
