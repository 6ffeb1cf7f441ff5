package recorder

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/untrusted"
	"github.com/vllmtop/vllmtop/scrape"
)

// Replay parses the scrapes held in memory (see Read) in time order and hands each to fn
// as a Snapshot whose Time is when it was taken. A scrape that does not parse is passed to
// onError and skipped.
func (b *Bundle) Replay(fn func(endpoint string, s *scrape.Snapshot) error, onError func(endpoint string, at time.Time, err error)) error {
	order := append([]Scrape(nil), b.Scrapes...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].Time.Before(order[j].Time) })
	for _, raw := range order {
		s, err := scrape.Parse(bytes.NewReader(raw.Body))
		if err != nil {
			if onError != nil {
				onError(raw.Endpoint, raw.Time, err)
			}
			continue
		}
		s.Time = raw.Time
		if err := fn(raw.Endpoint, &s); err != nil {
			return err
		}
	}
	return nil
}

// EndpointWindow is what one endpoint did over the last span of a bundle: its last
// snapshot and the window back to the newest scrape at least span older (or its first).
// OK is false with fewer than two scrapes; Err says why a scrape of the two did not parse.
type EndpointWindow struct {
	Endpoint string
	Cur      scrape.Snapshot
	Window   scrape.Window
	OK       bool
	Err      error
}

// pair is the two scrapes (indices into Bundle.Scrapes) an endpoint's window needs.
type pair struct{ base, cur int }

// Windows computes every endpoint's window, sorted by endpoint. It parses two scrapes per
// endpoint, found from the manifest's times, in one pass over the bundle: time and memory
// grow with the bundle, not with endpoints times scrapes. It stops when ctx ends.
func (b *Bundle) Windows(ctx context.Context, span time.Duration) ([]EndpointWindow, error) {
	pairs := b.pairs(span)
	need := map[int]bool{}
	for _, p := range pairs {
		if p.cur >= 0 {
			need[p.base], need[p.cur] = true, true
		}
	}
	snaps := map[int]scrape.Snapshot{}
	errs := map[int]error{}
	keep := func(i int, s scrape.Snapshot, err error) {
		s.Unmapped = nil
		s.Time = b.Scrapes[i].Time
		snaps[i], errs[i] = s, err
	}
	if err := b.parse(ctx, need, keep); err != nil {
		return nil, err
	}
	out := make([]EndpointWindow, 0, len(pairs))
	for _, ep := range b.Endpoints() {
		p, w := pairs[ep], EndpointWindow{Endpoint: ep}
		switch {
		case p.cur < 0:
		case errs[p.cur] != nil || errs[p.base] != nil:
			w.Err = fmt.Errorf("a scrape does not parse: %w", firstErr(errs[p.cur], errs[p.base]))
		default:
			base, cur := snaps[p.base], snaps[p.cur]
			w.Cur, w.Window, w.OK = cur, scrape.Compare(&base, &cur), true
		}
		out = append(out, w)
	}
	return out, b.sinceRestart(ctx, out, pairs)
}

// sinceRestart shortens each window that reaches back across a restart to begin at the
// endpoint's first scrape of the restarted server, found by bisection over the scrapes
// between the two. Bisection needs a test that holds for every scrape before the restart and
// none after: a different process start time is one, counters that went down are not (a
// short-lived server between two others looks continuous with the last), so only servers that
// export process_start_time_seconds are searched; the others keep the window without rates.
func (b *Bundle) sinceRestart(ctx context.Context, out []EndpointWindow, pairs map[string]pair) error {
	var todo []*restartSearch
	by := b.byEndpoint()
	for i := range out {
		w := &out[i]
		if !w.OK || !w.Window.Restarted || !w.Cur.ProcessStartSeconds.OK {
			continue
		}
		p, idx := pairs[w.Endpoint], by[w.Endpoint]
		from, to := slices.Index(idx, p.base), slices.Index(idx, p.cur)
		if from >= 0 && to > from {
			todo = append(todo, &restartSearch{w: w, idx: idx[from : to+1], hi: to - from})
		}
	}
	for {
		need := map[int]bool{}
		for _, s := range todo {
			if s.open() {
				need[s.idx[s.mid()]] = true
			}
		}
		if len(need) == 0 {
			break
		}
		if err := b.parse(ctx, need, func(i int, snap scrape.Snapshot, err error) {
			snap.Unmapped, snap.Time = nil, b.Scrapes[i].Time
			for _, s := range todo {
				if s.open() && s.idx[s.mid()] == i {
					s.step(snap, err)
				}
			}
		}); err != nil {
			return err
		}
	}
	for _, s := range todo {
		if s.found != nil { // else the restart came right before the last scrape: no window
			if w := scrape.Compare(s.found, &s.w.Cur); !w.Restarted {
				w.SinceRestart = true
				s.w.Window = w
			}
		}
	}
	return nil
}

// restartSearch is one endpoint's bisection: idx[lo] is of an earlier process than the last
// scrape, idx[hi] of the same one (found holds it, parsed, once it is not the last).
type restartSearch struct {
	w      *EndpointWindow
	idx    []int // the endpoint's scrapes from the window's base to its last, oldest first
	lo, hi int
	found  *scrape.Snapshot
}

func (s *restartSearch) open() bool { return s.hi-s.lo > 1 }
func (s *restartSearch) mid() int   { return (s.lo + s.hi) / 2 }

// step moves the bisection on by the midpoint's scrape: one that does not parse, or whose
// process start time is not the last scrape's (or is not given), counts as before the restart.
func (s *restartSearch) step(snap scrape.Snapshot, err error) {
	start, cur := snap.ProcessStartSeconds, s.w.Cur.ProcessStartSeconds
	if err != nil || !start.OK || start.V != cur.V {
		s.lo = s.mid()
		return
	}
	s.hi, s.found = s.mid(), &snap
}

// byEndpoint is each endpoint's scrapes, oldest first.
func (b *Bundle) byEndpoint() map[string][]int {
	order := make([]int, len(b.Scrapes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return b.Scrapes[order[i]].Time.Before(b.Scrapes[order[j]].Time) })
	by := map[string][]int{}
	for _, i := range order {
		ep := b.Scrapes[i].Endpoint
		by[ep] = append(by[ep], i)
	}
	return by
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// pairs picks each endpoint's two scrapes; cur is -1 with fewer than two.
func (b *Bundle) pairs(span time.Duration) map[string]pair {
	by := b.byEndpoint()
	out := make(map[string]pair, len(by))
	for ep, idx := range by {
		if len(idx) < 2 {
			out[ep] = pair{base: -1, cur: -1}
			continue
		}
		cur := idx[len(idx)-1]
		p := pair{base: idx[0], cur: cur}
		// The newest scrape at least span before cur: the times are sorted.
		at := sort.Search(len(idx)-1, func(k int) bool { return b.Scrapes[cur].Time.Sub(b.Scrapes[idx[k]].Time) < span })
		if at > 0 {
			p.base = idx[at-1]
		}
		out[ep] = p
	}
	return out
}

// parse parses the needed scrapes, from memory or streamed from the bundle's file.
func (b *Bundle) parse(ctx context.Context, need map[int]bool, keep func(int, scrape.Snapshot, error)) error {
	if b.file == "" || b.loaded() {
		for i := range need {
			if err := ctx.Err(); err != nil {
				return err
			}
			s, err := scrape.Parse(bytes.NewReader(b.Scrapes[i].Body))
			keep(i, s, err)
		}
		return nil
	}
	want := b.byFile(need)
	err := scanFile(ctx, b.file, func(name string, _ int64, r io.Reader) error {
		idx, ok := want[name]
		if !ok {
			return nil
		}
		s, err := scrape.Parse(r)
		if e := ctx.Err(); e != nil {
			return e
		}
		for _, i := range idx {
			keep(i, s, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bundle %s: %w", untrusted.Text(b.file), err)
	}
	return nil
}

// loaded is whether Read loaded the bodies.
func (b *Bundle) loaded() bool {
	for _, s := range b.Scrapes {
		if s.Body != nil {
			return true
		}
	}
	return false
}
