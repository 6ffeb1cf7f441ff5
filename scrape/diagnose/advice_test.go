package diagnose_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// At an unknown cap of 2 the running count moves 2, 1, 2 between reads: the advice, which the
// footer shows, stays one sentence; the text says the count of the moment.
func TestAdmissionAdviceHoldsWhileRunningMoves(t *testing.T) {
	var advice []string
	for _, running := range []float64{2, 1} {
		s := diagnose.Signals{Subject: "gpu-a", Running: scrape.Some(running), Waiting: scrape.Some(14),
			KVCacheUsage: scrape.Some(0.02), QueueMean: scrape.Some(0.8)}
		var top *diagnose.Verdict
		vs := diagnose.Evaluate(&s, diagnose.Facts{}, diagnose.DefaultThresholds())
		for i := range vs {
			if vs[i].Rule == diagnose.RuleAdmissionBound {
				top = &vs[i]
			}
		}
		require.NotNil(t, top, "running %v: %v", running, vs)
		advice = append(advice, top.Advice)
	}
	assert.Equal(t, advice[0], advice[1])
}
