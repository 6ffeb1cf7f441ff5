package dashcli

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server"
)

// parseDashboard reads a dashboard command line as vllmtop does, without running it.
func parseDashboard(args ...string) (*Dashboard, error) { return parseGetenv(os.Getenv, args...) }

// parseGetenv is parseDashboard with an environment of the test's.
func parseGetenv(getenv func(string) string, args ...string) (*Dashboard, error) {
	fs := pflag.NewFlagSet("vllmtop", pflag.ContinueOnError)
	o := Flags(fs)
	if err := fs.Parse(cliflag.Gather(args, []string{"--goodput"})); err != nil {
		return nil, err
	}
	before, after := fs.Args(), []string(nil)
	if n := fs.ArgsLenAtDash(); n >= 0 {
		before, after = fs.Args()[:n], fs.Args()[n:]
	}
	return o, o.Finish(before, after, getenv)
}

func TestDashboardFlags(t *testing.T) {
	o, err := parseDashboard("--max-concurrency", "8", "--", "vllm", "serve", "m")
	require.NoError(t, err)
	assert.Equal(t, 8, o.loadCfg.Concurrency)
	assert.Equal(t, []string{"vllm", "serve", "m"}, o.command)
	o, err = parseDashboard("--sim-gpu", "L4", "--sim-args", "Qwen/Qwen3-0.6B --sim-speed 2", "--max-num-seqs", "4")
	require.NoError(t, err)
	assert.Equal(t, []string{"Qwen/Qwen3-0.6B", "--sim-speed", "2", "--sim-gpu=L4", "--max-num-seqs=4"}, o.simArgs)
	o, err = parseDashboard("--goodput", "ttft:200", "tpot:50", "--max-concurrency", "2")
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, o.loadCfg.Goodput.TTFT, "--goodput takes several values, as vllm bench serve's")
	assert.Equal(t, o.loadCfg.Goodput, o.deps.Goodput, "the Runs view gets the objectives")
	assert.Equal(t, loadgen.DefaultLiveWindow, o.deps.LiveWindow)
	for _, bad := range [][]string{{"--attach", "http://x", "--", "vllm"}, {"--"}, {"stray"}, {"--theme", "neon"}, {"--goodput", "ttft"},
		{"--max-concurrency", "-1"}, {"--sim-gpu", "L4", "--", "vllm", "serve"}, {"--attach", "http://x", "--max-num-seqs", "4"}} {
		_, err := parseDashboard(bad...)
		assert.Error(t, err, "%v", bad)
	}
}

func TestDashboardHonoursNoColor(t *testing.T) {
	fs := pflag.NewFlagSet("vllmtop", pflag.ContinueOnError)
	o := Flags(fs)
	require.NoError(t, fs.Parse(nil))
	env := map[string]string{"NO_COLOR": "1"}
	require.NoError(t, o.Finish(nil, nil, func(k string) string { return env[k] }))
	assert.True(t, o.deps.NoColor)
}

// TestDashboardLeavesUnknownCommandsAlone: a command that is not vLLM's gets no --port or
// --host, no model guessed from its arguments, no restart that edits vLLM's flags, and the
// dashboard says where it expects the server.
func TestDashboardLeavesUnknownCommandsAlone(t *testing.T) {
	d, err := parseDashboard("--", "sleep", "1000")
	require.NoError(t, err)
	var errOut bytes.Buffer
	say := func(format string, a ...any) { fmt.Fprintf(&errOut, "vllmtop: "+format+"\n", a...) }
	require.NoError(t, d.server(nil, say))
	defer d.sup.Close()
	assert.Equal(t, []string{"sleep", "1000"}, d.sup.Args())
	assert.Equal(t, "http://127.0.0.1:8000", d.loadCfg.Client.BaseURL)
	assert.Equal(t, "sleep 1000 [expected at http://127.0.0.1:8000]", d.deps.Target)
	assert.Zero(t, d.deps.InitialUtil)
	assert.True(t, d.deps.RestartDisabled)
	assert.Equal(t, "vllmtop: sleep is not vllm serve, python -m vllm.entrypoints.openai.api_server or vllmtop sim: "+
		"vllmtop adds no --port or --host to it and expects the server at http://127.0.0.1:8000 (vLLM's default port)\n", errOut.String())
	assert.Empty(t, server.ModelArg(d.sup.Args()), "no model is guessed from 1000")

	// Its own --port is where it is looked for.
	d, err = parseDashboard("--", "python", "my_server.py", "--port", "9001")
	require.NoError(t, err)
	errOut.Reset()
	require.NoError(t, d.server(nil, say))
	defer d.sup.Close()
	assert.Equal(t, "http://127.0.0.1:9001", d.loadCfg.Client.BaseURL)
	assert.Contains(t, errOut.String(), "(the --port it was given)")

	// vllm serve gets a free loopback port.
	d, err = parseDashboard("--", "vllm", "serve", "m")
	require.NoError(t, err)
	errOut.Reset()
	require.NoError(t, d.server(nil, say))
	defer d.sup.Close()
	args := d.sup.Args()
	require.Len(t, args, 7)
	assert.Equal(t, []string{"--host", "127.0.0.1"}, args[5:])
	assert.Empty(t, errOut.String())
	assert.False(t, d.deps.RestartDisabled)
}

func TestDashboardReplayFlags(t *testing.T) {
	o, err := parseDashboard("--dataset-name", "mooncake", "--dataset-path", "../../../testdata/mooncake-sample.jsonl", "--trace-speedup", "4")
	require.NoError(t, err)
	require.NotNil(t, o.loadCfg.Dataset)
	assert.True(t, o.loadCfg.Dataset.Replays())
	assert.Equal(t, "mooncake trace", o.loadCfg.Dataset.Name())
	o, err = parseDashboard("--multi-turn", "--num-turns", "3", "--think-time", "2s")
	require.NoError(t, err)
	assert.Equal(t, "multi-turn random", o.loadCfg.Dataset.Name())
	assert.Equal(t, loadgen.DefaultSharedPrefixLen, o.loadCfg.PrefixLen)
	o, err = parseDashboard("--prefix-len", "2048")
	require.NoError(t, err)
	assert.Nil(t, o.loadCfg.Dataset)
	assert.Equal(t, 2048, o.loadCfg.PrefixLen)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dataset-name", "mooncake", "--dataset-path", "../../../testdata/mooncake-malformed.jsonl"}, "mooncake-malformed.jsonl:2: "},
		{[]string{"--think-time", "1s"}, "go with --multi-turn"},
		{[]string{"--trace-speedup", "2"}, "go with --dataset-name burstgpt or mooncake"},
		{[]string{"--dataset-name", "sharegpt", "--dataset-path", "../../../testdata/sharegpt-conversations.json"}, "give --multi-turn"},
		{[]string{"--dataset-name", "mooncake"}, "needs --dataset-path"},
		{[]string{"--prefix-len", "0"}, "--prefix-len"},
	} {
		_, err := parseDashboard(c.args...)
		assert.ErrorContains(t, err, c.want, c.args)
	}
}

// As in vllm bench serve, --max-concurrency caps a --request-rate load; alone, it is the
// closed loop's, and a rate without it keeps the open loop's default cap.
func TestMaxConcurrencyCapsTheRate(t *testing.T) {
	for _, c := range []struct {
		args []string
		cap  int
	}{
		{[]string{"--request-rate", "inf", "--max-concurrency", "2"}, 2},
		{[]string{"--request-rate", "5"}, 0},
		{[]string{"--max-concurrency", "2"}, 0},
		{[]string{"--request-rate", "5", "--max-concurrency", "0"}, 0}, // no cap, as in bench
	} {
		d, err := parseDashboard(c.args...)
		require.NoError(t, err, c.args)
		assert.Equal(t, c.cap, d.loadCfg.MaxInFlight, c.args)
		assert.Equal(t, c.cap, d.deps.RateCap, "the header says the cap: %v", c.args)
	}
}

// A load flag that would leave the dashboard idle or is out of range is refused, by name.
func TestLoadFlagsAreRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-concurrency", "-5"}, "--max-concurrency -5: want 0 (no load until + starts it; with --request-rate, no cap) or more"},
		{[]string{"--request-rate", "0"}, "--request-rate 0: want a positive rate"},
		{[]string{"--request-rate", "-1"}, "--request-rate -1: want a positive rate"},
		{[]string{"--random-output-len", "0"}, "--random-output-len 0: want at least 1 token"},
		{[]string{"--random-input-len", "-3"}, "--random-input-len -3: want at least 1 token"},
		{[]string{"--long-input-len", "0"}, "--long-input-len 0: want at least 1 token"},
		{[]string{"--metrics-interval", "10ms"}, "--metrics-interval 10ms: want at least 100ms"},
	} {
		_, err := parseDashboard(tc.args...)
		require.Error(t, err, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want, "%v", tc.args)
	}
	o, err := parseDashboard("--request-rate", "5", "--max-concurrency", "0")
	require.NoError(t, err, "0 is a rate's cap: none")
	assert.Equal(t, 5.0, o.deps.InitialRate)
}
