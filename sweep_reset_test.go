package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A vllm server the sweep starts gets VLLM_SERVER_DEV_MODE=1 and, after each run, the
// cache-reset POSTs vLLM's sweep sends; the simulator behind this `vllm` has no such
// endpoints, which is said once.
func TestSweepResetsVLLMCachesBetweenRuns(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	mark := filepath.Join(dir, "devmode")
	writeFile(t, dir, "vllm", "#!/bin/sh\necho \"$VLLM_SERVER_DEV_MODE\" > '"+mark+"'\n[ \"$1\" = serve ] && shift\n"+
		"exec '"+exe+"' sim --sim-gpu L4 --sim-speed 20 --sim-startup-seconds 0 \"$@\"\n")
	require.NoError(t, os.Chmod(filepath.Join(dir, "vllm"), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("VLLM_SERVER_DEV_MODE", "0")
	code, stdout, errOut := runVllmtop("sweep", "serve", "--serve-cmd", "vllm serve Qwen/Qwen2.5-0.5B-Instruct",
		"--bench-cmd", "vllm bench serve --model Qwen/Qwen2.5-0.5B-Instruct --num-prompts 4 --random-input-len 32 --random-output-len 4",
		"--num-runs", "2", "-o", dir, "-e", "reset")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	b, err := os.ReadFile(mark)
	require.NoError(t, err)
	assert.Equal(t, "1\n", string(b), "the sweep's value wins over the inherited one")
	assert.Regexp(t, `Resetting caches at http://\S+:\d+\n`, stdout)
	assert.Equal(t, 1, strings.Count(errOut, "has no /reset_prefix_cache"), errOut)
}
