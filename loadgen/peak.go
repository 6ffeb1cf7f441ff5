package loadgen

import (
	"cmp"
	"slices"
	"time"
)

// spans are the successful requests' times in flight, for the exact peak of requests in
// flight (16 bytes a request, kept also past the Tally's bound of exact timings).
type spans []span

// span is one request in flight over [from, to): sent at from, its last token at to.
type span struct{ from, to int64 }

// add notes a request sent at start whose last token came at end.
func (s *spans) add(start, end time.Time) {
	*s = append(*s, span{start.UnixNano(), end.UnixNano()})
}

// peak is the most requests in flight at once, as current vLLM counts it: a sweep over the
// half-open spans, an end before a start at the same instant. It never passes the concurrency
// cap, as the one-second bins of older vLLM did.
func (s spans) peak() int {
	type edge struct {
		at    int64
		delta int
	}
	edges := make([]edge, 0, 2*len(s))
	for _, sp := range s {
		edges = append(edges, edge{sp.from, 1}, edge{sp.to, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
	})
	n, top := 0, 0
	for _, e := range edges {
		n += e.delta
		top = max(top, n)
	}
	return top
}
