package serve

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// defineDPFlags declares vllm serve's data-parallel flags. --data-parallel-size runs that
// many engines; the multi-node ones are accepted, and the simulator runs every rank itself.
func defineDPFlags(fs *pflag.FlagSet, o *Options) {
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
func (o *Options) checkDP() error {
	if o.DataParallelSize < 1 || o.DataParallelSize > 64 {
		return &ConfigError{Msg: fmt.Sprintf("--data-parallel-size must be between 1 and 64, got %d", o.DataParallelSize)}
	}
	if l := o.DataParallelSizeLocal; l != 0 && l != o.DataParallelSize {
		return &ConfigError{Msg: fmt.Sprintf("--data-parallel-size-local %d: the simulator runs all %d data-parallel engines on one node", l, o.DataParallelSize)}
	}
	return nil
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
