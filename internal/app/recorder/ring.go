// Package recorder is the flight recorder: it keeps the last minutes of raw scrapes in a
// bounded ring, and writes one bundle (.tar.gz) of everything needed to look at an incident
// later: those scrapes, the client's samples and canary probes, the server log's tail, the
// settings (secrets removed), the verdicts, and a README line saying what is in it. Read
// opens a bundle again, and Replay runs its scrapes through package scrape, so the same
// tables can be shown from a bundle as from a live server.
//
// Write is a plain function of a Bundle (a copy of the data), meant to run off the UI's
// goroutine; Ring is safe for concurrent use.
package recorder

import (
	"sort"
	"sync"
	"time"
)

// Scrape is one raw /metrics body as an endpoint sent it.
type Scrape struct {
	Endpoint string    `json:"endpoint"`
	Time     time.Time `json:"time"`
	Body     []byte    `json:"-"`
	file     string    // its entry in a bundle being read
	seq      uint64    // the order it was added to a Ring
}

// Defaults of a Ring.
const (
	DefaultMaxAge   = 10 * time.Minute
	DefaultMaxBytes = 64 << 20
	DefaultEvery    = 5 * time.Second
)

// Ring keeps raw scrapes: none older than MaxAge, at most MaxBytes of bodies in all, and
// per endpoint at most one every Every. Past MaxBytes the endpoint holding the most bytes
// loses its oldest scrape, so each endpoint keeps its most recent scrapes within a fair
// share: one endpoint's huge bodies cannot push the others out. An endpoint keeps its
// newest scrape while another has more than one.
type Ring struct {
	maxAge   time.Duration
	maxBytes int
	every    time.Duration

	mu    sync.Mutex
	eps   map[string]*endpointRing
	bytes int
	n     int
	seq   uint64
	last  map[string]time.Time
}

// endpointRing is one endpoint's scrapes, oldest first.
type endpointRing struct {
	items []Scrape
	bytes int
}

// NewRing makes a ring; zero values take the defaults, a negative every keeps every scrape.
func NewRing(maxAge time.Duration, maxBytes int, every time.Duration) *Ring {
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if every == 0 {
		every = DefaultEvery
	}
	return &Ring{maxAge: maxAge, maxBytes: maxBytes, every: every, eps: map[string]*endpointRing{}, last: map[string]time.Time{}}
}

// Add keeps a body (it is not copied: the caller must not change it afterwards). Its
// signature fits fleet.DirectConfig.Tap.
func (r *Ring) Add(endpoint string, at time.Time, body []byte) {
	if len(body) > r.maxBytes {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.last[endpoint]; ok && r.every > 0 && at.Sub(last) < r.every {
		return
	}
	r.last[endpoint] = at
	e := r.eps[endpoint]
	if e == nil {
		e = &endpointRing{}
		r.eps[endpoint] = e
	}
	r.seq++
	e.items = append(e.items, Scrape{Endpoint: endpoint, Time: at, Body: body, seq: r.seq})
	e.bytes += len(body)
	r.bytes += len(body)
	r.n++
	r.trim(at)
}

// trim drops what is too old, then the oldest scrape of the heaviest endpoint until the
// bodies fit.
func (r *Ring) trim(now time.Time) {
	for _, e := range r.eps {
		drop := 0
		for drop < len(e.items) && now.Sub(e.items[drop].Time) > r.maxAge {
			drop++
		}
		r.drop(e, drop)
	}
	for r.bytes > r.maxBytes {
		e := r.heaviest(2)
		if e == nil {
			e = r.heaviest(1)
		}
		r.drop(e, 1)
	}
	for ep, e := range r.eps {
		if len(e.items) == 0 {
			delete(r.eps, ep)
		}
	}
}

// heaviest is the endpoint holding the most bytes among those with at least min scrapes;
// of equals, the one with the oldest scrape.
func (r *Ring) heaviest(min int) *endpointRing {
	var top *endpointRing
	for _, e := range r.eps {
		if len(e.items) < min {
			continue
		}
		if top == nil || e.bytes > top.bytes || (e.bytes == top.bytes && e.items[0].seq < top.items[0].seq) {
			top = e
		}
	}
	return top
}

// drop removes an endpoint's n oldest scrapes.
func (r *Ring) drop(e *endpointRing, n int) {
	if n == 0 {
		return
	}
	for _, s := range e.items[:n] {
		e.bytes -= len(s.Body)
		r.bytes -= len(s.Body)
	}
	r.n -= n
	clear(e.items[:n])
	e.items = append(e.items[:0], e.items[n:]...)
}

// Snapshot copies the scrapes of the last span (all kept when span ≤ 0), oldest first (in
// the order they were added). The bodies are shared, not copied: they are never changed.
func (r *Ring) Snapshot(now time.Time, span time.Duration) []Scrape {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Scrape, 0, r.n)
	for _, e := range r.eps {
		for _, s := range e.items {
			if span <= 0 || now.Sub(s.Time) <= span {
				out = append(out, s)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// Len is how many scrapes are kept, and their bytes.
func (r *Ring) Len() (n, bytes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.bytes
}
