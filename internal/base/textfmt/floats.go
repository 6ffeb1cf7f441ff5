package textfmt

import (
	"math"
	"strconv"
)

// HugeFloat is where Fixed stops writing every digit: above it a number read from the
// network (a counter of 1e308) would print hundreds of digits.
const HugeFloat = 1e15

// Fixed writes v with prec decimals, as strconv's 'f' format does (prec < 0: the fewest
// digits that say v exactly), except that NaN and the infinities are words ("NaN", "+Inf",
// "-Inf", as the Prometheus text format writes them) and a magnitude of HugeFloat or more
// has three significant digits and an exponent ("1e+308"), so the result is never longer
// than about 25 bytes (plus prec).
func Fixed(v float64, prec int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.Abs(v) >= HugeFloat:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case prec < 0 && v != 0 && math.Abs(v) < 1e-6:
		return strconv.FormatFloat(v, 'g', -1, 64) // 1e-300, not 300 zeros
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// Finite reports whether v is a number Fixed writes in full (not NaN, not infinite, below
// HugeFloat in magnitude).
func Finite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && math.Abs(v) < HugeFloat
}
