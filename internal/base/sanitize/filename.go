package sanitize

import (
	"strings"
	"unicode/utf8"
)

// MaxFileNameBytes caps what FileName returns. File systems allow 255 bytes in a name; the
// rest is left for what callers put around it (a prefix, a date, ".json").
const MaxFileNameBytes = 128

// unnamed is FileName's answer when nothing usable is left.
const unnamed = "unnamed"

// FileName turns s (a model id, a label) into one safe file name component: Text first, then
// path separators, blanks and the characters other systems reserve (`\ / : * ? " < > |`)
// become '_', runs of dots become one dot (so ".." cannot appear), leading dots and dashes
// (hidden files, names read as flags) and trailing dots and spaces go, and the result is cut
// to MaxFileNameBytes at a character boundary. It never returns "" (nothing left gives
// "unnamed"). "Qwen/Qwen3-0.6B" becomes "Qwen_Qwen3-0.6B".
func FileName(s string) string {
	s = Text(s)
	if fileNameOK(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	lastDot := false
	for _, r := range s {
		switch r {
		case '/', '\\', ':', '*', '?', '"', '<', '>', '|', ' ', '\t':
			r = '_'
		}
		if r == '.' && lastDot {
			continue
		}
		lastDot = r == '.'
		b.WriteRune(r)
	}
	out := strings.TrimLeft(b.String(), ".-")
	if len(out) > MaxFileNameBytes {
		cut := MaxFileNameBytes
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut]
	}
	out = strings.TrimRight(out, ". ")
	if out == "" {
		return unnamed
	}
	return out
}

// fileNameOK reports whether s (already Text) is a name FileName would return unchanged.
func fileNameOK(s string) bool {
	if s == "" || len(s) > MaxFileNameBytes || s[0] == '.' || s[0] == '-' || s[len(s)-1] == '.' {
		return false
	}
	return !strings.ContainsAny(s, "/\\:*?\"<>| \t") && !strings.Contains(s, "..")
}
