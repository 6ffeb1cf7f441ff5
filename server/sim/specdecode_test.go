package sim

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAcceptanceModel(t *testing.T) {
	for _, tc := range []struct {
		k    int
		mean float64
	}{{1, 0.7}, {3, 0.6}, {5, 0.35}, {8, 0.5}} {
		a := NewAcceptance(tc.k, tc.mean)
		assert.InDelta(t, tc.mean, a.MeanRate(), 1e-9, "k=%d", tc.k)
		for i := 1; i < tc.k; i++ {
			assert.Less(t, a.PositionRate(i), a.PositionRate(i-1), "acceptance falls with position")
		}
		// Drawn acceptances match the expectation (within 4 standard errors).
		rng := uint64(42)
		const n = 20000
		perPos := make([]int, tc.k)
		total := 0
		for range n {
			acc := a.Draw(&rng)
			require.LessOrEqual(t, acc, tc.k)
			total += acc
			for p := range acc {
				perPos[p]++
			}
		}
		got := float64(total) / float64(n*tc.k)
		se := math.Sqrt(tc.mean*(1-tc.mean)/float64(n*tc.k)) * 2 // positions are correlated; be generous
		assert.InDelta(t, tc.mean, got, 4*se, "k=%d mean acceptance", tc.k)
		for p := range tc.k {
			r := a.PositionRate(p)
			assert.InDelta(t, r, float64(perPos[p])/n, 4*math.Sqrt(r*(1-r)/n), "k=%d position %d", tc.k, p)
		}
	}
}

func TestResolveSpeculative(t *testing.T) {
	s, err := Resolve(Config{Model: "Qwen/Qwen3.5-0.8B", GPU: "RTX-4060-8GB", MaxModelLen: 8192,
		Speculative: &SpeculativeConfig{Method: "qwen3_next_mtp"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, "mtp", s.Speculative.Method)
	assert.Equal(t, 1, s.Speculative.NumSpeculativeTokens, "MTP defaults to the model's MTP layers")
	assert.Equal(t, 0.75, s.Speculative.AcceptanceRate)
	assert.Equal(t, 2, s.Capacity.Layout.MambaBlocks, "one state block plus one per draft token")

	for _, bad := range []*SpeculativeConfig{
		{Method: "mtp"}, // Llama has no MTP layers
		{Method: "eagle", NumSpeculativeTokens: 3}, // no draft model
		{Method: "ngram"},                          // no num_speculative_tokens
		{Method: "medusa", NumSpeculativeTokens: 2},
		{Method: "ngram", NumSpeculativeTokens: 3, AcceptanceRate: 1.5},
	} {
		_, err := Resolve(Config{Model: "meta-llama/Llama-3.1-8B-Instruct", MaxModelLen: 8192, Speculative: bad}, nil)
		var ce *ConfigError
		assert.ErrorAs(t, err, &ce, "%+v", bad)
	}
}

// TestSpeculativeEngine: with n-gram drafts of 3 tokens at 60% acceptance every decode step
// verifies 3 drafts and emits the accepted ones plus the bonus token; the totals agree, the
// acceptance matches the configured rate within sampling error, and the run takes fewer steps.
func TestSpeculativeEngine(t *testing.T) {
	base := Config{Model: "Qwen/Qwen2.5-0.5B-Instruct", GPU: "L4", MaxModelLen: 4096}
	spec := base
	spec.Speculative = &SpeculativeConfig{Method: "ngram", NumSpeculativeTokens: 3, AcceptanceRate: 0.6}

	plain := newRun(t, base)
	plain.closedLoop(t, 40, 8, func(i int) Request { return Request{Prompt: fixedPrompt(200, i), MaxTokens: 300, IgnoreEOS: true} })

	h := newRun(t, spec)
	var drafts, draftTokens, accepted, emitted int
	perPos := make([]int, 3)
	h.onStep = func(_ int, r *StepResult) {
		drafts += r.SpecDrafts
		draftTokens += r.SpecDraftTokens
		accepted += r.SpecAccepted
		for p, n := range r.SpecAcceptedPerPos {
			perPos[p] += n
		}
		stepAccepted := 0
		for _, o := range r.Outputs {
			emitted += len(o.Tokens)
			stepAccepted += o.Accepted
			if !o.Finished {
				assert.Equal(t, o.Accepted+1, len(o.Tokens), "accepted drafts plus the bonus token")
			}
			if o.Index > 0 {
				// Three drafts, fewer at the end: none may reach past max_tokens (300).
				assert.Equal(t, min(3, 299-o.Index), o.Drafted)
			}
		}
		assert.Equal(t, r.SpecAccepted, stepAccepted)
	}
	h.closedLoop(t, 40, 8, func(i int) Request { return Request{Prompt: fixedPrompt(200, i), MaxTokens: 300, IgnoreEOS: true} })

	require.Len(t, h.done, 40)
	assert.Equal(t, 40*300, emitted)
	assert.Equal(t, int64(40*300), h.e.Counters().GenerationTokens)
	assert.LessOrEqual(t, draftTokens, 3*drafts)
	assert.Greater(t, draftTokens, 3*drafts-3*40, "only the last steps of each request draft fewer")
	assert.Equal(t, perPos[0]+perPos[1]+perPos[2], accepted)
	rate := float64(accepted) / float64(draftTokens)
	se := math.Sqrt(0.6 * 0.4 / float64(draftTokens))
	assert.InDelta(t, 0.6, rate, 8*se, "acceptance rate %.4f over %d draft tokens", rate, draftTokens)
	assert.Greater(t, perPos[0], perPos[1])
	assert.Greater(t, perPos[1], perPos[2])
	// Mean acceptance length (bonus included) is 1 + accepted per draft: fewer steps.
	meanLen := 1 + float64(accepted)/float64(drafts)
	assert.Less(t, float64(h.steps), float64(plain.steps)/meanLen*1.2)
	assert.Zero(t, h.e.BlocksUsed())
}
