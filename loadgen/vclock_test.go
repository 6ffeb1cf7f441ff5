package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A VirtualClock moves only inside Wait: to the earliest timer due by until (timers of one time
// in the order they were set), then to until itself; a wake ends the wait where the clock is;
// idle work runs before time moves; a post from another goroutine runs on the waiting one.
func TestVirtualClockRunsTimersInOrderWhenWaited(t *testing.T) {
	t0 := time.Unix(1000, 0).UTC()
	c := NewVirtualClock(t0)
	wake := make(chan struct{}, 1)
	var order []string
	at := func(d time.Duration, name string) {
		c.At(t0.Add(d), func() { order = append(order, name+"@"+c.Now().Sub(t0).String()) })
	}
	at(20*time.Millisecond, "b")
	at(10*time.Millisecond, "a")
	at(20*time.Millisecond, "c")
	idle := 0
	c.OnIdle(func() { idle++ })

	assert.Equal(t, t0, c.Now(), "setting timers moves nothing")
	require.NoError(t, c.Wait(context.Background(), t0.Add(15*time.Millisecond), wake))
	assert.Equal(t, []string{"a@10ms"}, order)
	assert.Equal(t, t0.Add(15*time.Millisecond), c.Now(), "then on to until")
	assert.Positive(t, idle, "idle work runs before the clock moves")

	c.At(t0.Add(20*time.Millisecond), func() { wake <- struct{}{} })
	require.NoError(t, c.Wait(context.Background(), time.Time{}, wake))
	assert.Equal(t, []string{"a@10ms", "b@20ms", "c@20ms"}, order, "a wake ends the wait where the clock is")
	assert.Equal(t, t0.Add(20*time.Millisecond), c.Now())

	go c.Post(func() { wake <- struct{}{} })
	require.NoError(t, c.Wait(context.Background(), time.Time{}, wake), "with nothing due, a post is waited for")
	assert.Equal(t, t0.Add(20*time.Millisecond), c.Now(), "and time stands still")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, c.Wait(ctx, time.Time{}, wake), context.Canceled)
}
