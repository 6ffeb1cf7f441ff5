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
	"sync"
	"time"
)

// Scrape is one raw /metrics body as an endpoint sent it.
type Scrape struct {
	Endpoint string    `json:"endpoint"`
	Time     time.Time `json:"time"`
	Body     []byte    `json:"-"`
	file     string    // its entry in a bundle being read
}

// Defaults of a Ring.
const (
	DefaultMaxAge   = 10 * time.Minute
	DefaultMaxBytes = 64 << 20
	DefaultEvery    = 5 * time.Second
)

// Ring keeps raw scrapes: none older than MaxAge, at most MaxBytes of bodies in all (the
// oldest go first), and per endpoint at most one every Every.
type Ring struct {
	maxAge   time.Duration
	maxBytes int
	every    time.Duration

	mu    sync.Mutex
	items []Scrape // oldest first
	bytes int
	last  map[string]time.Time
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
	return &Ring{maxAge: maxAge, maxBytes: maxBytes, every: every, last: map[string]time.Time{}}
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
	r.items = append(r.items, Scrape{Endpoint: endpoint, Time: at, Body: body})
	r.bytes += len(body)
	r.trim(at)
}

func (r *Ring) trim(now time.Time) {
	drop := 0
	for drop < len(r.items) && (r.bytes > r.maxBytes || now.Sub(r.items[drop].Time) > r.maxAge) {
		r.bytes -= len(r.items[drop].Body)
		drop++
	}
	if drop > 0 {
		clear(r.items[:drop])
		r.items = append(r.items[:0], r.items[drop:]...)
	}
}

// Snapshot copies the scrapes of the last span (all kept when span ≤ 0), oldest first. The
// bodies are shared, not copied: they are never changed.
func (r *Ring) Snapshot(now time.Time, span time.Duration) []Scrape {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Scrape, 0, len(r.items))
	for _, s := range r.items {
		if span <= 0 || now.Sub(s.Time) <= span {
			out = append(out, s)
		}
	}
	return out
}

// Len is how many scrapes are kept, and their bytes.
func (r *Ring) Len() (n, bytes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.items), r.bytes
}
