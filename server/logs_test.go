package server

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

type splitLine struct {
	text      string
	truncated bool
}

// split runs input through a splitter, one Write per chunk, and returns the lines.
func split(max int, chunks ...string) []splitLine {
	var out []splitLine
	sp := newSplitter(max, func(l []byte, tr bool) {
		out = append(out, splitLine{string(l), tr})
	})
	for _, c := range chunks {
		n, err := sp.Write([]byte(c))
		if n != len(c) || err != nil {
			panic("short write")
		}
	}
	sp.Flush()
	return out
}

func lines(ss ...string) []splitLine {
	out := make([]splitLine, len(ss))
	for i, s := range ss {
		out[i] = splitLine{text: s}
	}
	return out
}

func TestSplitter(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		chunks []string
		want   []splitLine
	}{
		{"newlines", 100, []string{"a\nb\n"}, lines("a", "b")},
		{"partial last line is flushed", 100, []string{"a\nb"}, lines("a", "b")},
		{"blank lines are kept", 100, []string{"a\n\nb\n"}, lines("a", "", "b")},
		{"CRLF is one line end", 100, []string{"a\r\nb\r\n"}, lines("a", "b")},
		{"CRLF split across writes", 100, []string{"a\r", "\nb\r", "\n"}, lines("a", "b")},
		{"vLLM multi-line record", 100, []string{"(P pid=1) INFO x\r\n(P pid=1) INFO y\n"}, lines("(P pid=1) INFO x", "(P pid=1) INFO y")},
		{"tqdm redraws", 100, []string{"\rLoading:   0%", "\rLoading:  50%", "\rLoading: 100%\n"}, lines("Loading:   0%", "Loading:  50%", "Loading: 100%")},
		{"tqdm as captured (leading CR, trailing LF)", 100, []string{"\rShards: 0/2\n\rShards: 2/2\n\nINFO: done\n"}, lines("Shards: 0/2", "Shards: 2/2", "", "INFO: done")},
		{"lone CRs add no empty lines", 100, []string{"\r\r\r"}, nil},
		{"byte at a time", 100, []string{"a", "b", "\n", "c", "\r", "d"}, lines("ab", "c", "d")},
		{"empty input", 100, nil, nil},
		{"exactly the cap is not truncated", 4, []string{"abcd\n"}, lines("abcd")},
		{"over the cap", 4, []string{"abcdefg\nhi\n"}, []splitLine{{"abcd", true}, {"hi", false}}},
		{"over the cap across writes", 4, []string{"ab", "cde", "fg\rhi"}, []splitLine{{"abcd", true}, {"hi", false}}},
		{"over the cap, then CRLF", 4, []string{"abcdef\r\nx\n"}, []splitLine{{"abcd", true}, {"x", false}}},
		{"truncation keeps whole runes", 6, []string{"ab€€\n"}, []splitLine{{"ab€", true}}}, // € is 3 bytes
		{"truncated partial line at EOF", 4, []string{"abcdefgh"}, []splitLine{{"abcd", true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, split(tc.max, tc.chunks...))
		})
	}
}

func TestSplitterNeverHoldsMoreThanTheCap(t *testing.T) {
	var got []splitLine
	sp := newSplitter(1024, func(l []byte, tr bool) { got = append(got, splitLine{string(l), tr}) })
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for range 160 { // 10 MiB without a line end
		_, _ = sp.Write(chunk)
	}
	assert.LessOrEqual(t, cap(sp.buf), 2048, "the buffer does not grow with the line")
	_, _ = sp.Write([]byte("\ndone\n"))
	require.Len(t, got, 2)
	assert.Equal(t, splitLine{strings.Repeat("x", 1024), true}, got[0])
	assert.Equal(t, splitLine{"done", false}, got[1])
}

func FuzzLineSplitter(f *testing.F) {
	for _, b := range hostileseed.Files(f, "logs") {
		f.Add(b, uint8(5), uint8(40))
	}
	f.Add([]byte("a\nb\r\nc\rd"), uint8(3), uint8(8))
	f.Add([]byte("\rLoading 1%\rLoading 2%\n\n"), uint8(1), uint8(5))
	f.Add([]byte("ab€€€\n"), uint8(2), uint8(4))
	f.Add([]byte("(APIServer pid=1) INFO 07-24 10:15:35 [x.py:1] GPU KV cache size: 1,221,776 tokens\r\n"), uint8(7), uint8(40))
	f.Fuzz(func(t *testing.T, input []byte, chunk, max uint8) {
		capBytes := int(max)%64 + 4
		step := int(chunk)%16 + 1
		var got []splitLine
		sp := newSplitter(capBytes, func(l []byte, tr bool) { got = append(got, splitLine{string(l), tr}) })
		for i := 0; i < len(input); i += step {
			_, _ = sp.Write(input[i:min(i+step, len(input))])
		}
		sp.Flush()

		whole := split(capBytes, string(input))
		if len(whole) != len(got) {
			t.Fatalf("chunking changed the lines: %+v vs %+v", got, whole)
		}
		truncated := false
		var joined strings.Builder
		for i, l := range got {
			if l != whole[i] {
				t.Fatalf("chunking changed line %d: %+v vs %+v", i, l, whole[i])
			}
			if len(l.text) > capBytes {
				t.Fatalf("line of %d bytes over the cap %d", len(l.text), capBytes)
			}
			if strings.ContainsAny(l.text, "\r\n") {
				t.Fatalf("separator inside line %q", l.text)
			}
			if l.truncated && utf8.Valid(input) && !utf8.ValidString(l.text) {
				t.Fatalf("truncation split a rune: %q", l.text)
			}
			truncated = truncated || l.truncated
			joined.WriteString(l.text)
		}
		if !truncated {
			want := strings.NewReplacer("\r", "", "\n", "").Replace(string(input))
			if joined.String() != want {
				t.Fatalf("lines %q do not make up the input %q", joined.String(), want)
			}
		}
	})
}

func TestStripANSI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[1;36m(APIServer pid=1009)\x1b[0;0m INFO", "(APIServer pid=1009) INFO"},
		{"a\x1b[32m [repeated 3x across cluster]\x1b[0m", "a [repeated 3x across cluster]"},
		{"\x1b]0;title\x07text", "text"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b[2K\x1b[1Gbar", "bar"},
		{"\x1b7saved\x1b8", "saved"},
		{"trailing \x1b", "trailing "},
		{"cut \x1b[1;3", "cut "},
		{"bad \x1b[1\x01x", "bad "}, // a control inside a sequence goes with it
		// What got through before: BS, BEL, C1 CSI, a bidi override.
		{"back\bspace", "backspace"},
		{"bell\a", "bell"},
		{"c1 \u009b2Jcsi", "c1 csi"},
		{"\u202eevil", "evil"},
		{"tab\tkept", "tab\tkept"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, StripANSI(tc.in), "%q", tc.in)
	}
}

func TestRing(t *testing.T) {
	r := newRing(3)
	assert.Empty(t, r.last(0))
	for i := 1; i <= 5; i++ {
		r.push(Line{Seq: uint64(i)})
	}
	seqs := func(ls []Line) []uint64 {
		var out []uint64
		for _, l := range ls {
			out = append(out, l.Seq)
		}
		return out
	}
	assert.Equal(t, []uint64{3, 4, 5}, seqs(r.last(0)))
	assert.Equal(t, []uint64{4, 5}, seqs(r.last(2)))
	assert.Equal(t, []uint64{3, 4, 5}, seqs(r.last(10)))
	assert.Equal(t, []uint64{5}, seqs(r.since(4)))
	assert.Equal(t, []uint64{3, 4, 5}, seqs(r.since(0)))
	assert.Empty(t, r.since(5))
}
