// Package untrusted is where text from the network (label values, instance names, error
// messages, model names) is made safe before a terminal or a file name sees it. The fleet,
// the verdicts and the flight recorder route every such string through Text, FileName or URL,
// so the project-wide sanitiser can replace these bodies in one line each.
package untrusted

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxText bounds a display string from outside, in bytes; longer ones are cut with "…".
const MaxText = 4096

// Text keeps printable characters and spaces, drops control characters, escape sequences'
// introducers, bidirectional overrides and invalid UTF-8, and cuts the result at MaxText (a line of a log or a command line fits; columns cut further).
func Text(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case !unicode.IsPrint(r) && r != ' ':
		case unicode.Is(unicode.Bidi_Control, r):
		default:
			b.WriteRune(r)
		}
		if b.Len() > MaxText {
			break
		}
	}
	out := b.String()
	if len(out) > MaxText {
		out = strings.ToValidUTF8(out[:MaxText], "") + "…"
	}
	return out
}

// clean reports whether s is short printable ASCII, the common case, so Text allocates nothing.
func clean(s string) bool {
	if len(s) > MaxText {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == 0x7f {
			return false
		}
	}
	return true
}

// MaxFileName bounds a file name made from outside text, in bytes.
const MaxFileName = 80

// FileName turns s into one safe path element: Text, then letters, digits, '.', '-' and '_'
// only (anything else becomes '_'), no leading dot or dash, never empty, at most MaxFileName.
func FileName(s string) string {
	s = Text(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-' || r == '_'):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= MaxFileName {
			break
		}
	}
	out := strings.TrimLeft(b.String(), ".-")
	out = strings.ReplaceAll(out, "..", "_")
	if out == "" {
		out = "_"
	}
	return out
}

// URL is a URL fit to show: no user info, query values replaced by "***", made safe by Text.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Text(raw)
	}
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"***"}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment = ""
	return Text(u.String())
}
