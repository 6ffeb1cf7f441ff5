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
// between the two (a restart is the last one in the span, or the bisection finds the
// newest). A window of one scrape has no rates, as before.
func (b *Bundle) sinceRestart(ctx context.Context, out []EndpointWindow, pairs map[string]pair) error {
	type search struct {
		w      *EndpointWindow
		idx    []int // the endpoint's scrapes after the old base, oldest first, the last cur
		lo, hi int   // idx[lo] is across the restart from cur, idx[hi] is not
	}
	var todo []*search
	by := b.byEndpoint()
	for i := range out {
		w := &out[i]
		if !w.OK || !w.Window.Restarted {
			continue
		}
		p := pairs[w.Endpoint]
		idx := by[w.Endpoint]
		from := slices.Index(idx, p.base)
		to := slices.Index(idx, p.cur)
		if from < 0 || to <= from {
			continue
		}
		todo = append(todo, &search{w: w, idx: idx[from : to+1], lo: 0, hi: to - from})
	}
	for {
		need := map[int]bool{}
		for _, s := range todo {
			if s.hi-s.lo > 1 {
				need[s.idx[(s.lo+s.hi)/2]] = true
			}
		}
		if len(need) == 0 {
			break
		}
		snaps := map[int]scrape.Snapshot{}
		bad := map[int]bool{}
		if err := b.parse(ctx, need, func(i int, s scrape.Snapshot, err error) {
			s.Unmapped, s.Time = nil, b.Scrapes[i].Time
			snaps[i], bad[i] = s, err != nil
		}); err != nil {
			return err
		}
		for _, s := range todo {
			if s.hi-s.lo <= 1 {
				continue
			}
			mid := (s.lo + s.hi) / 2
			m := snaps[s.idx[mid]]
			if bad[s.idx[mid]] || scrape.Compare(&m, &s.w.Cur).Restarted {
				s.lo = mid
			} else {
				s.hi = mid
			}
		}
	}
	for _, s := range todo {
		if s.hi == len(s.idx)-1 {
			continue // the restart came right before the last scrape: no window after it
		}
		need := map[int]bool{s.idx[s.hi]: true}
		var base scrape.Snapshot
		var perr error
		if err := b.parse(ctx, need, func(i int, snap scrape.Snapshot, err error) {
			snap.Unmapped, snap.Time = nil, b.Scrapes[i].Time
			base, perr = snap, err
		}); err != nil {
			return err
		}
		if perr != nil {
			continue
		}
		if w := scrape.Compare(&base, &s.w.Cur); !w.Restarted {
			w.SinceRestart = true
			s.w.Window = w
		}
	}
	return nil
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
