package serve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrepareAndItsErrors(t *testing.T) {
	p, err := Prepare([]string{"Qwen/Qwen3-0.6B", "--sim-gpu", "L4", "--sim-speed", "4", "--sim-startup-seconds", "2"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, "Qwen/Qwen3-0.6B", p.Model())
	assert.Equal(t, "L4", p.GPU())
	assert.Equal(t, 4.0, p.Speed())
	assert.Equal(t, 500*time.Millisecond, p.StartupTime(), "2 simulated seconds at 4x")

	for _, c := range []struct {
		args []string
		code int
		kind any
	}{
		{[]string{"--help"}, 0, new(*HelpRequested)},
		{[]string{"--bogus"}, 2, new(*UsageError)},
		{[]string{"acme/Unknown-1B"}, 2, new(*ConfigError)},
		{[]string{"--sim-profiles", "/no/such/profiles.json"}, 2, new(*ConfigError)},
		{[]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--gpu-memory-utilization", "0.5"}, 1, new(*StartupError)},
	} {
		_, err := Prepare(c.args, noEnv)
		require.Error(t, err, "%v", c.args)
		assert.True(t, errors.As(err, c.kind), "%v: %T", c.args, err)
		assert.Equal(t, c.code, ExitCode(err), "%v", c.args)
	}
	assert.Equal(t, 1, ExitCode(errors.New("cannot listen")))
}

func TestCapacityAtFollowsTheEngine(t *testing.T) {
	p, err := Prepare([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--max-model-len", "8192"}, noEnv)
	require.NoError(t, err)
	for _, u := range []float64{0.8, 0.92} {
		// The same server started at u says the same.
		at, err := Prepare([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--max-model-len", "8192", "--gpu-memory-utilization", strconv.FormatFloat(u, 'f', -1, 64)}, noEnv)
		require.NoError(t, err)
		tok, conc, err := p.CapacityAt(u)
		require.NoError(t, err)
		assert.Equal(t, at.setup.Capacity.KVCacheTokens, tok, "util %g", u)
		assert.Equal(t, at.setup.Capacity.MaxConcurrency, conc, "util %g", u)
	}
	low, _, _ := p.CapacityAt(0.8)
	high, _, _ := p.CapacityAt(0.92)
	assert.Greater(t, high, low)
	_, _, err = p.CapacityAt(0.5)
	var startErr *StartupError
	assert.ErrorAs(t, err, &startErr, "8B weights do not leave room for a KV cache in half an L4")
}

func TestWithDefaults(t *testing.T) {
	defaults := []string{"--model", "dflt/Model", "--sim-gpu", "H100", "--sim-startup-seconds", "0"}
	for _, c := range []struct {
		args, want []string
	}{
		{nil, defaults},
		{[]string{"Qwen/Qwen3-0.6B"}, []string{"--sim-gpu", "H100", "--sim-startup-seconds", "0", "Qwen/Qwen3-0.6B"}},
		{[]string{"--model=m", "--sim-gpu", "L4"}, []string{"--sim-startup-seconds", "0", "--model=m", "--sim-gpu", "L4"}},
		{[]string{"--sim-startup-seconds", "3", "--enforce-eager"}, []string{"--model", "dflt/Model", "--sim-gpu", "H100", "--sim-startup-seconds", "3", "--enforce-eager"}},
	} {
		got, err := WithDefaults(c.args, defaults...)
		require.NoError(t, err, "%v", c.args)
		assert.Equal(t, c.want, got, "%v", c.args)
	}
	_, err := WithDefaults([]string{"--bogus"}, defaults...)
	assert.ErrorAs(t, err, new(*UsageError))
}

func TestFlagsAndHelp(t *testing.T) {
	fs := Flags()
	for _, name := range []string{"gpu-memory-utilization", "sim-gpu", "max-model-len", "port", "enforce-eager"} {
		assert.NotNil(t, fs.Lookup(name), name)
	}
	assert.Contains(t, Help(), "--sim-gpu")
	assert.Contains(t, Help(), "usage: vllmtop sim")
}

func TestStartServesUntilStopped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	inst, err := Start(context.Background(), []string{"Qwen/Qwen3-0.6B", "--sim-startup-seconds", "0"}, noEnv, WithListener(ln))
	require.NoError(t, err)
	assert.Equal(t, "http://"+ln.Addr().String(), inst.URL())
	assert.Equal(t, "Qwen/Qwen3-0.6B", inst.Plan().Model())
	require.Eventually(t, inst.Ready, 5*time.Second, time.Millisecond)
	resp, err := http.Get(inst.URL() + "/v1/models")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"id":"Qwen/Qwen3-0.6B"`)
	require.NoError(t, inst.Stop())
	_, err = http.Get(inst.URL() + "/health")
	assert.Error(t, err, "nothing listens after Stop")
}

// A V0 release is planned (Prepare, --print-capacity) but not served: the server's logs and
// /metrics are the V1 engine's, and would claim a V1 engine of 0.6.
func TestV0ReleasesAreNotServed(t *testing.T) {
	args := []string{"Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--sim-vllm-version", "0.6.0", "--sim-startup-seconds", "0"}
	p, err := Prepare(args, noEnv)
	require.NoError(t, err)
	assert.Positive(t, p.Capacity().KVCacheTokens)
	assert.ErrorContains(t, p.Served(), "0.6.0 ran the V0 engine", "nor on the virtual clock")

	var out, errOut bytes.Buffer
	_, err = Start(context.Background(), args, noEnv, WithLogs(&out, &errOut))
	var usage *UsageError
	require.ErrorAs(t, err, &usage)
	assert.Contains(t, usage.Msg, "0.6.0 ran the V0 engine")
	assert.Empty(t, out.String(), "no start-up lines of a server that does not start")

	args[len(args)-3] = "0.8.0"
	inst, err := Start(context.Background(), append(args, "--port", "0"), noEnv, WithLogs(&out, &errOut))
	require.NoError(t, err, "0.8 ran the V1 engine")
	assert.NoError(t, inst.Stop())
}

// A plan's header names the GPU with the layout across cards, so a run of several does not
// read as one card's.
func TestPlanCardsNamesTheLayout(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"Qwen/Qwen3-0.6B", "--sim-gpu", "L4"}, "L4"},
		{[]string{"Qwen/Qwen3-8B", "--sim-gpu", "H100", "-tp", "2"}, "H100-SXM-80GB, TP 2"},
		{[]string{"Qwen/Qwen3-8B", "--sim-gpu", "H100", "-tp", "2", "-pp", "2", "--data-parallel-size", "2"}, "H100-SXM-80GB, DP 2 x TP 2 x PP 2"},
	} {
		p, err := Prepare(c.args, noEnv)
		require.NoError(t, err, "%v", c.args)
		assert.Equal(t, c.want, p.Cards(), "%v", c.args)
	}
}
