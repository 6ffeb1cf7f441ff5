// Package defaults fills in the unset fields of a configuration.
package defaults

// Positive returns v, or def when v is zero or negative: a count, size or duration left unset.
func Positive[T ~int | ~int64 | ~float64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
