//go:build linux

package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// A child whose output holds escapes and controls: every Text, every parsed event and the
// exit cause are safe for a terminal, and the failure is still recognised.
func TestLogLinesAreSanitised(t *testing.T) {
	t.Parallel()
	exit, s := runToExit(t, "hostile-log")
	assert.Equal(t, KVCacheNoMemory, exit.Reason, "the parser still recognises the line")
	assert.Equal(t, "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.", exit.Cause)

	var texts []string
	for _, l := range s.Logs(0) {
		texts = append(texts, l.Text)
		assert.Equal(t, sanitize.Text(l.Text), l.Text)
	}
	assert.Contains(t, texts, "INFO retitled")
	assert.Contains(t, texts, "backspace bell c1  bidi evil")
	for _, f := range s.Status().Fatal {
		assert.Equal(t, sanitize.Text(f.Line), f.Line)
	}
	assert.NotContains(t, strings.Join(texts, ""), "\x1b")
}
