package launch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

const model = "Qwen/Qwen2.5-0.5B-Instruct"

func launch(t *testing.T, s Spec) *Server {
	t.Helper()
	srv, err := Launch(s)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	return srv
}

func asThis(t *testing.T, path string, err error) {
	real := executable
	executable = func() (string, error) { return path, err }
	t.Cleanup(func() { executable = real })
}

// The simulator named bare runs as this executable's sim, with its defaults where its flags
// do not set them and the client's model, on loopback at a free port.
func TestSimulatorChild(t *testing.T) {
	asThis(t, "/tmp/build/vllmtop", nil)
	srv := launch(t, Spec{Command: Sim("--sim-gpu", "L4"), Defaults: []string{"--model", "meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "H100"}, Model: model})
	assert.Equal(t, server.KindSim, srv.Kind)
	args := srv.Sup.Args()
	assert.Equal(t, []string{"/tmp/build/vllmtop", "sim", "--model", model, "--sim-gpu", "L4"}, args[:6], "the client's model in the default's place, once")
	assert.Equal(t, args, srv.Args)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+$`, server.BaseURL(args))
	port, _ := server.ArgValue(args, "--port")
	assert.NotEqual(t, "0", port)
	require.NotNil(t, srv.Plan)
	assert.Equal(t, model, srv.Plan.Model(), "the client's model wins over the default")
	assert.Equal(t, "L4", srv.Plan.GPU(), "the flags win over the defaults")
	assert.Nil(t, srv.Target)

	named := launch(t, Spec{Command: Sim(model, "--served-model-name", "mine"), Model: "other"})
	assert.Equal(t, model, named.Plan.Model(), "a model served under a name of its own is not replaced")

	given := launch(t, Spec{Command: []string{"/opt/vllmtop", "sim", model}, Port: 9123})
	assert.Equal(t, "/opt/vllmtop", given.Args[0], "a path the user chose runs as given")
	assert.Equal(t, "http://127.0.0.1:9123", server.BaseURL(given.Args))

	wrapped := launch(t, Spec{Command: []string{"env", "A=1", "vllmtop", "sim", model}})
	assert.Equal(t, []string{"env", "A=1", "/tmp/build/vllmtop", "sim", model}, wrapped.Args[:5])

	asThis(t, "", errors.New("no /proc"))
	bare := launch(t, Spec{Command: Sim(model)})
	assert.Equal(t, "vllmtop", bare.Args[0], "without its own path, PATH decides")
}

// Other servers: vLLM's gets loopback and a free port, another command nothing.
func TestOtherServersAsChildren(t *testing.T) {
	srv := launch(t, Spec{Command: []string{"vllm", "serve", "m"}})
	assert.Equal(t, server.KindVLLMServe, srv.Kind)
	assert.Equal(t, []string{"--host", "127.0.0.1"}, srv.Args[5:])
	assert.Nil(t, srv.Plan)
	other := launch(t, Spec{Command: []string{"sleep", "1000"}, Port: 9000})
	assert.Equal(t, []string{"sleep", "1000"}, other.Args, "no flags it may refuse")
}

func TestVirtualAndErrors(t *testing.T) {
	srv := launch(t, Spec{Command: Sim(model, "--sim-gpu", "L4"), Mode: Virtual, Endpoint: "/v1/completions"})
	require.NotNil(t, srv.Target)
	assert.Nil(t, srv.Sup)
	assert.Equal(t, "L4", srv.Target.Plan().GPU())

	_, err := Launch(Spec{Command: []string{"vllm", "serve", "m"}, Mode: Virtual})
	assert.ErrorIs(t, err, ErrNotSim)
	_, err = Launch(Spec{Command: Sim(model, "--sim-gpu", "H100", "--data-parallel-size", "2"), Mode: Virtual})
	var dp *ArgsError
	require.ErrorAs(t, err, &dp, "one engine on the virtual clock, not two")
	assert.Contains(t, err.Error(), "--data-parallel-size 2")
	_, err = Launch(Spec{Command: Sim("--sim-gpu", "no-such-gpu")})
	var bad *ArgsError
	require.ErrorAs(t, err, &bad)
	assert.Equal(t, 2, serve.ExitCode(err), "a bad setting is a usage error")
	_, err = Launch(Spec{Command: Sim("--help")})
	assert.Equal(t, 0, serve.ExitCode(err), "help is asked for, not a failure")
}

// A key on a known server's command line goes to its environment, not its argv; without one
// the child asks for the key the client sends.
func TestAPIKeyNotInTheChildsArgv(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "seen")
	script := "#!/bin/sh\necho \"argv: $*\" > " + out + ".tmp\necho \"key: $VLLM_API_KEY\" >> " + out + ".tmp\nmv " + out + ".tmp " + out + "\nexec sleep 100\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vllm"), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("VLLM_API_KEY", "inherited")
	for _, c := range []struct {
		args        []string
		client, key string
	}{
		{[]string{"vllm", "serve", "m", "--api-key", "s3cret"}, "client-key", "s3cret"},
		{[]string{"vllm", "serve", "m"}, "client-key", "client-key"},
		{[]string{"vllm", "serve", "m"}, "", ""},
	} {
		require.NoError(t, os.RemoveAll(out))
		srv := launch(t, Spec{Command: c.args, APIKey: c.client})
		for _, a := range srv.Sup.Args() {
			assert.NotContains(t, a, "s3cret")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(t, srv.Sup.Start(ctx))
		cancel()
		var seen []byte
		require.Eventually(t, func() bool {
			var err error
			seen, err = os.ReadFile(out)
			return err == nil
		}, 10*time.Second, 5*time.Millisecond)
		lines := strings.Split(strings.TrimSpace(string(seen)), "\n")
		require.Len(t, lines, 2, string(seen))
		assert.True(t, strings.HasPrefix(lines[0], "argv: serve m --port "), lines[0])
		assert.NotContains(t, lines[0], "s3cret", "the key is not on the child's command line")
		assert.Equal(t, strings.TrimSpace("key: "+c.key), lines[1], "%q", c.args)
		srv.Stop()
	}
}

// In-process over HTTP, as the tests of other packages serve the simulator.
func TestInProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := launch(t, Spec{Command: Sim(model, "--sim-startup-seconds", "0"), Mode: InProcess, Listener: ln, Grace: time.Millisecond})
	require.Eventually(t, srv.Instance.Ready, 10*time.Second, time.Millisecond)
	resp, err := http.Get(srv.Instance.URL() + "/v1/models")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	srv.Stop()
	_, err = http.Get(srv.Instance.URL() + "/v1/models")
	assert.Error(t, err, "stopped")
}

func TestWatchSeesEveryLaunch(t *testing.T) {
	var seen []Mode
	stop := Watch(func(s Spec, srv *Server) { seen = append(seen, s.Mode) })
	launch(t, Spec{Command: Sim(model), Mode: Virtual})
	launch(t, Spec{Command: []string{"sleep", "1"}})
	_, err := Launch(Spec{Command: Sim("--sim-gpu", "no-such-gpu")})
	require.Error(t, err)
	stop()
	launch(t, Spec{Command: Sim(model), Mode: Virtual})
	assert.Equal(t, []Mode{Virtual, Child}, seen, "launches, not failures, until stopped")
}
