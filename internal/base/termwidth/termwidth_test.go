package termwidth

import (
	"bytes"
	"testing"
)

func TestOf(t *testing.T) {
	env := func(cols string) func(string) string {
		return func(k string) string {
			if k == "COLUMNS" {
				return cols
			}
			return ""
		}
	}
	var buf bytes.Buffer // not a terminal
	for cols, want := range map[string]int{"": Max, "80": 80, " 72 ": 72, "250": Max, "5": 20, "-3": Max, "wide": Max} {
		if got := Of(&buf, env(cols)); got != want {
			t.Errorf("COLUMNS=%q: width %d, want %d", cols, got, want)
		}
	}
}
