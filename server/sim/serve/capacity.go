package serve

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/termwidth"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

// CapacityReport sizes the KV cache for the simulator command line args as vLLM would, and
// how many requests of workload w fit: for the setting as given and for what-ifs (an FP8 KV
// cache, AWQ, GPTQ and FP8 weights, the shortest power-of-two --max-model-len that holds the
// workload), each marked where vLLM would refuse to start. Its error is a bad command line
// (a *UsageError or *ConfigError); a setting vLLM refuses is a column, not an error.
func CapacityReport(args []string, getenv func(string) string, w capacity.Workload) (capacity.Report, error) {
	opts, profiles, err := parseForCapacity(args, getenv)
	if err != nil {
		return capacity.Report{}, err
	}
	return planReport(opts.Engine, profiles, w)
}

// CapacityModel is the simulator's capacity model of the server that args run: its KV cache
// at any --gpu-memory-utilization, and its plan (CapacityReport's) there for a workload.
// Its error is a bad command line.
func CapacityModel(args []string, getenv func(string) string) (*capacity.Model, error) {
	opts, profiles, err := parseForCapacity(args, getenv)
	if err != nil {
		return nil, err
	}
	at := func(util float64) sim.Config {
		cfg := opts.Engine
		cfg.GPUMemoryUtilization = util
		return cfg
	}
	return &capacity.Model{
		At: func(util float64) (int, float64, error) { return capacityAt(at(util), profiles) },
		Plan: func(util float64, w capacity.Workload) (capacity.Report, error) {
			return planReport(at(util), profiles, w)
		},
	}, nil
}

// capacityAt is the KV cache (tokens, and the concurrency of max-model-len requests it holds)
// of a server with cfg; the error is the *StartupError vLLM would stop with.
func capacityAt(cfg sim.Config, profiles *sim.Profiles) (tokens int, maxConcurrency float64, err error) {
	s, err := sim.Resolve(cfg, profiles)
	if err != nil {
		return 0, 0, err
	}
	return s.Capacity.KVCacheTokens, s.Capacity.MaxConcurrency, nil
}

func parseForCapacity(args []string, getenv func(string) string) (*Options, *sim.Profiles, error) {
	opts, err := ParseArgs(args, getenv)
	if err != nil {
		return nil, nil, err
	}
	profiles, err := loadProfiles(opts, getenv)
	if err != nil {
		return nil, nil, err
	}
	return opts, profiles, nil
}

// setupNotes are what the plan of s says beside its table: a cold compile's peak, a request
// longer than the context, a KV-cache dtype the checkpoint chose, a model sized from a file.
func setupNotes(s *sim.Setup) []string {
	var notes []string
	if note := s.ColdCompileNote(); note != "" {
		notes = append(notes, note)
	}
	if note := partialRequestNote(s); note != "" {
		notes = append(notes, note)
	}
	if note := s.CheckpointKVNote(); note != "" {
		notes = append(notes, note)
	}
	if src, ok := strings.CutPrefix(s.ModelProfile.Source, "config.json at "); ok {
		// Sized from a file (--sim-model-config, a model directory, the Hugging Face cache),
		// whatever the catalogue holds under the same name.
		path, _, _ := strings.Cut(src, "; ")
		notes = append(notes, "The model is sized from "+sanitize.Text(path)+", not from the catalogue.")
	}
	return notes
}

// planReport is CapacityReport for the engine configuration base.
func planReport(base sim.Config, profiles *sim.Profiles, w capacity.Workload) (capacity.Report, error) {
	first := column("as given", base, profiles, w)
	var cfgErr *ConfigError
	var engineErr *sim.EngineConfigError
	var invalid *ValidationError
	if errors.As(first.err, &cfgErr) || errors.As(first.err, &engineErr) || errors.As(first.err, &invalid) {
		return capacity.Report{}, first.err
	}
	r := capacity.Report{Model: base.Model, GPU: base.GPU, Util: base.GPUMemoryUtilization, Workload: w, Columns: []capacity.Column{first.Column}}
	if s := first.setup; s != nil {
		r.Model, r.GPU, r.Util = s.Model, s.GPUProfile.Name, s.GPUMemoryUtilization
	} else {
		r.GPU, r.Util = resolvedGPUAndUtil(base, profiles)
	}
	if first.setup != nil {
		r.Layout = sim.LayoutLines(first.setup.Config, first.setup.Capacity)
		if from := first.setup.Capacity.AutoFitFrom; from > 0 {
			r.Layout = append(r.Layout, fmt.Sprintf("--max-model-len auto: a request of the model's %s tokens does not fit the KV cache; vLLM fits the context to %s",
				textfmt.Thousands(int64(from)), textfmt.Thousands(int64(first.setup.MaxModelLen))))
		}
		r.Notes = append(r.Notes, setupNotes(first.setup)...)
	} else if first.startup != nil {
		c := first.startup.Capacity
		if first.startup.Kind.BeforeProfile() {
			c = c.WithoutProfile()
		}
		r.Layout = sim.LayoutLines(base, c)
		if s := first.startup.Setup; s != nil && s.CheckpointKVNote() != "" {
			r.Notes = append(r.Notes, s.CheckpointKVNote())
		}
		if first.startup.Kind == sim.KVDTypeRefused {
			r.Notes = append(r.Notes, "vLLM refuses fp8_e5m2 beside weights whose quantization loads KV-cache scales; --kv-cache-dtype fp8 (e4m3) is accepted.")
		}
	}
	variants := []struct {
		name  string
		apply func(*sim.Config)
		skip  bool
	}{
		{capacity.WhatIfFP8KV, func(c *sim.Config) { c.KVCacheDType = "fp8" }, strings.HasPrefix(strings.ToLower(base.KVCacheDType), "fp8") || kvFromCheckpoint(first.setup, first.startup)},
		// A quantized build of the model: its checkpoint's method, not a flag vLLM refuses on
		// a 16-bit checkpoint.
		{capacity.WhatIfAWQ, func(c *sim.Config) { c.Quantization, c.CheckpointQuantization = "", "awq" }, quantizedAs(base, first.setup, "awq")},
		{capacity.WhatIfGPTQ, func(c *sim.Config) { c.Quantization, c.CheckpointQuantization = "", "gptq" }, quantizedAs(base, first.setup, "gptq")},
		{capacity.WhatIfFP8Weights, func(c *sim.Config) { c.Quantization, c.CheckpointQuantization = "", "fp8" }, quantizedAs(base, first.setup, "fp8")},
	}
	if s := first.setup; s != nil || first.startup != nil {
		maxLen := base.MaxModelLen
		if s != nil {
			maxLen = s.MaxModelLen
		}
		short := 256
		for short < w.Tokens() {
			short *= 2
		}
		variants = append(variants, struct {
			name  string
			apply func(*sim.Config)
			skip  bool
		}{capacity.WhatIfMaxLen + strconv.Itoa(short), func(c *sim.Config) { c.MaxModelLen, c.AutoFitMaxModelLen = short, false },
			// Shown where it frees memory for more requests, or where the requests are longer
			// than --max-model-len and none runs.
			maxLen != 0 && short >= maxLen && maxLen >= w.Tokens()})
	}
	for _, v := range variants {
		if v.skip {
			continue
		}
		cfg := base
		v.apply(&cfg)
		r.Columns = append(r.Columns, column(v.name, cfg, profiles, w).Column)
	}
	return r, nil
}

// sized is one column with what it came from.
type sized struct {
	capacity.Column
	setup   *sim.Setup
	startup *sim.StartupError
	err     error
}

// column resolves cfg and fits w to it.
func column(name string, cfg sim.Config, profiles *sim.Profiles, w capacity.Workload) sized {
	out := sized{Column: capacity.Column{Name: name}}
	s, err := sim.Resolve(cfg, profiles)
	out.setup, out.err = s, err
	var c sim.Capacity
	var startup *sim.StartupError
	switch {
	case err == nil:
		c = s.Capacity
	case errors.As(err, &startup):
		out.startup, c = startup, startup.Capacity
		out.Refused = textfmt.OneLine(startup.Error(), 0)
		if startup.Kind.BeforeProfile() {
			// vLLM stopped building or loading the model: no profile run measured anything.
			out.RefusedBeforeKV, c = true, c.WithoutProfile()
		}
	default:
		msg := err.Error()
		var invalid *sim.ValidationError
		if errors.As(err, &invalid) {
			msg = invalid.Short()
		}
		out.Refused, out.RefusedBeforeKV = textfmt.OneLine(msg, 0), true // refused as the flags are read
		return out
	}
	out.Memory = capacity.Memory{TotalGiB: gib(c.TotalBytes), RequestedGiB: gib(c.RequestedBytes), WeightsGiB: gib(c.WeightsBytes),
		ActivationGiB: gib(c.ActivationBytes), NonTorchGiB: gib(c.NonTorchBytes), CUDAGraphGiB: gib(c.CUDAGraphBytes), KVGiB: gib(max(c.AvailableKVBytes, 0)),
		OtherGiB: gib(max(c.TotalBytes-c.FreeBytes, 0))}
	if s == nil {
		return out
	}
	if s.GraphsOutsideBudget() {
		out.Memory.GraphsOutsideGiB = gib(sim.CUDAGraphEstimateBytes(s))
	}
	out.Memory.ColdCompile = s.ColdCompileSetsPeak()
	layout := c.Layout
	out.KVTokens, out.MaxConcAtML, out.GPUBlocks = c.KVCacheTokens, c.MaxConcurrency, c.NumGPUBlocks
	// One block is vLLM's null block; the scheduler allocates from the rest.
	out.Limits = capacity.Limits{BlockSize: layout.BlockSize, NumBlocks: c.NumGPUBlocks - 1, MaxNumSeqs: s.MaxNumSeqs,
		MaxNumBatchedTokens: s.MaxNumBatchedTokens, MaxModelLen: s.MaxModelLen}
	if layout.NumGroups() > 1 {
		out.Limits.BlocksFor = layout.BlocksPerRequest
	}
	out.Fit = capacity.FitWorkload(out.Limits, w)
	return out
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// printCapacity is `vllmtop sim --print-capacity`: the report on stdout; exit status 1 when
// vLLM would refuse the setting as given.
func printCapacity(opts *Options, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	r, err := CapacityReport(args, getenv, capacity.Workload{PromptTokens: opts.CapacityPromptLen, OutputTokens: opts.CapacityOutputLen})
	var invalid *ValidationError
	if errors.As(err, &invalid) {
		// Our own report: one line, not vLLM's traceback.
		fmt.Fprintf(stderr, "vllmtop sim: error: %s\n", invalid.Short())
		return 2
	}
	if err != nil {
		writeStartError(err, stdout, stderr, false)
		return ExitCode(err)
	}
	if dp := opts.DataParallelSize; dp > 1 && len(r.Columns) > 0 {
		r.Layout = append(r.Layout, fmt.Sprintf("Data parallel: %d engines, each with the plan below and its own KV cache", dp),
			fmt.Sprintf("  (%s tokens in all); the API server spreads requests over them", textfmt.Thousands(int64(dp*r.Columns[0].KVTokens))))
	}
	width := termwidth.Of(stdout, getenv)
	fmt.Fprint(stdout, r.Render(width))
	if line := notSimulatedLine(opts.NotSimulated); line != "" {
		// Some of them (--limit-mm-per-prompt, --max-cudagraph-capture-size) would change the plan.
		fmt.Fprintln(stdout, textfmt.Wrap(line+"; the plan above is made without them", width))
	}
	if r.Columns[0].Refused != "" {
		return 1
	}
	return 0
}

// resolvedGPUAndUtil names the GPU and the --gpu-memory-utilization of a setting vLLM refuses,
// as a setting it accepts would: the profile's name and the release's default utilisation.
func resolvedGPUAndUtil(base sim.Config, profiles *sim.Profiles) (string, float64) {
	gpu, util := base.GPU, base.GPUMemoryUtilization
	if gpu == "" {
		gpu = sim.DefaultGPU
	}
	if profiles == nil {
		profiles, _ = sim.LoadProfiles("")
	}
	if profiles != nil {
		if g, err := profiles.GPU(gpu); err == nil {
			gpu = g.Name
		}
	}
	if util == 0 {
		util = sim.DefaultGPUMemoryUtilization
		if v, err := sim.ParseVersion(base.VLLMVersion); err == nil {
			util = sim.DefaultUtilization(v)
		}
	}
	return gpu, util
}

// kvFromCheckpoint reports whether the checkpoint chose the KV cache's dtype of the setting as
// given, whether it started (setup) or not (startup).
func kvFromCheckpoint(setup *sim.Setup, startup *sim.StartupError) bool {
	if setup == nil && startup != nil {
		setup = startup.Setup
	}
	return setup != nil && setup.KVDTypeFromCheckpoint
}

// quantizedAs reports whether the configured server already runs weights quantized with method
// (by flag, by --sim-checkpoint-quantization or as the catalogue's checkpoint is), so a what-if of
// that method would be the same weights.
func quantizedAs(c sim.Config, s *sim.Setup, method string) bool {
	return strings.EqualFold(c.Quantization, method) || strings.EqualFold(c.CheckpointQuantization, method) ||
		s != nil && strings.EqualFold(s.ModelProfile.Quantization, method)
}

// partialRequestNote says where the cache's whole blocks hold less than one request of the full
// context: vLLM's start-up check sums the layers' bytes, and so starts, while the blocks, whole
// in every group, hold less.
func partialRequestNote(s *sim.Setup) string {
	c := s.Capacity
	if c.MaxConcurrency <= 0 || c.MaxConcurrency >= 1 {
		return ""
	}
	return fmt.Sprintf("The cache's blocks hold %.2f of a request of the whole %s-token context: vLLM starts (its check counts bytes, not whole blocks) and logs the same %.2fx, but a request that long does not fit.",
		c.MaxConcurrency, textfmt.Thousands(int64(s.MaxModelLen)), c.MaxConcurrency)
}
