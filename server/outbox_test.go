package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// receive reads from o until it is closed or the deadline passes.
func receiveAll(t *testing.T, o *outbox) []Event {
	t.Helper()
	var got []Event
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-o.out:
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-deadline:
			t.Fatal("the outbox did not close")
			return nil
		}
	}
}

func TestOutboxSlowConsumerLosesLinesNotStateChanges(t *testing.T) {
	o := newOutbox(10, 100)
	// Nobody reads while 5000 lines, 50 parsed events and 3 state changes arrive: no call
	// blocks.
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.state(StateChanged{State: Starting})
		for i := 1; i <= 5000; i++ {
			o.line(Line{Seq: uint64(i)})
			if i%100 == 0 {
				o.parsed(KVCacheSize{Tokens: i})
			}
			if i == 2500 {
				o.state(StateChanged{State: Ready})
			}
		}
		o.state(StateChanged{State: Exited})
		o.close()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("producers blocked on a consumer that does not read")
	}

	got := receiveAll(t, o)
	var states []State
	var parsed, delivered int
	var dropped uint64
	lastSeq := uint64(0)
	for _, ev := range got {
		switch e := ev.(type) {
		case StateChanged:
			states = append(states, e.State)
		case KVCacheSize:
			parsed++
		case LogBatch:
			dropped += e.Dropped
			delivered += len(e.Lines)
			for _, l := range e.Lines {
				assert.Greater(t, l.Seq, lastSeq, "lines stay in order")
				lastSeq = l.Seq
			}
		}
	}
	assert.Equal(t, []State{Starting, Ready, Exited}, states, "every state change arrives, in order")
	assert.Equal(t, 5000, delivered+int(dropped), "every line is delivered or counted as dropped")
	assert.LessOrEqual(t, delivered, 200, "at most the pending limit (plus the batch on offer) waits")
	assert.Equal(t, uint64(5000), lastSeq, "the newest lines are kept")
	assert.Equal(t, 10, parsed)
	lines, events := o.dropped()
	assert.Equal(t, dropped, lines)
	assert.Equal(t, uint64(40), events)
}

func TestOutboxKeepingUpLosesNothing(t *testing.T) {
	o := newOutbox(10, 100)
	got := make(chan []Event)
	go func() {
		var evs []Event
		for ev := range o.out {
			evs = append(evs, ev)
		}
		got <- evs
	}()
	for i := 1; i <= 1000; i++ {
		o.line(Line{Seq: uint64(i)})
		if i%10 == 0 {
			// Pace the producer below the consumer's speed: wait until the batch is taken.
			require.Eventually(t, func() bool {
				o.mu.Lock()
				defer o.mu.Unlock()
				return len(o.lines) == 0
			}, 5*time.Second, time.Millisecond)
		}
	}
	o.state(StateChanged{State: Exited})
	o.close()
	var n int
	var dropped uint64
	for _, ev := range <-got {
		if b, ok := ev.(LogBatch); ok {
			n += len(b.Lines)
			dropped += b.Dropped
		}
	}
	assert.Equal(t, 1000, n)
	assert.Zero(t, dropped)
}
