package scrape

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/refused"
)

func fixtureHandler(t *testing.T, name string) http.HandlerFunc {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(testdataDir, name))
	require.NoError(t, err)
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=1.0.0; charset=utf-8")
		_, _ = w.Write(body)
	}
}

func TestMetricsURL(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{in: "http://127.0.0.1:8000", want: "http://127.0.0.1:8000/metrics"},
		{in: "http://127.0.0.1:8000/", want: "http://127.0.0.1:8000/metrics"},
		{in: "http://127.0.0.1:8000/metrics", want: "http://127.0.0.1:8000/metrics"},
		{in: "https://gpu-7.internal/vllm/metrics/", want: "https://gpu-7.internal/vllm/metrics/"},
		{in: "localhost:8000", want: "http://localhost:8000/metrics"},
		{in: " http://[::1]:8000 ", want: "http://[::1]:8000/metrics"},
		{in: "http://h:8000/metrics?x=1", want: "http://h:8000/metrics?x=1"},
		// Sad paths.
		{in: "", err: "no URL"},
		{in: "ftp://h/metrics", err: "scheme must be http or https"},
		{in: "http://", err: "no host"},
		{in: "http://h:port/", err: "bad URL"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := MetricsURL(tt.in)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestScrape(t *testing.T) {
	var gotAccept, gotAuth, gotPath string
	fixture := fixtureHandler(t, "vllm-0.25.1-metrics-opt-125m-tp2-idle.prom")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Recorded here, checked on the test's goroutine.
		gotAccept, gotAuth, gotPath = r.Header.Get("Accept"), r.Header.Get("Authorization"), r.URL.Path
		fixture(w, r)
	}))
	defer srv.Close()

	c, err := NewClient(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, srv.URL+"/metrics", c.URL())
	before := time.Now()
	s, err := c.Scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "/metrics", gotPath)
	assert.Equal(t, "text/plain;version=0.0.4", gotAccept)
	assert.Empty(t, gotAuth, "no key, no Authorization header")
	assert.Equal(t, BackendVLLM, s.Backend)
	is(t, 400448, s.Capacity.KVCacheTokens, "parsed")
	assert.False(t, s.Time.Before(before), "Time is set")

	c, err = NewClient(srv.URL, WithAPIKey("sk-test"), WithTimeout(time.Second))
	require.NoError(t, err)
	_, err = c.Scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "Bearer sk-test", gotAuth)
}

// scrapeErr scrapes and returns the error, checking it is a one-line *Error naming the URL.
func scrapeErr(t *testing.T, c *Client) *Error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Scrape(ctx)
	require.Error(t, err)
	var se *Error
	require.True(t, errors.As(err, &se), "%T", err)
	msg := err.Error()
	assert.NotContains(t, msg, "\n")
	assert.True(t, strings.HasPrefix(msg, c.URL()+": "), "names the URL: %s", msg)
	t.Log(msg)
	return se
}

func TestScrapeErrors(t *testing.T) {
	html := `<!DOCTYPE html>
<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>`

	tests := []struct {
		name    string
		handler http.HandlerFunc
		opts    []Option
		status  int
		want    []string
		check   func(t *testing.T, e *Error)
	}{
		{name: "401 with vLLM's JSON body", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"Unauthorized"}`)
		}, status: 401, want: []string{"HTTP 401 Unauthorized"}},
		{name: "403 with a message", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"message":"key expired"}`)
		}, status: 403, want: []string{"HTTP 403 Forbidden (key expired)"}},
		{name: "404 HTML page", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, html)
		}, status: 404, want: []string{"HTTP 404 Not Found"}},
		{name: "500 plain text", handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "gathering metrics: boom", http.StatusInternalServerError)
		}, status: 500, want: []string{"HTTP 500 Internal Server Error (gathering metrics: boom)"}},
		{name: "200 with an HTML page", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, html)
		}, want: []string{"not Prometheus text", "text/html", "<!DOCTYPE html>"}, check: func(t *testing.T, e *Error) {
			assert.ErrorIs(t, e, ErrNotMetrics)
		}},
		{name: "200 with HTML labelled text/plain", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, html)
		}, want: []string{"not Prometheus text: got text/plain starting \"<!DOCTYPE html>"}},
		{name: "200 with text that does not parse", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "vllm:num_requests_running{model_name=\"m\" 1\n")
		}, want: []string{"not Prometheus text", "line 1"}},
		{name: "100 MB announced", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(100<<20))
			w.WriteHeader(http.StatusOK)
			_, _ = io.CopyN(w, endless(), 100<<20) // ends when the client hangs up
		}, want: []string{"body too large", "100 MiB announced", "16 MiB"}, check: func(t *testing.T, e *Error) {
			assert.ErrorIs(t, e, ErrTooLarge)
		}},
		{name: "100 MB streamed without a length", handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.CopyN(w, endless(), 100<<20)
		}, opts: []Option{WithMaxBodyBytes(1 << 20)}, want: []string{"body too large", "more than 1 MiB"}},
		{name: "no response", handler: func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // until the client gives up
		}, opts: []Option{WithTimeout(100 * time.Millisecond)},
			want: []string{"timed out after 100ms waiting for a response"}, check: func(t *testing.T, e *Error) {
				assert.True(t, e.Timeout())
			}},
		{name: "body that never ends", handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "# TYPE vllm:num_requests_running gauge\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, opts: []Option{WithTimeout(100 * time.Millisecond)},
			want: []string{"timed out after 100ms reading the body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c, err := NewClient(srv.URL, tt.opts...)
			require.NoError(t, err)
			e := scrapeErr(t, c)
			assert.Equal(t, tt.status, e.StatusCode)
			for _, w := range tt.want {
				assert.Contains(t, e.Error(), w)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

// endless is a reader of valid metric lines that never ends.
func endless() io.Reader {
	line := []byte("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1.0\n")
	return readerFunc(func(p []byte) (int, error) {
		n := 0
		for n < len(p) {
			n += copy(p[n:], line)
		}
		return n, nil
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestScrapeUnreachable(t *testing.T) {
	url := "http://" + refused.Addr(t) // nothing listens there

	c, err := NewClient(url)
	require.NoError(t, err)
	e := scrapeErr(t, c)
	assert.Equal(t, url+"/metrics: connection refused", e.Error())
}

func TestScrapeCallerContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	c, err := NewClient(srv.URL) // the client's own timeout is 5 s; the caller's is shorter
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Scrape(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "timed out after")
	assert.NotContains(t, err.Error(), "after 5s")

	// A deadline that passed before the fetch began (a starved machine) never reads as a
	// negative wait.
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-8*time.Second))
	defer cancel()
	_, err = c.Scrape(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "timed out after")
	assert.NotContains(t, err.Error(), "after -")

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = c.Scrape(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "context canceled")
}

func TestScrapeTLS(t *testing.T) {
	srv := httptest.NewTLSServer(fixtureHandler(t, "vllm-metrics-synthetic-single-process.txt"))
	defer srv.Close()

	c, err := NewClient(srv.URL)
	require.NoError(t, err)
	assert.Contains(t, scrapeErr(t, c).Error(), "TLS: x509: certificate signed by unknown authority")

	c, err = NewClient(srv.URL, WithInsecureSkipVerify())
	require.NoError(t, err)
	_, err = c.Scrape(context.Background())
	require.NoError(t, err)

	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	c, err = NewClient(srv.URL, WithCAFile(ca))
	require.NoError(t, err)
	s, err := c.Scrape(context.Background())
	require.NoError(t, err)
	is(t, 1221776, s.Capacity.KVCacheTokens, "scraped over TLS")

	_, err = NewClient(srv.URL, WithCAFile(filepath.Join(t.TempDir(), "missing.pem")))
	assert.ErrorContains(t, err, "CA file")
	notPEM := filepath.Join(t.TempDir(), "x.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))
	_, err = NewClient(srv.URL, WithCAFile(notPEM))
	assert.ErrorContains(t, err, "no PEM certificate")
}

func TestClientOptions(t *testing.T) {
	_, err := NewClient("http://h", WithTimeout(0))
	assert.Error(t, err)
	_, err = NewClient("http://h", WithMaxBodyBytes(-1))
	assert.Error(t, err)
	_, err = NewClient("")
	assert.Error(t, err)
}

// TestFetchEncoding: a loopback server is asked for the body uncompressed (gzip would cost
// CPU at both ends for nothing); the body is read whole whether its length is announced or
// chunked.
func TestFetchEncoding(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(testdataDir, "vllm-0.24-single-engine-rust-vllmtop.prom"))
	require.NoError(t, err)
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Accept-Encoding"))
		if r.URL.Query().Has("announced") {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	for _, q := range []string{"?announced", "?chunked"} {
		c, err := NewClient(srv.URL + "/metrics" + q)
		require.NoError(t, err)
		for range 2 { // the second read of a chunked body is sized by the first
			b, _, err := c.Fetch(context.Background())
			require.NoError(t, err)
			assert.Equal(t, body, b, q)
		}
	}
	assert.Equal(t, []string{"identity", "identity", "identity", "identity"}, got)

	for host, want := range map[string]bool{"http://127.0.0.1:8000/metrics": true, "http://localhost/metrics": true,
		"http://[::1]:8000/metrics": true, "http://127.3.0.1/metrics": true, "http://gpu-7.internal:8000/metrics": false,
		"http://10.0.0.7:8000/metrics": false} {
		assert.Equal(t, want, isLoopback(host), host)
	}
}
