package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
	s, err := Attach("http://"+srv.Listener.Addr().String(), WithHealthInterval(10*time.Millisecond), WithHealthTimeout(100*time.Millisecond))
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
	// The listener exists but nothing accepts: the probes time out.
	require.Eventually(t, func() bool { return strings.HasPrefix(s.Status().Unreachable, "no answer within") }, 10*time.Second, 5*time.Millisecond,
		"the status says why it is still starting")

	srv.Start()
	defer srv.Close()
	require.NoError(t, s.WaitReady(ctx))
	assert.Equal(t, Ready, nextState(t, ev).State)
	assert.Empty(t, s.Status().Unreachable, "an answer clears the cause")
}

func TestAttachDeadURLSaysWhy(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	s, err := Attach("http://user:PW123@"+addr+"/?token=SECRET9", WithHealthInterval(10*time.Millisecond))
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
	require.Eventually(t, func() bool { return s.Status().Unreachable == "connection refused" }, 5*time.Second, 5*time.Millisecond)
	st := s.Status()
	assert.Equal(t, Starting, st.State)
	assert.Equal(t, "http://user:***@"+addr+"/?token=***", st.URL, "the status never shows credentials")

	_, err = Attach("ftp://user:PW123@host/?token=SECRET9")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "PW123")
	assert.NotContains(t, err.Error(), "SECRET9")
}

func TestProbeCause(t *testing.T) {
	// A server that accepts and never answers: the probe's own timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	_, err = probe(context.Background(), http.DefaultClient, "http://u:pw@"+ln.Addr().String()+"/?k=v", 50*time.Millisecond)
	var pe *probeError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "no answer within 50ms", pe.cause)
	assert.Equal(t, "GET http://u:***@"+ln.Addr().String()+"/?k=***/health: no answer within 50ms", err.Error())
}

func TestAttachRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "localhost:8000", "ftp://x", "http://", "%zz"} {
		_, err := Attach(u)
		assert.Error(t, err, u)
	}
}
