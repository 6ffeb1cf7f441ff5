package tui

import (
	"math"
	"strings"
	"time"
)

// barLabelW is the cells left of a Stream bar: "decode " and its duration, padded.
const barLabelW = 15

// barScale is the one time scale of the Stream view's bars: TTFT and decode, in both panes,
// so a longer bar is a longer time. Top is the scale's end, a round duration; Width the cells
// it spans.
type barScale struct {
	ms    yScale // in milliseconds
	Width int
}

// newBarScale is a round scale that holds longest in width cells, with a tick at most every
// eight cells (five at most).
func newBarScale(longest time.Duration, width int) barScale {
	width = max(width, 1)
	ms := float64(longest) / float64(time.Millisecond)
	return barScale{ms: niceScale(ms, min(max(width/8, 1), 5)), Width: width}
}

// cells is d's bar in cells, at least one for anything measured.
func (s barScale) cells(d time.Duration) int {
	top := time.Duration(s.ms.Top * float64(time.Millisecond))
	return barCells(d, top, s.Width)
}

// line is the scale under the bars: a tick at each round time and its label with its unit
// ("0", "250ms", "1.5s"), a label left out where it would touch the next.
func (s barScale) line(st *Styles, w int) []string {
	cells := []rune(strings.Repeat("─", s.Width))
	labels := []rune(strings.Repeat(" ", s.Width+8))
	end := -1
	for _, v := range s.ms.Ticks() {
		c := int(math.Round(v / s.ms.Top * float64(s.Width-1)))
		if s.ms.Top <= 0 || c < 0 || c >= s.Width {
			continue
		}
		cells[c] = '┴'
		l := []rune(axisLabel(v, unitMs))
		start := c
		if start+len(l) > s.Width {
			start = s.Width - len(l) // the last label ends under the scale's end
		}
		if start <= end || start < 0 {
			continue
		}
		copy(labels[start:], l)
		end = start + len(l)
	}
	pad := strings.Repeat(" ", barLabelW)
	return []string{truncate(st.Axis.Render(pad+string(cells)), w), truncate(st.Axis.Render(pad+strings.TrimRight(string(labels), " ")), w)}
}
