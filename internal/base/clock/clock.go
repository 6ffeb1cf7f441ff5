// Package clock is the time the simulator's engine and loadgen's trace replay run on: the wall
// clock when serving or sending, a fake one in tests (the simulator's VirtualClock). It imports
// nothing of vllmtop's, so both can use it.
package clock

import (
	"context"
	"time"
)

// Clock lets time pass: Now, and a wait until a moment.
type Clock interface {
	Now() time.Time
	// SleepUntil returns when the clock reaches t, or with ctx's error if ctx ends first.
	SleepUntil(ctx context.Context, t time.Time) error
}

// Wall is real time.
type Wall struct{}

// Now returns time.Now().
func (Wall) Now() time.Time { return time.Now() }

// SleepUntil waits on one timer until t.
func (Wall) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
