package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// run drives an engine in virtual time with a closed-loop client: up to conc requests in
// flight, a new one submitted the moment one finishes, total requests in all.
type run struct {
	e        *Engine
	now      time.Time
	done     []*Sequence
	tokens   map[*Sequence][]time.Time
	steps    int
	onStep   func(step int, r *StepResult)
	keepTime bool
}

func newRun(t testing.TB, cfg Config) *run {
	s, err := Resolve(cfg, nil)
	require.NoError(t, err)
	return &run{e: NewEngine(s), now: t0, tokens: map[*Sequence][]time.Time{}, keepTime: true}
}

func (h *run) closedLoop(t testing.TB, total, conc int, mk func(i int) Request) {
	submitted, inflight := 0, 0
	for {
		for inflight < conc && submitted < total {
			r := mk(submitted)
			r.Arrival = h.now
			_, err := h.e.Add(r)
			require.NoError(t, err)
			submitted++
			inflight++
		}
		r := h.e.Step(h.now)
		if r.Idle {
			if r.NextReady.IsZero() {
				require.Zero(t, inflight, "idle engine with requests in flight")
				return
			}
			h.now = r.NextReady
			continue
		}
		h.steps++
		if h.onStep != nil {
			h.onStep(h.steps, r)
		}
		h.now = r.End
		if h.keepTime {
			for _, o := range r.Outputs {
				h.tokens[o.Seq] = append(h.tokens[o.Seq], r.End)
			}
		}
		for _, s := range r.Finished {
			h.done = append(h.done, s)
			inflight--
		}
	}
}

func fixedPrompt(n, salt int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = 5000 + (i*7+salt*131)%90000
	}
	return p
}
