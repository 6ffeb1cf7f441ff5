package scrape

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/internal/base/tlsconfig"
)

// Defaults for a Client.
const (
	// DefaultTimeout bounds one scrape: connect, headers and the whole body.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxBodyBytes caps a /metrics body. vLLM's is about 60 KB per engine; a larger body
	// than this is refused rather than read.
	DefaultMaxBodyBytes = 16 << 20
)

// acceptHeader asks for the classic text format: vLLM always answers with it, and other
// servers (client_golang ones) would otherwise be free to pick protobuf or OpenMetrics.
const acceptHeader = "text/plain;version=0.0.4"

// Client scrapes one /metrics URL. It is safe for concurrent use; each Scrape parses with its
// own parser. It owns no timer: callers decide when to scrape.
type Client struct {
	url     string
	apiKey  string
	timeout time.Duration
	maxBody int64
	hc      *http.Client
	// insecure and caFile are the TLS options, applied by NewClient (see tlsconfig.New).
	insecure bool
	caFile   string
	loopback bool // the host is localhost or a loopback address
	// lastSize is the length of the last body, the guess for the next one's buffer when the
	// server does not announce it (chunked).
	lastSize atomic.Int64
}

// Option configures a Client.
type Option func(*Client) error

// WithTimeout bounds each scrape (default DefaultTimeout). It applies on top of the
// context's own deadline, whichever comes first.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("timeout must be positive, got %v", d)
		}
		c.timeout = d
		return nil
	}
}

// WithAPIKey sends "Authorization: Bearer key". An empty key sends nothing.
func WithAPIKey(key string) Option {
	return func(c *Client) error { c.apiKey = key; return nil }
}

// WithInsecureSkipVerify accepts any TLS certificate (https only).
func WithInsecureSkipVerify() Option {
	return func(c *Client) error { c.insecure = true; return nil }
}

// WithCAFile trusts the PEM certificates in path (in place of the system roots) for https.
func WithCAFile(path string) Option {
	return func(c *Client) error { c.caFile = path; return nil }
}

// WithMaxBodyBytes caps the body (default DefaultMaxBodyBytes).
func WithMaxBodyBytes(n int64) Option {
	return func(c *Client) error {
		if n <= 0 {
			return fmt.Errorf("body cap must be positive, got %d", n)
		}
		c.maxBody = n
		return nil
	}
}

// WithHTTPClient uses hc instead of a client of the Client's own. The TLS options then do not
// apply; the timeout still does.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error { c.hc = hc; return nil }
}

// NewClient returns a Client for target, a /metrics URL or a server's base URL (see
// MetricsURL).
func NewClient(target string, opts ...Option) (*Client, error) {
	u, err := MetricsURL(target)
	if err != nil {
		return nil, err
	}
	c := &Client{url: u, timeout: DefaultTimeout, maxBody: DefaultMaxBodyBytes, loopback: isLoopback(u)}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.hc == nil {
		conf, err := tlsconfig.New(c.insecure, c.caFile)
		if err != nil {
			return nil, err
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = conf
		c.hc = &http.Client{Transport: tr}
	}
	return c, nil
}

// MetricsURL turns what a user typed into the URL to scrape: "host:8000" gets "http://", and
// a URL with no path (or "/") gets "/metrics"; any other path is kept as given.
func MetricsURL(target string) (string, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return "", errors.New("no URL given")
	}
	if !strings.Contains(target, "://") {
		target = "http://" + target
	}
	u, err := url.Parse(target)
	if err != nil {
		if strings.Contains(target, "@") {
			// The parser's message quotes the part it choked on, which may be the password.
			return "", fmt.Errorf("bad URL %q: cannot parse it", sanitize.URL(target))
		}
		return "", fmt.Errorf("bad URL %q: %s", sanitize.URL(target), sanitize.Text(unwrapURLError(err).Error()))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("bad URL %q: scheme must be http or https", sanitize.URL(target))
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("bad URL %q: no host", sanitize.URL(target))
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	u.Fragment = ""
	return u.String(), nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// URL is the URL the client scrapes, fit to print: its password and query values are "***"
// (sanitize.URL); requests use the URL as given.
func (c *Client) URL() string { return sanitize.URL(c.url) }

// Error is a failed scrape: the URL and why, in one line. Error() redacts the URL's password
// and query values and removes control characters from the whole message, whoever built the
// Error.
type Error struct {
	URL string
	// StatusCode is the HTTP status when the server answered with an error status, else 0.
	StatusCode int
	// Err is the cause: a net or TLS error, context.DeadlineExceeded, ErrTooLarge,
	// ErrNotMetrics, ErrEmptyBody, or a parse error.
	Err error
}

func (e *Error) Error() string {
	return sanitize.URL(e.URL) + ": " + sanitize.Text(describe(e.Err))
}

func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the scrape ran out of time.
func (e *Error) Timeout() bool { return errors.Is(e.Err, context.DeadlineExceeded) }

// Errors a scrape can end with (inside an *Error).
var (
	ErrTooLarge   = errors.New("body too large")
	ErrNotMetrics = errors.New("not Prometheus text")
)

// statusError is an HTTP error status.
type statusError struct {
	code   int
	status string
	detail string
}

func (e *statusError) Error() string {
	msg := "HTTP " + e.status
	if e.detail != "" {
		msg += " (" + e.detail + ")"
	}
	return msg
}

// timeoutError carries the limit that ran out.
type timeoutError struct {
	after time.Duration
	what  string
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("timed out after %v %s", e.after, e.what)
}

func (e *timeoutError) Unwrap() error { return context.DeadlineExceeded }

// describe reduces an error to its most useful part: "connection refused", not the chain of
// url.Error, net.OpError and os.SyscallError around it.
func describe(err error) string {
	var (
		te   *timeoutError
		dns  *net.DNSError
		errn syscall.Errno
		cert *tls.CertificateVerificationError
		ue   *url.Error
	)
	switch {
	case errors.As(err, &te):
		return te.Error()
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "cannot resolve host " + dns.Name + ": no such host"
		}
		return "cannot resolve host " + dns.Name + ": " + dns.Err
	case errors.As(err, &errn):
		return errn.Error()
	case errors.As(err, &cert):
		return "TLS: " + cert.Err.Error()
	case errors.As(err, &ue):
		return describe(ue.Err)
	}
	return err.Error()
}

// Fetch GETs the body without parsing it, bounded by the timeout and the body cap. It also
// returns the time the response headers arrived. Every error is an *Error.
func (c *Client) Fetch(ctx context.Context) ([]byte, time.Time, error) {
	start := time.Now()
	limit := c.timeout
	// A caller's deadline that is sooner bounds the fetch; one set from the same timeout a
	// moment ago is a few microseconds sooner, and the message keeps the figure the user gave.
	// When the caller's deadline binds, the message gives the time the fetch really waited:
	// on a starved machine that deadline can have passed before the fetch began.
	callerBound := false
	if dl, ok := ctx.Deadline(); ok {
		if left := dl.Sub(start); left < limit-10*time.Millisecond {
			limit, callerBound = max(left, 0), true
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	fail := func(err error, status int) ([]byte, time.Time, error) {
		return nil, time.Time{}, &Error{URL: redact(c.url), StatusCode: status, Err: err}
	}
	timedOut := func(err error, what string) error {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			after := limit
			if callerBound {
				after = time.Since(start)
			}
			return &timeoutError{after: after.Round(time.Millisecond), what: what}
		}
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return fail(err, 0)
	}
	req.Header.Set("Accept", acceptHeader)
	if c.loopback {
		// Over loopback compression saves nothing and costs CPU at both ends (a vLLM server
		// gzips /metrics for any client that asks, and Go's transport asks by default).
		req.Header.Set("Accept-Encoding", "identity")
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fail(timedOut(err, "waiting for a response"), 0)
	}
	defer resp.Body.Close()
	at := time.Now()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		detail := errorDetail(resp)
		if strings.EqualFold(detail, http.StatusText(resp.StatusCode)) {
			detail = "" // {"detail":"Not Found"} adds nothing to "404 Not Found"
		}
		return fail(&statusError{code: resp.StatusCode, status: statusText(resp), detail: detail}, resp.StatusCode)
	}
	if resp.ContentLength > c.maxBody {
		return fail(fmt.Errorf("%w: %s announced, the limit is %s", ErrTooLarge, size(resp.ContentLength), size(c.maxBody)), 0)
	}
	body, err := readBody(resp, c.maxBody, c.lastSize.Load())
	if err != nil {
		return fail(timedOut(err, "reading the body"), 0)
	}
	if int64(len(body)) > c.maxBody {
		return fail(fmt.Errorf("%w: more than %s; refused", ErrTooLarge, size(c.maxBody)), 0)
	}
	c.lastSize.Store(int64(len(body)))
	if len(bytes.TrimSpace(body)) == 0 {
		return fail(ErrEmptyBody, 0)
	}
	if err := looksLikeMetrics(resp.Header.Get("Content-Type"), body); err != nil {
		return fail(err, 0)
	}
	return body, at, nil
}

// Scrape fetches and parses the metrics once. The Snapshot's Time is when the response
// headers arrived. Every error is an *Error.
func (c *Client) Scrape(ctx context.Context) (Snapshot, error) {
	body, at, err := c.Fetch(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	s, err := parseBytes(body)
	if err != nil {
		return Snapshot{}, &Error{URL: redact(c.url), Err: err}
	}
	s.Time = at
	return s, nil
}

// readBody reads at most max+1 bytes of the body, in one allocation when its length was
// announced or is the guess (io.ReadAll would grow its buffer a dozen times for a 60 KB
// body).
func readBody(resp *http.Response, max, guess int64) ([]byte, error) {
	n := guess + guess/8
	if resp.ContentLength > 0 {
		n = resp.ContentLength
	}
	n = min(n, max+1)
	var buf bytes.Buffer
	buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead free to see the end
	_, err := buf.ReadFrom(io.LimitReader(resp.Body, max+1))
	return buf.Bytes(), err
}

// isLoopback reports whether the URL's host is localhost or a loopback address.
func isLoopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// errorDetail reads the message of a JSON error body (vLLM's {"error": ...} or
// {"message": ...}); other bodies say nothing useful on one line.
func errorDetail(resp *http.Response) string {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch mt {
	case "application/json":
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			return ""
		}
		for _, k := range []string{"message", "error", "detail"} {
			switch v := m[k].(type) {
			case string:
				return oneLine([]byte(v), 120)
			case map[string]any:
				if s, ok := v["message"].(string); ok {
					return oneLine([]byte(s), 120)
				}
			}
		}
	case "text/plain":
		return oneLine(b, 120)
	}
	return ""
}

// looksLikeMetrics refuses bodies that are plainly something else (an HTML login or error
// page from a proxy), so the error says so instead of quoting a parser message.
func looksLikeMetrics(contentType string, body []byte) error {
	mt, _, _ := mime.ParseMediaType(contentType)
	trimmed := bytes.TrimLeft(body, " \t\r\n\ufeff")
	if mt == "text/html" || mt == "application/json" || bytes.HasPrefix(trimmed, []byte("<")) {
		kind := mt
		if kind == "" {
			kind = "HTML"
		}
		return fmt.Errorf("%w: got %s starting \"%s\"", ErrNotMetrics, kind, oneLine(trimmed, 40))
	}
	return nil
}

func statusText(resp *http.Response) string {
	if t := http.StatusText(resp.StatusCode); t != "" {
		return strconv.Itoa(resp.StatusCode) + " " + t
	}
	return strconv.Itoa(resp.StatusCode)
}

// oneLine is the start of b on one line, at most n bytes, blanks collapsed and anything
// unprintable escaped.
func oneLine(b []byte, n int) string {
	q := strconv.Quote(textfmt.OneLine(strings.ToValidUTF8(string(b), "?"), n))
	return q[1 : len(q)-1]
}

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// redact hides a URL's password and query values for messages.
func redact(raw string) string { return sanitize.URL(raw) }
