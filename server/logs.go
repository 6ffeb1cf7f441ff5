package server

import (
	"unicode/utf8"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// splitter turns a byte stream into lines. A line ends at '\n' or '\r' (tqdm redraws its bars
// with '\r' and no '\n'); "\r\n" is one line end, and a '\r' right after a line end adds no empty
// line, so "\r\n" line ends and tqdm's leading '\r' produce no blank lines while "\n\n" still
// does. A line longer than max bytes is emitted as soon as it reaches the cap, cut at a UTF-8
// boundary and marked truncated, and the rest of it up to the next line end is discarded.
//
// Write never fails and never blocks on anything but emit, so the pipe it reads from is always
// drained. It is not safe for concurrent use; each stream has its own.
type splitter struct {
	max  int
	emit func(line []byte, truncated bool)

	buf      []byte
	lastCR   bool // the previous byte was a '\r' that ended (or would have ended) a line
	skipping bool // the current line was truncated; discard up to the next line end
}

func newSplitter(max int, emit func(line []byte, truncated bool)) *splitter {
	if max < 4 {
		max = 4 // room for any UTF-8 rune
	}
	return &splitter{max: max, emit: emit}
}

// Write consumes p and always returns len(p), nil.
func (s *splitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := indexLineEnd(p)
		if i < 0 {
			s.appendText(p)
			break
		}
		if i > 0 {
			s.appendText(p[:i])
		}
		s.lineEnd(p[i])
		p = p[i+1:]
	}
	return n, nil
}

// Flush emits a pending partial line (at end of stream).
func (s *splitter) Flush() {
	if len(s.buf) > 0 && !s.skipping {
		s.emit(s.buf, false)
	}
	s.buf = s.buf[:0]
	s.skipping = false
	s.lastCR = false
}

func indexLineEnd(p []byte) int {
	for i, c := range p {
		if c == '\n' || c == '\r' {
			return i
		}
	}
	return -1
}

func (s *splitter) appendText(p []byte) {
	s.lastCR = false
	if s.skipping {
		return
	}
	room := s.max - len(s.buf)
	if len(p) <= room {
		s.buf = append(s.buf, p...)
		return
	}
	s.buf = append(s.buf, p[:room]...)
	line := s.buf[:cutUTF8(s.buf)]
	s.emit(line, true)
	s.buf = s.buf[:0]
	s.skipping = true
}

func (s *splitter) lineEnd(c byte) {
	switch {
	case s.skipping:
		s.skipping = false
	case len(s.buf) > 0:
		s.emit(s.buf, false)
	case c == '\n' && !s.lastCR:
		s.emit(s.buf, false) // a genuine empty line
	}
	s.buf = s.buf[:0]
	s.lastCR = c == '\r'
}

// cutUTF8 returns the length of b without a rune that the cap split in two.
func cutUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// StripANSI makes a log line safe for a terminal and for parsing: it is sanitize.Text, which
// removes whole escape sequences (CSI such as "\x1b[1;36m", OSC, DCS and the rest, in ESC and
// C1 forms), every control character but tab (BS and BEL included), and the bidi controls
// that would reorder what is shown. It returns s itself when there is nothing to remove.
func StripANSI(s string) string { return sanitize.Text(s) }

// ring keeps the last cap lines. It is not safe for concurrent use.
type ring struct {
	lines []Line
	next  int // index of the slot the next push writes
	full  bool
}

func newRing(capacity int) *ring {
	if capacity < 1 {
		capacity = 1
	}
	return &ring{lines: make([]Line, capacity)}
}

func (r *ring) push(l Line) {
	r.lines[r.next] = l
	r.next++
	if r.next == len(r.lines) {
		r.next = 0
		r.full = true
	}
}

func (r *ring) len() int {
	if r.full {
		return len(r.lines)
	}
	return r.next
}

// last returns a copy of the newest n lines, oldest first; all of them if n <= 0 or n > len.
func (r *ring) last(n int) []Line {
	size := r.len()
	if n <= 0 || n > size {
		n = size
	}
	out := make([]Line, n)
	start := r.next - n
	if start < 0 {
		start += len(r.lines)
	}
	for i := range out {
		out[i] = r.lines[(start+i)%len(r.lines)]
	}
	return out
}

// since returns a copy of the lines with Seq > seq, oldest first.
func (r *ring) since(seq uint64) []Line {
	all := r.last(0)
	for i, l := range all {
		if l.Seq > seq {
			return all[i:]
		}
	}
	return nil
}
