package textfmt_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

func TestFixed(t *testing.T) {
	for _, c := range []struct {
		v    float64
		prec int
		want string
	}{
		{0, 2, "0.00"},
		{1.5, 0, "2"},
		{12.345, 2, "12.35"},
		{-3.25, 1, "-3.2"},
		{0.5, -1, "0.5"},
		{999_999_999_999_999, 0, "999999999999999"},
		{1e15, 0, "1e+15"},
		{1e308, 2, "1e+308"},
		{-1.7976931348623157e308, 0, "-1.8e+308"},
		{math.MaxFloat64, -1, "1.8e+308"},
		{1e-300, -1, "1e-300"},
		{1e-300, 2, "0.00"},
		{math.NaN(), 2, "NaN"},
		{math.Inf(1), 0, "+Inf"},
		{math.Inf(-1), 1, "-Inf"},
	} {
		got := textfmt.Fixed(c.v, c.prec)
		assert.Equal(t, c.want, got, "Fixed(%v, %d)", c.v, c.prec)
		assert.LessOrEqual(t, len(got), 25+max(c.prec, 0))
	}
	assert.True(t, textfmt.Finite(1e14))
	for _, v := range []float64{1e15, -1e300, math.NaN(), math.Inf(1)} {
		assert.False(t, textfmt.Finite(v), "%v", v)
	}
}
