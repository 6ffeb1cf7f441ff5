package tui

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Numbers from a server are shown in a few characters whatever they are.
func TestFormatHostileNumbers(t *testing.T) {
	for _, c := range []struct {
		name string
		got  string
		want string
	}{
		{"si 1e308", siNumber(1e308), "1e+308"},
		{"si -1e308", siNumber(-1e308), "-1e+308"},
		{"si +Inf", siNumber(math.Inf(1)), "+Inf"},
		{"si 1e15", siNumber(1e15), "1e+15"},
		{"si 36k", siNumber(36_000), "36k"},
		{"si NaN", siNumber(math.NaN()), "–"},
		{"ms 1e308", fmtMs(1e308), "1e+305s"},
		{"ms +Inf", fmtMs(math.Inf(1)), "+Infs"},
		{"ms -Inf", fmtMs(math.Inf(-1)), "-Infs"},
		{"ms 38", fmtMs(38), "38ms"},
		{"trim 1e308", trimFloat(1e308), "1e+308"},
		{"trim 0.5", trimFloat(0.5), "0.5"},
		{"trim NaN", trimFloat(math.NaN()), "NaN"},
	} {
		assert.Equal(t, c.want, c.got, c.name)
	}
}
