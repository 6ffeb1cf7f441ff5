package sweepcli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// SplitCommand splits a command line as a POSIX shell does for words (Python's shlex.split,
// which vLLM uses): blanks separate, single quotes keep everything, double quotes keep all
// but backslash escapes, a backslash outside quotes escapes the next character.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("no closing quotation")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("no closing quotation")
			}
			inWord = true
		case ch == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("no escaped character")
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inWord = true
			}
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

// BenchFlags reads a --bench-cmd: `vllm bench serve FLAGS` or `vllmtop bench FLAGS` (or the
// flags alone), and returns the flags, which vllmtop bench runs.
func BenchFlags(cmd string) ([]string, error) {
	words, err := SplitCommand(cmd)
	if err != nil {
		return nil, err
	}
	prog := filepath.Base(words[0])
	switch {
	case strings.HasPrefix(words[0], "-"):
		return words, nil
	case prog == "vllm" && len(words) >= 3 && words[1] == "bench" && words[2] == "serve":
		return words[3:], nil
	case prog == "vllmtop" && len(words) >= 2 && words[1] == "bench":
		return words[2:], nil
	}
	return nil, fmt.Errorf("%q: want vllm bench serve FLAGS or vllmtop bench FLAGS (vllmtop bench runs them)", cmd)
}
