// Package untrusted is where text from the network (label values, instance names, error
// messages, model names) is made safe before a terminal or a file name sees it. The fleet,
// the verdicts and the flight recorder route every such string through Text, FileName or
// URL: the project's sanitiser, plus a bound on the length of what a server can make us
// keep and show.
package untrusted

import (
	"strings"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// MaxText bounds a display string from outside, in bytes; longer ones are cut with "…" (a
// line of a log or a command line fits; columns cut further).
const MaxText = 4096

// Text is sanitize.Text, cut at MaxText.
func Text(s string) string {
	s = sanitize.Text(s)
	if len(s) > MaxText {
		s = strings.ToValidUTF8(s[:MaxText], "") + "…"
	}
	return s
}

// FileName is sanitize.FileName: one safe path element, never empty.
func FileName(s string) string { return sanitize.FileName(s) }

// URL is sanitize.URL: fit to show, its password and query values replaced by "***".
func URL(raw string) string { return Text(sanitize.URL(raw)) }
