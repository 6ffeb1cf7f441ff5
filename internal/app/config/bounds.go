package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// Bounds of a config file, checked on its text before the TOML decoder sees it: the decoder's
// cost grows with the depth of a key or of nested tables (an 8,000-deep dotted key took it to
// 0.9 GB, a 50,000-deep inline table to 24 GB), and a config file is a few dozen lines.
const (
	MaxFileBytes  = 1 << 20 // the whole file
	maxDepth      = 16      // arrays and inline tables inside one another
	maxKeyParts   = 16      // parts of one dotted key (a.b.c is 3), a table header's too
	maxKeys       = 10000   // keys and table headers
	maxStringSize = 16384   // one string value, in bytes
	maxErrorLines = 10      // errors shown; the rest are counted
	maxErrorLine  = 300     // bytes of one error line
)

// boundsError is "FILE:LINE: what" for the first bound the text passes.
func boundsError(name string, data []byte) error {
	if len(data) > MaxFileBytes {
		return fmt.Errorf("%s: larger than %d KiB; a config file is a few dozen lines", name, MaxFileBytes>>10)
	}
	var s scanner
	if line, what := s.scan(data); what != "" {
		return fmt.Errorf("%s:%d: %s", name, line, what)
	}
	return nil
}

// scanner walks TOML text just enough to measure it: strings (so that nothing inside one
// counts), comments, brackets and the dots and equals signs of keys. It checks no syntax.
type scanner struct {
	line          int
	stack         []byte // open '[' and '{' of values
	inKey, header bool   // reading a key; reading a [table] header
	parts, keys   int
	quote         string // the open string's delimiter ("", `"`, `'`, `"""`, `'''`)
	strLen        int
	escaped       bool
	comment       bool
}

func (s *scanner) scan(data []byte) (line int, what string) {
	s.line, s.inKey, s.parts = 1, true, 1
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == '\n' {
			s.line++
		}
		switch {
		case s.quote != "":
			if what := s.inString(data, &i); what != "" {
				return s.line, what
			}
		case s.comment:
			s.comment = c != '\n'
		default:
			if what := s.outside(data, &i); what != "" {
				return s.line, what
			}
		}
	}
	return 0, ""
}

// inString advances through a string, checking its length.
func (s *scanner) inString(data []byte, i *int) string {
	c := data[*i]
	switch {
	case s.escaped:
		s.escaped = false
	case c == '\\' && s.quote[0] == '"':
		s.escaped = true
	case strings.HasPrefix(string(data[*i:min(len(data), *i+len(s.quote))]), s.quote):
		*i += len(s.quote) - 1
		s.quote = ""
		return ""
	case c == '\n' && len(s.quote) == 1:
		s.quote = "" // an unterminated string: the decoder says so
		return ""
	}
	s.strLen++
	if s.strLen > maxStringSize {
		return fmt.Sprintf("a string longer than %d KiB", maxStringSize>>10)
	}
	return ""
}

// outside handles a byte outside strings and comments.
func (s *scanner) outside(data []byte, i *int) string {
	c := data[*i]
	switch c {
	case '"', '\'':
		s.quote, s.strLen = string(c), 0
		if len(data) >= *i+3 && data[*i+1] == c && data[*i+2] == c {
			s.quote = strings.Repeat(string(c), 3)
			*i += 2
		}
	case '#':
		s.comment = true
	case '\n':
		if len(s.stack) == 0 {
			s.inKey, s.header, s.parts = true, false, 1
		}
	case '.':
		if s.inKey || s.header {
			if s.parts++; s.parts > maxKeyParts {
				return fmt.Sprintf("a key of more than %d dotted parts", maxKeyParts)
			}
		}
	case '=':
		s.inKey = false
		return s.countKey()
	case '[', '{':
		if c == '[' && s.inKey && len(s.stack) == 0 {
			if !s.header {
				s.header = true
				return s.countKey()
			}
			return ""
		}
		s.stack = append(s.stack, c)
		s.inKey, s.parts = c == '{', 1
		if len(s.stack) > maxDepth {
			return fmt.Sprintf("arrays and inline tables nested more than %d deep", maxDepth)
		}
	case ']', '}':
		if n := len(s.stack); n > 0 && !s.header {
			s.stack = s.stack[:n-1]
			s.inKey = false
		}
	case ',':
		if n := len(s.stack); n > 0 && s.stack[n-1] == '{' {
			s.inKey, s.parts = true, 1
		}
	}
	return ""
}

func (s *scanner) countKey() string {
	if s.keys++; s.keys > maxKeys {
		return fmt.Sprintf("more than %d keys", maxKeys)
	}
	return ""
}

// boundErrors joins errors one line each: at most maxErrorLines, each cut to maxErrorLine
// bytes with its escapes removed, and how many more there were.
func boundErrors(errs []error) error {
	var lines []string
	n := 0
	for _, e := range errs {
		if e == nil {
			continue
		}
		if n++; n <= maxErrorLines {
			lines = append(lines, textfmt.OneLine(sanitize.Text(e.Error()), maxErrorLine))
		}
	}
	if n == 0 {
		return nil
	}
	if n > maxErrorLines {
		lines = append(lines, fmt.Sprintf("(and %d more errors)", n-maxErrorLines))
	}
	return errors.New(strings.Join(lines, "\n"))
}
