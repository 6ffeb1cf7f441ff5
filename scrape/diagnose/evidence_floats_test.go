package diagnose_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// Evidence read back from a bundle can hold any number; its text stays short.
func TestEvidenceOfHostileNumbers(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{1e308, "", "x 1e+308"},
		{1e308, "%", "x +Inf%"}, // 1e308 × 100 overflows
		{1e14, "%", "x 1e+16%"},
		{1e308, "s", "x 1e+308s"},
		{1e308, "/s", "x 1e+308/s"},
		{-1e308, "tokens", "x -1e+308 tokens"},
		{math.NaN(), "", "x NaN"},
		{math.Inf(1), "s", "x +Infs"},
		{math.Inf(-1), "%", "x -Inf%"},
		{2826, "", "x 2826"},
		{0.94, "%", "x 94%"},
	} {
		assert.Equal(t, c.want, diagnose.Evidence{Name: "x", Value: c.v, Unit: c.unit}.String())
	}
}
