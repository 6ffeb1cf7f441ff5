package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// truncate cuts s (which may hold ANSI styles) to width cells, marking a cut with "…".
func truncate(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if lipgloss.Width(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// fit makes every line of s exactly width cells (cut or padded) and keeps exactly height lines.
func fit(s string, width, height int) string {
	if height <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	for i, l := range lines {
		lines[i] = padRight(truncate(l, width), width)
	}
	return strings.Join(lines, "\n")
}

// fitMore is fit for a pane whose text may run past its height: the last row then says how
// many lines are cut, so that a short terminal does not hide them without a word.
func fitMore(st *Styles, s string, width, height int) string {
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if n := len(lines) - height; n > 0 && height >= 2 {
		cut := n + 1
		lines = append(lines[:height-1], st.Muted.Render(fmt.Sprintf("… %d more %s below: a taller terminal shows %s", cut, plural(cut, "line", "lines"), plural(cut, "it", "them"))))
	}
	return fit(strings.Join(lines, "\n"), width, height)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// padRight pads s with spaces to width cells.
func padRight(s string, width int) string {
	if pad := width - lipgloss.Width(s); pad > 0 {
		return s + strings.Repeat(" ", pad)
	}
	return s
}

// padLeft right-aligns s in width cells.
func padLeft(s string, width int) string {
	if pad := width - lipgloss.Width(s); pad > 0 {
		return strings.Repeat(" ", pad) + s
	}
	return s
}

// clean makes text from outside (a server, a log, a file) safe for the terminal, on one line.
func clean(s string) string { return textfmt.OneLine(sanitize.Text(s), 0) }

// cleanLines is clean for text whose line breaks matter (a streamed answer): each line is
// sanitised on its own, so the breaks survive and nothing else does.
func cleanLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = sanitize.Text(l)
	}
	return lines
}

// fmtDur is a duration for people: "412µs", "38.2ms", "4.1s", "2m05s", "1h03m".
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// fmtAge is a span of wall time to the second: "0s", "42s", "2m05s", "1h03m".
func fmtAge(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmtDur(d)
}

// fmtMs is a latency in milliseconds, three significant figures at most: "4.2ms", "38ms", "1.2s".
func fmtMs(ms float64) string {
	switch {
	case math.IsNaN(ms):
		return "–"
	case !textfmt.Finite(ms):
		return textfmt.Fixed(ms/1000, 0) + "s"
	case ms < 0.1:
		return fmt.Sprintf("%.0fµs", ms*1000)
	case ms < 10:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0fms", ms)
	case ms < 10000:
		return fmt.Sprintf("%.2gs", ms/1000)
	}
	return fmt.Sprintf("%.0fs", ms/1000)
}

// siNumber is a count or rate with a k/M suffix: "7", "12.5", "1.2k", "36k", "1.5M".
func siNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case !textfmt.Finite(v):
		return textfmt.Fixed(v, 0)
	case v >= 1e7:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// trimFloat prints f with the fewest digits that say it exactly ("0.5", "2").
func trimFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "inf" // --request-rate inf, as vllm bench serve spells it
	}
	return textfmt.Fixed(f, -1)
}

func commas(n int) string { return textfmt.Thousands(int64(n)) }

// orDash is s, or "–" when the value behind it is unknown.
func orDash(ok bool, s string) string {
	if !ok {
		return "–"
	}
	return s
}

// joinFit joins parts with sep, keeping parts in order of priority (lower first) while they
// fit in width; the parts that do not fit are left out whole, never cut mid-word.
func joinFit(parts []string, prio []int, sep string, width int) string {
	keep := make([]bool, len(parts))
	used := 0
	sepW := lipgloss.Width(sep)
	for p := 0; p <= maxInt(prio); p++ {
		missed := false
		for i := range parts {
			if prio[i] != p || parts[i] == "" {
				continue
			}
			w := lipgloss.Width(parts[i])
			if used > 0 {
				w += sepW
			}
			if used+w <= width {
				keep[i] = true
				used += w
			} else {
				missed = true
			}
		}
		if missed {
			// Nothing less important fills the gap an item of this rank left: a short
			// detail in place of a missing figure reads as if the figure did not exist.
			break
		}
	}
	var out []string
	for i, k := range keep {
		if k {
			out = append(out, parts[i])
		}
	}
	return truncate(strings.Join(out, sep), width)
}

func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// wrapItems lays items out left to right with sep between them, starting a new line when the
// next item does not fit, in at most maxLines lines (the last one cut if it must be).
func wrapItems(items []string, sep string, width, maxLines int) []string {
	var lines []string
	cur := ""
	for _, it := range items {
		switch {
		case cur == "":
			cur = it
		case lipgloss.Width(cur)+lipgloss.Width(sep)+lipgloss.Width(it) <= width:
			cur += sep + it
		default:
			lines = append(lines, cur)
			cur = it
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	if len(lines) > maxLines {
		last := strings.Join(lines[maxLines-1:], sep)
		lines = append(lines[:maxLines-1], last)
	}
	for i := range lines {
		lines[i] = truncate(lines[i], width)
	}
	return lines
}
