package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// TraceEntry is one request of a recorded trace (BurstGPT or Mooncake): when it arrived and
// how long its prompt and answer were.
type TraceEntry struct {
	Line int // 1-based line in the file
	// Timestamp is when the trace says the request arrived, from the trace's own zero
	// (BurstGPT: seconds since its first day; Mooncake: milliseconds). HasTimestamp is false
	// for a line without one (an AIPerf session turn that gives a Delay instead).
	Timestamp    time.Duration
	HasTimestamp bool
	InputLen     int // prompt tokens
	// OutputLen is the answer's length in tokens; 0 when the trace does not say, and the
	// server decides when to stop.
	OutputLen int
	// HashIDs name the prompt's blocks of the trace's block size (Mooncake: 512 tokens), the
	// last one partial; equal leading ids mean an equal prefix.
	HashIDs []int64
	// Text is AIPerf's text_input: the prompt itself, given instead of InputLen.
	Text string
	// SessionID and Delay are AIPerf's multi-turn extension: a turn is sent Delay after the
	// previous turn of its session finished.
	SessionID string
	Delay     time.Duration
	// Model and LogType are BurstGPT's columns ("GPT-4", "Conversation log").
	Model, LogType string
}

// TraceReader yields a trace's entries in file order, reading line by line (constant memory).
type TraceReader interface {
	// Next returns the next entry, or io.EOF after the last. A malformed line gives a
	// *TraceError; Next may then be called again to go on with the following line. Any other
	// error (reading the file) is final.
	Next() (TraceEntry, error)
}

// TraceError is a malformed line of a trace file.
type TraceError struct {
	File string
	Line int
	Msg  string
}

func (e *TraceError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// IsTraceLineError reports whether err is a malformed line (one a replay may skip) rather than
// a failure to read the file.
func IsTraceLineError(err error) bool {
	var te *TraceError
	return errors.As(err, &te)
}

// Bounds on what a trace line may ask for, so a hostile or corrupt file cannot make a prompt
// of a billion tokens or a schedule past the end of time.
const (
	MaxTraceTokens     = 1 << 22 // 4,194,304 tokens of prompt or answer
	maxTraceSeconds    = 1e9     // about 31 years: far past any trace, far below time.Duration's range
	maxBurstGPTLine    = 64 << 10
	maxMooncakeLine    = 16 << 20 // text_input can be long
	traceReadBufSize   = 64 << 10
	maxTraceMessageLen = 120 // characters of a bad value quoted in an error
)

// OpenTrace returns the reader for a dataset name ("burstgpt" or "mooncake") on r; name is
// the file's name for error messages.
func OpenTrace(dataset string, r io.Reader, name string, opts TraceOptions) (TraceReader, error) {
	switch dataset {
	case "burstgpt":
		return NewBurstGPTReader(r, name, opts.BurstGPT), nil
	case "mooncake":
		return NewMooncakeReader(r, name, opts.Mooncake), nil
	case DatasetTimedTrace:
		return NewTimedTraceReader(r, name, opts.TimedTrace), nil
	}
	return nil, fmt.Errorf("unknown trace format %q (want burstgpt or mooncake)", dataset)
}

// TraceOptions holds each format's options.
type TraceOptions struct {
	BurstGPT   BurstGPTOptions
	Mooncake   MooncakeOptions
	TimedTrace TimedTraceConfig
}

// lineScanner reads a file line by line with a bounded buffer: an overlong line is skipped to
// its end and reported, never held whole.
type lineScanner struct {
	r    *bufio.Reader
	name string
	line int
	max  int
	buf  []byte
}

func newLineScanner(r io.Reader, name string, maxLine int) *lineScanner {
	return &lineScanner{r: bufio.NewReaderSize(r, traceReadBufSize), name: name, max: maxLine}
}

// next returns the next non-blank line without its line break, io.EOF after the last, or a
// *TraceError for a line longer than the limit. The slice is valid until the next call.
func (s *lineScanner) next() ([]byte, error) {
	if cap(s.buf) > 1<<20 {
		s.buf = nil // one long line does not pin its buffer for the rest of the file
	}
	for {
		s.line++
		s.buf = s.buf[:0]
		tooLong := false
		for {
			chunk, err := s.r.ReadSlice('\n')
			if n := len(s.buf) + len(chunk); !tooLong && n <= s.max+1 { // +1: the newline itself
				if n > cap(s.buf) {
					grown := make([]byte, len(s.buf), min(max(2*cap(s.buf), n), s.max+1))
					copy(grown, s.buf)
					s.buf = grown
				}
				s.buf = append(s.buf, chunk...)
			} else {
				tooLong = true
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				if len(s.buf) == 0 && !tooLong {
					return nil, io.EOF
				}
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			break
		}
		if tooLong {
			return nil, s.errorf("line longer than %d bytes", s.max)
		}
		line := bytes.TrimSpace(s.buf)
		if len(line) > 0 {
			return line, nil
		}
	}
}

func (s *lineScanner) errorf(format string, args ...any) *TraceError {
	return &TraceError{File: s.name, Line: s.line, Msg: fmt.Sprintf(format, args...)}
}

// quoteValue quotes a value from the file for an error message: escaped (no terminal control
// sequence survives) and bounded.
func quoteValue(s string) string {
	if utf8.RuneCountInString(s) > maxTraceMessageLen {
		r := []rune(s)
		s = string(r[:maxTraceMessageLen]) + "..."
	}
	return strconv.QuoteToGraphic(s)
}

// plainMessage makes a library's error message safe for a terminal: one line, control and
// bidirectional-override characters escaped.
func plainMessage(s string) string {
	var b strings.Builder
	for _, r := range oneLine(s) {
		if unicode.IsGraphic(r) && !unicode.Is(unicode.Bidi_Control, r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// parseCount reads a token count: a whole number (written 472 or 472.0) from 0 to
// MaxTraceTokens.
func parseCount(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > MaxTraceTokens {
			return 0, fmt.Errorf("%d is out of range (0 to %d)", n, MaxTraceTokens)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, fmt.Errorf("%s is not a whole number", quoteValue(s))
	}
	if f < 0 || f > MaxTraceTokens {
		return 0, fmt.Errorf("%s is out of range (0 to %d)", quoteValue(s), MaxTraceTokens)
	}
	return int(f), nil
}

// parseTime reads a non-negative time in the given unit (time.Second, time.Millisecond).
func parseTime(s string, unit time.Duration) (time.Duration, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s is not a number", quoteValue(s))
	}
	limit := maxTraceSeconds * float64(time.Second) / float64(unit)
	if f < 0 || f > limit {
		return 0, fmt.Errorf("%s is out of range (0 to %g)", quoteValue(s), limit)
	}
	return time.Duration(math.Round(f * float64(unit))), nil
}
