package loadgen

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// ModelCard is one model a server lists at GET /v1/models. ID and Root are sanitised
// (sanitize.Text), and MaxModelLen is 0 (unknown) unless it is in 1..MaxUsageTokens.
type ModelCard struct {
	ID          string `json:"id"`
	Root        string `json:"root"`
	MaxModelLen int    `json:"max_model_len"`
	// Request is the id byte for byte as the server lists it, for the requests: ID is cleaned
	// for a terminal and a file name, and a server matches the name it was given exactly.
	Request string `json:"-"`
}

// maxModelIDBytes bounds the id a request carries back to the server.
const maxModelIDBytes = 4096

// ServerError is a failed check of the server, worded in one line. Its message never holds a
// password, a query value or a control character: URL is redacted and Msg sanitised when it
// is built, and Error does both again for a ServerError made elsewhere.
type ServerError struct {
	URL    string // what was asked, redacted (sanitize.URL)
	Status int    // the HTTP status; 0 when no answer came
	Msg    string // the cause: "connection refused", or the server's error message
	// Err is the cause when it is one of this package's errors (ErrTooLarge), else nil.
	Err error
}

func (e *ServerError) Error() string {
	u, msg := sanitize.URL(e.URL), sanitize.Text(e.Msg)
	if e.Status == 0 {
		return "cannot reach " + u + ": " + msg
	}
	return fmt.Sprintf("%s: HTTP %d: %s", u, e.Status, msg)
}

// Unwrap returns Err.
func (e *ServerError) Unwrap() error { return e.Err }

// serverError builds a ServerError for the URL u (redacted here).
func serverError(u string, status int, msg string) *ServerError {
	return &ServerError{URL: sanitize.URL(u), Status: status, Msg: oneLine(sanitize.Text(msg))}
}

// Models asks the server which models it serves (GET /v1/models, with the API key). Failures
// are *ServerError: no answer (Status 0), or an HTTP status other than 200.
func (c *Client) Models(ctx context.Context) ([]ModelCard, error) {
	u := c.BaseURL() + "/v1/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, serverError(c.BaseURL(), 0, transportMessage(err))
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	c.cfg.Extras.setHeaders(req.Header, "")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, serverError(c.BaseURL(), 0, rootCause(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, min(maxErrorBodyBytes, int64(c.cfg.MaxBodyBytes))))
		return nil, serverError(u, resp.StatusCode, serverMessage(data, resp.Status))
	}
	data, err := readCapped(resp.Body, c.cfg.MaxBodyBytes)
	if errors.Is(err, ErrTooLarge) {
		se := serverError(u, resp.StatusCode, "the model list is "+err.Error())
		se.Err = err
		return nil, se
	}
	if err != nil {
		return nil, serverError(c.BaseURL(), 0, rootCause(ctx, err))
	}
	var list struct {
		Data []ModelCard `json:"data"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, serverError(u, resp.StatusCode, "not an OpenAI-compatible model list: "+err.Error())
	}
	if cards := saneCards(list.Data); len(cards) > 0 {
		return cards, nil
	}
	return nil, serverError(u, resp.StatusCode, "the server lists no model")
}

// saneCards sanitises the cards' strings, forgets lengths no model has, and drops cards whose
// id has nothing printable.
func saneCards(list []ModelCard) []ModelCard {
	cards := list[:0]
	for _, m := range list {
		if utf8.ValidString(m.ID) && len(m.ID) <= maxModelIDBytes {
			m.Request = m.ID
		}
		m.ID, m.Root = sanitize.Text(m.ID), sanitize.Text(m.Root)
		m.Request = cmp.Or(m.Request, m.ID)
		if m.MaxModelLen < 0 || m.MaxModelLen > MaxUsageTokens {
			m.MaxModelLen = 0
		}
		if m.ID != "" {
			cards = append(cards, m)
		}
	}
	return cards
}

// modelsTimeout bounds one GET /v1/models.
const modelsTimeout = 10 * time.Second

// ListModels asks the server for its models once or, with readyTimeout > 0, once a second
// until it answers or readyTimeout has passed (a server still starting). The error is the
// last *ServerError, or ctx's.
func (c *Client) ListModels(ctx context.Context, readyTimeout time.Duration) ([]ModelCard, error) {
	deadline := time.Now().Add(readyTimeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, modelsTimeout)
		models, err := c.Models(cctx)
		cancel()
		if err == nil || readyTimeout <= 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return models, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// PickModel lists the server's models (see ListModels) and picks the client's model, or the
// first model when the client names none. Its errors are one line for a person (see Describe).
func (c *Client) PickModel(ctx context.Context, readyTimeout time.Duration) (ModelCard, error) {
	models, err := c.ListModels(ctx, readyTimeout)
	if err != nil {
		return ModelCard{}, errors.New(Describe(err, c.cfg.APIKey != ""))
	}
	return ChooseModel(c.cfg.Model, models, c.RedactedURL())
}

// ChooseModel picks want from a server's models (base names the server in the error), or the
// first model when want is "".
func ChooseModel(want string, models []ModelCard, base string) (ModelCard, error) {
	if want == "" {
		return models[0], nil
	}
	var ids []string
	for _, m := range models {
		if m.ID == want || m.Request == want {
			return m, nil
		}
		ids = append(ids, m.ID)
	}
	return ModelCard{}, fmt.Errorf("model %q is not served by %s (it serves %s)", want, base, strings.Join(ids, ", "))
}

// Describe words a failed check of a server in one line, with the fix for a missing or
// refused API key (keyGiven: the request carried one).
func Describe(err error, keyGiven bool) string {
	var se *ServerError
	if errors.As(err, &se) && se.Status == 401 {
		if keyGiven {
			return se.URL + ": 401 Unauthorized: the server refused the API key"
		}
		return se.URL + ": 401 Unauthorized: the server wants an API key (--api-key, or OPENAI_API_KEY or VLLM_API_KEY)"
	}
	return textfmt.OneLine(err.Error(), 0)
}

// WaitHealthy polls GET /health every interval until it answers 200, and returns nil then, or
// the last failure when ctx ends.
func (c *Client) WaitHealthy(ctx context.Context, every time.Duration) error {
	u := c.BaseURL() + "/health"
	for {
		err := func() error {
			rctx, cancel := context.WithTimeout(ctx, max(every, time.Second))
			defer cancel()
			req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
			if err != nil {
				return serverError(c.BaseURL(), 0, transportMessage(err))
			}
			resp, err := c.hc.Do(req)
			if err != nil {
				return serverError(c.BaseURL(), 0, rootCause(rctx, err))
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return serverError(u, resp.StatusCode, "not ready")
			}
			return nil
		}()
		if err == nil {
			return nil
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// serverMessage picks the message out of an error body: vLLM's {"error": {"message": ...}},
// its flat {"error": "Unauthorized"}, FastAPI's {"detail": ...}, or the HTTP status text.
func serverMessage(body []byte, status string) string {
	var v struct {
		Error  json.RawMessage `json:"error"`
		Detail any             `json:"detail"`
		Msg    string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Msg != "":
			return v.Msg
		case v.Detail != nil:
			return fmt.Sprint(v.Detail)
		}
	}
	if t := strings.TrimSpace(string(body)); t != "" && len(t) <= 200 && !strings.ContainsAny(t, "<{") {
		return t
	}
	return status
}

// rootCause words a transport error by its innermost cause: "connection refused", "no such
// host", "no answer within the deadline".
func rootCause(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return "no answer before the deadline"
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return "canceled"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return oneLine(dns.Err)
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return oneLine(op.Err.Error())
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "no answer before the deadline"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the server closed the connection"
	}
	msg := err.Error()
	// *url.Error reads `Get "http://...": cause`; the URL is said already.
	if i := strings.LastIndex(msg, "\": "); i >= 0 {
		msg = msg[i+3:]
	}
	return oneLine(msg)
}

// oneLine folds a message onto one line and bounds its length.
func oneLine(s string) string { return textfmt.OneLine(s, 300) }

// CloseIdleConnections closes the connections kept alive for reuse. A server shutting down
// gracefully waits for connections that never carried a request (the transport may dial more
// than it uses), so close them before stopping a server in the same process.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }
