package tui

import (
	"time"

	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
)

// hold passes each row's verdicts through the row's own Tracker and the fleet's other
// verdicts (the client's, the source's) through one more, then rebuilds the fleet's list
// from what they show: a row's verdict changes only once its condition has held, or
// cleared, for the hold time. Trackers of rows gone are dropped.
func (fs *fleetState) hold(now time.Time, f *fleet.Fleet) {
	if fs.held == nil {
		fs.held = map[fleet.Key]*diagnose.Tracker{}
		fs.others = diagnose.NewTracker(diagnose.DefaultHold)
	}
	rowSubject := map[string]bool{}
	seen := map[fleet.Key]bool{}
	var all []diagnose.Verdict
	for i := range f.Rows {
		r := &f.Rows[i]
		tr, ok := fs.held[r.Key]
		if !ok {
			tr = diagnose.NewTracker(diagnose.DefaultHold)
			fs.held[r.Key] = tr
		}
		seen[r.Key], rowSubject[r.Subject] = true, true
		r.Verdicts = tr.Update(now, r.Verdicts)
		all = append(all, r.Verdicts...)
	}
	for k := range fs.held {
		if !seen[k] {
			delete(fs.held, k)
		}
	}
	var rest []diagnose.Verdict
	for _, v := range f.Verdicts {
		if !rowSubject[v.Subject] {
			rest = append(rest, v)
		}
	}
	f.Verdicts = append(all, fs.others.Update(now, rest)...)
	diagnose.Sort(f.Verdicts)
}

// windowText is the charts' window for the tab line: the span shown while the data are
// shorter than the chosen window ("40s of 5m"), else the window ("5m").
func windowText(c *common) string {
	chosen := chartWindows[c.s.window]
	if w := chartWindow(c); w.Span < chosen {
		return fmtSpan(w.Span) + " of " + fmtSpan(chosen)
	}
	return fmtSpan(chosen)
}
