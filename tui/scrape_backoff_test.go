package tui

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A server whose scrapes keep failing is scraped less and less often, up to 8 intervals
// apart, and says when it is tried next; a good scrape brings the interval back.
func TestScrapesOfAFailingServerBackOff(t *testing.T) {
	d := sized(t)
	fail := errors.New("not Prometheus text: text format parsing error in line 2")
	var waits []time.Duration
	for range 6 {
		d.m.scraped(scrapeResultMsg{err: fail})
		waits = append(waits, d.m.nextScrape(fail))
	}
	s := d.m.c.deps.ScrapeInterval
	assert.Equal(t, []time.Duration{s, 2 * s, 4 * s, 8 * s, 8 * s, 8 * s}, waits)
	assert.Contains(t, d.m.c.s.srvErr, "parsing error")
	assert.Contains(t, d.m.c.s.srvErr, "next try in")
	assert.Equal(t, s, d.m.nextScrape(nil))
}
