package textfmt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNumberIsBounded(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {42, "42"}, {-3, "-3"}, {0.123456, "0.1235"}, {1234.5, "1234.5"},
		{999999999999999, "999999999999999"}, {1e15, "1e+15"}, {1e308, "1e+308"}, {-1.7976931348623157e308, "-1.8e+308"},
		{5e-7, "5e-07"}, {math.NaN(), "NaN"}, {math.Inf(1), "Inf"}, {math.Inf(-1), "-Inf"},
	} {
		got := Number(c.v)
		assert.Equal(t, c.want, got, "%v", c.v)
		assert.LessOrEqual(t, len(got), 24, "%v", c.v)
	}
}
