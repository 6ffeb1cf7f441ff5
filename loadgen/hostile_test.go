package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/refused"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// The hostile-server suite: servers that send what no honest server sends. Each case must end
// in a counted failure class or a one-line error, with bounded memory (the bytes the server
// got to write and the bytes the process allocated), nothing a terminal would interpret in
// any string, and no hang (every call runs under a deadline).

const (
	hostileCap = 256 << 10 // the clients' caps in this suite: small, so the tests are quick
	// floodBytes is how much a flooding server writes at most: far more than any cap, so a
	// client without the cap would hold it all, and finite, so such a client fails rather
	// than hangs.
	floodBytes = 256 << 20
	// memoryBound is what a case may allocate or make the server write: the caps plus
	// socket buffers and bookkeeping, far below floodBytes.
	memoryBound = 48 << 20
)

const escapes = "\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e\b\a"

// flood writes chunk to w repeatedly, up to floodBytes, until the client goes away; the count
// of bytes it managed to write goes to written.
func flood(w http.ResponseWriter, prefix, chunk []byte, written *atomic.Int64) {
	n, _ := w.Write(prefix)
	written.Add(int64(n))
	for written.Load() < floodBytes {
		n, err := w.Write(chunk)
		written.Add(int64(n))
		if err != nil {
			return
		}
	}
}

func hostileClient(t *testing.T, url string) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{BaseURL: url, Model: "m", StallTimeout: 2 * time.Second, RequestTimeout: 10 * time.Second,
		MaxEventBytes: hostileCap, MaxBodyBytes: hostileCap})
	require.NoError(t, err)
	return c
}

// allocated runs f and returns the bytes the process allocated meanwhile.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// within fails the test if f does not return in time: a hang guard, not a measurement.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("no answer within %v", d)
	}
}

func assertTerminalSafe(t *testing.T, s string) {
	t.Helper()
	assert.Equal(t, sanitize.Text(s), s, "holds control characters: %q", s)
	assert.NotContains(t, s, "\x1b")
	assert.NotContains(t, s, "\n")
}

func eventServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the request first: the server notices a client that hangs up (and cancels
		// r.Context) only once the request body is consumed.
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		h(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func TestHostileStreams(t *testing.T) {
	content := []byte(`data: {"choices":[{"index":0,"text":" a","finish_reason":null}]}` + "\n\n")
	cases := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request, written *atomic.Int64)
		class   ErrorClass
		msg     string
	}{
		{"an SSE line with no newline", func(w http.ResponseWriter, _ *http.Request, n *atomic.Int64) {
			flood(w, []byte("data: {\"choices\":[{\"text\":\""), bytes.Repeat([]byte("x"), 32<<10), n)
		}, ErrOversized, "an SSE line over 256 KiB"},
		{"data lines with no blank line", func(w http.ResponseWriter, _ *http.Request, n *atomic.Int64) {
			flood(w, nil, []byte("data: "+strings.Repeat("y", 1000)+"\n"), n)
		}, ErrOversized, "an SSE event over 256 KiB"},
		{"a comment line with no end", func(w http.ResponseWriter, _ *http.Request, n *atomic.Int64) {
			flood(w, []byte(": "), bytes.Repeat([]byte("z"), 32<<10), n)
		}, ErrOversized, "an SSE line over 256 KiB"},
		{"an event type with no end", func(w http.ResponseWriter, _ *http.Request, n *atomic.Int64) {
			flood(w, []byte("event: "), bytes.Repeat([]byte("e"), 32<<10), n)
		}, ErrOversized, "over 256 KiB"},
		{"a huge JSON body instead of a stream", func(w http.ResponseWriter, _ *http.Request, n *atomic.Int64) {
			flood(w, []byte(`{"choices":[{"text":"`), bytes.Repeat([]byte("j"), 32<<10), n)
		}, ErrOversized, "a JSON body in place of an event stream, too large: over 256 KiB"},
		{"a huge error body", func(w http.ResponseWriter, _ *http.Request, n *atomic.Int64) {
			w.WriteHeader(http.StatusInternalServerError)
			flood(w, []byte(`{"error":{"message":"`), bytes.Repeat([]byte("E"), 32<<10), n)
		}, ErrHTTP5xx, "HTTP 500: "},
		{"more content chunks than max_tokens", func(w http.ResponseWriter, _ *http.Request, n *atomic.Int64) {
			flood(w, nil, content, n)
		}, ErrProtocol, "more than 74 content chunks for max_tokens 5"},
		{"endless keep-alive comments", func(w http.ResponseWriter, r *http.Request, n *atomic.Int64) {
			// Memory stays flat; the request deadline ends it.
			for r.Context().Err() == nil && n.Load() < floodBytes {
				k, err := w.Write([]byte(": ping\n"))
				n.Add(int64(k))
				if err != nil {
					return
				}
				http.NewResponseController(w).Flush()
			}
		}, ErrTimeout, "deadline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var written atomic.Int64
			hs := eventServer(t, func(w http.ResponseWriter, r *http.Request) { tc.handler(w, r, &written) })
			c := hostileClient(t, hs.URL)
			if tc.class == ErrTimeout {
				c.cfg.RequestTimeout = 300 * time.Millisecond
			}
			var res Result
			alloc := allocated(func() {
				within(t, 20*time.Second, func() { res = c.Do(context.Background(), Prompt{Text: "x", OutputTokens: 5}, nil) })
			})
			assert.Equal(t, tc.class, res.Error, res.ErrorMessage)
			assert.Contains(t, res.ErrorMessage, tc.msg)
			assertTerminalSafe(t, res.ErrorMessage)
			assert.LessOrEqual(t, len(res.ErrorMessage), 300+len("…"))
			assert.Less(t, alloc, uint64(memoryBound), "allocated %d bytes", alloc)
			if tc.class != ErrTimeout {
				assert.Less(t, written.Load(), int64(memoryBound), "the client stopped reading at its cap")
			}
		})
	}
}

func TestHostileStreamTexts(t *testing.T) {
	// A JSON string carries escapes as \u001b: they reach the client as control characters.
	jsonEsc := `\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e\b\u0007`
	cases := []struct {
		name  string
		body  string
		class ErrorClass
		msg   string
	}{
		{"an error object in the stream", "data: {\"error\":{\"message\":\"boom" + jsonEsc + "\"}}\n\n", ErrStreamError, "boom"},
		{"event: error", "event: error\ndata: {\"message\":\"overloaded" + jsonEsc + "\"}\n\n", ErrStreamError, "overloaded"},
		{"event: error with plain text", "event: error\ndata: upstream" + escapes + " died\n\n", ErrStreamError, "upstream died"},
		{"event: error with no data", "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":null}]}\n\nevent: error\n\n", ErrStreamError, "error event"},
		{"a JSON error body instead of a stream", `{"error":{"message":"no streaming here` + jsonEsc + `"}}`, ErrProtocol, "not an event stream: no streaming here"},
		{"usage beyond any context", "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":\"length\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":9000000000000000000}}\n\ndata: [DONE]\n\n", ErrProtocol, "usage.completion_tokens is 9000000000000000000"},
		{"negative usage", "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":1}}\n\n", ErrProtocol, "usage.prompt_tokens is -5"},
		{"a finish reason with escapes", "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":\"stop" + jsonEsc + "\"}]}\n\ndata: [DONE]\n\n", ErrNone, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := hostileClient(t, serveBytes(t, []byte(tc.body)).URL)
			var res Result
			within(t, 20*time.Second, func() { res = c.Do(context.Background(), Prompt{Text: "x", OutputTokens: 5}, nil) })
			assert.Equal(t, tc.class, res.Error, res.ErrorMessage)
			assert.Contains(t, res.ErrorMessage, tc.msg)
			assertTerminalSafe(t, res.ErrorMessage)
			assertTerminalSafe(t, res.FinishReason)
			assert.LessOrEqual(t, res.OutputTokens, MaxUsageTokens)
		})
	}
}

// The HTTP error body's message is sanitised too, and a server that sends nothing at all (not
// even headers) or stalls mid-stream is cut off by the stall timeout.
func TestHostileStatusAndStalls(t *testing.T) {
	errBody := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"bad`+`\u001b[2J\u202e"}}`)
	}))
	defer errBody.Close()
	noHeaders := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer noHeaders.Close()
	stalls := eventServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" a\",\"finish_reason\":null}]}\n\ndata: {\"choi")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	})
	for _, tc := range []struct {
		name  string
		url   string
		class ErrorClass
		msg   string
	}{
		{"an error body with escapes", errBody.URL, ErrHTTP400, "HTTP 400: bad"},
		{"no headers ever", noHeaders.URL, ErrTimeout, "stall"},
		{"a stall in the middle of an event", stalls.URL, ErrTimeout, "stall"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hostileClient(t, tc.url)
			c.cfg.StallTimeout = 200 * time.Millisecond
			var res Result
			within(t, 20*time.Second, func() { res = c.Do(context.Background(), Prompt{Text: "x", OutputTokens: 5}, nil) })
			assert.Equal(t, tc.class, res.Error, res.ErrorMessage)
			assert.Contains(t, res.ErrorMessage, tc.msg)
			assertTerminalSafe(t, res.ErrorMessage)
		})
	}
}

// A capped stream fails its request and the run goes on: every request is counted as
// oversized and the runner finishes.
func TestHostileStreamFailsRequestsNotTheRun(t *testing.T) {
	var written atomic.Int64
	hs := eventServer(t, func(w http.ResponseWriter, _ *http.Request) {
		flood(w, []byte("data: "), bytes.Repeat([]byte("x"), 32<<10), &written)
	})
	c := hostileClient(t, hs.URL)
	var rec Recorder
	r := NewRunner(c, RunnerConfig{Workload: fixedWorkload(), Concurrency: 2, NumRequests: 6, Sinks: []func(Result){rec.Add}})
	within(t, 30*time.Second, func() { require.NoError(t, r.Run(context.Background())) })
	res := rec.Results()
	require.Len(t, res, 6)
	for _, x := range res {
		assert.Equal(t, ErrOversized, x.Error)
	}
	assert.Less(t, written.Load(), int64(6*memoryBound))
}

func TestHostileModelList(t *testing.T) {
	var written atomic.Int64
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flood(w, []byte(`{"object":"list","data":[`), []byte(`{"id":"m","object":"model","root":"m","max_model_len":4096},`), &written)
	}))
	defer huge.Close()
	c := hostileClient(t, huge.URL)
	var err error
	alloc := allocated(func() { within(t, 20*time.Second, func() { _, err = c.Models(context.Background()) }) })
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Equal(t, huge.URL+"/v1/models: HTTP 200: the model list is too large: over 256 KiB", err.Error())
	assert.Less(t, alloc, uint64(memoryBound))
	assert.Less(t, written.Load(), int64(memoryBound))

	hostileIDs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[`+
			`{"id":"evil\u001b]0;pwned\u0007\u001b[2J\u202emodel","root":"org/\u009b31mroot","max_model_len":9000000000000000000},`+
			`{"id":"\u001b[2J","root":"x","max_model_len":-1},`+
			`{"id":"ok`+"\xff"+`","root":"r","max_model_len":4096}]}`)
	}))
	defer hostileIDs.Close()
	models, err := hostileClient(t, hostileIDs.URL).Models(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []ModelCard{
		{ID: "evilmodel", Root: "org/root", MaxModelLen: 0, Request: "evil\x1b]0;pwned\a\x1b[2J\u202emodel"},
		{ID: "ok\ufffd", Root: "r", MaxModelLen: 4096, Request: "ok\ufffd"},
	}, models, "sanitised for display, sent back as listed; an id with nothing printable is dropped; absurd lengths unknown")

	onlyEscapes := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"\u001b[2J"}]}`)
	}))
	defer onlyEscapes.Close()
	_, err = hostileClient(t, onlyEscapes.URL).Models(context.Background())
	assert.ErrorContains(t, err, "the server lists no model")

	badStatus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error":"go away`+"\\u001b]0;x\\u0007\\n"+`second line"}`)
	}))
	defer badStatus.Close()
	_, err = hostileClient(t, badStatus.URL).Models(context.Background())
	assert.Equal(t, badStatus.URL+"/v1/models: HTTP 403: go away second line", err.Error())
}

func TestHostileTokenize(t *testing.T) {
	var written atomic.Int64
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flood(w, []byte(`{"count":1,"token_strs":[`), []byte(`"a",`), &written)
	}))
	defer huge.Close()
	var err error
	alloc := allocated(func() {
		within(t, 20*time.Second, func() { _, err = CalibrateVocab(context.Background(), hostileClient(t, huge.URL)) })
	})
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Less(t, alloc, uint64(memoryBound))
	assert.Less(t, written.Load(), int64(memoryBound))
}

// Credentials and query strings never reach a message.
func TestMessagesRedactURLs(t *testing.T) {
	addr := refused.Addr(t)
	base := "http://user:PW123@" + addr + "/?token=SECRET9"
	c, err := NewClient(ClientConfig{BaseURL: base, StallTimeout: time.Second, RequestTimeout: 5 * time.Second})
	require.NoError(t, err)

	res := c.Do(context.Background(), Prompt{Text: "x", OutputTokens: 1}, nil)
	assert.Equal(t, ErrConnect, res.Error)
	_, modelsErr := c.Models(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	healthErr := c.WaitHealthy(ctx, 10*time.Millisecond)
	_, vocabErr := CalibrateVocab(context.Background(), c)
	_, badURL := NewClient(ClientConfig{BaseURL: "ftp://user:PW123@host/?token=SECRET9"})
	for _, msg := range []string{res.ErrorMessage, modelsErr.Error(), healthErr.Error(), vocabErr.Error(), badURL.Error(), c.RedactedURL()} {
		assert.NotContains(t, msg, "PW123", msg)
		assert.NotContains(t, msg, "SECRET9", msg)
		assertTerminalSafe(t, msg)
	}
	assert.Contains(t, modelsErr.Error(), "user:***@"+addr)
	var se *ServerError
	require.True(t, errors.As(modelsErr, &se))
	assert.NotContains(t, se.URL, "PW123")

	// A ServerError built by hand is redacted when printed.
	hand := &ServerError{URL: "http://u:pw@h/?k=v", Status: 500, Msg: "x\x1b[2J"}
	assert.Equal(t, "http://u:***@h/?k=***: HTTP 500: x", hand.Error())
}

// A server's endless answer keeps at most MaxKeptText bytes of text, cut on a rune.
func TestKeptTextIsBounded(t *testing.T) {
	var b strings.Builder
	for range 3 {
		KeepText(&b, strings.Repeat("é", MaxKeptText/3))
	}
	assert.LessOrEqual(t, b.Len(), MaxKeptText)
	assert.Greater(t, b.Len(), MaxKeptText-4)
	assert.True(t, utf8.ValidString(b.String()))
	KeepText(nil, "no builder: nothing kept, no panic")
}
