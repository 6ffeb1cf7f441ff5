package scrape_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vllmtop/vllmtop/scrape"
)

func TestBackoff(t *testing.T) {
	fail := errors.New("text format parsing error")
	b := scrape.Backoff{Interval: time.Second, Max: 10 * time.Second}
	var got []time.Duration
	for _, err := range []error{nil, fail, fail, fail, fail, fail, fail, nil, fail} {
		got = append(got, b.Next(err))
	}
	s := time.Second
	assert.Equal(t, []time.Duration{s, s, 2 * s, 4 * s, 8 * s, 10 * s, 10 * s, s, s}, got)

	d := scrape.Backoff{Interval: 2 * time.Second}
	for range 100 {
		d.Next(fail)
	}
	assert.Equal(t, scrape.DefaultBackoffMax, d.Next(fail), "the default cap")
	slow := scrape.Backoff{Interval: time.Minute}
	slow.Next(fail)
	assert.Equal(t, time.Minute, slow.Next(fail), "never below the interval")
}
