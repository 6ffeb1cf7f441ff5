package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// Severity orders verdicts: what to look at first.
type Severity int

// Severities.
const (
	Info     Severity = iota // worth knowing, nothing is wrong yet
	Warning                  // users feel it, or will soon
	Critical                 // a server is gone or thrashing
)

// String is "info", "warning" or "critical".
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	}
	return "?"
}

// MarshalText writes the name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (s *Severity) UnmarshalText(b []byte) error {
	return unmarshalName(s, b, "severity", Info, Warning, Critical)
}

// unmarshalName sets *dst to the one of all whose String is b.
func unmarshalName[T fmt.Stringer](dst *T, b []byte, what string, all ...T) error {
	for _, x := range all {
		if x.String() == string(b) {
			*dst = x
			return nil
		}
	}
	return fmt.Errorf("unknown %s %q", what, b)
}

// Evidence is one number a rule looked at, with the threshold it was held against.
type Evidence struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Unit is how Value is shown: "%" (Value is a 0..1 fraction), "s", "/s", "tokens", "" (a count).
	Unit string `json:"unit,omitempty"`
	// Threshold is the condition, written as it is shown: "≥ 90%", "> 0".
	Threshold string `json:"threshold,omitempty"`
}

// String is "kv_cache_usage 94% (≥ 90%)".
func (e Evidence) String() string {
	s := e.Name + " " + formatValue(e.Value, e.Unit)
	if e.Threshold != "" {
		s += " (" + e.Threshold + ")"
	}
	return s
}

// Verdict is one rule's finding about one subject.
type Verdict struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Subject  string   `json:"subject"`
	// Text is one line a person woken at 3 a.m. understands: what is wrong, the number that
	// says so, and what to change.
	Text string `json:"text"`
	// Flags are the engine (or vllmtop) flags the text suggests.
	Flags    []string   `json:"flags,omitempty"`
	Evidence []Evidence `json:"evidence"`
	// Limit names what binds ("--max-num-batched-tokens", "KV blocks", "prefill compute");
	// Advice is the one change to make ("raise --max-num-seqs"), empty when there is none.
	Limit  string `json:"limit,omitempty"`
	Advice string `json:"advice,omitempty"`
}

// lineEvidence is how many pieces of evidence Line shows.
const lineEvidence = 2

// Line is the verdict in one line for a header: "LIMIT · EVIDENCE · ADVICE", e.g.
// "--max-num-batched-tokens · waiting 14 (≥ 1), pending_tokens 19k tokens (≥ 8192) · raise
// --max-num-batched-tokens (now 8192)". A part that is empty is left out.
func (v Verdict) Line() string {
	limit := v.Limit
	if limit == "" {
		limit = v.Rule
	}
	parts := []string{limit}
	var ev []string
	for _, e := range v.keyEvidence() {
		ev = append(ev, e.String())
	}
	if len(ev) > 0 {
		parts = append(parts, strings.Join(ev, ", "))
	}
	if v.Advice != "" {
		parts = append(parts, v.Advice)
	}
	return strings.Join(parts, " · ")
}

// keyEvidence is the evidence Line shows: the first lineEvidence items that name a
// threshold (what the rule held against), else the first ones.
func (v Verdict) keyEvidence() []Evidence {
	var out []Evidence
	for _, e := range v.Evidence {
		if e.Threshold != "" && len(out) < lineEvidence {
			out = append(out, e)
		}
	}
	if len(out) == 0 && len(v.Evidence) > 0 {
		out = v.Evidence[:min(lineEvidence, len(v.Evidence))]
	}
	return out
}

// String is "warning kv-bound: TEXT [evidence; evidence]".
func (v Verdict) String() string {
	ev := make([]string, len(v.Evidence))
	for i, e := range v.Evidence {
		ev[i] = e.String()
	}
	s := v.Severity.String() + " " + v.Rule + ": " + v.Text
	if len(ev) > 0 {
		s += " [" + strings.Join(ev, "; ") + "]"
	}
	return s
}

// Sort orders verdicts by severity (worst first), then by rule order, then by subject.
func Sort(vs []Verdict) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if ra, rb := ruleRank(a.Rule), ruleRank(b.Rule); ra != rb {
			return ra < rb
		}
		return a.Subject < b.Subject
	})
}

// Overall is the one-word state of a set of verdicts.
type Overall int

// Overall states.
const (
	Healthy  Overall = iota // no warning or critical verdict
	Degraded                // at least one warning
	Failing                 // at least one critical verdict
)

// String is "HEALTHY", "DEGRADED" or "CRITICAL".
func (o Overall) String() string {
	switch o {
	case Healthy:
		return "HEALTHY"
	case Degraded:
		return "DEGRADED"
	case Failing:
		return "CRITICAL"
	}
	return "?"
}

// Summary is a header line for a set of verdicts: the overall state and the worst verdict's
// text, with how many more there are. vs need not be sorted.
func Summary(vs []Verdict) (Overall, string) {
	sorted := append([]Verdict(nil), vs...)
	Sort(sorted)
	o := Healthy
	var serious []Verdict
	for _, v := range sorted {
		switch v.Severity {
		case Critical:
			o = Failing
		case Warning:
			if o == Healthy {
				o = Degraded
			}
		case Info:
			continue
		}
		serious = append(serious, v)
	}
	if len(serious) == 0 {
		return Healthy, "HEALTHY"
	}
	line := o.String() + ": " + serious[0].Text
	if n := len(serious) - 1; n > 0 {
		line += fmt.Sprintf(" (+%d more)", n)
	}
	return o, line
}

// formatValue prints a number for a verdict text: 0.94 with "%" is "94%", 0.0123 with "s" is
// "12ms", a count is an integer when it is one.
func formatValue(v float64, unit string) string {
	switch unit {
	case "%":
		return textfmt.Fixed(math.Round(v*1000)/10, -1) + "%"
	case "s":
		return formatSeconds(v)
	case "/s":
		return short(v) + "/s"
	case "tokens":
		return short(v) + " tokens"
	}
	return short(v)
}

func short(v float64) string {
	switch a := math.Abs(v); {
	case v == math.Trunc(v) && a < 1e9:
		return textfmt.Fixed(v, 0)
	case a >= 100:
		return textfmt.Fixed(v, 0)
	case a >= 10:
		return textfmt.Fixed(v, 1)
	}
	return textfmt.Fixed(v, 2)
}

func formatSeconds(v float64) string {
	if !textfmt.Finite(v) {
		return textfmt.Fixed(v, 0) + "s" // beyond what a Duration holds
	}
	d := time.Duration(v * float64(time.Second))
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}
