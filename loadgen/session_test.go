package loadgen_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vllmtop/vllmtop/loadgen"
)

func sessionConfig(url string) loadgen.SessionConfig {
	return loadgen.SessionConfig{
		Client:      loadgen.ClientConfig{BaseURL: url},
		Concurrency: 4,
		Short:       loadgen.RandomConfig{InputLen: 64, OutputLen: 8},
		Long:        loadgen.RandomConfig{InputLen: 512, OutputLen: 8},
		Now:         func() time.Time { return time.Unix(1000, 0) },
	}
}

func TestSessionEpochs(t *testing.T) {
	s, err := loadgen.NewSession(sessionConfig("http://127.0.0.1:1"))
	require.NoError(t, err)
	assert.Equal(t, 1, s.SetConcurrency(6))
	assert.Equal(t, 2, s.SetRate(2.5))
	assert.Equal(t, 3, s.Mark("restart"))
	name, n := s.UseLongPrompts(true)
	assert.Equal(t, 4, n)
	assert.Equal(t, "random 512 in / 8 out", name)
	name, _ = s.UseLongPrompts(false)
	assert.Equal(t, "random 64 in / 8 out", name)
	assert.Equal(t, 5, s.Stats().Epoch, "the runner tags results with the session's epoch")

	var got []string
	for _, e := range s.Epochs() {
		assert.Equal(t, time.Unix(1000, 0), e.Start)
		got = append(got, e.Settings+"|"+e.Label)
	}
	assert.Equal(t, []string{"C=4|", "C=6|", "rate 2.5/s|", "rate 2.5/s|restart", "rate 2.5/s|", "rate 2.5/s|"}, got)

	_, err = loadgen.NewSession(loadgen.SessionConfig{Client: loadgen.ClientConfig{BaseURL: "ftp://x"}})
	assert.Error(t, err, "a bad URL")
	bad := sessionConfig("http://127.0.0.1:1")
	bad.Long.InputLen = 0
	_, err = loadgen.NewSession(bad)
	assert.Error(t, err, "a workload it cannot build")
}

// A session against the simulator fits its prompts to the server's tokenizer, records every
// result in its epoch and its journal, and stops with its context.
func TestSessionRunsAgainstTheSimulator(t *testing.T) {
	url := startSim(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-speed", "20")
	cfg := sessionConfig(url)
	cfg.Now = time.Now
	cfg.Record = filepath.Join(t.TempDir(), "results.jsonl")
	s, err := loadgen.NewSession(cfg)
	require.NoError(t, err)

	errNotReady := errors.New("not ready")
	assert.ErrorIs(t, s.Run(context.Background(), func(context.Context) error { return errNotReady }), errNotReady)
	assert.Zero(t, s.Stats().Started, "nothing is sent before the server is ready")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, func(context.Context) error { return nil }) }()
	require.Eventually(t, func() bool { return s.Stats().Finished >= 8 }, 20*time.Second, 5*time.Millisecond)
	epoch := s.SetConcurrency(2)
	require.Eventually(t, func() bool {
		all := s.Epochs()
		return len(all) == 2 && all[1].Requests >= 2
	}, 20*time.Second, 5*time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	require.NoError(t, s.Close())

	all := s.Epochs()
	assert.Equal(t, epoch, all[1].Epoch)
	assert.Equal(t, "C=2", all[1].Settings)
	p := s.Tick(time.Now())
	assert.Positive(t, p.Requests+s.WindowCounts().Requests, "the live window saw the results")
	assert.Positive(t, all[1].ITL.N, "the epoch has its ITLs")

	f, err := os.Open(cfg.Record)
	require.NoError(t, err)
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var r loadgen.Result
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if r.OK() {
			assert.Equal(t, 64, r.PromptTokens, "prompts fitted to the server's /tokenize have the exact length")
			assert.Len(t, r.ITLs, r.OutputTokens-1, "a journal keeps each result's ITLs")
		}
	}
	assert.GreaterOrEqual(t, lines, 10)
}

// Without a journal, ITLs stream into the live window and the epochs as they arrive.
func TestSessionStreamsITLsWithoutAJournal(t *testing.T) {
	url := startSim(t, "Qwen/Qwen2.5-0.5B-Instruct", "--sim-speed", "20")
	cfg := sessionConfig(url)
	cfg.Now = time.Now
	s, err := loadgen.NewSession(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, nil) }()
	require.Eventually(t, func() bool { return s.Stats().Finished >= 4 }, 20*time.Second, 5*time.Millisecond)
	cancel()
	<-done
	s.Tick(time.Now())
	assert.Positive(t, s.Window().ITL.N, "the live window has ITLs")
	require.NotEmpty(t, s.Epochs())
	assert.GreaterOrEqual(t, s.Epochs()[0].ITL.N, int64(4*7), "seven gaps for each finished request at least")
}
