// Package termwidth is the width text written for a person should fit: the terminal's, else an
// exported COLUMNS, capped so that wide terminals keep readable lines.
package termwidth

import (
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/term"
)

// Max is the widest text is laid out: help and reports stay readable on a wide terminal.
const Max = 100

// Of is the width for w: the terminal's columns when w is one, else COLUMNS as getenv reads
// it (a pipe or a file: only when the shell exports it), else Max; never above Max or under 20.
func Of(w any, getenv func(string) string) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(f.Fd()) {
		if cols, _, err := term.GetSize(f.Fd()); err == nil && cols > 0 {
			return clamp(cols)
		}
	}
	if cols, err := strconv.Atoi(strings.TrimSpace(getenv("COLUMNS"))); err == nil && cols > 0 {
		return clamp(cols)
	}
	return Max
}

// Stdout is Of(os.Stdout, os.Getenv).
func Stdout() int { return Of(os.Stdout, os.Getenv) }

func clamp(cols int) int { return max(20, min(cols, Max)) }
