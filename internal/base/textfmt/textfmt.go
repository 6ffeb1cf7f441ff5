// Package textfmt formats numbers and messages for people: digit groups ("464,720") and
// messages folded onto one bounded line. It imports nothing of vllmtop's, so every package,
// the simulator included, can use it.
package textfmt

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Thousands writes n with a comma between groups of three digits, as Python's f"{n:,}" does.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	digits := strings.TrimPrefix(s, "-")
	var b strings.Builder
	b.Grow(len(s) + len(digits)/3)
	if len(digits) < len(s) {
		b.WriteByte('-')
	}
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(digits[i])
	}
	return b.String()
}

// OneLine folds s onto one line (every run of spaces, tabs and line breaks becomes one space)
// and, when max > 0, cuts it to at most max bytes on a rune boundary, marking the cut with "…".
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// EditDistance is the Levenshtein distance between a and b, in bytes.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Wrap reflows the words of text into lines of at most width columns (a longer word keeps its
// own line); blank lines between paragraphs are kept.
func Wrap(text string, width int) string {
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			switch {
			case line == "":
				line = w
			case len([]rune(line))+1+len([]rune(w)) > width:
				out = append(out, line)
				line = w
			default:
				line += " " + w
			}
		}
		out = append(out, line, "")
	}
	return strings.Join(out[:len(out)-1], "\n")
}

// FitFlagUsages re-wraps pflag's FlagUsagesWrapped(width) output so that no line is wider than
// width: pflag leaves the rest of a description on one line once a word is longer than the
// description column. An overlong line keeps its flag part; its description continues at the
// column pflag indents descriptions to, with words longer than the column cut.
func FitFlagUsages(usages string, width int) string {
	lines := strings.Split(usages, "\n")
	col := descriptionColumn(lines)
	if width <= 0 || col <= 0 || col >= width-8 {
		return usages
	}
	var out []string
	for _, line := range lines {
		r := []rune(line)
		if len(r) <= width || len(r) <= col || strings.TrimSpace(string(r[:col])) != "" && r[col-1] != ' ' {
			out = append(out, line)
			continue
		}
		out = append(out, wrapColumn(string(r[:col]), strings.TrimSpace(string(r[col:])), col, width)...)
	}
	return strings.Join(out, "\n")
}

// wrapColumn wraps text in the column from col to width, the first line after prefix. A word
// wider than the column (a path, a JSON example) gets a line of its own, moved left as far as
// it must to fit, so that it stays whole to be copied; only one wider than the line is cut.
func wrapColumn(prefix, text string, col, width int) []string {
	var out []string
	line := ""
	flush := func() {
		if line != "" || prefix != "" {
			out = append(out, prefix+line)
		}
		prefix, line = strings.Repeat(" ", col), ""
	}
	for _, w := range strings.Fields(text) {
		n := len([]rune(w))
		switch {
		case n > width-col:
			if line != "" || strings.TrimSpace(prefix) != "" {
				flush()
			}
			for _, piece := range strings.Split(hardBreak(w, width-2), " ") {
				out = append(out, strings.Repeat(" ", max(2, min(col, width-len([]rune(piece)))))+piece)
			}
			prefix, line = strings.Repeat(" ", col), ""
		case line == "":
			line = w
		case len([]rune(line))+1+n > width-col:
			flush()
			line = w
		default:
			line += " " + w
		}
	}
	if line != "" {
		flush()
	}
	return out
}

// descriptionColumn is where pflag's wrapped descriptions continue: the indentation its
// continuation lines share (the most common indentation of lines indented past a flag).
func descriptionColumn(lines []string) int {
	count := map[int]int{}
	best := 0
	for _, l := range lines {
		n := len(l) - len(strings.TrimLeft(l, " "))
		if n >= 12 && n < len(l) {
			count[n]++
			if count[n] > count[best] {
				best = n
			}
		}
	}
	return best
}

// hardBreak cuts the words of s longer than width into pieces of width runes.
func hardBreak(s string, width int) string {
	words := strings.Fields(s)
	for i, w := range words {
		r := []rune(w)
		if len(r) <= width {
			continue
		}
		var parts []string
		for len(r) > width {
			parts = append(parts, string(r[:width]))
			r = r[width:]
		}
		words[i] = strings.Join(append(parts, string(r)), " ")
	}
	return strings.Join(words, " ")
}

// Hang wraps one line of text at width: its first indent runes are kept as they are (a list
// entry's aligned name), the rest wraps in the column from indent on.
func Hang(text string, width, indent int) string {
	r := []rune(text)
	if width <= indent+8 || len(r) <= width || len(r) <= indent {
		return text
	}
	lines := strings.Split(Wrap(hardBreak(string(r[indent:]), width-indent), width-indent), "\n")
	for i := range lines {
		lead := strings.Repeat(" ", indent)
		if i == 0 {
			lead = string(r[:indent])
		}
		lines[i] = lead + lines[i]
	}
	return strings.Join(lines, "\n")
}

// FitProse reflows text for width: a paragraph (lines split by a blank line) whose lines
// are all flush left is prose and is wrapped; an indented line (a command, an example) is
// kept as it is, and a flush-left line among them wraps alone.
func FitProse(text string, width int) string {
	var out []string
	for _, para := range strings.Split(strings.TrimRight(text, "\n"), "\n\n") {
		lines := strings.Split(para, "\n")
		indented := false
		for _, l := range lines {
			indented = indented || strings.HasPrefix(l, " ")
		}
		if !indented {
			out = append(out, Wrap(para, width))
			continue
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, " ") {
				lines[i] = Wrap(l, width)
			}
		}
		out = append(out, strings.Join(lines, "\n"))
	}
	return strings.Join(out, "\n\n") + "\n"
}
