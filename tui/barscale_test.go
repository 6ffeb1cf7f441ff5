package tui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// barLen is the cells of the first run of any of glyphs after prefix on a line of the pane.
func barLen(lines []string, prefix, glyphs string) int {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return len([]rune(regexp.MustCompile("[" + glyphs + "]+").FindString(l)))
		}
	}
	return -1
}

// TTFT and decode bars are drawn on one time scale, labelled with its units under them: a
// TTFT of 300 ms is a third of a 900 ms decode's bar, in either pane, and never longer.
func TestStreamBarsShareOneLabelledTimeScale(t *testing.T) {
	for _, w := range []int{80, 120, 200} {
		d, p := streamDriver(t)
		d.send(tea.WindowSizeMsg{Width: w, Height: 40})
		d.showView(streamTab)
		now := *d.td.clock
		// 101 tokens 9 ms apart: a 900 ms decode; the long prompt's first token after 300 ms.
		p.slots[0] = watchSlot{cur: watchedRequest(now, 256, 101, 30*time.Millisecond, 9*time.Millisecond, false, true)}
		p.slots[1] = watchSlot{cur: watchedRequest(now, 4096, 101, 300*time.Millisecond, 9*time.Millisecond, false, true)}
		d.second()
		out := ansi.Strip(d.view())
		require.LessOrEqual(t, maxLineWidth(d.view()), w)
		var left, right []string
		for _, l := range strings.Split(out, "\n") {
			a, b, ok := strings.Cut(l, "│")
			if ok {
				left, right = append(left, a), append(right, b)
			}
		}
		for name, pane := range map[string][]string{"short": left, "long": right} {
			dec := barLen(pane, "decode ", "█")
			require.Greater(t, dec, 10, "%d %s: a decode bar", w, name)
			scale := ""
			for i, l := range pane {
				if strings.HasPrefix(l, "decode ") && i+2 < len(pane) {
					assert.Contains(t, pane[i+1], "┴", "%d %s: the scale's ticks under the bars", w, name)
					scale = pane[i+2]
				}
			}
			assert.Regexp(t, `^ {15}0 .*\d+(ms|s)\b`, scale, "%d %s: the scale's labels have units", w, name)
			assert.Contains(t, scale, "ms", "%d %s", w, name)
			if name == "long" {
				ttft := barLen(pane, "TTFT ", "░▓")
				assert.InDelta(t, float64(dec)/3, float64(ttft), 1.5, "%d: 300 ms against 900 ms on one scale", w)
			} else {
				assert.LessOrEqual(t, barLen(pane, "TTFT ", "░▓"), max(dec/20, 1), "%d: 30 ms is a sliver next to 900 ms", w)
			}
		}
		assert.True(t, strings.Contains(out, "(server means)") || strings.Contains(out, "server means of all requests"),
			"the split says it is the server's means")
	}
}
