package benchcli

import (
	"github.com/spf13/pflag"
	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
)

// finishPooling sets up a pooling backend's run (openai-embeddings): embeddings requests, and
// vLLM's default percentile metrics for pooling, E2EL only.
func (o *Options) finishPooling(fs *pflag.FlagSet) error {
	r := &o.Runs
	if !loadgen.PoolingBackend(r.Info.Backend) {
		return nil
	}
	if o.Sim && o.SimClock == ClockVirtual {
		return cliflag.Usagef("--sim-clock virtual runs completions only; benchmark --backend %s against the simulator on the wall clock", r.Info.Backend)
	}
	o.Client.Pooling, o.Client.PoolingIgnoreEOS = true, o.Dataset.IgnoreEOS
	if !fs.Changed("percentile-metrics") {
		r.Info.Metrics = []string{"e2el"}
	}
	return nil
}
