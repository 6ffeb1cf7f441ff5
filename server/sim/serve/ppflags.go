package serve

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// definePPFlags declares --pipeline-parallel-size: the decoder layers split into that many
// stages, each on TP GPUs (docs/vllm-behaviour.md#pipeline-parallelism).
func definePPFlags(fs *pflag.FlagSet, o *Options) {
	fs.IntVar(&o.Engine.PipelineParallelSize, "pipeline-parallel-size", 1, "Number of pipeline stages, each on --tensor-parallel-size GPUs (-pp); VLLM_PP_LAYER_PARTITION sets the layers per stage")
}

// checkPP checks the pipeline size; VLLM_PP_LAYER_PARTITION is read from the environment.
func (o *Options) checkPP(getenv func(string) string) error {
	if n := o.Engine.PipelineParallelSize; n < 1 || n > 64 {
		return &ConfigError{Msg: fmt.Sprintf("--pipeline-parallel-size must be between 1 and 64, got %d", n)}
	}
	o.Engine.PPLayerPartition = getenv("VLLM_PP_LAYER_PARTITION")
	return nil
}

// expandPPAlias turns "-pp 2" and "-pp=2" into the long flag.
func expandPPAlias(a string) string {
	switch {
	case a == "-pp":
		return "--pipeline-parallel-size"
	case strings.HasPrefix(a, "-pp="):
		return "--pipeline-parallel-size=" + a[4:]
	}
	return a
}
