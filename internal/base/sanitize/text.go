package sanitize

import (
	"strings"
	"unicode/utf8"
)

// Text returns s with nothing left that a terminal would interpret:
//
//   - escape sequences are removed whole, introducer, parameters and payload: CSI
//     ("\x1b[2J"), OSC ("\x1b]0;title\x07" or ended by ST, "\x1b\\"), DCS, SOS, PM and APC
//     (ended by ST), nF and two-byte escapes ("\x1b(B", "\x1b7"), and the same sequences
//     introduced by their C1 form (U+009B for CSI, U+009D for OSC, ...). A string sequence
//     that never ends takes the rest of s with it;
//   - line breaks (LF, CR, VT, FF, U+2028, U+2029) become a space, so words stay apart; tab is
//     kept; every other C0 control, DEL and every C1 control is removed;
//   - the bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), which
//     make a terminal show text in another order than it is stored, are removed;
//   - each byte that is not part of valid UTF-8 becomes U+FFFD.
//
// Everything else, printable Unicode of any script, is kept as it is.
func Text(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c >= 0x7f {
			if c < 0x80 || needsWork(s[i:]) {
				return clean(s, i)
			}
			return s
		}
	}
	return s
}

// needsWork reports whether the non-ASCII tail s holds anything Text changes.
func needsWork(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if c < 0x20 && c != '\t' || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || drop(r) {
			return true
		}
		i += n
	}
	return false
}

// drop reports whether a non-ASCII rune is a control Text removes or replaces.
func drop(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// parser states.
type state uint8

const (
	ground  state = iota
	escape        // after ESC
	escNF         // ESC and intermediates (0x20-0x2F), waiting for the final byte
	csi           // in a control sequence: parameters and intermediates, then a final byte
	oscStr        // in an OSC string: ends at BEL or ST
	ctrlStr       // in a DCS, SOS, PM or APC string: ends at ST
)

const (
	esc = 0x1b
	bel = 0x07
	can = 0x18 // cancels a sequence
	sub = 0x1a // cancels a sequence
)

// clean is Text's slow path; s[:start] is known to need no change.
func clean(s string, start int) string {
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:start])
	st := ground
	for i := start; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n // a byte that is not UTF-8 decodes as U+FFFD, which is printable
	again:
		switch st {
		case ground:
			st = groundRune(&b, r)
		case escape:
			switch {
			case r == '[':
				st = csi
			case r == ']':
				st = oscStr
			case r == 'P', r == 'X', r == '^', r == '_':
				st = ctrlStr
			case r == esc:
				// ESC ESC: the first is abandoned, the second starts again.
			case r >= 0x20 && r <= 0x2f:
				st = escNF
			case r >= 0x30 && r <= 0x7e:
				st = ground // a two-byte escape such as ESC 7 or ESC \ (ST)
			default:
				st = ground // not an escape: the ESC goes, the rune is read as text
				goto again
			}
		case escNF:
			switch {
			case r >= 0x20 && r <= 0x2f:
			case r >= 0x30 && r <= 0x7e:
				st = ground
			case r == esc:
				st = escape
			default:
				st = ground
				goto again
			}
		case csi:
			switch {
			case r >= 0x20 && r <= 0x3f: // parameters and intermediates
			case r >= 0x40 && r <= 0x7e: // the final byte
				st = ground
			case r == esc:
				st = escape
			case r == can, r == sub:
				st = ground
			case r < 0x20: // terminals execute C0 inside a sequence; here it is dropped
			default:
				st = ground // malformed: abandon the sequence and read the rune as text
				goto again
			}
		case oscStr, ctrlStr:
			switch {
			case r == bel && st == oscStr, r == 0x9c, r == can, r == sub:
				st = ground
			case r == esc:
				st = escape // ESC \ is ST; any other ESC ends the string and starts anew
			}
		}
	}
	return b.String()
}

// groundRune writes r if it is text and returns the state it leads to.
func groundRune(b *strings.Builder, r rune) state {
	switch {
	case r == esc:
		return escape
	case r == 0x9b:
		return csi
	case r == 0x9d:
		return oscStr
	case r == 0x90, r == 0x98, r == 0x9e, r == 0x9f:
		return ctrlStr
	case r == '\n', r == '\r', r == '\v', r == '\f', r == 0x2028, r == 0x2029:
		b.WriteByte(' ')
	case r == '\t':
		b.WriteByte('\t')
	case r < 0x20, r == 0x7f:
	case r >= 0x80 && drop(r):
	default:
		b.WriteRune(r)
	}
	return ground
}
