package vlog

import (
	"fmt"
	"strings"

	"github.com/vllmtop/vllmtop/server/sim"
)

// stageKVLines are the workers' "Available KV cache memory" lines with pipeline stages: each
// stage's GPUs report their own budget (the last stage's is smaller by the LM head and the
// sampler). The caller holds l.mu.
func (l *Logger) stageKVLines(s *sim.Setup) {
	for _, st := range s.Capacity.Stages {
		l.record(l.stageWorker(s.TensorParallelSize, st.Rank), Info, "gpu_worker.py:547",
			fmt.Sprintf("Available KV cache memory: %s GiB", sim.FormatGiB(st.AvailableKVBytes)))
	}
}

// partitionLines is get_pp_indices' note on an uneven split (vllm/distributed/utils.py), which
// each worker logs while it builds its stage of the model; here each stage's first worker.
// A split set by VLLM_PP_LAYER_PARTITION is not noted. The caller holds l.mu.
func (l *Logger) partitionLines(s *sim.Setup) {
	st := s.Capacity.Stages
	if len(st) < 2 || s.PPLayerPartition != "" || s.ModelProfile.NumLayers%len(st) == 0 {
		return
	}
	parts := make([]string, len(st))
	for i, x := range st {
		parts[i] = fmt.Sprint(x.Layers())
	}
	for _, x := range st {
		l.record(l.stageWorker(s.TensorParallelSize, x.Rank), Info, "utils.py:109", "Hidden layers were unevenly partitioned: ["+
			strings.Join(parts, ",")+"]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment variable")
	}
}
