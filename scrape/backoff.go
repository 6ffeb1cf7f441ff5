package scrape

import "time"

// DefaultBackoffMax is the longest wait between two scrapes of an endpoint that keeps
// failing.
const DefaultBackoffMax = 30 * time.Second

// Backoff spaces the scrapes of an endpoint that keeps failing, whether the request failed
// or the body did not parse (a 10 MB body that never parses costs a core when re-read every
// second). The first failure is retried after one interval; each further failure in a row
// doubles the wait, up to Max; a good scrape resets it. The zero value needs Interval set.
type Backoff struct {
	Interval time.Duration // the wait after a good scrape
	Max      time.Duration // zero: DefaultBackoffMax (never below Interval)
	failures int
}

// Next records a scrape's outcome and returns the wait before the next one.
func (b *Backoff) Next(err error) time.Duration {
	if err == nil {
		b.failures = 0
		return b.Interval
	}
	b.failures++
	return b.Interval * time.Duration(b.Ticks())
}

// Ticks is how many intervals the next scrape waits: 1 after a good scrape or a first
// failure, then 2, 4, 8... up to Max.
func (b *Backoff) Ticks() int {
	maxWait := b.Max
	if maxWait <= 0 {
		maxWait = DefaultBackoffMax
	}
	limit := 1
	if b.Interval > 0 {
		limit = max(1, int(maxWait/b.Interval))
	}
	n := 1
	for i := 1; i < b.failures && n < limit; i++ {
		n *= 2
	}
	return min(n, limit)
}

// Failures is how many scrapes in a row have failed.
func (b *Backoff) Failures() int { return b.failures }
