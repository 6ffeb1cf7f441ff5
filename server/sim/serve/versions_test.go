package serve

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/vlog"
)

// startupLog is the start-up log a server imitating version writes.
func startupLog(t *testing.T, version string) string {
	t.Helper()
	opts, err := ParseArgs([]string{"--sim-vllm-version", version}, noEnv)
	require.NoError(t, err)
	setup, err := sim.Resolve(opts.Engine, nil)
	require.NoError(t, err)
	var out bytes.Buffer
	logs := vlog.New(&out, &out, func() time.Time { return t0 }, 1, 2)
	logs.Startup(setup, toKV(opts.NonDefault), 1)
	return out.String()
}

func TestNewestReleasesAreImitated(t *testing.T) {
	s := startServer(t, "--sim-vllm-version", "0.33")
	_, body := do(t, "GET", s.URL+"/version", "")
	assert.JSONEq(t, `{"version":"0.33.0"}`, body)
	_, body = do(t, "GET", startServer(t).URL+"/version", "")
	assert.JSONEq(t, `{"version":"`+sim.DefaultVersion+`"}`, body, "the default is the newest release")
	assert.True(t, strings.HasPrefix(sim.DefaultVersion, "0.33."))

	for _, v := range []string{"0.27", "0.28.0", "0.30.1", "0.32"} {
		_, err := ParseArgs([]string{"--sim-vllm-version", v}, noEnv)
		require.NoError(t, err)
		opts, _ := ParseArgs([]string{"--sim-vllm-version", v}, noEnv)
		_, err = sim.Resolve(opts.Engine, nil)
		assert.NoError(t, err, "release %s is simulated", v)
	}
	opts, _ := ParseArgs([]string{"--sim-vllm-version", "0.34"}, noEnv)
	_, err := sim.Resolve(opts.Engine, nil)
	assert.ErrorContains(t, err, "the simulator imitates vLLM 0.10.0 to 0.33, serves from 0.8 and plans memory (--print-capacity) from 0.2.0")

	// The engine's start-up line names the release.
	assert.Contains(t, startupLog(t, "0.33"), "Initializing a V1 LLM engine (v0.33.0) with config:")
	assert.Contains(t, startupLog(t, "0.28"), "Initializing a V1 LLM engine (v0.28.0) with config:")
	assert.NotContains(t, startupLog(t, "0.28"), "v0.33.0")

	// vllm:prompt_tokens_cached_by_source arrives with 0.31.
	for v, want := range map[string]bool{"0.30": false, "0.31": true, "0.33": true} {
		_, body := do(t, "GET", startServer(t, "--sim-vllm-version", v).URL+"/metrics", "")
		assert.Equal(t, want, strings.Contains(body, `vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="Qwen/Qwen3-0.6B",source="device"} 0.0`), v)
	}
}

func TestCachedBySourceCountsDevicePrefixHits(t *testing.T) {
	s := startServer(t)
	prompt := strings.TrimSpace(strings.Repeat("alpha beta gamma delta ", 40))
	for range 2 {
		code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"`+prompt+`","max_tokens":2}`)
		require.Equal(t, 200, code, body)
	}
	cached := metricValue(t, s.URL, `vllm:prompt_tokens_cached_total{`)
	assert.Positive(t, cached, "the second request hits the prefix cache")
	assert.Equal(t, cached, metricValue(t, s.URL, `vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="Qwen/Qwen3-0.6B",source="device"}`))
	assert.Zero(t, metricValue(t, s.URL, `vllm:prompt_tokens_cached_by_source_total{engine="0",model_name="Qwen/Qwen3-0.6B",source="host"}`))
}
