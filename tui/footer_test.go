package tui

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFooterMessageBeforeKeys(t *testing.T) {
	msg := "search SLO: p99_ttft_ms<=500▏ enter starts · esc cancels"
	for _, w := range []int{80, 120} {
		d := newDriver(t, w, 24)
		d.m.c.setStatus(msg, false)
		out := d.view()
		footer := out[strings.LastIndex(out, "\n")+1:]
		assert.Contains(t, footer, msg, "%d columns: a message that fits is shown whole, keys give way", w)
		assert.Contains(t, footer, "? help")
		assert.Contains(t, footer, "q quit")
		assert.LessOrEqual(t, maxLineWidth(out), w)
	}
}
