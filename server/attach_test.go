package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nextState waits for the next StateChanged on ch, skipping other events.
func nextState(t *testing.T, ch <-chan Event) StateChanged {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			require.True(t, ok, "Events closed")
			if sc, ok := ev.(StateChanged); ok {
				return sc
			}
		case <-deadline:
			t.Fatal("no state change within 5s")
		}
	}
}

func TestAttachFollowsHealth(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	var probes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		probes.Add(1)
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()

	s, err := Attach(srv.URL+"/", WithHealthInterval(10*time.Millisecond), WithUnhealthyAfter(2))
	require.NoError(t, err)
	ev := s.Events()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Start(ctx))

	assert.Equal(t, Starting, nextState(t, ev).State)
	assert.Equal(t, Loading, nextState(t, ev).State, "answers, but not 200")
	status.Store(http.StatusOK)
	require.NoError(t, s.WaitReady(ctx))
	assert.Equal(t, Ready, nextState(t, ev).State)
	assert.Equal(t, srv.URL, s.Status().URL)

	status.Store(http.StatusServiceUnavailable) // vLLM's answer once the engine is dead
	sc := nextState(t, ev)
	assert.Equal(t, Unhealthy, sc.State)
	assert.Equal(t, Ready, sc.From)
	assert.ErrorContains(t, sc.Err, "503")

	status.Store(http.StatusOK)
	assert.Equal(t, Ready, nextState(t, ev).State)

	assert.ErrorIs(t, s.Restart(ctx, Set("--gpu-memory-utilization", "0.9")), ErrAttached)
	require.NoError(t, s.Stop(ctx))
	assert.Equal(t, Stopping, nextState(t, ev).State)
	sc = nextState(t, ev)
	assert.Equal(t, Exited, sc.State)
	assert.True(t, sc.Exit.Requested)
	assert.False(t, sc.Exit.Failed())
	n := probes.Load()

	require.NoError(t, s.Close())
	for range ev { // drained and closed
	}
	assert.Empty(t, s.Logs(0))
	assert.Equal(t, n, probes.Load(), "no probe after Stop")
}

func TestAttachUnreachableThenUp(t *testing.T) {
	// A server that is not listening yet: Starting until it answers.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	s, err := Attach("http://"+srv.Listener.Addr().String(), WithHealthInterval(10*time.Millisecond))
	require.NoError(t, err)
	ev := s.Events()
	defer func() {
		require.NoError(t, s.Close())
		for range ev {
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Start(ctx))
	assert.Equal(t, Starting, nextState(t, ev).State)
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	assert.ErrorIs(t, s.WaitReady(short), context.DeadlineExceeded)
	assert.Equal(t, Starting, s.State())

	srv.Start()
	defer srv.Close()
	require.NoError(t, s.WaitReady(ctx))
	assert.Equal(t, Ready, nextState(t, ev).State)
}

func TestAttachRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "localhost:8000", "ftp://x", "http://", "%zz"} {
		_, err := Attach(u)
		assert.Error(t, err, u)
	}
}
