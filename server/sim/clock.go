package sim

import (
	"context"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/clock"
)

// Clock is how the engine's owner lets simulated time pass: the wall clock when serving, a
// VirtualClock in tests so thousands of requests run in milliseconds and deterministically.
type Clock = clock.Clock

// WallClock is real time.
type WallClock = clock.Wall

// VirtualClock is simulated time that moves only when told to. It is safe for concurrent use.
type VirtualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewVirtualClock returns a clock that starts at start.
func NewVirtualClock(start time.Time) *VirtualClock { return &VirtualClock{now: start} }

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// SleepUntil moves the clock forward to t at once (never backward).
func (c *VirtualClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.Set(t)
	return ctx.Err()
}

// Advance moves the clock forward by d.
func (c *VirtualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t if t is later than now.
func (c *VirtualClock) Set(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	c.mu.Unlock()
}
