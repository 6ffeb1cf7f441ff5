package untrusted

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B"},
		{"a\x1b]0;pwned\x07b", "a]0;pwnedb"},
		{"x\x1b[2Jy", "x[2Jy"},
		{"evil\u202egnp.exe", "evilgnp.exe"},
		{"c1\u009bcsi", "c1csi"},
		{"bs\bbel\a", "bsbel"},
		{"line\nbreak", "line break"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"", ""},
	} {
		assert.Equal(t, c.want, Text(c.in), "%q", c.in)
	}
	long := Text(strings.Repeat("é", 3000))
	assert.LessOrEqual(t, len(long), MaxText+len("…"))
	assert.True(t, strings.HasSuffix(long, "…"))
}

func TestFileName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"10.0.0.5:8000", "10.0.0.5_8000"},
		{"../../etc/passwd", "___etc_passwd"},
		{"-rf", "rf"},
		{".hidden", "hidden"},
		{"a/b\\c", "a_b_c"},
		{"", "_"},
		{"\x1b[31m", "_31m"},
	} {
		assert.Equal(t, c.want, FileName(c.in), "%q", c.in)
	}
	assert.LessOrEqual(t, len(FileName(strings.Repeat("a", 500))), MaxFileName)
}

func TestURL(t *testing.T) {
	assert.Equal(t, "http://host:8000/metrics", URL("http://user:pw@host:8000/metrics"))
	assert.Equal(t, "http://h/m?token=%2A%2A%2A", URL("http://h/m?token=s3cret#frag"))
}

func FuzzText(f *testing.F) {
	f.Add("Qwen\x1b[2J\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		assert.Equal(t, out, Text(out), "idempotent")
		for _, r := range out {
			assert.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0), "control %U in %q", r, out)
		}
		name := FileName(s)
		assert.NotContains(t, name, "/")
		assert.NotContains(t, name, "..")
	})
}
