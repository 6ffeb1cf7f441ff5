package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseDashboard reads a dashboard command line as vllmtop does, without running it.
func parseDashboard(args ...string) (*dashboard, error) {
	fs := pflag.NewFlagSet("vllmtop", pflag.ContinueOnError)
	o := dashboardFlags(fs)
	if err := fs.Parse(gatherValues(args)); err != nil {
		return nil, err
	}
	return o, o.finish(fs, fs.Args(), os.Getenv)
}

func TestDashboardFlags(t *testing.T) {
	o, err := parseDashboard("--max-concurrency", "8", "--", "vllm", "serve", "m")
	require.NoError(t, err)
	assert.Equal(t, 8, o.loadCfg.Concurrency)
	assert.Equal(t, []string{"vllm", "serve", "m"}, o.command)
	o, err = parseDashboard("--sim-gpu", "L4", "--sim-args", "Qwen/Qwen3-0.6B --sim-speed 2", "--max-num-seqs", "4")
	require.NoError(t, err)
	assert.Equal(t, []string{"Qwen/Qwen3-0.6B", "--sim-speed", "2", "--sim-gpu=L4", "--max-num-seqs=4"}, o.simArgs)
	for _, bad := range [][]string{{"--attach", "http://x", "--", "vllm"}, {"--"}, {"stray"}, {"--theme", "neon"},
		{"--max-concurrency", "-1"}, {"--sim-gpu", "L4", "--", "vllm", "serve"}, {"--attach", "http://x", "--max-num-seqs", "4"}} {
		_, err := parseDashboard(bad...)
		assert.Error(t, err, "%v", bad)
	}
}

func TestDashboardHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"--max-concurrency", "8", "--help"}, &out, &errOut))
	assert.Contains(t, out.String(), "usage: vllmtop [flags]")
	assert.Contains(t, out.String(), "Simulator flags")
	assert.Empty(t, errOut.String())
	out.Reset()
	assert.Equal(t, 0, run([]string{"help"}, &out, &errOut))
	assert.Contains(t, out.String(), "vllmtop sim ")
	assert.Contains(t, out.String(), "vllmtop help CMD")
}
