package fleet

import (
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/untrusted"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// tracker is one endpoint's state between scrapes: the last good snapshot, a few older ones
// as window baselines, the rows computed from them, and what went wrong last.
type tracker struct {
	ep     Endpoint
	client *scrape.Client
	url    string
	window time.Duration

	mu          sync.Mutex
	cur         *scrape.Snapshot
	baselines   []*scrape.Snapshot // oldest first, about window/baselineSlots apart
	computed    []Row              // numbers from the last good scrape
	lastGood    time.Time
	lastErr     error
	lastErrAt   time.Time
	restartedAt time.Time
	restartWhy  string
	body        []byte // the last exposition, whole
}

func (t *tracker) keepBody(b []byte) {
	t.mu.Lock()
	t.body = b
	t.mu.Unlock()
}

// baselineSlots is how many baselines cover one window: the window's start is known to
// within window/baselineSlots, at the memory of that many trimmed snapshots.
const baselineSlots = 8

// observe takes a good scrape: restart check, baselines, the rows' numbers. It returns the
// rows for the history.
func (t *tracker) observe(now time.Time, s *scrape.Snapshot) []Row {
	s.Unmapped = nil // the rows never look at unmapped families; keep baselines small
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur != nil {
		if why := restartReason(t.cur, s); why != "" {
			t.restartedAt, t.restartWhy = now, why
			t.baselines = nil
		}
	}
	base := t.baseline(s.Time)
	t.addBaseline(s)
	t.cur, t.lastGood = s, now

	var w *scrape.Window
	if base != nil && base != s {
		cw := scrape.Compare(base, s)
		if cw.Restarted {
			// A reset the previous scrape did not show (a baseline older than it).
			t.restartedAt, t.restartWhy = now, "counters went back"
			t.baselines = []*scrape.Snapshot{s}
		} else {
			w = &cw
		}
	}
	t.computed = engineRows(t.ep.Name, t.url, s, w)
	return t.computed
}

// baseline is the newest snapshot at least a window older than at, or else the oldest.
func (t *tracker) baseline(at time.Time) *scrape.Snapshot {
	if len(t.baselines) == 0 {
		return nil
	}
	best := t.baselines[0]
	for _, b := range t.baselines {
		if at.Sub(b.Time) >= t.window {
			best = b
		}
	}
	return best
}

// addBaseline keeps s if the newest baseline is a slot old, and drops baselines no longer
// needed: all but the newest one older than a window.
func (t *tracker) addBaseline(s *scrape.Snapshot) {
	slot := t.window / baselineSlots
	if n := len(t.baselines); n == 0 || s.Time.Sub(t.baselines[n-1].Time) >= slot {
		t.baselines = append(t.baselines, s)
	}
	keepFrom := 0
	for i, b := range t.baselines {
		if s.Time.Sub(b.Time) >= t.window {
			keepFrom = i
		}
	}
	t.baselines = t.baselines[keepFrom:]
}

func (t *tracker) fail(now time.Time, err error) {
	t.mu.Lock()
	t.lastErr, t.lastErrAt = err, now
	t.mu.Unlock()
}

// rows are the endpoint's rows now: the computed numbers with the state that their age,
// the last error and a recent restart give.
func (t *tracker) rows(now time.Time, staleAfter, hold time.Duration) []Row {
	t.mu.Lock()
	defer t.mu.Unlock()
	errText := ""
	if t.lastErr != nil && !t.lastErrAt.Before(t.lastGood) {
		errText = untrusted.Text(errorCause(t.lastErr))
	}
	if t.cur == nil {
		r := Row{Key: Key{Endpoint: t.ep.Name}, Name: t.ep.Name, URL: t.url, LastError: errText}
		r.State = StateInit
		if t.lastErr != nil {
			r.State, r.StateDetail = StateDown, errText
		}
		return []Row{r}
	}
	age := now.Sub(t.lastGood)
	state, detail, frozen := StateUp, "", false
	switch {
	case age > staleAfter && errText != "" && !timedOut(t.lastErr):
		state, detail, frozen = StateDown, errText, true
	case age > staleAfter:
		state, frozen = StateStale, true
		detail = errText
	case !t.restartedAt.IsZero() && now.Sub(t.restartedAt) < hold:
		state, detail = StateRestarted, t.restartWhy
	}
	out := make([]Row, len(t.computed))
	for i, r := range t.computed {
		r.State, r.StateDetail, r.Age, r.Frozen, r.LastError, r.LastGood = state, detail, age, frozen, errText, t.lastGood
		r.MaxNumSeqs = t.ep.MaxNumSeqs
		out[i] = r
	}
	return out
}

func timedOut(err error) bool {
	se, ok := err.(*scrape.Error)
	return ok && se.Timeout()
}

// errorCause is a scrape error without the URL the row already shows.
func errorCause(err error) string {
	if se, ok := err.(*scrape.Error); ok {
		msg := se.Error()
		if len(msg) > len(se.URL)+2 && msg[:len(se.URL)] == se.URL {
			return msg[len(se.URL)+2:]
		}
		return msg
	}
	return err.Error()
}

// engineRows are one snapshot's rows: one per model, or one per engine when a model has
// several; numbers from the window w (nil: gauges only).
func engineRows(endpoint, url string, s *scrape.Snapshot, w *scrape.Window) []Row {
	var out []Row
	for _, m := range s.Models {
		var mw *scrape.ModelWindow
		if w != nil {
			for i := range w.Models {
				if w.Models[i].Name == m.Name {
					mw = &w.Models[i]
				}
			}
		}
		model := untrusted.Text(m.Name)
		for _, e := range m.Engines {
			var r *scrape.Rates
			if mw != nil {
				for i := range mw.Engines {
					if mw.Engines[i].Engine == e.Engine {
						r = &mw.Engines[i].Rates
					}
				}
			}
			var secs float64
			if w != nil {
				secs = w.ElapsedSeconds
			}
			engine := untrusted.Text(e.Engine)
			row := Row{Key: Key{Endpoint: endpoint, Model: model, Engine: engine}, URL: url, Engines: len(m.Engines),
				Signals: bound(diagnose.FromStats(&e.Stats, r, secs))}
			row.Name = rowName(endpoint, engine, len(m.Engines))
			row.Model, row.Engine, row.Backend = model, engine, s.Backend
			row.NotExported = NotExported(s.Backend)
			row.ProcessStart = within(s.ProcessStartSeconds, 0, maxUnix)
			row.Util = engineUtil(s, e.Engine)
			out = append(out, row)
		}
	}
	if len(out) == 0 {
		// Up, but nothing this tool maps (another exporter, or --disable-log-stats).
		row := Row{Key: Key{Endpoint: endpoint}, Name: endpoint, URL: url}
		row.Backend = s.Backend
		row.NotExported = NotExported(scrape.BackendUnknown)
		out = append(out, row)
	}
	return out
}

// restartReason says why cur looks like a restarted server compared with prev, or "": the
// process start time moved (even if every counter has grown past its old value since), or a
// counter or histogram went down.
func restartReason(prev, cur *scrape.Snapshot) string {
	if p, c := prev.ProcessStartSeconds, cur.ProcessStartSeconds; p.OK && c.OK && p.V != c.V {
		return "process start time moved"
	}
	if w := scrape.Compare(prev, cur); w.Restarted {
		return "counters went back"
	}
	return ""
}

// engineUtil is the engine's configured GPU memory utilisation, else the server's.
func engineUtil(s *scrape.Snapshot, engine string) scrape.Value {
	for _, c := range s.Cache {
		if c.Engine == engine && c.GPUMemoryUtilization.OK {
			return within(c.GPUMemoryUtilization, 0, 1)
		}
	}
	return within(s.Capacity.GPUMemoryUtilization, 0, 1)
}
