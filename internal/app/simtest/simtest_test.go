package simtest

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/launch"
)

// Both helpers launch the simulator in-process through the launcher, and serve until stopped.
func TestHelpersLaunchThroughTheLauncher(t *testing.T) {
	var modes []launch.Mode
	var kinds []string
	defer launch.Watch(func(s launch.Spec, srv *launch.Server) {
		modes = append(modes, s.Mode)
		kinds = append(kinds, srv.Plan.GPU())
	})()
	in := Start(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4")
	url := StartVirtual(t, "Qwen/Qwen2.5-0.5B-Instruct")
	assert.Equal(t, []launch.Mode{launch.InProcess, launch.InProcess}, modes)
	assert.Equal(t, "L4", kinds[0])
	for _, u := range []string{in.URL, url} {
		resp, err := http.Get(u + "/health")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, u)
	}
	in.Restart(t)
	assert.Len(t, modes, 3, "a restart launches a fresh one")
	in.Stop()
	_, err := http.Get(in.URL + "/health")
	assert.Error(t, err, "stopped: the port refuses")
}
