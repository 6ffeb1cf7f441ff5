package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// Pipeline parallelism (--pipeline-parallel-size N): the decoder layers are split into N
// consecutive stages, each on its own GPUs (tensor parallelism inside a stage), so the world
// size is TP x PP. The first stage holds the token embedding, the last the LM head and runs
// the sampler; every stage keeps the KV cache of its own layers only, and the engine sizes
// the one cache by the stage with the fewest blocks (docs/vllm-behaviour.md#pipeline-parallelism).

// Stage is one pipeline stage's memory plan: its layers [FirstLayer, EndLayer) and what one
// of its GPUs holds.
type Stage struct {
	Rank                 int
	FirstLayer, EndLayer int
	WeightsBytes         int64
	ActivationBytes      int64
	NonTorchBytes        int64
	CUDAGraphBytes       int64
	AvailableKVBytes     int64
	NumGPUBlocks         int // the stage's own blocks, before the engine takes the smallest
}

// Layers is the number of decoder layers of the stage.
func (st Stage) Layers() int { return st.EndLayer - st.FirstLayer }

// ppStage marks a Setup as one stage's view of the model.
type ppStage struct {
	rank, size int
	// unifiedCheck: the release checks one max_model_len request against the whole model's
	// KV, not the stage's (unifiedPPKVCheck), after every stage is planned.
	unifiedCheck bool
	first        int   // the stage's first decoder layer
	layers       int   // the stage's decoder layers
	full         Model // the whole model, for its weights
}

// PPPartition is the number of decoder layers of each of size stages, as vLLM's
// get_pp_indices splits them: evenly, the remainder one each to the stages before the last,
// from the second-to-last backwards; or as VLLM_PP_LAYER_PARTITION lists them ("16,32").
func PPPartition(numLayers, size int, partition string) ([]int, error) {
	if strings.TrimSpace(partition) != "" {
		return parsePartition(numLayers, size, partition)
	}
	if size > numLayers {
		return nil, &ConfigError{fmt.Sprintf("--pipeline-parallel-size %d is more than the model's %d layers", size, numLayers)}
	}
	parts := make([]int, size)
	for i := range parts {
		parts[i] = numLayers / size
	}
	for i := 2; i < numLayers%size+2; i++ {
		parts[size-i]++
	}
	return parts, nil
}

// parsePartition reads VLLM_PP_LAYER_PARTITION with vLLM's checks and messages.
func parsePartition(numLayers, size int, partition string) ([]int, error) {
	if len(partition) > 4096 {
		return nil, &ConfigError{"VLLM_PP_LAYER_PARTITION is longer than 4096 bytes"}
	}
	// The value comes from the environment and is echoed in errors: no escape codes.
	shown := textfmt.OneLine(sanitize.Text(partition), 200)
	fields := strings.Split(partition, ",")
	parts := make([]int, 0, len(fields))
	sum := 0
	for _, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, &EngineConfigError{"Invalid partition string: " + shown}
		}
		if n < 1 {
			return nil, &ConfigError{fmt.Sprintf("VLLM_PP_LAYER_PARTITION %q: every stage needs at least one layer", shown)}
		}
		parts = append(parts, n)
		sum += n
	}
	if len(parts) != size {
		return nil, &EngineConfigError{fmt.Sprintf("len(partitions)=%d does not match pp_size=%d.", len(parts), size)}
	}
	if sum != numLayers {
		return nil, &EngineConfigError{fmt.Sprintf("sum(partitions)=%d does not match num_hidden_layers=%d.", sum, numLayers)}
	}
	return parts, nil
}

// WorldSize is the GPUs of one engine: tensor x pipeline parallel size.
func (s *Setup) WorldSize() int { return s.TensorParallelSize * max(1, s.PipelineParallelSize) }

// planCapacity is computeCapacity for every pipeline stage: the engine keeps the smallest
// stage's block count (V1's get_kv_cache_configs, V0's executor both take the minimum), so
// the plan returned is that stage's, with every stage in Stages.
func planCapacity(s *Setup) (Capacity, error) {
	pp := max(1, s.PipelineParallelSize)
	if pp == 1 {
		return computeCapacity(s)
	}
	parts, err := PPPartition(s.ModelProfile.NumLayers, pp, s.PPLayerPartition)
	if err != nil {
		return Capacity{}, err
	}
	var best Capacity
	var failed *StartupError
	stages := make([]Stage, 0, pp)
	start := 0
	// A pinned cache or an auto-fitted length keeps each stage's own check.
	unified := unifiedPPKVCheck(s) && s.KVCacheMemoryBytes == 0 && s.NumGPUBlocksOverride == 0 && !s.AutoFitMaxModelLen
	for rank, n := range parts {
		st := stageSetup(s, rank, start, n)
		st.stage.unifiedCheck = unified
		c, err := computeCapacity(st)
		stages = append(stages, Stage{Rank: rank, FirstLayer: start, EndLayer: start + n, WeightsBytes: c.WeightsBytes,
			ActivationBytes: c.ActivationBytes, NonTorchBytes: c.NonTorchBytes, CUDAGraphBytes: c.CUDAGraphBytes,
			AvailableKVBytes: c.AvailableKVBytes, NumGPUBlocks: c.NumGPUBlocks})
		start += n
		se, isStartup := err.(*StartupError)
		switch {
		case err != nil && !isStartup:
			return c, err
		case isStartup && (failed == nil || stageFailsFirst(s, se, failed)):
			failed = se
		case err == nil && (rank == 0 || c.NumGPUBlocks < best.NumGPUBlocks):
			best = c
		}
	}
	if failed != nil {
		failed.Capacity.Stages = stages
		return failed.Capacity, failed
	}
	best.Stages = stages
	if unified {
		if err := unifiedKVError(s, best); err != nil {
			return err.Capacity, err
		}
	}
	return best, nil
}

// The V1 engine's check of one max_model_len request under pipeline parallelism. From 0.14
// (vllm#29431, which merged every worker's KV cache spec into one before the check) until
// vllm#33698 fixed it, the check asked for the whole model's KV of one request on the worker
// with the least memory, as if every stage held every layer: GLM-4.7-FP8 at PP 8 was refused
// for 71.16 GiB against 28.57 (vllm#32105), Qwen3-Coder-30B at PP 2 for 24.0 GiB against 3.18
// (vllm#34076, 0.15.2rc1). The fix's release is taken as 0.16.0, the first cut after it
// (docs/vllm-behaviour.md#pipeline-parallel-kv-check).
const (
	unifiedPPKVCheckFrom  = "0.14.0"
	unifiedPPKVCheckUntil = "0.16.0"
)

// unifiedPPKVCheck reports whether s's release checks the whole model's KV at every stage.
func unifiedPPKVCheck(s *Setup) bool {
	return s.PipelineParallelSize > 1 && s.Version.V1Engine() && s.Version.AtLeast(unifiedPPKVCheckFrom) &&
		!s.Version.AtLeast(unifiedPPKVCheckUntil)
}

// unifiedKVError is that check on the planned stages: the whole model's layout against the
// least memory any stage has for its cache. Nil when one request fits.
func unifiedKVError(s *Setup, best Capacity) *StartupError {
	l, err := kvLayout(s)
	if err != nil {
		return nil
	}
	least := best
	for _, st := range best.Stages {
		least.AvailableKVBytes = min(least.AvailableKVBytes, st.AvailableKVBytes)
	}
	return v1StartupError(least, l, s.MaxModelLen)
}

// stageFailsFirst reports whether stage error e replaces the one already found. Every
// worker loads its weights before any profiles, so a failure of an earlier phase wins; of
// the KV-cache checks V1 raises the first worker's, V0 checks the smallest cache.
func stageFailsFirst(s *Setup, e, found *StartupError) bool {
	const device, load, kvCache = 0, 1, 2
	phase := func(k StartupKind) int {
		switch k {
		case FreeMemoryTooLow, DTypeUnsupported:
			return device
		case LoadOOM, KVDTypeRefused, KVDTypeUnsupported, AttentionBackendInvalid: // as the model is built
			return load
		}
		return kvCache
	}
	if pe, pf := phase(e.Kind), phase(found.Kind); pe != pf || pe != kvCache {
		return pe < pf
	}
	return !s.Version.V1Engine() && e.Capacity.NumGPUBlocks < found.Capacity.NumGPUBlocks
}

// stageSetup is s as stage rank of s.PipelineParallelSize sees it: layers decoder layers from
// first, the layer kinds in proportion (exact for one kind).
func stageSetup(s *Setup, rank, first, layers int) *Setup {
	st := *s
	m := s.ModelProfile
	st.stage = &ppStage{rank: rank, size: max(1, s.PipelineParallelSize), first: first, layers: layers, full: m}
	share := func(n int) int { return (n*layers + m.NumLayers/2) / m.NumLayers }
	sliding, linear := share(m.NumSlidingWindowLayers), share(m.NumLinearAttentionLayers)
	if sliding+linear >= layers {
		// Keep at least one full-attention layer where the model has them.
		if m.NumFullAttentionLayers() > 0 {
			sliding, linear = min(sliding, layers-1), min(linear, max(0, layers-1-sliding))
		}
	}
	m.NumLayers, m.NumSlidingWindowLayers, m.NumLinearAttentionLayers = layers, sliding, linear
	st.ModelProfile = m
	return &st
}

// firstStage and lastStage say what a stage holds besides its layers: the embedding, and the
// LM head with the sampler. Without pipeline parallelism one GPU group is both.
func (s *Setup) firstStage() bool { return s.stage == nil || s.stage.rank == 0 }
func (s *Setup) lastStage() bool  { return s.stage == nil || s.stage.rank == s.stage.size-1 }

// stageWeightBytes is a stage's share of weightBytes across its tensor-parallel ranks: its
// layers' fraction of the decoder, one vocabulary-by-hidden table on the first stage (the
// embedding) and one on the last (the LM head, tied or not), and any encoder on every stage,
// as vLLM's multimodal models build it on each rank.
func stageWeightBytes(s *Setup) float64 {
	if s.stage == nil {
		return weightBytes(s)
	}
	whole := *s
	whole.ModelProfile, whole.stage = s.stage.full, nil
	m := s.stage.full
	total := weightBytes(&whole)
	db, _ := dtypeBytes(s.ModelDType)
	table := m.EmbeddingParams() * db
	tables := 1.0
	if !m.TieWordEmbeddings {
		tables = 2
	}
	encoder := m.EncoderParams * db
	// The routed experts are in the routed layers: where the dense ones come first
	// (first_k_dense_replace), the first stage holds fewer experts than its share of layers.
	// So are the dense layers' MLPs, often far wider than an expert, in the first stages.
	routed, routedHere, dense, denseHere := 0.0, 0, 0.0, 0
	if m.FirstDenseLayers > 0 {
		routed = routedExpertBytes(&whole)
		end := s.stage.first + s.stage.layers
		routedHere = max(0, end-max(s.stage.first, m.FirstDenseLayers))
		if routed > 0 {
			dense = float64(m.FirstDenseLayers) * 3 * float64(m.HiddenSize) * float64(m.DenseIntermediateSize) *
				linearWeightBytes(whole.weightQuantization(), db)
			denseHere = max(0, min(end, m.FirstDenseLayers)-s.stage.first)
		}
	}
	layers := (total-tables*table-encoder-routed-dense)*float64(s.stage.layers)/float64(m.NumLayers) +
		routed*float64(routedHere)/float64(max(1, m.RoutedLayers())) +
		dense*float64(denseHere)/float64(max(1, m.FirstDenseLayers))
	w := layers + encoder
	if s.firstStage() {
		w += table
	}
	if s.lastStage() {
		w += table
	}
	return w
}

// LayoutLines describe the parallel layout of one engine for --print-capacity: the world
// size and, with pipeline stages, each stage's layers, memory and blocks. Nil for one GPU.
func LayoutLines(cfg Config, c Capacity) []string {
	tp, pp := max(1, cfg.TensorParallelSize), max(1, cfg.PipelineParallelSize)
	if tp*pp == 1 {
		if c.ExpertsNote != "" {
			return []string{c.ExpertsNote}
		}
		return nil
	}
	lines := []string{fmt.Sprintf("Parallel layout: world size %d = --tensor-parallel-size %d x --pipeline-parallel-size %d (the plan below is one GPU's)", tp*pp, tp, pp)}
	if c.ExpertsNote != "" {
		lines = append(lines, c.ExpertsNote)
	}
	if len(c.Stages) == 0 {
		return lines
	}
	fewest := c.Stages[0]
	for _, st := range c.Stages {
		extra := ""
		switch {
		case st.Rank == 0 && st.Rank == len(c.Stages)-1:
		case st.Rank == 0:
			extra = ", embedding"
		case st.Rank == len(c.Stages)-1:
			extra = ", LM head and sampler"
		}
		line := fmt.Sprintf("  stage %d: layers %d-%d (%d%s): weights %.2f GiB", st.Rank, st.FirstLayer, st.EndLayer-1, st.Layers(), extra, float64(st.WeightsBytes)/gib)
		if !c.Unprofiled {
			line += fmt.Sprintf(", activations %.2f GiB, KV %.2f GiB, %d blocks", float64(st.ActivationBytes)/gib, float64(max(st.AvailableKVBytes, 0))/gib, st.NumGPUBlocks)
		}
		lines = append(lines, line)
		if st.NumGPUBlocks < fewest.NumGPUBlocks {
			fewest = st
		}
	}
	if c.Unprofiled {
		return lines // no stage's KV cache was sized
	}
	return append(lines, fmt.Sprintf("  the KV cache takes the fewest blocks of any stage: stage %d's %d; the plan below is that stage's", fewest.Rank, fewest.NumGPUBlocks))
}
