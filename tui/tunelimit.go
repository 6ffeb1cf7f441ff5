package tui

import "fmt"

// kvFarBelowFull is the KV cache usage at a knee under which more KV memory cannot have moved
// it: the cache was never near full, so --gpu-memory-utilization is not what binds.
const kvFarBelowFull = 0.5

// probeSeen is what the server showed while a probe measured: its KV cache's highest usage and
// the limit its worst verdict named.
type probeSeen struct {
	KV     float64 // 0..1
	KVSeen bool
	Limit  string // the binding verdict's limit ("--max-num-batched-tokens"), "" when none fired
}

// observe takes one second of the server's figures into the probe's.
func (p *probeSeen) observe(s *state) {
	if m := s.model(); m != nil && m.Total.KVCacheUsage.OK {
		p.KV, p.KVSeen = max(p.KV, m.Total.KVCacheUsage.V), true
	}
	if v, ok := worstVerdict(s.verdicts); ok {
		p.Limit = v.Limit
		if p.Limit == "" {
			p.Limit = v.Rule
		}
	}
}

// noteSeen files the finished probe's figures under its value in the run's latest curve (a
// retried probe's replace the discarded one's).
func (t *tuneState) noteSeen(p *probeRun) {
	n := len(t.touched)
	if n == 0 {
		return
	}
	cv := &t.curves[t.touched[n-1]]
	if cv.Seen == nil {
		cv.Seen = map[int]probeSeen{}
	}
	cv.Seen[p.value] = p.seen
}

// notTheLimit says, for a curve whose KV cache was far from full at its knee, that
// utilisation cannot have mattered and what set the knee instead; "" otherwise.
func (cv tuneCurve) notTheLimit(slo string) string {
	g, ok := cv.Seen[cv.Knee]
	if cv.Knee <= 0 || !ok || !g.KVSeen || g.KV >= kvFarBelowFull {
		return ""
	}
	by := clean(g.Limit)
	if by == "" {
		by = "the SLO (" + slo + "), met up to there with memory to spare"
	}
	return fmt.Sprintf("KV %s full at the knee: utilisation is not the limit here; the knee is set by %s", kvShare(g.KV), by)
}

// sweepNotTheLimit is the sweep's note when no setting's knee had a KV cache near full: one
// line for the status, "" when some knee did or none was measured.
func sweepNotTheLimit(t *tuneState) string {
	most, by, n := 0.0, "", 0
	for _, i := range t.touched {
		cv := t.curves[i]
		if cv.Knee <= 0 {
			continue
		}
		if cv.notTheLimit("") == "" {
			return ""
		}
		g := cv.Seen[cv.Knee]
		most, by, n = max(most, g.KV), clean(g.Limit), n+1
	}
	if n == 0 {
		return ""
	}
	if by == "" {
		by = "the SLO (" + t.slo.Text(", ") + ")"
	}
	return fmt.Sprintf("KV at most %s full at the knees: utilisation is not the limit here; the knee is set by %s", kvShare(most), by)
}

// kvShare is a KV usage (0..1) in whole percent, "<1%" below one.
func kvShare(v float64) string {
	if v < 0.01 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}
