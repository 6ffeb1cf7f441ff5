package metrics

import (
	"strconv"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
)

// NewEngines is New for a data-parallel server of n engines behind one API server: every
// engine family has a child per engine, engine="0" to engine="n-1", as vLLM's
// PrometheusStatLogger creates them (one registry, the engine index as a label). Engine(i)
// observes engine i; the HTTP and process families stay the API server's alone.
func NewEngines(setup *sim.Setup, modelName string, logStats bool, n int) *Metrics {
	return newEngines(setup, modelName, logStats, n, time.Now, Extras{})
}

// NewEnginesWithExtras is NewEngines with the families of the observability flags. The LoRA
// gauge has no engine label, so it is the first engine's alone.
func NewEnginesWithExtras(setup *sim.Setup, modelName string, logStats bool, n int, x Extras) *Metrics {
	return newEngines(setup, modelName, logStats, n, time.Now, x)
}

func newEngines(setup *sim.Setup, modelName string, logStats bool, n int, now func() time.Time, x Extras) *Metrics {
	m := newMetricsExtras(setup, modelName, logStats, now, x)
	ex := x
	ex.LoRA = false
	for i := 1; i < n; i++ {
		// An engine's families register on m's registry under the same names; the exposition
		// lists them where engine 0's are, each family's children engine by engine. Its own
		// order and series records are not read: m's already name every family and child.
		e := &Metrics{reg: m.reg, on: m.on, feat: m.feat, http: m.http, extra: ex, setup: setup, now: now}
		if logStats {
			e.registerEngine(setup, modelName, strconv.Itoa(i))
		}
		m.engines = append(m.engines, e)
	}
	return m
}

// Engine is the metrics of data-parallel engine i: m itself for 0.
func (m *Metrics) Engine(i int) *Metrics {
	if i <= 0 || i > len(m.engines) {
		return m
	}
	return m.engines[i-1]
}

// Engines is the number of engines whose families m serves.
func (m *Metrics) Engines() int { return 1 + len(m.engines) }
