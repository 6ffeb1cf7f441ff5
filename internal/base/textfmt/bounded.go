package textfmt

import (
	"math"
	"strconv"
)

// numberLimit is where Number switches to exponent form: past it, digits say nothing a
// person reads and a hostile value (1e308) would print 309 of them.
const numberLimit = 1e15

// Number writes v in at most about two dozen bytes: up to 4 significant decimals below
// 1e15 in magnitude ("0.1235", "1234.5", "12345678"), exponent form above ("1.2e+308"),
// and NaN and the infinities as words.
func Number(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.Abs(v) >= numberLimit:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) < 1e-4:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(math.Round(v*1e4)/1e4, 'f', -1, 64)
}
