package loadgen_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/loadgen"
)

// sseServer answers every completion with n tokens; release, when set, holds each answer
// until the test sends on it. It counts the requests in flight at most.
type sseServer struct {
	*httptest.Server
	inFlight, maxInFlight, requests atomic.Int32
	release                         chan struct{}
}

func newSSEServer(t *testing.T, hold bool) *sseServer {
	s := &sseServer{}
	if hold {
		s.release = make(chan struct{})
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices a client that goes away
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			m := s.maxInFlight.Load()
			if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		s.requests.Add(1)
		if s.release != nil {
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 4 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"t%d\",\"finish_reason\":null}]}\n\n", i)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func TestCanaryProbesAndKeepsARing(t *testing.T) {
	s := newSSEServer(t, false)
	c, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: s.URL})
	require.NoError(t, err)
	ticks := make(chan time.Time)
	can, err := loadgen.NewCanary(c, loadgen.CanaryConfig{Ticks: ticks, Keep: 3})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- can.Run(ctx) }()

	require.Eventually(t, func() bool { return can.Counts().Done == 1 }, 10*time.Second, time.Millisecond, "a probe at once")
	for i := 2; i <= 5; i++ {
		ticks <- time.Now()
		require.Eventually(t, func() bool { return can.Counts() == loadgen.CanaryCounts{Sent: i, Done: i} }, 10*time.Second, time.Millisecond)
		assert.Len(t, can.Samples(), min(i, 3))
	}
	samples := can.Samples()
	require.Len(t, samples, 3, "the ring keeps 3")
	for i, smp := range samples {
		assert.True(t, smp.OK(), "%+v", smp)
		assert.Positive(t, smp.TTFT)
		assert.Equal(t, 4, smp.OutputTokens)
		if i > 0 {
			assert.False(t, smp.At.Before(samples[i-1].At), "oldest first")
		}
	}
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, int32(5), s.requests.Load())
}

func TestCanaryNeverTwoInFlight(t *testing.T) {
	s := newSSEServer(t, true)
	c, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: s.URL})
	require.NoError(t, err)
	ticks := make(chan time.Time)
	can, err := loadgen.NewCanary(c, loadgen.CanaryConfig{Ticks: ticks})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- can.Run(ctx) }()
	require.Eventually(t, func() bool { return s.inFlight.Load() == 1 }, 10*time.Second, time.Millisecond)
	for range 3 {
		ticks <- time.Now() // the probe is still out: skipped
	}
	require.Eventually(t, func() bool { return can.Counts() == loadgen.CanaryCounts{Sent: 1, Skipped: 3} }, 10*time.Second, time.Millisecond)
	s.release <- struct{}{}
	require.Eventually(t, func() bool { _, ok := can.Last(); return ok }, 10*time.Second, time.Millisecond)
	ticks <- time.Now()
	require.Eventually(t, func() bool { return s.inFlight.Load() == 1 && can.Counts().Sent == 2 }, 10*time.Second, time.Millisecond)
	cancel() // the held probe is cancelled with Run, not left behind
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, int32(1), s.maxInFlight.Load(), "never more than one in flight")
	last, _ := can.Last()
	assert.True(t, last.OK())
}

func TestCanaryRecordsFailures(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	defer s.Close()
	c, err := loadgen.NewClient(loadgen.ClientConfig{BaseURL: s.URL})
	require.NoError(t, err)
	can, err := loadgen.NewCanary(c, loadgen.CanaryConfig{Ticks: make(chan time.Time)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- can.Run(ctx) }()
	require.Eventually(t, func() bool { _, ok := can.Last(); return ok }, 10*time.Second, time.Millisecond)
	cancel()
	<-done
	last, _ := can.Last()
	assert.Equal(t, loadgen.ErrHTTP5xx, last.Error)
	assert.Contains(t, last.ErrorMessage, "overloaded")
	_, err = loadgen.NewCanary(nil, loadgen.CanaryConfig{})
	assert.Error(t, err)
}
