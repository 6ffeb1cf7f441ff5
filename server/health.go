package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// httpClient returns the client for /health probes: WithHTTPClient's, or one that uses no
// proxy (a proxy would answer for a local server that is not up) and opens a fresh connection
// per probe, so a probe never rides on a connection to a previous run. socket is a Unix socket
// path (--uds). own is true for a server this supervisor started: its certificate, if it serves
// TLS, is typically self-signed and the probe sends nothing but "GET /health".
func (s *Supervisor) httpClient(socket string, own bool) *http.Client {
	if s.opts.client != nil {
		return s.opts.client
	}
	dialer := &net.Dialer{Timeout: s.opts.healthTimeout}
	tr := &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		DialContext:       dialer.DialContext,
	}
	if socket != "" {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", socket)
		}
	}
	if own {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	return &http.Client{Transport: tr}
}

// poll probes GET /health for run r until r.ctx ends: every 50 ms at first, backing off to the
// health interval while the server starts, and every interval once it has been ready. A log line
// that announces the server (its address, uvicorn's "Application startup complete.") triggers
// a probe at once. When attached, the end of the polling is the end of the run.
func (s *Supervisor) poll(r *run) {
	if s.attach != "" {
		defer s.finish(r, ExitStatus{Code: -1, Requested: true}, nil)
	}
	delay := initialHealthDelay
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-timer.C:
		case <-r.poke:
		}
		s.mu.Lock()
		base := r.base
		s.mu.Unlock()
		code, err := probe(r.ctx, r.client, base, s.opts.healthTimeout)
		if r.ctx.Err() != nil {
			return
		}
		if s.onProbe(r, code, err) {
			delay = s.opts.healthInterval
		} else {
			delay = min(2*delay, s.opts.healthInterval)
		}
		timer.Reset(delay)
	}
}

// probe sends one GET base/health and returns the status code.
func probe(ctx context.Context, c *http.Client, base string, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// onProbe applies a probe's result to the state and reports whether the server has been ready
// (so probes go at the steady interval).
//
//   - 200: Ready (from Starting, Loading or Unhealthy).
//   - any other answer while starting: Loading (the server is up but not ready).
//   - a failure (other status, refused, timeout) while Ready: counted; Unhealthy after
//     WithUnhealthyAfter in a row.
func (s *Supervisor) onProbe(r *run, code int, err error) (wasReady bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run != r {
		return false
	}
	healthy := err == nil && code == http.StatusOK
	switch s.state {
	case Starting, Loading:
		if healthy {
			r.fails = 0
			s.setStateLocked(r, Ready, nil, ExitStatus{})
			return true
		}
		if err == nil && s.state == Starting {
			s.setStateLocked(r, Loading, nil, ExitStatus{})
		}
		return false
	case Ready, Unhealthy:
		if healthy {
			r.fails = 0
			s.setStateLocked(r, Ready, nil, ExitStatus{})
			return true
		}
		r.fails++
		if s.state == Ready && r.fails >= s.opts.unhealthyAfter {
			if err == nil {
				err = fmt.Errorf("GET %s/health: %d %s", r.base, code, http.StatusText(code))
			}
			s.setStateLocked(r, Unhealthy, err, ExitStatus{})
		}
		return true
	case Idle, Stopping, Exited:
	}
	return false
}
