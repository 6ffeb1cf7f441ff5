package serve

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
)

// The API server's loop streams a step's outputs in chunks of sim.OutputChunk: each chunk
// reaches its streams when the loop is done with it, and an aborted stream gets nothing more.
func TestDriverStreamsOutputsChunkByChunk(t *testing.T) {
	clock := sim.NewVirtualClock(t0)
	d := newDriver(nil, clock)
	streams := make([]*stream, sim.OutputChunk+2)
	for i := range streams {
		streams[i] = newStream()
		d.pending = append(d.pending, delivery{streams[i], event{token: i}})
	}
	rec := &recordingObserver{clock: clock}
	d.observers = append(d.observers, rec)
	done := &sim.Sequence{}
	start, each := t0.Add(5*time.Millisecond), 100*time.Microsecond
	d.streamLater(start, each, &sim.StepResult{Finished: []*sim.Sequence{done}})
	d.pending = d.pending[:0] // the next step reuses it
	require.Len(t, d.later, 2)
	first := start.Add(sim.OutputChunk * each)
	assert.Equal(t, first, d.later[0].at)
	assert.Equal(t, first.Add(2*each), d.later[1].at)

	ctx := context.Background()
	require.NoError(t, d.deliverDue(ctx, first))
	assert.Equal(t, first, clock.Now(), "the driver waited for the chunk")
	assert.Equal(t, []time.Time{first}, rec.steps, "the step is observed with its first chunk, once")
	assert.Equal(t, []time.Time{first}, rec.ended, "and the request it finished")
	assert.Len(t, streams[0].drain(nil), 1)
	assert.Len(t, streams[sim.OutputChunk-1].drain(nil), 1)
	assert.Empty(t, streams[sim.OutputChunk].drain(nil), "the second chunk is not done yet")

	streams[sim.OutputChunk].aborted = true
	require.NoError(t, d.deliverDue(ctx, first.Add(time.Second)))
	assert.Equal(t, first.Add(2*each), clock.Now())
	assert.Empty(t, streams[sim.OutputChunk].drain(nil), "aborted before its chunk")
	got := streams[sim.OutputChunk+1].drain(nil)
	require.Len(t, got, 1)
	assert.Equal(t, sim.OutputChunk+1, got[0].token)
	assert.Empty(t, d.later)
	assert.Len(t, rec.steps, 1)
}

// recordingObserver notes when it was handed steps and ended requests.
type recordingObserver struct {
	clock        sim.Clock
	steps, ended []time.Time
}

func (o *recordingObserver) ObserveStep(*sim.StepResult) { o.steps = append(o.steps, o.clock.Now()) }
func (o *recordingObserver) ObserveEnded(*sim.Sequence)  { o.ended = append(o.ended, o.clock.Now()) }
