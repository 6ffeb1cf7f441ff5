package loadgen

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockWords splits a prompt into its words, then into blocks of size words.
func blockWords(text string, size int) [][]string {
	words := strings.Fields(text)
	var blocks [][]string
	for len(words) > 0 {
		n := min(size, len(words))
		blocks = append(blocks, words[:n])
		words = words[n:]
	}
	return blocks
}

func TestTracePromptsHaveTheTracesLengths(t *testing.T) {
	v := EstimatedVocab() // one token a word, one BOS
	p := NewTracePrompts(v, TracePromptConfig{IgnoreEOS: true, Seed: 3})
	cases := []struct {
		name      string
		e         TraceEntry
		words     int
		ignoreEOS bool
	}{
		{"full blocks", TraceEntry{InputLen: 1024, OutputLen: 52, HashIDs: []int64{46, 47}}, 1023, true},
		{"a partial last block", TraceEntry{InputLen: 655, OutputLen: 5, HashIDs: []int64{46, 47}}, 654, true},
		{"one token past a block", TraceEntry{InputLen: 513, OutputLen: 1, HashIDs: []int64{1, 2}}, 512, true},
		{"no hash ids (BurstGPT)", TraceEntry{InputLen: 472, OutputLen: 18}, 471, true},
		{"shorter than the overhead", TraceEntry{InputLen: 1, OutputLen: 3}, 1, true},
		{"no output length: the server decides", TraceEntry{InputLen: 100}, 99, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pr := p.Prompt(0, tc.e)
			assert.Len(t, strings.Fields(pr.Text), tc.words)
			assert.Equal(t, tc.words+v.Overhead, pr.InputTokens)
			assert.Equal(t, tc.e.OutputLen, pr.OutputTokens)
			assert.Equal(t, tc.ignoreEOS, pr.IgnoreEOS)
			assert.NotContains(t, pr.Text, "  ")
			assert.Equal(t, strings.TrimSpace(pr.Text), pr.Text)
		})
	}
	text := p.Prompt(0, TraceEntry{Text: "Summarise the incident reports.", OutputLen: 60})
	assert.Equal(t, "Summarise the incident reports.", text.Text, "AIPerf's text_input is sent as written")
	assert.Equal(t, 60, text.OutputTokens)
	assert.Positive(t, text.InputTokens)
}

func TestEqualHashIDsGiveEqualBlocks(t *testing.T) {
	v := &Vocab{Words: EstimatedVocab().Words} // no overhead: words are tokens
	p := NewTracePrompts(v, TracePromptConfig{Seed: 1})
	a := blockWords(p.Prompt(0, TraceEntry{InputLen: 1536, HashIDs: []int64{0, 1, 2}}).Text, 512)
	b := blockWords(p.Prompt(1, TraceEntry{InputLen: 1100, HashIDs: []int64{0, 1, 3}}).Text, 512)
	c := blockWords(p.Prompt(2, TraceEntry{InputLen: 1300, HashIDs: []int64{1, 4, 2}}).Text, 512)
	require.Len(t, a, 3)
	require.Len(t, b, 3)
	assert.Equal(t, a[0], b[0], "shared id 0")
	assert.Equal(t, a[1], b[1], "shared id 1")
	assert.NotEqual(t, a[2][0], b[2][0], "ids 2 and 3 differ from the first token of their block")
	assert.Len(t, b[2], 1100-1024, "the last block is cut to input_length")
	assert.Equal(t, a[1], c[0], "id 1 gives the same block wherever it stands")
	assert.Equal(t, a[2][:276], c[2], "a partial block is the start of the full one")

	// Ids equal modulo the vocabulary share the first word, and differ within the first few.
	n := int64(len(v.Words))
	x := blockWords(p.Prompt(0, TraceEntry{InputLen: 512, HashIDs: []int64{5}}).Text, 512)[0]
	y := blockWords(p.Prompt(0, TraceEntry{InputLen: 512, HashIDs: []int64{5 + n}}).Text, 512)[0]
	assert.Equal(t, x[0], y[0])
	assert.NotEqual(t, x[1], y[1])
	assert.Equal(t, int(math.Ceil(32/math.Log2(float64(n)))), p.digits, "ids below 2^32 take this many words")
	assert.LessOrEqual(t, p.digits, 5, "far fewer than a server block of 16 tokens")

	// Far-apart ids (a trace's millions of blocks) still differ early; the rest is seeded.
	for _, id := range []int64{1 << 20, 1<<31 + 7, -3} {
		w := blockWords(p.Prompt(0, TraceEntry{InputLen: 512, HashIDs: []int64{id}}).Text, 512)[0]
		assert.NotEqual(t, x[:p.digits], w[:p.digits], "id %d", id)
	}
	other := NewTracePrompts(v, TracePromptConfig{Seed: 2})
	z := blockWords(other.Prompt(0, TraceEntry{InputLen: 512, HashIDs: []int64{5}}).Text, 512)[0]
	assert.Equal(t, x[:p.digits], z[:p.digits])
	assert.NotEqual(t, x[p.digits:], z[p.digits:], "another seed, other words after the id")
	assert.Equal(t, p.Prompt(9, TraceEntry{InputLen: 700, HashIDs: []int64{8, 9}}), p.Prompt(9, TraceEntry{InputLen: 700, HashIDs: []int64{8, 9}}))
}

func TestPromptsWithoutHashIDsShareNothing(t *testing.T) {
	v := &Vocab{Words: EstimatedVocab().Words}
	p := NewTracePrompts(v, TracePromptConfig{Seed: 1})
	seen := map[string]int{}
	for i := range 200 {
		w := strings.Fields(p.Prompt(i, TraceEntry{InputLen: 64}).Text)
		key := strings.Join(w[:16], " ") // one server block
		if j, ok := seen[key]; ok {
			t.Fatalf("prompts %d and %d share their first 16 tokens", j, i)
		}
		seen[key] = i
	}
	assert.Equal(t, p.Prompt(7, TraceEntry{InputLen: 64}), p.Prompt(7, TraceEntry{InputLen: 64}), "a pure function of the index")
}

func BenchmarkTracePrompt(b *testing.B) {
	p := NewTracePrompts(EstimatedVocab(), TracePromptConfig{})
	e := TraceEntry{InputLen: 8192, OutputLen: 100, HashIDs: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}
	for i := 0; b.Loop(); i++ {
		_ = p.Prompt(i, e)
	}
}
