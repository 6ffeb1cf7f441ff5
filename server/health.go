package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
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

// probeError is a /health probe that got no answer: the URL (redacted) and the cause in a
// few words. It unwraps to the transport's error.
type probeError struct {
	url   string
	cause string
	err   error
}

func (e *probeError) Error() string { return "GET " + e.url + "/health: " + e.cause }

func (e *probeError) Unwrap() error { return e.err }

// probe sends one GET base/health and returns the status code; a failure to get any answer is
// a *probeError.
func probe(ctx context.Context, c *http.Client, base string, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return 0, &probeError{url: sanitize.URL(base), cause: "bad URL", err: err}
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, &probeError{url: sanitize.URL(base), cause: probeCause(err, timeout), err: err}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// probeCause words why a probe got no answer by its innermost cause.
func probeCause(err error, timeout time.Duration) string {
	var (
		dns  *net.DNSError
		errn syscall.Errno
		cert *tls.CertificateVerificationError
		ne   net.Error
		ue   *url.Error
	)
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + sanitize.Text(dns.Name)
		}
		return "cannot resolve " + sanitize.Text(dns.Name)
	case errors.As(err, &errn):
		return errn.Error()
	case errors.As(err, &cert):
		return "TLS: " + sanitize.Text(cert.Err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer within %v", timeout)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection"
	case errors.As(err, &ue):
		return sanitize.Text(ue.Err.Error())
	}
	return sanitize.Text(err.Error())
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
	var pe *probeError
	switch {
	case err == nil:
		s.status.Unreachable = ""
	case errors.As(err, &pe) && (s.attach != "" || s.state == Ready || s.state == Unhealthy):
		s.status.Unreachable = pe.cause
	}
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
				err = fmt.Errorf("GET %s/health: %d %s", sanitize.URL(r.base), code, http.StatusText(code))
			}
			s.setStateLocked(r, Unhealthy, err, ExitStatus{})
		}
		return true
	case Idle, Stopping, Exited:
	}
	return false
}
