package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDashboardFlags(t *testing.T) {
	f, err := parseDashboardFlags([]string{"--max-concurrency", "8", "--", "vllm", "serve", "m"})
	require.NoError(t, err)
	assert.Equal(t, 8, f.concurrency)
	assert.Equal(t, []string{"vllm", "serve", "m"}, f.command)
	for _, bad := range [][]string{{"--attach", "http://x", "--", "vllm"}, {"--"}, {"stray"}, {"--theme", "neon"}, {"--max-concurrency", "-1"}} {
		_, err := parseDashboardFlags(bad)
		assert.Error(t, err, "%v", bad)
	}
}

func TestDashboardHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"--max-concurrency", "8", "--help"}, &out, &errOut))
	assert.Contains(t, out.String(), "Dashboard flags:")
	assert.Empty(t, errOut.String())
	out.Reset()
	assert.Equal(t, 0, run([]string{"help"}, &out, &errOut))
	assert.Contains(t, out.String(), "vllmtop sim [MODEL]")
}
