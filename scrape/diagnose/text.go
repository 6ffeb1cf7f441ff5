package diagnose

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// TextWidth is the width WriteText wraps to: a terminal's 80 columns.
const TextWidth = 80

// maxTextVerdicts bounds the block: a server with a thousand models has a thousand of each.
const maxTextVerdicts = 20

// WriteText prints a "Verdicts" block: each verdict's rule and severity, what it saw (its
// evidence against the thresholds) and the flags to change, wrapped to TextWidth, the worst
// maxTextVerdicts of them. No verdict prints "HEALTHY".
func WriteText(w io.Writer, vs []Verdict) {
	fmt.Fprintln(w, "Verdicts")
	if len(vs) == 0 {
		fmt.Fprintln(w, "  HEALTHY: no rule fired")
		return
	}
	vs = dedupe(vs)
	Sort(vs)
	for i, v := range vs {
		if i == maxTextVerdicts {
			fmt.Fprintf(w, "  (+%d more)\n", len(vs)-i)
			break
		}
		writeWrapped(w, "  ", "    ", v.Severity.String()+" "+v.Rule+": "+v.Text)
		if len(v.Evidence) > 0 {
			ev := make([]string, len(v.Evidence))
			for i, e := range v.Evidence {
				ev[i] = e.String()
			}
			writeWrapped(w, "    saw: ", "    ", strings.Join(ev, "; "))
		}
		if v.Limit != "" {
			writeWrapped(w, "    limit: ", "    ", v.Limit)
		}
		if len(v.Flags) > 0 {
			writeWrapped(w, "    change: ", "    ", strings.Join(v.Flags, " "))
		}
	}
}

// dedupe is a copy of vs without repeats: the same rule, subject and text said once.
func dedupe(vs []Verdict) []Verdict {
	out := make([]Verdict, 0, len(vs))
	seen := map[[3]string]bool{}
	for _, v := range vs {
		k := [3]string{v.Rule, v.Subject, v.Text}
		if !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

// writeWrapped writes text after first, continued on lines that start with indent, no line
// wider than TextWidth (a word longer than a line is cut).
func writeWrapped(w io.Writer, first, indent, text string) {
	line, room := first, TextWidth
	empty := true
	for _, word := range strings.Fields(text) {
		if n := TextWidth - utf8.RuneCountInString(indent); utf8.RuneCountInString(word) > n {
			word = string([]rune(word)[:n-1]) + "…"
		}
		switch {
		case empty:
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= room:
			line += " "
		default:
			fmt.Fprintln(w, line)
			line = indent
			empty = true
		}
		if empty && utf8.RuneCountInString(line)+utf8.RuneCountInString(word) > room {
			fmt.Fprintln(w, line)
			line = indent
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, line)
}
