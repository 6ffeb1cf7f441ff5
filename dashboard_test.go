package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

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
