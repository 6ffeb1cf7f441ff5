package clock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWallSleepUntil(t *testing.T) {
	var c Clock = Wall{}
	ctx, cancel := context.WithCancel(context.Background())
	assert.NoError(t, c.SleepUntil(ctx, c.Now().Add(-time.Second)), "a moment past returns at once")
	cancel()
	assert.ErrorIs(t, c.SleepUntil(ctx, c.Now().Add(time.Hour)), context.Canceled, "an ended context ends the wait")
	assert.ErrorIs(t, c.SleepUntil(ctx, c.Now().Add(-time.Second)), context.Canceled)
}
