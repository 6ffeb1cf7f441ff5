package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func addPriority(t *testing.T, e *Engine, seed, priority int, at time.Time) *Sequence {
	t.Helper()
	s, err := e.Add(Request{Prompt: fixedPrompt(32, seed), MaxTokens: 40, IgnoreEOS: true, Arrival: at, Priority: priority})
	require.NoError(t, err)
	return s
}

// order runs the engine on simulated time and lists the sequences by their first scheduling.
func firstScheduledOrder(t *testing.T, e *Engine, seqs []*Sequence) []int {
	t.Helper()
	_, _ = stepAll(t, e, t0.Add(time.Second), 10000)
	var order []int
	for len(order) < len(seqs) {
		best := -1
		for i, s := range seqs {
			seen := false
			for _, o := range order {
				seen = seen || o == i
			}
			if !seen && (best < 0 || s.Times.FirstScheduled.Before(seqs[best].Times.FirstScheduled)) {
				best = i
			}
		}
		order = append(order, best)
	}
	return order
}

func TestPrioritySchedulingServesLowerValuesFirst(t *testing.T) {
	// One request at a time: the queue order is the service order.
	prio := smallEngine(t, Config{MaxNumSeqs: 1, MaxNumBatchedTokens: 2048, SchedulingPolicy: PolicyPriority})
	fcfs := smallEngine(t, Config{MaxNumSeqs: 1, MaxNumBatchedTokens: 2048})
	priorities := []int{5, 1, 3, 1, -2}
	var ps, fs []*Sequence
	for i, p := range priorities {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		ps = append(ps, addPriority(t, prio, i, p, at))
		fs = append(fs, addPriority(t, fcfs, i, p, at))
	}
	assert.Equal(t, []int{4, 1, 3, 2, 0}, firstScheduledOrder(t, prio, ps), "by priority, then arrival")
	assert.Equal(t, []int{0, 1, 2, 3, 4}, firstScheduledOrder(t, fcfs, fs), "fcfs ignores priority")
}

func TestPriorityPreemptsTheLeastUrgentRequest(t *testing.T) {
	// As the fcfs preemption test, but the oldest request is the least urgent: it is the victim.
	e := smallEngine(t, Config{NumGPUBlocksOverride: 9, MaxModelLen: 128, SchedulingPolicy: PolicyPriority})
	reqs := []*Sequence{addPriority(t, e, 20, 9, t0), addPriority(t, e, 21, 0, t0), addPriority(t, e, 22, 0, t0)}
	now := t0.Add(time.Second)
	for e.HasWork() {
		r := e.Step(now)
		if r.Idle {
			now = r.NextReady
			continue
		}
		now = r.End
		if r.Preempted > 0 {
			break
		}
	}
	assert.Equal(t, 1, reqs[0].Preemptions, "priority 9 goes first")
	assert.Zero(t, reqs[1].Preemptions)
	assert.Zero(t, reqs[2].Preemptions)
	_, _ = stepAll(t, e, now, 10000)
	for _, s := range reqs {
		assert.Equal(t, 40, s.Outputs)
	}
}
