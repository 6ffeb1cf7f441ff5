package dashcli

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/launch"
	"github.com/vllmtop/vllmtop/server"
)

// The dashboard launches its server through launch, whichever it is: the command after --
// (vllmtop sim named bare runs as this executable) or the built-in simulator, each asking for
// the key the client sends.
func TestDashboardLaunchesThroughTheLauncher(t *testing.T) {
	var specs []launch.Spec
	var servers []*launch.Server
	defer launch.Watch(func(s launch.Spec, srv *launch.Server) {
		specs, servers = append(specs, s), append(servers, srv)
	})()
	key := func(k string) string { return map[string]string{"OPENAI_API_KEY": "client-key"}[k] }
	for _, args := range [][]string{
		{"--", "vllmtop", "sim", "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"},
		{"--sim-speed", "50"},
		{"--", "vllm", "serve", "m"},
	} {
		d, err := parseGetenv(key, args...)
		require.NoError(t, err)
		require.NoError(t, d.server(nil, func(string, ...any) {}))
		defer d.sup.Close()
		require.Len(t, servers, len(specs))
		last := servers[len(servers)-1]
		assert.Same(t, d.sup, last.Sup, "%q", args)
		assert.Equal(t, "client-key", specs[len(specs)-1].APIKey, "%q", args)
		d.wireCapacity()
		assert.Equal(t, last.Plan != nil, d.deps.Capacity != nil, "the simulator's capacity model, supervised or built in")
	}
	require.Len(t, servers, 3)
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, []string{exe, "sim", "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"}, servers[0].Args[:5], "this build, not vllmtop on PATH")
	assert.Equal(t, []string{exe, "sim"}, servers[1].Args[:2])
	assert.Contains(t, servers[1].Args, defaultSimModel, "the built-in simulator's defaults")
	assert.Equal(t, server.KindVLLMServe, servers[2].Kind)
	assert.Nil(t, servers[2].Plan)
}

// A bad flag of the simulator is worded by the command, with where the flags came from.
func TestDashboardWordsTheSimulatorsErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		what string
	}{
		{[]string{"--sim-gpu", "no-such-gpu"}, "simulator"},
		{[]string{"--sim-args", "--sim-gpu no-such-gpu"}, "--sim-args"},
		{[]string{"--", "vllmtop", "sim", "--sim-gpu", "no-such-gpu"}, "the command after --"},
		{[]string{"--sim-args", "--sim-gpu L4", "--sim-gpu", "no-such-gpu"}, "simulator (its flags and --sim-args)"},
	} {
		d, err := parseDashboard(c.args...)
		require.NoError(t, err)
		var said string
		words := func(err error, what string) error { said = what; return err }
		err = d.server(words, func(string, ...any) {})
		assert.ErrorContains(t, err, "no-such-gpu")
		assert.Equal(t, c.what, said)
		said = ""
		assert.ErrorContains(t, d.Check(words), "no-such-gpu", "Check finds it before anything starts")
		assert.Equal(t, c.what, said)
	}

	// A release the simulator plans but does not serve is refused before the terminal too.
	d, err := parseDashboard("--sim-vllm-version", "0.7.3")
	require.NoError(t, err)
	var said string
	err = d.Check(func(err error, what string) error { said = what; return err })
	assert.ErrorContains(t, err, "V0 engine")
	assert.Equal(t, "simulator", said)
}
