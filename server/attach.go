package server

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// Attach returns a supervisor that watches a server it does not run: it polls baseURL+"/health"
// and reports the same states (Starting until the server answers, Loading while it answers but
// not with 200, then Ready and Unhealthy). While probes get no answer at all, Status.Unreachable
// says why ("connection refused"). Stop ends the watch (Stopping, then Exited); Restart
// returns ErrAttached and there are no log lines.
func Attach(baseURL string, opts ...Option) (*Supervisor, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server: attach: want an http(s)://host:port URL, got %q", sanitize.URL(baseURL))
	}
	s := newSupervisor(opts)
	s.attach = u.String()
	return s, nil
}
