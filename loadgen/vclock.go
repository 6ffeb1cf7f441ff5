package loadgen

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the time a Runner schedules on: real time by default, or a VirtualClock, on which
// a simulated server runs without anything sleeping. The Runner alone calls Wait, from the
// goroutine that runs it; Now is safe from any goroutine.
type Clock interface {
	Now() time.Time
	// Wait returns when wake delivers, when the clock reaches until (zero: no time bound), or
	// with ctx's error when ctx ends first.
	Wait(ctx context.Context, until time.Time, wake <-chan struct{}) error
}

// wallClock is real time; tests replace now and after.
type wallClock struct {
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

func newWallClock() wallClock { return wallClock{now: time.Now, after: time.After} }

func (c wallClock) Now() time.Time { return c.now() }

func (c wallClock) Wait(ctx context.Context, until time.Time, wake <-chan struct{}) error {
	var timer <-chan time.Time
	if !until.IsZero() {
		d := until.Sub(c.now())
		if d <= 0 {
			return ctx.Err()
		}
		timer = c.after(d)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
	case <-timer:
	}
	return nil
}

// VirtualClock is simulated time: it stands still while the Runner works and, when the
// Runner waits, jumps to the earliest timer due (a transport's, such as a simulated engine's
// next step end) and runs it on the Runner's goroutine, or to the Runner's own wake-up time.
// At, OnIdle and the timers' functions belong to that goroutine; Now and Post are safe from
// any.
type VirtualClock struct {
	now    atomic.Int64 // unix nanoseconds
	timers timerHeap
	seq    int
	idle   []func()

	mu     sync.Mutex
	posted []func()
	poke   chan struct{}
}

// NewVirtualClock starts a clock at start.
func NewVirtualClock(start time.Time) *VirtualClock {
	c := &VirtualClock{poke: make(chan struct{}, 1)}
	c.now.Store(start.UnixNano())
	return c
}

// Now is the clock's time.
func (c *VirtualClock) Now() time.Time { return time.Unix(0, c.now.Load()).UTC() }

// At runs f when the clock reaches t (at once, on the next wait, if t has passed). Timers of
// the same time run in the order they were set.
func (c *VirtualClock) At(t time.Time, f func()) {
	c.seq++
	heap.Push(&c.timers, vtimer{at: t.UnixNano(), seq: c.seq, f: f})
}

// OnIdle runs f each time the Runner waits, before the clock moves: a simulated engine
// starts its next step there, once everything due at this moment has reached it.
func (c *VirtualClock) OnIdle(f func()) { c.idle = append(c.idle, f) }

// Post runs f on the Runner's goroutine at its next wait (a context's cancel, say).
func (c *VirtualClock) Post(f func()) {
	c.mu.Lock()
	c.posted = append(c.posted, f)
	c.mu.Unlock()
	select {
	case c.poke <- struct{}{}:
	default:
	}
}

func (c *VirtualClock) runPosted() {
	c.mu.Lock()
	fs := c.posted
	c.posted = nil
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Wait runs what is due until the Runner has something to do: wake delivers (a request
// ended, a setting changed), or until is reached. With nothing scheduled it blocks until
// another goroutine posts or wakes, or ctx ends.
func (c *VirtualClock) Wait(ctx context.Context, until time.Time, wake <-chan struct{}) error {
	for {
		c.runPosted()
		select {
		case <-wake:
			return nil
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		now := c.now.Load()
		if !until.IsZero() && until.UnixNano() <= now {
			return nil
		}
		for _, f := range c.idle {
			f()
		}
		select {
		case <-wake: // the idle work ended a request
			return nil
		default:
		}
		if len(c.timers) > 0 && (until.IsZero() || c.timers[0].at <= until.UnixNano()) {
			t := heap.Pop(&c.timers).(vtimer)
			c.now.Store(max(now, t.at))
			t.f()
			continue
		}
		if !until.IsZero() {
			c.now.Store(until.UnixNano())
			return nil
		}
		select {
		case <-wake:
			return nil
		case <-c.poke:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type vtimer struct {
	at  int64
	seq int
	f   func()
}

type timerHeap []vtimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(vtimer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
