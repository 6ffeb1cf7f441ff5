package dashcli

import (
	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
	"github.com/vllmtop/vllmtop/server/sim/serve"
	"github.com/vllmtop/vllmtop/tui"
)

// finishTuning checks the tuning flags: the SLO as bench reads it, and utilisations the
// sweep can restart with.
func (o *Dashboard) finishTuning() error {
	if o.sla != "" {
		slo, err := loadgen.ParseSLO(o.sla)
		if err == nil {
			err = slo.CheckKeys(tui.SLOKeys())
		}
		if err != nil {
			return cliflag.Usagef("%v", err)
		}
		o.deps.SLO = slo
	}
	for _, u := range o.deps.SweepUtils {
		if !(u > 0 && u <= 1) {
			return cliflag.Usagef("--sweep-utils %g: each value must be in (0, 1]", u)
		}
	}
	return nil
}

// wireCapacity gives the Capacity view the workload's sizes and, for a server the simulator
// models (vllmtop sim, supervised or built in), its capacity model at any utilisation.
// Other servers get what the view works out from their log and vllm:cache_config_info.
func (d *Dashboard) wireCapacity() {
	l := d.loadCfg
	d.deps.Workloads = [2]capacity.Workload{
		{PromptTokens: l.Short.InputLen, OutputTokens: l.Short.OutputLen},
		{PromptTokens: l.Long.InputLen, OutputTokens: l.Long.OutputLen},
	}
	if d.attach != "" || d.sup == nil {
		return
	}
	args := d.sup.Args()
	c := server.Classify(args)
	if c.Kind != server.KindSim {
		return
	}
	simArgs, getenv := append([]string(nil), args[c.Args:]...), d.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if m, err := serve.CapacityModel(simArgs, getenv); err == nil {
		d.deps.Capacity = m
	}
	if p, err := serve.Prepare(simArgs, getenv); err == nil {
		// The simulator's limits are known, given or not: its defaults are the plan's. The
		// verdicts then name the limit that binds rather than guess at one.
		if d.deps.MaxNumSeqs == 0 {
			d.deps.MaxNumSeqs = p.Setup().MaxNumSeqs
		}
		if d.deps.MaxNumBatchedTokens == 0 {
			d.deps.MaxNumBatchedTokens = p.Setup().MaxNumBatchedTokens
		}
	}
}
