package dashcli

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestThisVllmtopRunsTheSimulatorAfterDashDashWithThisBuild(t *testing.T) {
	self := func() (string, error) { return "/tmp/build/vllmtop", nil }
	assert.Equal(t, []string{"/tmp/build/vllmtop", "sim", "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"},
		thisVllmtop([]string{"vllmtop", "sim", "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"}, self))
	for _, cmd := range [][]string{
		{"vllm", "serve", "m"},
		{"/opt/vllmtop", "sim"}, // a path the user chose runs as given
		{"vllmtop", "bench"},
		{"vllmtop"},
	} {
		assert.Equal(t, cmd, thisVllmtop(cmd, self), "%q runs as given", cmd)
	}
	failing := func() (string, error) { return "", errors.New("no /proc") }
	assert.Equal(t, []string{"vllmtop", "sim"}, thisVllmtop([]string{"vllmtop", "sim"}, failing), "without its own path, PATH decides")
}
