package scrape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Value is a number read from a scrape, or the fact that it was not there. A metric the
// server does not expose is absent (OK false), which is not the same as a metric that reads 0:
// vLLM creates every series at start-up with value 0, so a present 0 is a real measurement.
//
// In JSON an absent Value is null and a present one is a number; NaN and ±Inf, which JSON
// numbers cannot carry, are the strings "NaN", "+Inf" and "-Inf" (as Prometheus prints them).
type Value struct {
	V  float64
	OK bool
}

// Some returns a present Value.
func Some(v float64) Value { return Value{V: v, OK: true} }

// Or returns the value, or def when it is absent.
func (v Value) Or(def float64) float64 {
	if v.OK {
		return v.V
	}
	return def
}

// IsZero reports whether v is absent, so `json:",omitzero"` leaves absent values out.
func (v Value) IsZero() bool { return !v.OK }

// String formats a present value with the shortest exact digits and an absent one as "--".
func (v Value) String() string {
	if !v.OK {
		return "--"
	}
	return formatFloat(v.V)
}

// plus adds o to v; the sum is present when either side is.
func (v Value) plus(o Value) Value {
	switch {
	case !o.OK:
		return v
	case !v.OK:
		return o
	}
	return Some(v.V + o.V)
}

// MarshalJSON implements json.Marshaler.
func (v Value) MarshalJSON() ([]byte, error) {
	if !v.OK {
		return []byte("null"), nil
	}
	return appendJSONFloat(nil, v.V), nil
}

// UnmarshalJSON implements json.Unmarshaler; it accepts what MarshalJSON writes.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*v = Value{}
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("scrape: value %q is not a number", s)
		}
		*v = Some(f)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*v = Some(f)
	return nil
}

// appendJSONFloat writes f as a JSON number, or as a quoted string when JSON has no number
// for it.
func appendJSONFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"+Inf"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Inf"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// formatFloat prints f as Prometheus does: shortest exact digits, "+Inf", "-Inf", "NaN".
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
