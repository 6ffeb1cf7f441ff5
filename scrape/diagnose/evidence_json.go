package diagnose

import (
	"encoding/json"
	"math"
)

// evidenceJSON is Evidence on the wire. JSON has no NaN or Inf, and encoding/json
// refuses them, which would lose every verdict of a bundle or a --json report over one
// bad gauge: a value that is not a finite number is written as null with its word beside.
type evidenceJSON struct {
	Name      string   `json:"name"`
	Value     *float64 `json:"value"`
	NonFinite string   `json:"non_finite,omitempty"` // "NaN", "+Inf" or "-Inf"
	Unit      string   `json:"unit,omitempty"`
	Threshold string   `json:"threshold,omitempty"`
}

// MarshalJSON writes a non-finite Value as null and names it in non_finite.
func (e Evidence) MarshalJSON() ([]byte, error) {
	w := evidenceJSON{Name: e.Name, Unit: e.Unit, Threshold: e.Threshold}
	switch {
	case math.IsNaN(e.Value):
		w.NonFinite = "NaN"
	case math.IsInf(e.Value, 1):
		w.NonFinite = "+Inf"
	case math.IsInf(e.Value, -1):
		w.NonFinite = "-Inf"
	default:
		v := e.Value
		w.Value = &v
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes; a null value without a word is NaN.
func (e *Evidence) UnmarshalJSON(b []byte) error {
	var w evidenceJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Evidence{Name: w.Name, Unit: w.Unit, Threshold: w.Threshold}
	switch {
	case w.Value != nil:
		e.Value = *w.Value
	case w.NonFinite == "+Inf":
		e.Value = math.Inf(1)
	case w.NonFinite == "-Inf":
		e.Value = math.Inf(-1)
	default:
		e.Value = math.NaN()
	}
	return nil
}
