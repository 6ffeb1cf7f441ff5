package sanitize

import (
	"net/url"
	"strings"
)

// Redacted is what URL puts in place of a secret.
const Redacted = "***"

// URL returns raw fit to print: Text first, then the password of its user info and the value
// of every query parameter become "***" (a parameter with no '=' becomes "***" whole: it may
// be a bare token) and the fragment is dropped. The user name, host, port and path are kept,
// so the URL still says where it points:
// "http://user:pw@host:8000/metrics?token=abc" becomes "http://user:***@host:8000/metrics?token=***".
//
// A URL that net/url parses is split as net/url splits it, so what is hidden is what a request
// would send. In one it cannot parse (a password with a raw '/', '?' or '#' in it) the whole
// user info, everything from the scheme to the last '@', becomes "***".
func URL(raw string) string {
	t := Text(raw)
	if !strings.ContainsAny(t, "@?#") {
		return t
	}
	t, _, _ = strings.Cut(t, "#")
	authStart := authorityStart(t)
	var b strings.Builder
	b.Grow(len(t) + 8)
	b.WriteString(t[:authStart])
	if _, err := url.Parse(t); err == nil {
		// net/url's order: the query is cut off first, the authority ends at the first '/',
		// and the user info is what precedes its last '@'.
		head, query, hasQuery := strings.Cut(t[authStart:], "?")
		authEnd := len(head)
		if i := strings.IndexByte(head, '/'); i >= 0 {
			authEnd = i
		}
		if at := strings.LastIndexByte(head[:authEnd], '@'); at >= 0 {
			writeUserInfo(&b, head[:at])
			head = head[at:]
		}
		b.WriteString(head)
		if hasQuery {
			b.WriteByte('?')
			writeQuery(&b, query)
		}
		return b.String()
	}
	// Not a URL net/url accepts: everything up to the last '@' may be a password.
	rest := t[authStart:]
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		b.WriteString(Redacted)
		rest = rest[at:]
	}
	head, query, hasQuery := strings.Cut(rest, "?")
	b.WriteString(head)
	if hasQuery {
		b.WriteByte('?')
		writeQuery(&b, query)
	}
	return b.String()
}

// authorityStart is where the authority begins: after "scheme://" or a leading "//". Without
// either (a bare "user:pw@host:8000") the whole text is read as if it were the authority and
// what follows it.
func authorityStart(t string) int {
	if strings.HasPrefix(t, "//") {
		return 2
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			if strings.HasPrefix(t[i:], "://") {
				return i + 3
			}
			return 0
		default:
			return 0
		}
	}
	return 0
}

// writeUserInfo writes "user" or "user:***".
func writeUserInfo(b *strings.Builder, info string) {
	user, _, hasPassword := strings.Cut(info, ":")
	b.WriteString(user)
	if hasPassword {
		b.WriteString(":" + Redacted)
	}
}

// writeQuery writes the parameters of query with their values redacted.
func writeQuery(b *strings.Builder, query string) {
	for i, param := range strings.Split(query, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		key, value, hasValue := strings.Cut(param, "=")
		switch {
		case !hasValue && param != "":
			b.WriteString(Redacted)
		case hasValue && value != "":
			b.WriteString(key + "=" + Redacted)
		default:
			b.WriteString(param)
		}
	}
}

// Message returns a message fit to print: Text first, then every URL in it (a scheme,
// "://", and what follows up to a blank or a quote, less the punctuation that ends it) made safe as URL makes it, wherever the
// message came from: "cannot reach http://u:pw@h/x?t=1: refused" becomes
// "cannot reach http://u:***@h/x?t=***: refused".
func Message(s string) string {
	s = Text(s)
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !strings.ContainsRune(" \t\"'`<>", rune(s[end])) {
			end++
		}
		for end > i+3 && strings.ContainsRune(":,;.)]", rune(s[end-1])) {
			end-- // the sentence's punctuation, not the URL's
		}
		b.WriteString(s[:start])
		b.WriteString(URL(s[start:end]))
		s = s[end:]
	}
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}
