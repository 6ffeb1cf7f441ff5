package scrape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecDecodeFromRealCapture: a vLLM server with 8-token speculative decoding reported
// 2,121,962 drafts, 11,501,084 draft tokens and 4,574,989 accepted tokens.
func TestSpecDecodeFromRealCapture(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testdataDir, "vllm-v1-metrics-qwen3-30b-specdecode.prom"))
	require.NoError(t, err)
	s, err := Parse(strings.NewReader(string(raw)))
	require.NoError(t, err)
	st := s.Models[0].Total
	assert.InDelta(t, 4574989.0/11501084, st.SpecDecodeAcceptanceRate().V, 1e-12)
	assert.InDelta(t, 1+4574989.0/2121962, st.SpecDecodeMeanAcceptanceLength().V, 1e-12)

	// Without the counters (speculative decoding off), both are absent.
	raw, err = os.ReadFile(filepath.Join(testdataDir, "vllm-0.25.1-metrics-opt-125m-tp2-idle.prom"))
	require.NoError(t, err)
	off, err := Parse(strings.NewReader(string(raw)))
	require.NoError(t, err)
	assert.False(t, off.Models[0].Total.SpecDecodeAcceptanceRate().OK)
	assert.False(t, off.Models[0].Total.SpecDecodeMeanAcceptanceLength().OK)
}

// TestSpecDecodeWindow: over a window the figures come from the counters' increases, per
// engine and for the model; a window with no draft has none.
func TestSpecDecodeWindow(t *testing.T) {
	snap := func(drafts, draftTokens, accepted float64) *Snapshot {
		e := EngineStats{Engine: "0", Stats: Stats{SpecDecodeDrafts: Some(drafts), SpecDecodeDraftTokens: Some(draftTokens), SpecDecodeAcceptedTokens: Some(accepted)}}
		return &Snapshot{Models: []Model{{Name: "m", Total: e.Stats, Engines: []EngineStats{e}}}}
	}
	prev, cur := snap(100, 300, 150), snap(300, 900, 630)
	cur.Time = prev.Time.Add(10 * time.Second)
	w := Compare(prev, cur)
	require.Len(t, w.Models, 1)
	total := w.Models[0].Total
	assert.InDelta(t, 480.0/600, total.SpecDecodeAcceptance.V, 1e-12)
	assert.InDelta(t, 1+480.0/200, total.SpecDecodeMeanAcceptanceLength.V, 1e-12)
	assert.InDelta(t, 1+480.0/200, w.Models[0].Engines[0].SpecDecodeMeanAcceptanceLength.V, 1e-12)

	later := snap(300, 900, 630)
	later.Time = cur.Time.Add(10 * time.Second)
	idle := Compare(cur, later)
	assert.False(t, idle.Restarted, "a valid window")
	assert.False(t, idle.Models[0].Total.SpecDecodeMeanAcceptanceLength.OK, "no drafts in the window")
	assert.False(t, idle.Models[0].Total.SpecDecodeAcceptance.OK)
}
