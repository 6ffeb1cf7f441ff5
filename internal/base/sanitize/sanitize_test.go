package sanitize

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

func TestText(t *testing.T) {
	cases := []struct{ in, want string }{
		// Unchanged.
		{"", ""},
		{"Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B"},
		{"a\tb", "a\tb"},
		{"naïve 模型 🚀 Ωμέγα", "naïve 模型 🚀 Ωμέγα"},
		{"\ufffd", "\ufffd"},

		// The sequences the review found reaching the terminal.
		{"\x1b]0;pwned\x07model", "model"},
		{"\x1b[2Jmodel", "model"},
		{"a\bb\x07c", "abc"},
		{"x\u009b2Jy", "xy"},
		{"\u202eevil.txt", "evil.txt"},

		// CSI.
		{"\x1b[1;31mred\x1b[0m", "red"},
		{"\x1b[?25lhidden", "hidden"},
		{"\x1b[38;2;255;0;0mrgb", "rgb"},
		{"\x1b[", ""},               // cut short
		{"\x1b[12", ""},             // no final byte
		{"\x1b[1\x07;2mz", "z"},     // a C0 inside is dropped with the sequence
		{"\x1b[31ümx", "ümx"},       // not a CSI byte: the sequence is abandoned
		{"\x1b[1\x1b[2Jz", "z"},     // ESC restarts
		{"\x1b[1\x18z", "z"},        // CAN cancels
		{"\u009b1;31mred", "red"},   // C1 CSI
		{"\xc2\x9b31mred", "red"},   // the same, as bytes
		{"a\x1b[31m\x1b[0mb", "ab"}, // back to back
		{"\x1b[>0;10;1c", ""},       // private parameters
		{"pre\x1b[6nsuf", "presuf"}, // device status report: a reply would be typed
		{"\x1b[0\"qx", "x"},         // intermediate byte
		{"\x1b\x1b[2J", ""},         // ESC ESC
		{"\x1b\x1b\x1b", ""},        // only ESCs
		{"é\x1b[2Jé", "éé"},         // around multibyte text
		{"\xe2\x1b[2Jz", "\ufffdz"}, // a cut-off UTF-8 lead byte does not swallow the ESC
		{"\xe2\x80\x1b]0;t\x07z", "\ufffd\ufffdz"},

		// OSC: BEL or ST, in ESC and C1 forms; unterminated takes the rest.
		{"\x1b]0;title\x1b\\after", "after"},
		{"\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b]52;c;cGF5bG9hZA==\x07x", "x"}, // clipboard write
		{"\u009d0;t\u009cok", "ok"},
		{"\u009d0;t\x07ok", "ok"},
		{"keep\x1b]0;never ends", "keep"},
		{"\x1b]0;a\x1b[2Jb", "b"}, // ESC inside the string ends it and starts a CSI

		// DCS, SOS, PM, APC: only ST ends them.
		{"\x1bPq#0;2;0;0;0\x1b\\x", "x"},
		{"\x1bP$q\x07still\x1b\\x", "x"},
		{"\x1bX sos \x1b\\x", "x"},
		{"\x1b^pm\x1b\\x", "x"},
		{"\x1b_Gf=100;AAAA\x1b\\x", "x"}, // kitty graphics
		{"\u0090dcs\u009cx", "x"},
		{"\u009fapc\u009cx", "x"},
		{"\u0098sos\u009cx", "x"},
		{"\u009epm\u009cx", "x"},

		// Two-byte and nF escapes.
		{"\x1b7saved\x1b8", "saved"},
		{"\x1bcreset", "reset"},
		{"\x1b(Bascii", "ascii"},
		{"\x1b#8fill", "fill"},
		{"\x1b%Gutf", "utf"},
		{"\x1b é", "é"}, // ESC SP starts an nF escape, abandoned at é
		{"\x1bé", "é"},
		{"end\x1b", "end"},

		// C0, DEL, C1.
		{"a\x00b\x01c\x1fd\x7fe", "abcde"},
		{"line one\nline two\r\nthree\vfour\ffive", "line one line two  three four five"},
		{"a\u2028b\u2029c", "a b c"},
		{"x\u0085y\u008ez\u009c", "xyz"},

		// Bidi controls.
		{"\u202aa\u202bb\u202cc\u202dd\u202ee", "abcde"},
		{"\u2066a\u2067b\u2068c\u2069d", "abcd"},
		{"\u200ea\u200fb\u061cc", "abc"},

		// Invalid UTF-8: one U+FFFD per bad byte.
		{"a\xffb", "a\ufffdb"},
		{"\x80\x9b", "\ufffd\ufffd"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"}, // a UTF-16 surrogate
	}
	for _, tc := range cases {
		got := Text(tc.in)
		assert.Equal(t, tc.want, got, "Text(%q)", tc.in)
		assert.Equal(t, got, Text(got), "idempotent on %q", tc.in)
		assertTerminalSafe(t, got)
	}
}

func TestTextAllocatesNothingForCleanText(t *testing.T) {
	for _, s := range []string{"vllm:num_requests_running", "Qwen/Qwen3-0.6B", "naïve 模型 🚀", "a\tb"} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Text(s) }), s)
	}
}

func TestFileName(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	cases := []struct{ in, want string }{
		{"Qwen/Qwen3-0.6B", "Qwen_Qwen3-0.6B"},
		{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama_Llama-3.1-8B-Instruct"},
		{"result.json", "result.json"},
		{"../../etc/passwd", "_._etc_passwd"},
		{"..", unnamed},
		{".", unnamed},
		{"", unnamed},
		{"...hidden", "hidden"},
		{"-rf", "rf"},
		{"--.-x", "x"},
		{".-.x", "x"},
		{"a..b", "a.b"},
		{"a....b", "a.b"},
		{"name.", "name"},
		{"name. . ", "name._._"},
		{"C:\\Windows\\x", "C__Windows_x"},
		{"a*b?c\"d<e>f|g", "a_b_c_d_e_f_g"},
		{"with space\tand tab", "with_space_and_tab"},
		{"\x1b]0;pwned\x07model\u202e", "model"},
		{"\x00\x01", unnamed},
		{"模型/名字", "模型_名字"},
		{long, strings.Repeat("é", MaxFileNameBytes/2)},
		{"x" + long, "x" + strings.Repeat("é", (MaxFileNameBytes-1)/2)},
		{strings.Repeat("a", MaxFileNameBytes-1) + ".b", strings.Repeat("a", MaxFileNameBytes-1)},
	}
	for _, tc := range cases {
		got := FileName(tc.in)
		assert.Equal(t, tc.want, got, "FileName(%q)", tc.in)
		assertFileNameSafe(t, got)
		assert.Equal(t, got, FileName(got), "idempotent on %q", tc.in)
	}
}

func TestURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://host:8000/metrics", "http://host:8000/metrics"},
		{"http://user:PW@host:8000/v1", "http://user:***@host:8000/v1"},
		{"https://user@host/", "https://user@host/"},
		{"http://user:@host", "http://user:***@host"},
		{"http://host/metrics?token=abc", "http://host/metrics?token=***"},
		{"http://host/metrics?token=abc&x=1&empty=&bare", "http://host/metrics?token=***&x=***&empty=&***"},
		{"http://u:p@host/p?k=v#frag", "http://u:***@host/p?k=***"},
		{"http://host/#access_token=secret", "http://host/"},
		{"host:8000?key=v", "host:8000?key=***"},
		{"user:pw@host:8000", "user:***@host:8000"},
		{"http://host/a@b", "http://host/a@b"}, // an '@' in the path is not user info
		{"http://a:b:c@host", "http://a:***@host"},
		// Not parseable: a raw '/' or '?' in the password; everything up to the last '@' goes.
		{"http://u:p/w@host/x", "http://***@host/x"},
		{"http://u:pa?ss@host/x", "http://***@host/x"},
		{"http://u:p@w@host/x?k=v", "http://u:***@host/x?k=***"}, // net/url takes the last @
		// Escapes go too.
		{"http://host/\x1b]0;t\x07x", "http://host/x"},
	}
	for _, tc := range cases {
		got := URL(tc.in)
		assert.Equal(t, tc.want, got, "URL(%q)", tc.in)
		assert.Equal(t, got, URL(got), "idempotent on %q", tc.in)
	}
}

// assertTerminalSafe fails if s holds a byte or rune a terminal would act on.
func assertTerminalSafe(t testing.TB, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%q is not valid UTF-8", s)
	}
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f || drop(r) {
			t.Fatalf("%q holds the control %U", s, r)
		}
	}
}

func assertFileNameSafe(t testing.TB, s string) {
	t.Helper()
	assertTerminalSafe(t, s)
	if s == "" || len(s) > MaxFileNameBytes || strings.ContainsAny(s, "/\\") || strings.Contains(s, "..") ||
		strings.HasPrefix(s, ".") || strings.HasPrefix(s, "-") {
		t.Fatalf("unsafe file name %q", s)
	}
}

// singleRunes is Text for input without escape sequences, written rune by rune as the doc
// comment says, to check the state machine against.
func singleRunes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x2028 || r == 0x2029:
			b.WriteByte(' ')
		case r == '\t':
			b.WriteByte('\t')
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c:
		default:
			b.WriteRune(r) // RuneError for a bad byte writes U+FFFD
		}
	}
	return b.String()
}

// FuzzSanitize checks the three functions on any input: Text's output holds nothing a terminal
// acts on; FileName's is a safe single component; URL's hides every password and query value
// that net/url finds in it; each is idempotent.
func FuzzSanitize(f *testing.F) {
	for _, b := range hostileseed.Files(f, "logs", "sse", "metrics") {
		f.Add(string(b))
	}
	for _, s := range []string{
		"\x1b]0;pwned\x07", "\x1b[2J", "\u009b2J", "\u202e", "a\bb", "\x1bP\x1b\\", "\xe2\x1b[",
		"http://user:pw@host:8000/metrics?token=abc#f", "../..//x", "Qwen/Qwen3-0.6B", "\u009d0;x\u009c",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Text(in)
		assertTerminalSafe(t, out)
		if Text(out) != out {
			t.Fatalf("Text not idempotent: %q -> %q -> %q", in, out, Text(out))
		}
		if !strings.ContainsAny(in, "\x1b\u009b\u009d\u0090\u0098\u009e\u009f") && out != singleRunes(in) {
			// Without an introducer nothing is swallowed: only single controls go.
			t.Fatalf("Text(%q) = %q, want %q", in, out, singleRunes(in))
		}

		name := FileName(in)
		assertFileNameSafe(t, name)
		if FileName(name) != name {
			t.Fatalf("FileName not idempotent: %q -> %q -> %q", in, name, FileName(name))
		}

		if m := Message(in); Message(m) != m {
			t.Fatalf("Message not idempotent: %q -> %q -> %q", in, m, Message(m))
		} else {
			assertTerminalSafe(t, m)
		}

		u := URL(in)
		assertTerminalSafe(t, u)
		if URL(u) != u {
			t.Fatalf("URL not idempotent: %q -> %q -> %q", in, u, URL(u))
		}
		if p, err := url.Parse(u); err == nil {
			if pw, ok := p.User.Password(); ok && pw != Redacted {
				t.Fatalf("URL(%q) = %q keeps the password %q", in, u, pw)
			}
			for k, vs := range p.Query() {
				for _, v := range vs {
					if v != "" && v != Redacted {
						t.Fatalf("URL(%q) = %q keeps %s=%q", in, u, k, v)
					}
				}
			}
			if p.Fragment != "" {
				t.Fatalf("URL(%q) = %q keeps the fragment", in, u)
			}
		}
	})
}

func TestMessage(t *testing.T) {
	cases := []struct{ in, want string }{
		{"no URL here", "no URL here"},
		{`cannot reach http://u:pw@h:8000/x?token=abc: connection refused`, `cannot reach http://u:***@h:8000/x?token=***: connection refused`},
		{`base URL "https://a:b@h?k=v" and https://c:d@i/`, `base URL "https://a:***@h?k=***" and https://c:***@i/`},
		{"Model: m (the first model of http://h:1/v1/models)", "Model: m (the first model of http://h:1/v1/models)"},
		{"://odd?x=1 text", "://odd?x=*** text"},
		{"see http://h/m?token=abc.", "see http://h/m?token=***."},
		{"\x1b[2Jhttp://u:p@h\x07", "http://u:***@h"},
	}
	for _, tc := range cases {
		got := Message(tc.in)
		assert.Equal(t, tc.want, got, "Message(%q)", tc.in)
		assert.Equal(t, got, Message(got), "idempotent on %q", tc.in)
		assertTerminalSafe(t, got)
	}
}
