package vlog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
)

// The startup lines follow the imitated release's default --gpu-memory-utilization: 0.9
// before 0.21, 0.92 from 0.21 (where the CUDA-graph line names it).
func TestStartupLinesUseTheReleaseDefaultUtilization(t *testing.T) {
	startup := func(cfg sim.Config) (string, *sim.Setup) {
		s, err := sim.Resolve(cfg, nil)
		require.NoError(t, err)
		var out bytes.Buffer
		New(&out, nil, newClock().now, apiPID, enginePID).Startup(s, qwenArgs, 2)
		return out.String(), s
	}
	for _, c := range []struct {
		version string
		util    float64
	}{{"0.17.0", 0.9}, {sim.DefaultVersion, 0.92}} {
		cfg := sim.Config{Model: "openai/gpt-oss-20b", GPU: "H100", VLLMVersion: c.version} // the V1 runner, whose graph line names the utilisation
		out, s := startup(cfg)
		cfg.GPUMemoryUtilization = c.util
		_, given := startup(cfg)
		assert.Equal(t, c.util, s.GPUMemoryUtilization, c.version)
		assert.Contains(t, out, "Available KV cache memory: "+sim.FormatGiB(given.Capacity.AvailableKVBytes)+" GiB\n",
			"%s: the KV budget is the one at util %g", c.version, c.util)
		assert.Equal(t, c.util == 0.92, strings.Contains(out, "The current --gpu-memory-utilization=0.9200 is equivalent"), c.version)
	}
}

// From 0.15, vllm serve gives data-parallel engines one API server each unless told, and says
// so before anything else; earlier releases, and an explicit count, log nothing.
func TestStartupSaysTheDefaultAPIServerCount(t *testing.T) {
	for _, c := range []struct {
		version  string
		dp, asc  int
		wantLine bool
	}{{"0.15.0", 2, 0, true}, {sim.DefaultVersion, 4, 0, true}, {"0.14.1", 2, 0, false}, {sim.DefaultVersion, 2, 2, false}, {sim.DefaultVersion, 1, 0, false}} {
		s, err := sim.Resolve(sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: c.version, DataParallelSize: c.dp, APIServerCount: c.asc}, nil)
		require.NoError(t, err)
		var out bytes.Buffer
		New(&out, nil, newClock().now, apiPID, enginePID).Startup(s, qwenArgs, 2)
		line := fmt.Sprintf("[serve.py:100] Defaulting api_server_count to data_parallel_size (%d).\n", c.dp)
		assert.Equal(t, c.wantLine, strings.Contains(out.String(), line), "%+v", c)
		if c.wantLine {
			assert.Contains(t, strings.SplitN(out.String(), "\n", 2)[0], "Defaulting api_server_count", "the first line, from vllm serve's own process")
			assert.NotContains(t, strings.SplitN(out.String(), "\n", 2)[0], "APIServer pid")
		}
	}
}
