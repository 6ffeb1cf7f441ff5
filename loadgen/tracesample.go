package loadgen

import (
	"fmt"
	"io"
	"math/rand/v2"
)

// TraceSample is a Workload of entries drawn from a trace: the trace's lengths (and hash
// ids) sent at the Runner's own pace, as vllm bench serve --dataset-name burstgpt sends them
// (it samples rows and ignores their timestamps). It holds the entries, not their prompts:
// Prompt builds the text when asked, a pure function of i, safe for concurrent use.
type TraceSample struct {
	name    string
	entries []TraceEntry
	build   func(index int, e TraceEntry) Prompt
}

// SampleTrace reads the whole trace once and keeps n entries drawn uniformly without
// replacement (reservoir sampling: memory for n entries, whatever the file's size), in a
// random order fixed by seed; n <= 0 keeps every entry in file order. Prompt(i) cycles when
// asked for more than were kept (vLLM samples with replacement then). Malformed lines end
// the read with their error unless skipMalformed; then they are passed to onSkip.
func SampleTrace(r TraceReader, name string, n int, seed int64, build func(index int, e TraceEntry) Prompt, skipMalformed bool, onSkip func(error)) (*TraceSample, error) {
	s := &TraceSample{name: name, build: build}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5a3b1e))
	seen := 0
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if skipMalformed && IsTraceLineError(err) {
				if onSkip != nil {
					onSkip(err)
				}
				continue
			}
			return nil, err
		}
		switch {
		case n <= 0 || len(s.entries) < n:
			s.entries = append(s.entries, e)
		default:
			if j := rng.IntN(seen + 1); j < n {
				s.entries[j] = e
			}
		}
		seen++
	}
	if len(s.entries) == 0 {
		return nil, fmt.Errorf("%s has no usable requests (%d read)", name, seen)
	}
	if n > 0 {
		rng.Shuffle(len(s.entries), func(i, j int) { s.entries[i], s.entries[j] = s.entries[j], s.entries[i] })
	}
	return s, nil
}

// Name describes the workload.
func (s *TraceSample) Name() string { return fmt.Sprintf("%s (%d requests)", s.name, len(s.entries)) }

// Len is the number of entries kept.
func (s *TraceSample) Len() int { return len(s.entries) }

// Entry is the i-th entry, cycling.
func (s *TraceSample) Entry(i int) TraceEntry { return s.entries[i%len(s.entries)] }

// Prompt is the i-th request's prompt.
func (s *TraceSample) Prompt(i int) Prompt { return s.build(i, s.Entry(i)) }
