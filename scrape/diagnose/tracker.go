package diagnose

import (
	"slices"
	"time"
)

// DefaultHold is how long a verdict's condition must hold, or stay cleared, before a Tracker
// shows or drops it: five scrapes at the dashboard's 1 s, longer than a closed loop's waves of
// arrivals (docs/monitoring.md#hysteresis).
const DefaultHold = 5 * time.Second

// Tracker holds verdicts steady across scrapes. A verdict is shown once its rule has fired on
// its subject for Hold (a gap shorter than Hold does not break the run) and dropped once it has
// not fired for Hold; in between, the verdict shown is the latest one seen. State verdicts
// (down, stale, restarted) are facts rather than estimates and pass at once. Time is passed
// in, so a test drives it. Not safe for concurrent use.
type Tracker struct {
	Hold time.Duration
	seen map[trackKey]*held
}

// trackKey is one verdict's identity: the client's two client-bound rules differ by their flag.
type trackKey struct{ rule, subject, flag string }

func keyOf(v Verdict) trackKey {
	k := trackKey{rule: v.Rule, subject: v.Subject}
	if len(v.Flags) > 0 {
		k.flag = v.Flags[0]
	}
	return k
}

type held struct {
	since, last time.Time
	shown       bool
	v           Verdict
}

// NewTracker returns a Tracker with that hold time (0: every verdict passes at once).
func NewTracker(hold time.Duration) *Tracker {
	return &Tracker{Hold: hold, seen: map[trackKey]*held{}}
}

// immediate are the rules a Tracker never holds back.
var immediate = []string{RuleDown, RuleStale, RuleRestarted}

// Update takes the verdicts of one evaluation at now and returns those to show, resolved to
// one capacity verdict per subject and sorted worst first.
func (t *Tracker) Update(now time.Time, vs []Verdict) []Verdict {
	if t.seen == nil {
		t.seen = map[trackKey]*held{}
	}
	var out []Verdict
	gone := map[string]bool{} // subjects down or stale: nothing else about them holds
	for _, v := range vs {
		if slices.Contains(immediate, v.Rule) {
			out = append(out, v)
			gone[v.Subject] = v.Rule != RuleRestarted
			continue
		}
		k := keyOf(v)
		h, ok := t.seen[k]
		if !ok || now.Sub(h.last) >= t.Hold {
			h = &held{since: now}
			t.seen[k] = h
		}
		h.last, h.v = now, v
	}
	for k, h := range t.seen {
		switch {
		case gone[k.subject] || !h.last.Equal(now) && now.Sub(h.last) >= t.Hold:
			delete(t.seen, k)
			continue
		case now.Sub(h.since) >= t.Hold:
			h.shown = true
		}
		if h.shown {
			out = append(out, h.v)
		}
	}
	out = Resolve(out)
	Sort(out)
	return out
}
