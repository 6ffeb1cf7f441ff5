package textfmt

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

func TestThousands(t *testing.T) {
	for in, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 464720: "464,720", 1234567: "1,234,567",
		-5: "-5", -1000: "-1,000", -123456: "-123,456", math.MaxInt64: "9,223,372,036,854,775,807",
		math.MinInt64: "-9,223,372,036,854,775,808",
	} {
		assert.Equal(t, want, Thousands(in), "%d", in)
	}
}

func TestOneLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"  connection\nrefused \t now ", 0, "connection refused now"},
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"one two three", 7, "one two…"},
		{"naïve", 3, "na…"}, // the cut does not split the two bytes of ï
		{"", 5, ""},
		{"\n\n", 5, ""},
	} {
		assert.Equal(t, c.want, OneLine(c.in, c.max), "%q %d", c.in, c.max)
	}
}

func FuzzOneLine(f *testing.F) {
	for _, b := range hostileseed.Files(f, "logs", "sse") {
		f.Add(string(b), 80)
	}
	for _, s := range []string{"a\nb", "naïve café", "\xff\xfe", strings.Repeat("x ", 200)} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		got := OneLine(s, max)
		if strings.ContainsAny(got, "\n\r\t") {
			t.Fatalf("%q has a line break or tab", got)
		}
		if max > 0 && len(got) > max+len("…") {
			t.Fatalf("%q is longer than %d", got, max)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("%q: a valid input gave invalid UTF-8", got)
		}
	})
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3},
		{"gpu-memory-utilisation", "gpu-memory-utilization", 1}, {"mi300", "mi300x", 1}, {"same", "same", 0},
	} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestWrap(t *testing.T) {
	got := Wrap("one two three four five\nsix\n\nseven eight", 9)
	want := "one two\nthree\nfour five\nsix\n\nseven\neight"
	if got != want {
		t.Errorf("Wrap = %q, want %q", got, want)
	}
	if got := Wrap("a-very-long-word b", 4); got != "a-very-long-word\nb" {
		t.Errorf("a long word keeps its line: %q", got)
	}
}

func TestFitFlagUsages(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("dataset-path", "", "path to a ShareGPT JSON, custom/Spec-Bench/timed_trace/Mooncake JSONL, sonnet text, an hf dataset name or a directory")
	fs.Int("num-prompts", 1000, "how many prompts to send")
	fs.String("a-rather-long-flag-name-indeed", "", "a description long enough to need a second line at this width")
	const width = 60
	got := FitFlagUsages(fs.FlagUsagesWrapped(width), width)
	for _, line := range strings.Split(got, "\n") {
		assert.LessOrEqual(t, len([]rune(line)), width, "%q", line)
	}
	for _, word := range []string{"ShareGPT", "sonnet", "directory", "--num-prompts", "(default 1000)", "second line"} {
		assert.Contains(t, strings.Join(strings.Fields(got), " "), word)
	}
}

func TestHangKeepsTheNameColumn(t *testing.T) {
	got := Hang("  vllmtop sweep     serve sweeps and SLO searches as vllm bench sweep serve, a server per setting", 50, 20)
	lines := strings.Split(got, "\n")
	assert.Equal(t, "  vllmtop sweep     serve sweeps and SLO searches", lines[0])
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), 50)
	}
	for _, l := range lines[1:] {
		assert.True(t, strings.HasPrefix(l, strings.Repeat(" ", 20)) && l[20] != ' ', "%q", l)
	}
	assert.Equal(t, "short", Hang("short", 50, 20))
}

func TestFitProseWrapsProseAndKeepsCommands(t *testing.T) {
	text := "Examples:\n  vllmtop bench --sim --sim-gpu L4 --gpu-memory-utilization 0.8 --max-concurrency 1,8,32\n\n" +
		"Exit status: 0 when the runs were made, 1 when they could not be, 2 for bad flags.\n"
	got := FitProse(text, 40)
	assert.Contains(t, got, "  vllmtop bench --sim --sim-gpu L4 --gpu-memory-utilization 0.8 --max-concurrency 1,8,32\n")
	assert.Contains(t, got, "Exit status: 0 when the runs were made,\n1 when")
}
