package loadgen

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

// readAll drains a trace reader, going on past malformed lines, and returns the entries and
// the line errors.
func readAll(t *testing.T, r TraceReader) ([]TraceEntry, []*TraceError) {
	t.Helper()
	var entries []TraceEntry
	var errs []*TraceError
	for i := 0; ; i++ {
		require.Less(t, i, 100000, "reader does not end")
		e, err := r.Next()
		if err == io.EOF {
			return entries, errs
		}
		var te *TraceError
		if errors.As(err, &te) {
			errs = append(errs, te)
			continue
		}
		require.NoError(t, err)
		entries = append(entries, e)
	}
}

func openFixture(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open("../testdata/" + name)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestBurstGPTKeepsWhatVLLMKeeps(t *testing.T) {
	cases := []struct {
		name     string
		opts     BurstGPTOptions
		lines    []int
		filtered int
	}{
		{"vLLM's default: GPT-4 without failures", BurstGPTOptions{}, []int{3, 6, 8, 9, 11}, 5},
		{"ChatGPT", BurstGPTOptions{Model: "ChatGPT"}, []int{2, 7, 10}, 7},
		{"every model", BurstGPTOptions{Model: "*"}, []int{2, 3, 6, 7, 8, 9, 10, 11}, 2},
		{"failures kept", BurstGPTOptions{Model: "*", KeepFailed: true}, []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewBurstGPTReader(openFixture(t, "burstgpt-sample.csv"), "burstgpt-sample.csv", tc.opts)
			entries, errs := readAll(t, r)
			require.Empty(t, errs)
			var lines []int
			for _, e := range entries {
				lines = append(lines, e.Line)
				assert.True(t, e.HasTimestamp)
				assert.Empty(t, e.HashIDs)
			}
			assert.Equal(t, tc.lines, lines)
			assert.Equal(t, tc.filtered, r.Filtered())
		})
	}
	// One row in full: "31,GPT-4,3107,98,3205,Conversation log" on line 8.
	entries, _ := readAll(t, NewBurstGPTReader(openFixture(t, "burstgpt-sample.csv"), "x", BurstGPTOptions{}))
	assert.Equal(t, TraceEntry{Line: 8, Timestamp: 31 * time.Second, HasTimestamp: true, InputLen: 3107, OutputLen: 98,
		Model: "GPT-4", LogType: "Conversation log"}, entries[2])
}

func TestBurstGPTMalformedLinesNameFileAndLine(t *testing.T) {
	r := NewBurstGPTReader(openFixture(t, "burstgpt-malformed.csv"), "burstgpt-malformed.csv", BurstGPTOptions{})
	entries, errs := readAll(t, r)
	var lines []int
	for _, e := range entries {
		lines = append(lines, e.Line)
	}
	assert.Equal(t, []int{2, 9, 13}, lines, "good rows around the bad ones are kept")
	assert.Equal(t, TraceEntry{Line: 9, Timestamp: 10 * time.Second, HasTimestamp: true, InputLen: 100, OutputLen: 20,
		Model: "GPT-4", LogType: "API log"}, entries[1], "quoted CSV fields")
	want := []struct {
		line int
		msg  string
	}{
		{3, `Request tokens: "abc" is not a whole number`},
		{4, "Response tokens: -3 is out of range (0 to 4194304)"},
		{6, "5 fields, want 6 as in the header"},
		{7, `Request tokens: "100.5" is not a whole number`},
		{8, `Timestamp: "-1" is out of range`},
		{10, "7 fields, want 6 as in the header"},
		{11, "Request tokens: 5000000 is out of range"},
		{12, "not a CSV line"},
	}
	require.Len(t, errs, len(want))
	for i, w := range want {
		assert.Equal(t, w.line, errs[i].Line)
		assert.Contains(t, errs[i].Error(), fmt.Sprintf("burstgpt-malformed.csv:%d: %s", w.line, w.msg))
		assert.NotContains(t, errs[i].Error(), "\n")
	}
}

func TestBurstGPTHeaders(t *testing.T) {
	cases := []struct {
		name, text string
		err        string // "" = reads
		entries    int
	}{
		{"no file content", "", "x.csv: empty BurstGPT trace", 0},
		{"header only", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n", "", 0},
		{"byte-order mark and CRLF", "\ufeffTimestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\r\n5,GPT-4,10,20,30,API log\r\n", "", 1},
		{"columns reordered, no Log Type", "Model,Response tokens,Request tokens,Timestamp\nGPT-4,20,10,5\n", "", 1},
		{"not BurstGPT", "timestamp,input_length,output_length\n1,2,3\n", "x.csv:1: not a BurstGPT header: missing column Timestamp, Model, Request tokens, Response tokens", 0},
		{"a Mooncake file", `{"timestamp": 0, "input_length": 10}` + "\n", "x.csv:1: not a CSV line", 0},
		{"a JSON list", "[1,2,3]\n", "x.csv:1: not a BurstGPT header", 0},
		{"escape sequences are not echoed", "Timestamp,Model,Request tokens,Response tokens\n5,GPT-4,\x1b]0;pwned\x07,1\n", `x.csv:2: Request tokens: "\x1b]0;pwned\a" is not a whole number`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewBurstGPTReader(strings.NewReader(tc.text), "x.csv", BurstGPTOptions{})
			var n int
			for {
				e, err := r.Next()
				if err == io.EOF {
					break
				}
				if tc.err != "" {
					require.Error(t, err)
					assert.Contains(t, err.Error(), tc.err)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, 10, e.InputLen)
				assert.Equal(t, 20, e.OutputLen)
				assert.Equal(t, 5*time.Second, e.Timestamp)
				n++
			}
			assert.Empty(t, tc.err, "want an error")
			assert.Equal(t, tc.entries, n)
		})
	}
}

func TestMooncakeSample(t *testing.T) {
	entries, errs := readAll(t, NewMooncakeReader(openFixture(t, "mooncake-sample.jsonl"), "mooncake-sample.jsonl", MooncakeOptions{}))
	require.Empty(t, errs)
	require.Len(t, entries, 10)
	var lines []int
	for _, e := range entries {
		lines = append(lines, e.Line)
		assert.True(t, e.HasTimestamp)
		assert.Len(t, e.HashIDs, ceilDivInt(e.InputLen, 512), "line %d", e.Line)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 8, 9, 10, 11}, lines, "the blank line 7 is skipped and counted")
	assert.Equal(t, TraceEntry{Line: 3, Timestamp: 120 * time.Millisecond, HasTimestamp: true, InputLen: 2600, OutputLen: 64,
		HashIDs: []int64{0, 1, 2, 4, 5, 6}}, entries[2])
	assert.Equal(t, 6001500*time.Microsecond, entries[9].Timestamp, "fractional milliseconds")
	assert.Equal(t, []int64{9, 10}, entries[5].HashIDs, "513 tokens: a full block and one token")
}

func TestMooncakeSessionsAndTextInput(t *testing.T) {
	entries, errs := readAll(t, NewMooncakeReader(openFixture(t, "mooncake-sessions.jsonl"), "s.jsonl", MooncakeOptions{}))
	require.Empty(t, errs)
	require.Len(t, entries, 6)
	assert.Equal(t, TraceEntry{Line: 1, HasTimestamp: true, InputLen: 600, OutputLen: 30, HashIDs: []int64{100, 101}, SessionID: "chat-a"}, entries[0])
	assert.Equal(t, "Summarise the last quarter's incident reports in three bullet points.", entries[1].Text)
	assert.Zero(t, entries[1].InputLen)
	assert.Equal(t, TraceEntry{Line: 3, InputLen: 1100, OutputLen: 25, HashIDs: []int64{100, 101, 102}, SessionID: "chat-a", Delay: 2 * time.Second}, entries[2])
	assert.Empty(t, entries[3].HashIDs, "input_length alone: a prompt of its own")
	assert.Zero(t, entries[5].OutputLen, "no output_length: the server decides")
}

func TestMooncakeMalformedLines(t *testing.T) {
	entries, errs := readAll(t, NewMooncakeReader(openFixture(t, "mooncake-malformed.jsonl"), "mooncake-malformed.jsonl", MooncakeOptions{}))
	var lines []int
	for _, e := range entries {
		lines = append(lines, e.Line)
	}
	assert.Equal(t, []int{1, 15, 16, 17}, lines)
	want := []string{
		"2: input_length 600 does not fit 3 hash_ids of 512 tokens (want 2 hash_ids, the last block holding 1 to 512 tokens)",
		"3: input_length 1100 does not fit 2 hash_ids of 512 tokens (want 3 hash_ids",
		"4: not valid JSON: invalid character '\"' after object key:value pair",
		"5: want input_length or text_input",
		"6: input_length: got a JSON string, want a number",
		"7: hash_ids[0]: got a JSON string, want a number",
		"8: timestamp: \"-5\" is out of range",
		"9: timestamp and delay cannot be given together",
		"10: input_length and text_input cannot be given together",
		"11: want a JSON object, got a JSON array",
		"12: input_length: 0, want at least 1 token",
		"13: input_length: \"600.5\" is not a whole number",
		"14: \"messages\" and \"payload\" lines are not supported",
	}
	require.Len(t, errs, len(want))
	for i, w := range want {
		assert.Contains(t, errs[i].Error(), "mooncake-malformed.jsonl:"+w)
	}
}

func TestMooncakeLineTable(t *testing.T) {
	cases := []struct {
		name, line string
		opts       MooncakeOptions
		err        string
		check      func(t *testing.T, e TraceEntry)
	}{
		{name: "Mooncake README row", line: `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 2353, 2354]}`,
			check: func(t *testing.T, e TraceEntry) {
				assert.Len(t, e.HashIDs, 14)
				assert.Equal(t, 27482*time.Millisecond, e.Timestamp)
			}},
		{name: "block size 16 (Bailian-style)", line: `{"timestamp": 1, "input_length": 33, "hash_ids": [1, 2, 3]}`, opts: MooncakeOptions{BlockSize: 16},
			check: func(t *testing.T, e TraceEntry) { assert.Equal(t, []int64{1, 2, 3}, e.HashIDs) }},
		{name: "block size 16 rejects 512's layout", line: `{"timestamp": 1, "input_length": 600, "hash_ids": [1, 2]}`, opts: MooncakeOptions{BlockSize: 16},
			err: "does not fit 2 hash_ids of 16 tokens (want 38 hash_ids"},
		{name: "numbers as 1e3 and 10.0", line: `{"timestamp": 1e3, "input_length": 10.0, "output_length": 2}`,
			check: func(t *testing.T, e TraceEntry) {
				assert.Equal(t, time.Second, e.Timestamp)
				assert.Equal(t, 10, e.InputLen)
			}},
		{name: "negative and huge hash ids", line: `{"timestamp": 0, "input_length": 600, "hash_ids": [-7, 9223372036854775807]}`,
			check: func(t *testing.T, e TraceEntry) { assert.Equal(t, []int64{-7, 1<<63 - 1}, e.HashIDs) }},
		{name: "hash id beyond int64", line: `{"timestamp": 0, "input_length": 10, "hash_ids": [9223372036854775808]}`, err: `hash_ids[0]: "9223372036854775808" is not a whole number`},
		{name: "a fraction of a hash id", line: `{"timestamp": 0, "input_length": 10, "hash_ids": [1.5]}`, err: `hash_ids[0]: "1.5" is not a whole number`},
		{name: "null fields are absent", line: `{"timestamp": 5, "input_length": 10, "output_length": null, "hash_ids": null}`,
			check: func(t *testing.T, e TraceEntry) { assert.Zero(t, e.OutputLen); assert.Nil(t, e.HashIDs) }},
		{name: "unknown fields are ignored", line: `{"timestamp": 5, "input_length": 10, "priority": 3, "extra": {"a": 1}}`,
			check: func(t *testing.T, e TraceEntry) { assert.Equal(t, 10, e.InputLen) }},
		{name: "tokens beyond the cap", line: `{"timestamp": 5, "input_length": 1e9}`, err: "input_length: \"1e9\" is out of range (0 to 4194304)"},
		{name: "time beyond the cap", line: `{"timestamp": 1e300, "input_length": 5}`, err: "timestamp: \"1e300\" is out of range"},
		{name: "delay without a session", line: `{"delay": 5, "input_length": 5}`, err: "delay needs a session_id"},
		{name: "session id of the wrong type", line: `{"session_id": 7, "input_length": 5}`, err: "session_id: got a JSON number, want a string"},
		{name: "empty session id", line: `{"session_id": "", "input_length": 5}`, err: "session_id is empty"},
		{name: "empty text", line: `{"timestamp": 0, "text_input": ""}`, err: "text_input is empty"},
		{name: "text with hash ids", line: `{"timestamp": 0, "text_input": "hi", "hash_ids": [1]}`, err: "hash_ids need input_length, not text_input"},
		{name: "escape sequence in a string", line: `{"timestamp": 0, "input_length": "\u001b[2J"}`, err: "input_length: got a JSON string, want a number"},
		{name: "raw control characters", line: "{\"timestamp\": 0, \"session_id\": \"\x1b[2J\x07\"}", err: `not valid JSON: invalid character '\x1b' in string literal`},
		{name: "null hash id", line: `{"timestamp": 0, "input_length": 10, "hash_ids": [null]}`, err: "hash_ids[0]: got null, want a number"},
		{name: "hash ids not a list", line: `{"timestamp": 0, "input_length": 10, "hash_ids": 5}`, err: "hash_ids: want a list of whole numbers"},
		{name: "a boolean for a number", line: `{"timestamp": true, "input_length": 10}`, err: "timestamp: got a JSON boolean, want a number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewMooncakeReader(strings.NewReader(tc.line+"\n"), "t.jsonl", tc.opts).Next()
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "t.jsonl:1: ")
				assert.Contains(t, err.Error(), tc.err)
				assert.NotContains(t, err.Error(), "\x1b", "no raw escape reaches a terminal")
				assert.NotContains(t, err.Error(), "\x07")
				assert.True(t, IsTraceLineError(err))
				return
			}
			require.NoError(t, err)
			tc.check(t, e)
		})
	}
}

func TestOverlongLineIsSkippedNotHeld(t *testing.T) {
	long := `{"timestamp": 0, "text_input": "` + strings.Repeat("a", maxMooncakeLine) + `"}`
	text := `{"timestamp": 0, "input_length": 5}` + "\n" + long + "\n" + `{"timestamp": 1, "input_length": 6}`
	r := NewMooncakeReader(strings.NewReader(text), "big.jsonl", MooncakeOptions{})
	entries, errs := readAll(t, r)
	require.Len(t, errs, 1)
	assert.Equal(t, "big.jsonl:2: line longer than 16777216 bytes", errs[0].Error())
	require.Len(t, entries, 2)
	assert.Equal(t, 3, entries[1].Line, "the line after it, without a final newline")
	assert.LessOrEqual(t, cap(r.s.buf), maxMooncakeLine+traceReadBufSize, "the buffer stops growing at the cap")
}

func TestReadErrorsAreNotLineErrors(t *testing.T) {
	r := NewMooncakeReader(io.MultiReader(strings.NewReader(`{"timestamp": 0, "input_length": 5}`+"\n"), failingReader{}), "f.jsonl", MooncakeOptions{})
	_, err := r.Next()
	require.NoError(t, err)
	_, err = r.Next()
	require.Error(t, err)
	assert.False(t, IsTraceLineError(err), "a broken disk is not a line to skip")
	assert.Contains(t, err.Error(), "f.jsonl: disk on fire")
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// generatedTrace produces lines lines of a trace on the fly, each of exactly lineLen bytes,
// and counts the bytes read from it.
type generatedTrace struct {
	line    func(i int) string
	lines   int
	lineLen int
	next    int
	pending []byte
	read    int64
}

func (g *generatedTrace) Read(p []byte) (int, error) {
	for len(g.pending) < len(p) && g.next < g.lines {
		l := g.line(g.next)
		if g.lineLen == 0 {
			g.lineLen = len(l)
		} else if len(l) != g.lineLen {
			panic(fmt.Sprintf("generated line %d is %d bytes, want %d", g.next, len(l), g.lineLen))
		}
		g.pending = append(g.pending, l...)
		g.next++
	}
	if len(g.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	g.read += int64(n)
	return n, nil
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestTracesStreamInConstantMemory reads a 40,000-line trace of each format (3 to 5 MB, 45 to
// 70 times the read buffer) and checks that the reader never runs ahead of the line it
// returns by more than its buffer, and that the live heap does not grow with the file.
func TestTracesStreamInConstantMemory(t *testing.T) {
	const lines = 40_000
	formats := []struct {
		name  string
		trace *generatedTrace
		open  func(io.Reader) TraceReader
	}{
		{"mooncake", &generatedTrace{lines: lines, line: func(i int) string {
			return fmt.Sprintf(`{"timestamp": %9d, "input_length": 1024, "output_length": %3d, "hash_ids": [%8d, %8d]}`+"\n", i*10, i%1000, i%5000, i)
		}}, func(r io.Reader) TraceReader { return NewMooncakeReader(r, "gen.jsonl", MooncakeOptions{}) }},
		{"burstgpt", &generatedTrace{lines: lines, line: func(i int) string {
			if i == 0 {
				return fmt.Sprintf("%-72s\n", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type")
			}
			return fmt.Sprintf("%-72s\n", fmt.Sprintf("%09d,GPT-4,%05d,%05d,%05d,Conversation log", i, i%30000, i%2000+1, 0))
		}}, func(r io.Reader) TraceReader { return NewBurstGPTReader(r, "gen.csv", BurstGPTOptions{}) }},
	}
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			r := f.open(f.trace)
			before := heapInUse()
			var peak uint64
			n := 0
			for {
				e, err := r.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				n++
				// Everything read so far ends at most one read buffer past this line.
				end := int64(e.Line) * int64(f.trace.lineLen)
				require.LessOrEqual(t, f.trace.read, end+traceReadBufSize, "line %d: read ahead", e.Line)
				if n%10_000 == 0 {
					peak = max(peak, heapInUse())
				}
			}
			assert.Greater(t, f.trace.read, int64(40*traceReadBufSize), "the trace is large against the buffer")
			assert.GreaterOrEqual(t, n, lines-1)
			grown := int64(peak) - int64(before)
			assert.Less(t, grown, int64(1<<20), "live heap grew by %d bytes over %d MB of trace", grown, f.trace.read>>20)
		})
	}
}

func FuzzMooncakeReader(f *testing.F) {
	for _, b := range hostileseed.Files(f, "traces") {
		f.Add(b)
	}
	for _, name := range []string{"mooncake-sample.jsonl", "mooncake-sessions.jsonl", "mooncake-malformed.jsonl"} {
		b, err := os.ReadFile("../testdata/" + name)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewMooncakeReader(strings.NewReader(string(data)), "fuzz.jsonl", MooncakeOptions{})
		for i := 0; i < 10000; i++ {
			e, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !IsTraceLineError(err) {
					t.Fatalf("a string reader failed: %v", err)
				}
				if strings.ContainsAny(err.Error(), "\n\x1b") {
					t.Fatalf("error not one clean line: %q", err.Error())
				}
				continue
			}
			if e.Text == "" && (e.InputLen < 1 || e.InputLen > MaxTraceTokens) {
				t.Fatalf("input length %d out of bounds", e.InputLen)
			}
			if e.OutputLen < 0 || e.OutputLen > MaxTraceTokens || e.Timestamp < 0 || e.Delay < 0 {
				t.Fatalf("entry out of bounds: %+v", e)
			}
			if len(e.HashIDs) > 0 && len(e.HashIDs) != ceilDivInt(e.InputLen, DefaultTraceBlockSize) {
				t.Fatalf("%d hash ids for %d tokens", len(e.HashIDs), e.InputLen)
			}
		}
		t.Fatal("reader does not end")
	})
}

func FuzzBurstGPTReader(f *testing.F) {
	for _, b := range hostileseed.Files(f, "traces") {
		f.Add(b)
	}
	for _, name := range []string{"burstgpt-sample.csv", "burstgpt-malformed.csv"} {
		b, err := os.ReadFile("../testdata/" + name)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewBurstGPTReader(strings.NewReader(string(data)), "fuzz.csv", BurstGPTOptions{Model: "*", KeepFailed: true})
		for i := 0; i < 10000; i++ {
			e, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if strings.ContainsAny(err.Error(), "\n\x1b") {
					t.Fatalf("error not one clean line: %q", err.Error())
				}
				if !IsTraceLineError(err) && !strings.Contains(err.Error(), "empty BurstGPT trace") {
					t.Fatalf("a string reader failed: %v", err)
				}
				if !IsTraceLineError(err) {
					return
				}
				continue
			}
			if e.InputLen < 0 || e.InputLen > MaxTraceTokens || e.OutputLen < 0 || e.OutputLen > MaxTraceTokens || e.Timestamp < 0 {
				t.Fatalf("entry out of bounds: %+v", e)
			}
		}
		t.Fatal("reader does not end")
	})
}
