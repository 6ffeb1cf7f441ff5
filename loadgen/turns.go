package loadgen

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// TurnGroups compares the first turns of a multi-turn run with every later turn: turn 1
// computes its whole prompt, later turns find their history in the server's prefix cache.
// Each Summary covers its turns only (Duration unset).
type TurnGroups struct {
	First, Later Summary
}

// turnTally splits a run's results by turn into two bounded Tallies.
type turnTally struct {
	first, later *Tally // each safe for concurrent use
}

func newTurnTally() *turnTally {
	return &turnTally{first: NewTally(Goodput{}), later: NewTally(Goodput{})}
}

func (t *turnTally) Add(r Result) {
	switch {
	case r.Turn == 1:
		t.first.Add(r)
	case r.Turn > 1:
		t.later.Add(r)
	}
}

func (t *turnTally) groups() *TurnGroups {
	ps := []float64{50, 99}
	return &TurnGroups{First: t.first.Summary(0, ps), Later: t.later.Summary(0, ps)}
}

// meanPrompt is the mean prompt length of a group's successful requests.
func meanPrompt(s Summary) float64 {
	if s.Completed == 0 {
		return 0
	}
	return float64(s.TotalInputTokens) / float64(s.Completed)
}

// PrintTurns writes the small "Multi-turn" table that follows vLLM's result table: TTFT
// median and 99th percentile, mean prompt tokens and count, for turn 1 and for turns 2+.
func PrintTurns(w io.Writer, g TurnGroups) error {
	var b bytes.Buffer
	b.WriteString(center(" Multi-turn ", '=', tableWidth) + "\n")
	fmt.Fprintf(&b, "%-14s %10s %10s %12s %10s\n", "", "TTFT p50", "TTFT p99", "prompt tok", "count")
	row := func(name string, s Summary) {
		if s.Completed == 0 { // no such turn finished: nothing measured, not a latency of 0
			fmt.Fprintf(&b, "%-14s %10s %10s %12s %10s\n", name, "--", "--", "--", "0")
			return
		}
		fmt.Fprintf(&b, "%-14s %10s %10s %12s %10s\n", name, fixed2(s.TTFT.Median), fixed2(s.TTFT.Percentiles[99]),
			strconv.FormatFloat(meanPrompt(s), 'f', 0, 64), strconv.Itoa(s.Completed))
	}
	row("turn 1 (ms)", g.First)
	row("turns 2+ (ms)", g.Later)
	return endTable(w, &b, tableWidth)
}

// turnFields are a multi-turn run's keys in its result document.
func turnFields(g TurnGroups) []Field {
	var out []Field
	for _, grp := range []struct {
		prefix string
		s      Summary
	}{{"turn1", g.First}, {"later_turns", g.Later}} {
		out = append(out,
			Field{grp.prefix + "_completed", grp.s.Completed},
			Field{grp.prefix + "_mean_prompt_tokens", PyFloat(meanPrompt(grp.s))},
			Field{grp.prefix + "_mean_ttft_ms", PyFloat(grp.s.TTFT.Mean)},
			Field{grp.prefix + "_median_ttft_ms", PyFloat(grp.s.TTFT.Median)},
			Field{grp.prefix + "_p99_ttft_ms", PyFloat(grp.s.TTFT.Percentiles[99])})
	}
	return out
}
