package scrape_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// startSim runs the simulated vLLM on a virtual clock (steps run back to back) on a loopback
// port.
func startSim(t *testing.T, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	inst, err := serve.Start(context.Background(), append(args, "--sim-startup-seconds", "0"), func(string) string { return "" },
		serve.WithListener(ln), serve.WithClock(sim.NewVirtualClock(time.Now())))
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Stop() })
	require.Eventually(t, inst.Ready, 5*time.Second, time.Millisecond)
	return inst.URL()
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func complete(ctx context.Context, url, prompt string, maxTokens int) (usage, error) {
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": maxTokens, "ignore_eos": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return usage{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return usage{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return usage{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	var out struct {
		Usage usage `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return usage{}, err
	}
	return out.Usage, nil
}

// TestAgainstSimulator sends a known load to the simulator and checks that what the scraper
// reads is exactly what was sent.
func TestAgainstSimulator(t *testing.T) {
	url := startSim(t, "Qwen/Qwen3-0.6B")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := scrape.NewClient(url)
	require.NoError(t, err)

	before, err := c.Scrape(ctx)
	require.NoError(t, err)
	require.Equal(t, scrape.BackendVLLM, before.Backend)
	m0, ok := before.Model("Qwen/Qwen3-0.6B")
	require.True(t, ok)
	assert.Equal(t, scrape.Some(0), m0.Total.PromptTokens, "a fresh server: present and zero")
	assert.Equal(t, scrape.Some(0), m0.Total.RequestsFinished)
	assert.True(t, before.Capacity.KVCacheTokens.OK && before.Capacity.KVCacheTokens.V > 0, "capacity from cache_config_info")

	// 24 requests, 6 at a time, with different prompts and lengths.
	const n = 24
	var (
		mu              sync.Mutex
		prompt, gen, it int
		errs            []error
		wg              sync.WaitGroup
		slots           = make(chan struct{}, 6)
	)
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			p := fmt.Sprintf("Request %d: %s", i, strings.Repeat("tell me about paged attention ", 1+i%5))
			u, err := complete(ctx, url, p, 4+i%7)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			prompt += u.PromptTokens
			gen += u.CompletionTokens
			it += u.CompletionTokens - 1
		}()
	}
	wg.Wait()
	require.Empty(t, errs)

	after, err := c.Scrape(ctx)
	require.NoError(t, err)
	m, ok := after.Model("Qwen/Qwen3-0.6B")
	require.True(t, ok)
	st := m.Total
	assert.Equal(t, scrape.Some(float64(prompt)), st.PromptTokens, "prompt tokens = sum of usage.prompt_tokens")
	assert.Equal(t, scrape.Some(float64(gen)), st.GenerationTokens, "generation tokens = sum of usage.completion_tokens")
	assert.Equal(t, scrape.Some(n), st.RequestsFinished, "finished requests")
	assert.Equal(t, float64(n), st.FinishedByReason["length"], "ignore_eos with max_tokens: all stop on length")
	assert.Equal(t, scrape.Some(0), st.Running, "nothing left running")
	assert.Equal(t, scrape.Some(0), st.Waiting)
	require.NotNil(t, st.PromptTokensPerRequest)
	assert.Equal(t, float64(prompt), st.PromptTokensPerRequest.Sum, "prompt-length histogram")
	assert.Equal(t, float64(n), st.TTFTSeconds.Count, "one TTFT per request")
	assert.Equal(t, float64(it), st.ITLSeconds.Count, "one inter-token gap per token after the first")

	// The window between the two scrapes sees all of it.
	w := scrape.Compare(&before, &after)
	require.False(t, w.Restarted)
	require.Len(t, w.Models, 1)
	tot := w.Models[0].Total
	assert.Equal(t, float64(n), tot.FinishedByReason["length"])
	require.NotNil(t, tot.TTFTSeconds)
	assert.Equal(t, float64(n), tot.TTFTSeconds.Count)
	assert.True(t, tot.TTFTSeconds.P50.OK && tot.TTFTSeconds.P50.V > 0, "a window TTFT median")
	assert.True(t, tot.GenerationTokensPerSec.OK && tot.GenerationTokensPerSec.V > 0)
}
