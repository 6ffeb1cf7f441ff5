package scrape_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server/sim"
)

// TestSpecDecodeWindowAgainstSimulator: the acceptance rate and mean acceptance length a
// window of two scrapes shows (what the dashboard and `metrics --window` read) equal the ones
// the simulator was configured with, within sampling error.
func TestSpecDecodeWindowAgainstSimulator(t *testing.T) {
	const k, rate = 4, 0.6
	url := startSim(t, "--speculative-config", fmt.Sprintf(`{"method":"eagle","model":"yuhuili/EAGLE-LLaMA3.1-Instruct-8B","num_speculative_tokens":%d}`, k),
		"--sim-spec-acceptance", fmt.Sprint(rate), "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192")
	c, err := scrape.NewClient(url)
	require.NoError(t, err)
	ctx := context.Background()

	// Warm up, so the window starts mid-run.
	_, err = complete(ctx, url, "warm up", 50)
	require.NoError(t, err)
	before, err := c.Scrape(ctx)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 4 {
				_, err := complete(ctx, url, fmt.Sprintf("request %d %d", i, j), 400)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	after, err := c.Scrape(ctx)
	require.NoError(t, err)

	w := scrape.Compare(&before, &after)
	require.Len(t, w.Models, 1)
	total := w.Models[0].Total
	require.True(t, total.SpecDecodeAcceptance.OK)
	require.True(t, total.SpecDecodeMeanAcceptanceLength.OK)

	m, _ := after.Model("meta-llama/Llama-3.1-8B-Instruct")
	pm, _ := before.Model("meta-llama/Llama-3.1-8B-Instruct")
	draftTokens := m.Total.SpecDecodeDraftTokens.V - pm.Total.SpecDecodeDraftTokens.V
	drafts := m.Total.SpecDecodeDrafts.V - pm.Total.SpecDecodeDrafts.V
	require.Greater(t, draftTokens, 10000.0, "enough drafts for a tight estimate")
	// Positions within a draft are correlated (a rejection ends it): bound the error by the
	// per-draft variance, at most k^2/4 tokens, over the number of drafts.
	se := math.Sqrt(float64(k*k)/4/drafts) / k
	assert.InDelta(t, rate, total.SpecDecodeAcceptance.V, 4*se, "acceptance rate")
	// The mean acceptance length the same configuration implies: 1 + k x rate.
	assert.InDelta(t, 1+k*rate, total.SpecDecodeMeanAcceptanceLength.V, 4*se*k, "mean acceptance length")
	assert.InDelta(t, sim.NewAcceptance(k, rate).MeanRate(), rate, 1e-9)
}
