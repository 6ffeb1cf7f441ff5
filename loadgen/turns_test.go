package loadgen

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrintTurnsShowsNoLatencyForTurnsThatDidNotRun(t *testing.T) {
	tt := newTurnTally()
	tt.Add(Result{Turn: 1, TTFT: 50 * time.Millisecond, E2EL: 80 * time.Millisecond, PromptTokens: 64, OutputTokens: 16})
	var b bytes.Buffer
	require.NoError(t, PrintTurns(&b, *tt.groups()))
	out := b.String()
	assert.Regexp(t, `turn 1 \(ms\) +50\.00 +50\.00 +64 +1\n`, out)
	assert.Regexp(t, `turns 2\+ \(ms\) +-- +-- +-- +0\n`, out, "no later turn finished: -- not 0.00")
}
