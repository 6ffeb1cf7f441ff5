package serve

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
)

func TestDataParallelFlags(t *testing.T) {
	for _, args := range [][]string{{"--data-parallel-size", "3"}, {"-dp", "3"}, {"-dp=3"}, {"-dp", "3", "-dpl", "3", "-dpa", "10.0.0.1", "-dpp", "13345", "--data-parallel-backend", "mp"}} {
		o, err := ParseArgs(args, noEnv)
		require.NoError(t, err, args)
		assert.Equal(t, 3, o.DataParallelSize, args)
	}
	o, err := ParseArgs(nil, noEnv)
	require.NoError(t, err)
	assert.Equal(t, 1, o.DataParallelSize)
	for _, args := range [][]string{{"-dp", "0"}, {"-dp", "2", "-dpl", "1"}} {
		_, err := ParseArgs(args, noEnv)
		var cfg *ConfigError
		assert.ErrorAs(t, err, &cfg, args)
	}
	o, err = ParseArgs([]string{"-dp", "2"}, noEnv)
	require.NoError(t, err)
	assert.Contains(t, o.NonDefault, NamedValue{"data_parallel_size", int64(2)})
}

// TestDataParallelEnginesHaveTheirOwnCacheAndLabel: two engines each with the whole KV cache of
// its GPU; requests spread over both; every engine family has engine="0" and engine="1"
// children, and each engine's KV usage is its own.
func TestDataParallelEnginesHaveTheirOwnCacheAndLabel(t *testing.T) {
	s := startServerClock(t, nil, "--data-parallel-size", "2", "--max-model-len", "4096", "--sim-speed", "0.05")
	require.Len(t, s.drvs, 2)
	assert.Equal(t, s.drvs[0].engine.BlocksTotal(), s.drvs[1].engine.BlocksTotal(), "each rank's own cache, sized per GPU")
	one := startServer(t, "--max-model-len", "4096")
	assert.Equal(t, one.drv.engine.BlocksTotal(), s.drvs[1].engine.BlocksTotal())

	// Eight requests that stay running (a step takes seconds at this speed): four on each.
	for range 8 {
		require.NoError(t, s.submit(sim.Request{Prompt: make([]int, 512), MaxTokens: 2048, IgnoreEOS: true}, newStream()))
	}
	assert.Equal(t, 4, s.drvs[0].inFlight())
	assert.Equal(t, 4, s.drvs[1].inFlight())
	require.Eventually(t, func() bool {
		return metricValue(t, s.URL, `vllm:num_requests_running{engine="0"`) == 4 &&
			metricValue(t, s.URL, `vllm:num_requests_running{engine="1"`) == 4
	}, 10*time.Second, time.Millisecond)

	_, body := do(t, "GET", s.URL+"/metrics", "")
	for _, e := range []string{"0", "1"} {
		for _, fam := range []string{"vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:generation_tokens_total", "vllm:request_success_total", "vllm:time_to_first_token_seconds_bucket", "vllm:cache_config_info"} {
			assert.Regexp(t, regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(fam)+`\{[^}]*engine="`+e+`"`), body, fam)
		}
	}
	assert.NotContains(t, body, `engine="2"`)
	assert.Equal(t, 1, strings.Count(body, "# TYPE vllm:num_requests_running gauge"), "one family, two children")
}

// TestDataParallelKVUsageIsPerEngine pins every request to engine 1 and checks that only its
// KV usage moves.
func TestDataParallelKVUsageIsPerEngine(t *testing.T) {
	s := startServerClock(t, nil, "-dp", "2", "--max-model-len", "4096", "--sim-speed", "0.05")
	for range 3 {
		require.NoError(t, s.drvs[1].submit(sim.Request{Prompt: make([]int, 2048), MaxTokens: 1024, IgnoreEOS: true}, newStream()))
	}
	require.Eventually(t, func() bool {
		return metricValue(t, s.URL, `vllm:num_requests_running{engine="1"`) == 3
	}, 10*time.Second, time.Millisecond)
	assert.Greater(t, metricValue(t, s.URL, `vllm:kv_cache_usage_perc{engine="1"`), 0.0)
	assert.Zero(t, metricValue(t, s.URL, `vllm:kv_cache_usage_perc{engine="0"`))
	assert.Zero(t, metricValue(t, s.URL, `vllm:num_requests_running{engine="0"`))
}

func TestBalancerScore(t *testing.T) {
	b := newBalancer(2)
	picks := []int{b.pick(), b.pick(), b.pick(), b.pick()}
	assert.ElementsMatch(t, []int{0, 0, 1, 1}, picks, "idle engines share a burst")
	// Engine 0 has a queue on a nearly full cache: the penalty sends new requests to 1.
	b = newBalancer(2)
	b.publish(0, engineLoad{waiting: 4, running: 8, kvUsage: 0.95})
	b.publish(1, engineLoad{waiting: 2, running: 12, kvUsage: 0.3})
	assert.Equal(t, 1, b.pick())
	assert.Equal(t, 1, b.pick())
	// Without waiting requests the KV usage does not count: the smaller load wins.
	b = newBalancer(2)
	b.publish(0, engineLoad{running: 3, kvUsage: 0.99})
	b.publish(1, engineLoad{running: 5, kvUsage: 0.1})
	assert.Equal(t, 0, b.pick())
}

func TestDataParallelStartupLogsEachRank(t *testing.T) {
	var out, errOut syncBuffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	inst, err := Start(context.Background(), []string{"-dp", "2", "--sim-startup-seconds", "0"}, noEnv, WithLogs(&out, &errOut), WithListener(ln), WithGrace(1))
	require.NoError(t, err)
	require.Eventually(t, inst.Ready, 10*time.Second, time.Millisecond)
	require.NoError(t, inst.Stop())
	log := out.String()
	for _, rank := range []string{"0", "1"} {
		assert.Regexp(t, `(?m)^\(EngineCore_DP`+rank+` pid=\d+\) INFO .*GPU KV cache size: `, log)
		assert.Regexp(t, `(?m)^\(EngineCore_DP`+rank+` pid=\d+\) INFO .*Initializing a V1 LLM engine .*data_parallel_size=2,`, log)
	}
	assert.Equal(t, 1, bytes.Count([]byte(log), []byte("non-default args:")), "the API server's lines once")
	assert.Contains(t, log, "'data_parallel_size': 2")
}

func TestReleaseNamesTheProcesses(t *testing.T) {
	for _, tc := range []struct{ version, engine string }{
		{"0.17.0", "EngineCore_DP0"},
		{"0.10.1.1", "EngineCore_0"},
	} {
		var out, errOut syncBuffer
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		inst, err := Start(context.Background(), []string{"--sim-vllm-version", tc.version, "--sim-startup-seconds", "0"}, noEnv,
			WithLogs(&out, &errOut), WithListener(ln), WithGrace(1))
		require.NoError(t, err)
		require.Eventually(t, inst.Ready, 10*time.Second, time.Millisecond)
		require.NoError(t, inst.Stop())
		assert.Regexp(t, `(?m)^\(`+tc.engine+` pid=\d+\) INFO .*GPU KV cache size: `, out.String(), tc.version)
		assert.Regexp(t, `(?m)^\(APIServer pid=\d+\) INFO `, out.String(), tc.version)
	}
	// A start-up that fails names the engine core as the release does.
	var out, errOut syncBuffer
	_, err := Start(context.Background(), []string{"--sim-vllm-version", "0.17.0", "--gpu-memory-utilization", "0.01", "--sim-startup-seconds", "0"}, noEnv,
		WithLogs(&out, &errOut))
	require.Error(t, err)
	assert.Contains(t, errOut.String(), "Failed core proc(s): {'EngineCore_DP0': 1}")

	// With data parallelism the newest releases name the failed engine by its rank too.
	out, errOut = syncBuffer{}, syncBuffer{}
	_, err = Start(context.Background(), []string{"-dp", "2", "--gpu-memory-utilization", "0.01", "--sim-startup-seconds", "0"}, noEnv,
		WithLogs(&out, &errOut))
	require.Error(t, err)
	assert.Contains(t, errOut.String(), "Failed core proc(s): {'EngineCore_DP0': 1}")
	assert.Contains(t, errOut.String(), "(EngineCore_DP0 pid=")

	// A value out of range is rejected before the options are whole; the release still names
	// the lines (0.9.2: none).
	out, errOut = syncBuffer{}, syncBuffer{}
	_, err = Start(context.Background(), []string{"--sim-vllm-version", "0.9.2", "--gpu-memory-utilization", "1.5"}, noEnv,
		WithLogs(&out, &errOut))
	require.Error(t, err)
	both := out.String() + errOut.String()
	assert.Contains(t, both, "less_than_equal")
	assert.NotContains(t, both, "(APIServer pid=")
}
