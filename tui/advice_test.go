package tui

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/themes"
)

// vLLM's --kv-cache-memory advice is shown when it would grow the cache, wrapped to the
// panel, and not at all when it would not.
func TestRenderAdvice(t *testing.T) {
	th, _ := themes.ByName(themes.Default)
	st := NewStyles(th, true)
	a := server.MemoryAdvice{KVCacheGiB: 19.54, FillGPUBytes: 26927570944, FitRequestedBytes: 20064085607}
	lines := renderAdvice(&st, a, 40)
	text := strings.Join(lines, " ")
	assert.Contains(t, text, "--kv-cache-memory=26927570944")
	assert.Contains(t, text, "+5.54 GiB")
	for _, l := range lines {
		assert.LessOrEqual(t, len([]rune(l)), 40, l)
	}
	assert.Empty(t, renderAdvice(&st, server.MemoryAdvice{KVCacheGiB: 19.54}, 80), "no advice logged")
	assert.Empty(t, renderAdvice(&st, server.MemoryAdvice{KVCacheGiB: 30, FillGPUBytes: 20 << 30}, 80), "the cache already takes more")
}
