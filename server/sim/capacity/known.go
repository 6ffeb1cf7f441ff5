package capacity

import (
	"errors"
	"math"
	"strings"
	"sync"
)

// Source is where a figure of a Report comes from.
type Source int

// The sources, from what the server itself said to what is predicted.
const (
	Unknown                  Source = iota
	FromLog                         // the server logged it in this run (or the last, at this utilisation)
	FromCacheConfig                 // the server reports it in vllm:cache_config_info
	EstimatedFromCacheConfig        // worked out from vllm:cache_config_info's blocks and block size
	SimulatorModel                  // the simulator's model of the server's memory plan
	ScaledEstimate                  // the last logged figures, scaled to another utilisation
)

// String is the source in a few words, for a note beside a figure.
func (s Source) String() string {
	switch s {
	case FromLog:
		return "from the log"
	case FromCacheConfig:
		return "from cache_config_info"
	case EstimatedFromCacheConfig:
		return "estimated from cache_config_info"
	case SimulatorModel:
		return "simulator model"
	case ScaledEstimate:
		return "scaled estimate"
	}
	return "unknown"
}

// Phrase is the source as a view's heading says it.
func (s Source) Phrase() string {
	switch s {
	case FromLog:
		return "from the server's log"
	case FromCacheConfig:
		return "from vllm:cache_config_info"
	case EstimatedFromCacheConfig:
		return "estimated from vllm:cache_config_info"
	case SimulatorModel:
		return "the simulator's capacity model"
	case ScaledEstimate:
		return "scaled from what the server's log reported"
	}
	return "unknown"
}

// Reported is true for figures the server itself gave (its log or its metrics), not predicted.
func (s Source) Reported() bool { return s == FromLog || s == FromCacheConfig }

// Figure is one value of a Report and where it comes from; V is zero when Source is Unknown.
type Figure[T any] struct {
	V      T
	Source Source
}

// Known reports whether anything gave the figure.
func (f Figure[T]) Known() bool { return f.Source != Unknown }

// Logged is what a server's log said of its KV cache (server.KVCacheSize, MaxConcurrency,
// KVCacheMemory and ModelLoaded), zero where it said nothing.
type Logged struct {
	Util           float64 // the --gpu-memory-utilization of the run that logged them (0: unknown)
	KVTokens       int     // "GPU KV cache size: N tokens"
	KVBlocks       int     // num_gpu_blocks, where the log gives blocks
	MaxConcurrency float64 // "Maximum concurrency for N tokens per request: X.XXx"
	MaxModelLen    int     // the N of that line
	KVGiB          float64 // "Available KV cache memory: X GiB"
	WeightsGiB     float64 // "Model loading took X GiB"
}

// Model is the simulator's model of a server: the KV cache it has at a utilisation (At), and
// its memory plan with what-ifs for a workload (Plan, as `vllmtop sim --print-capacity`
// prints it). Either may be nil. Use it by pointer: it memoises the last plan.
type Model struct {
	At   func(util float64) (tokens int, maxConcurrency float64, err error)
	Plan func(util float64, w Workload) (Report, error)

	mu   sync.Mutex
	key  [3]float64
	have bool
	plan Report
	err  error
}

// planAt is Plan, memoised for the last utilisation and workload: a plan parses a command line
// and resolves several memory plans, too much to redo on every refresh of a view.
func (m *Model) planAt(util float64, w Workload) (Report, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [3]float64{util, float64(w.PromptTokens), float64(w.OutputTokens)}
	if !m.have || m.key != k {
		m.plan, m.err = m.Plan(util, w)
		m.key, m.have = k, true
	}
	return m.plan, m.err
}

// Known is what is known of a server's KV cache, as plain values from the owners of each
// source; a zero field is unknown.
type Known struct {
	// Util is the --gpu-memory-utilization the server runs (or is restarting) with, from its
	// command line; 0 (unknown) takes vllm:cache_config_info's, else DefaultUtil.
	Util, DefaultUtil float64
	Workload          Workload // the requests to fit (none: no fit)
	Sim               *Model   // nil when the simulator does not model the server
	// Log is the latest the server logged, perhaps in an earlier run at another utilisation:
	// then its figures are scaled to Util.
	Log      Logged
	Cache    CacheInfo
	Attached bool // an attached server: its log is not read
}

// Build puts together the Report of what is known: each figure from the first source that has
// it, in the order the server's log (at this utilisation), vllm:cache_config_info, the
// simulator's model, the log scaled from another utilisation.
func Build(k Known) Report {
	util := k.Util
	if util == 0 {
		util = k.Cache.Util
	}
	if util == 0 {
		util = k.DefaultUtil
	}
	r := Report{Util: util, Workload: k.Workload}
	if m := k.Sim; m != nil && m.Plan != nil && util > 0 && k.Workload.Tokens() > 0 {
		plan, err := m.planAt(math.Round(util*100)/100, k.Workload)
		switch {
		case err != nil:
			r.PlanErr = err.Error()
		case len(plan.Columns) > 0:
			r.Model, r.GPU, r.Columns, r.Notes = plan.Model, plan.GPU, plan.Columns, plan.Notes
		}
	}
	r.figures(k, util)
	r.fit()
	r.whatIf(k)
	return r
}

// figures fills the figures of the server now from the sources in Build's order.
func (r *Report) figures(k Known, util float64) {
	logUtil := k.Log.Util
	if logUtil == 0 {
		logUtil = util
	}
	logNow := sameUtil(logUtil, util)
	cacheNow := k.Cache.Util == 0 || sameUtil(k.Cache.Util, util)
	var simTok int
	var simConc float64
	if m := k.Sim; m != nil && m.At != nil && util > 0 {
		simTok, simConc, _ = m.At(util)
	}
	var scaledTok int
	var scaledConc, scaledGiB float64
	if f := Scaled(k.Log, logUtil); f != nil && !logNow {
		scaledTok, scaledConc, _ = f(util)
		scaledGiB = scaledKVGiB(k.Log, logUtil, util)
	}
	var plan Column
	if len(r.Columns) > 0 && r.Columns[0].Refused == "" {
		plan = r.Columns[0]
	}
	r.KVTokens = first(when(logNow, k.Log.KVTokens, FromLog), when(cacheNow, k.Cache.KVCacheTokens, FromCacheConfig),
		Figure[int]{simTok, SimulatorModel}, Figure[int]{scaledTok, ScaledEstimate})
	r.KVBlocks = first(when(logNow, k.Log.KVBlocks, FromLog), when(cacheNow, k.Cache.NumGPUBlocks, FromCacheConfig))
	r.BlockSize = first(Figure[int]{k.Cache.BlockSize, FromCacheConfig}, Figure[int]{plan.Limits.BlockSize, SimulatorModel})
	r.MaxModelLen = first(Figure[int]{k.Log.MaxModelLen, FromLog}, Figure[int]{plan.Limits.MaxModelLen, SimulatorModel})
	r.MaxConcurrency = first(when(logNow, k.Log.MaxConcurrency, FromLog), when(cacheNow, k.Cache.MaxConcurrency, FromCacheConfig),
		Figure[float64]{simConc, SimulatorModel}, Figure[float64]{scaledConc, ScaledEstimate})
	r.KVGiB = first(when(logNow, k.Log.KVGiB, FromLog), Figure[float64]{plan.Memory.KVGiB, SimulatorModel},
		Figure[float64]{max(scaledGiB, 0), ScaledEstimate})
}

// fit is how the workload fits: the plan's setting as given, else estimated from the block
// size of vllm:cache_config_info and the blocks or tokens known.
func (r *Report) fit() {
	if r.Workload.Tokens() == 0 {
		return
	}
	if len(r.Columns) > 0 {
		r.Fit = Figure[Fit]{r.Columns[0].Fit, SimulatorModel}
		return
	}
	info := CacheInfo{BlockSize: r.BlockSize.V, NumGPUBlocks: r.KVBlocks.V, KVCacheTokens: r.KVTokens.V}
	if f, ok := FromCacheInfo(info, Limits{MaxModelLen: r.MaxModelLen.V}, r.Workload); ok {
		r.Fit = Figure[Fit]{f, EstimatedFromCacheConfig}
	}
}

// whatIf is what predicts the KV cache at another utilisation: the simulator's model, else the
// log's figures scaled.
func (r *Report) whatIf(k Known) {
	logUtil := k.Log.Util
	if logUtil == 0 {
		logUtil = r.Util
	}
	scaled := Scaled(k.Log, logUtil)
	switch {
	case k.Sim != nil && k.Sim.At != nil:
		r.WhatIf, r.WhatIfSource = k.Sim.At, SimulatorModel
	case scaled != nil:
		r.WhatIf, r.WhatIfSource = scaled, ScaledEstimate
	case k.Attached:
		r.NoWhatIf = "a what-if needs the server's log (the weights' size): an attached server reports only its current capacity"
	default:
		r.NoWhatIf = "a what-if needs the server's KV cache size and weights, from its log"
	}
}

// nonKVGiB is what Scaled counts as neither weights nor KV cache: activations and the runtime.
const nonKVGiB = 1

// Scaled predicts the KV cache (tokens, maximum concurrency) a server would have at another
// utilisation, from what it logged running at util: the KV memory grows with the utilisation
// times the GPU's memory, less what is not KV (the weights and about a gibibyte of activations
// and runtime). It is nil when l lacks the figures or util is unknown.
func Scaled(l Logged, util float64) func(util float64) (int, float64, error) {
	if l.KVTokens == 0 || l.KVGiB <= 0 || util <= 0 {
		return nil
	}
	perToken := l.KVGiB / float64(l.KVTokens)
	return func(u float64) (int, float64, error) {
		kv := scaledKVGiB(l, util, u)
		if kv <= 0 {
			return 0, 0, errNoKVMemory
		}
		t := int(kv / perToken)
		c := 0.0
		if l.MaxConcurrency > 0 {
			c = l.MaxConcurrency * float64(t) / float64(l.KVTokens)
		}
		return t, c, nil
	}
}

// scaledKVGiB is the KV memory of l, logged at util, scaled to utilisation u.
func scaledKVGiB(l Logged, util, u float64) float64 {
	nonKV := l.WeightsGiB + nonKVGiB
	return (l.KVGiB+nonKV)/util*u - nonKV
}

var errNoKVMemory = errors.New("no memory for the KV cache")

// Sources notes the figures of the server now whose source is not the tokens', with theirs,
// naming those of one source together: "blocks and block size from cache_config_info".
func (r Report) Sources() []string {
	var out []string
	var names []string
	var last Source
	flush := func() {
		if len(names) == 0 {
			return
		}
		name := strings.Join(names, " and ")
		if last == FromLog || last == FromCacheConfig {
			out = append(out, name+" "+last.String())
		} else {
			out = append(out, name+": "+last.String())
		}
		names = nil
	}
	for _, f := range []struct {
		name string
		s    Source
	}{{"blocks", r.KVBlocks.Source}, {"block size", r.BlockSize.Source}, {"max conc", r.MaxConcurrency.Source}, {"max-model-len", r.MaxModelLen.Source}} {
		if f.s == Unknown || f.s == r.KVTokens.Source {
			continue
		}
		if f.s != last {
			flush()
			last = f.s
		}
		names = append(names, f.name)
	}
	flush()
	return out
}

// first is the first figure that is known and not zero.
func first[T int | float64](figs ...Figure[T]) Figure[T] {
	for _, f := range figs {
		if f.V > 0 && f.Source != Unknown {
			return f
		}
	}
	return Figure[T]{}
}

// when is v from s when ok, else nothing.
func when[T int | float64](ok bool, v T, s Source) Figure[T] {
	if !ok {
		return Figure[T]{}
	}
	return Figure[T]{v, s}
}

// sameUtil compares utilisations as the flags give them, to two decimals.
func sameUtil(a, b float64) bool { return math.Abs(a-b) < 0.005 }
