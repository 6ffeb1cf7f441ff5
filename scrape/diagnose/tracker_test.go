package diagnose

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func rules(vs []Verdict) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Rule)
	}
	return out
}

// TestTrackerHolds: a verdict shows after it has held for the hold time, survives gaps
// shorter than it (a flapping condition reads as one), and goes after it has cleared for it.
func TestTrackerHolds(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tr := NewTracker(5 * time.Second)
	pb := Verdict{Rule: RulePrefillBound, Severity: Warning, Subject: "a"}
	ab := Verdict{Rule: RuleAdmissionBound, Severity: Warning, Subject: "a"}
	flips := 0
	var last []string
	for s := 0; s < 20; s++ {
		in := []Verdict{pb} // prefill-bound every second, admission-bound every other
		if s%2 == 1 {
			in = append(in, ab)
		}
		got := rules(tr.Update(at(s), in))
		if s > 0 && !assert.ObjectsAreEqual(got, last) {
			flips++
		}
		last = got
		switch {
		case s < 5:
			assert.Empty(t, got, "at %ds: not held long enough", s)
		case s >= 6:
			assert.Equal(t, []string{RuleAdmissionBound}, got, "at %ds: one verdict, the root cause", s)
		}
	}
	assert.LessOrEqual(t, flips, 2, "the header does not flap")
	assert.NotEmpty(t, tr.Update(at(23), nil), "cleared for 4s: still shown")
	assert.Empty(t, tr.Update(at(25), nil), "cleared for 5s: gone")

	down := Verdict{Rule: RuleDown, Severity: Critical, Subject: "a"}
	assert.Equal(t, []string{RuleDown}, rules(tr.Update(at(30), []Verdict{down})), "DOWN shows at once")
	assert.Equal(t, []string{RuleDown}, rules(NewTracker(0).Update(at(0), []Verdict{down})))
	assert.Equal(t, []string{RulePrefillBound}, rules(NewTracker(0).Update(at(0), []Verdict{pb})), "no hold: passes")
}
