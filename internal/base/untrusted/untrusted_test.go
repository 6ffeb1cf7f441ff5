package untrusted

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

func TestText(t *testing.T) {
	assert.Equal(t, "Qwen/Qwen3-0.6B", Text("Qwen/Qwen3-0.6B"))
	assert.Equal(t, "ab", Text("a\x1b]0;pwned\x07b"), "a whole escape sequence goes")
	assert.Equal(t, "evilgnp.exe", Text("evil\u202egnp.exe"))
	long := Text(strings.Repeat("é", 3000))
	assert.LessOrEqual(t, len(long), MaxText+len("…"))
	assert.True(t, strings.HasSuffix(long, "…"), "cut at MaxText")
}

func TestFileNameAndURL(t *testing.T) {
	for _, in := range []string{"../../etc/passwd", "-rf", ".hidden", "a/b\\c", "", "\x1b[31m"} {
		name := FileName(in)
		assert.NotEmpty(t, name, "%q", in)
		assert.NotContains(t, name, "/", "%q", in)
		assert.NotContains(t, name, "..", "%q", in)
		assert.False(t, strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-"), "%q gives %q", in, name)
	}
	u := URL("http://user:pw@host:8000/metrics?token=s3cret#frag")
	assert.NotContains(t, u, "pw")
	assert.NotContains(t, u, "s3cret")
	assert.Contains(t, u, "host:8000/metrics")
}

func FuzzText(f *testing.F) {
	for _, b := range hostileseed.Files(f, "logs", "sse", "metrics") {
		f.Add(string(b))
	}
	f.Add("Qwen\x1b[2J\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		for _, r := range out {
			assert.False(t, r < 0x20 && r != '\t' || r == 0x7f || (r >= 0x80 && r < 0xa0), "control %U in %q", r, out)
		}
		assert.LessOrEqual(t, len(out), MaxText+len("…"))
	})
}
