package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/defaults"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/tlsconfig"
)

// Endpoint paths vLLM serves.
const (
	EndpointCompletions = "/v1/completions"
	EndpointChat        = "/v1/chat/completions"
)

// Defaults for a request's deadlines.
const (
	DefaultRequestTimeout = 30 * time.Minute // a whole request, however long its output
	DefaultStallTimeout   = 2 * time.Minute  // no byte at all for this long ends the request
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxBodyBytes caps the body of a call that is not a stream (/v1/models,
	// /tokenize, an error body read for its message).
	DefaultMaxBodyBytes = 4 << 20
)

// maxErrorBodyBytes is how much of an error response is read for its message.
const maxErrorBodyBytes = 64 << 10

// ClientConfig says where and how to send requests.
type ClientConfig struct {
	BaseURL  string // e.g. http://127.0.0.1:8000
	Endpoint string // EndpointCompletions (default) or EndpointChat
	Model    string
	// KeepText collects each response's text in Result.Text, up to MaxKeptText bytes (the
	// generated_texts of --save-detailed).
	KeepText bool
	// APIKey is sent as a Bearer token; it is never logged or shown.
	APIKey         string
	RequestTimeout time.Duration
	StallTimeout   time.Duration
	Insecure       bool   // skip TLS verification
	CAFile         string // extra CA for https
	// MaxEventBytes caps one SSE line and one event of a stream (DefaultMaxEventBytes when
	// 0); a stream past it fails that request with ErrOversized.
	MaxEventBytes int
	// MaxBodyBytes caps the body of every call that is not a stream (DefaultMaxBodyBytes when
	// 0).
	MaxBodyBytes int
	// Extras are what vllm bench serve adds to every request: body fields, headers, logprobs.
	Extras RequestExtras
	// Pooling sends embeddings requests (PoolingBackend), not streamed completions, with
	// ignore_eos only when PoolingIgnoreEOS (--ignore-eos given: vLLM turns it on by itself
	// for its generation backends only).
	Pooling, PoolingIgnoreEOS bool
}

// Client sends streaming completion requests and measures them as bytes arrive.
// It is safe for concurrent use.
type Client struct {
	cfg     ClientConfig
	url     string
	chat    bool
	hc      *http.Client
	readers sync.Pool
	// tokens counts content chunks as they arrive, across all requests: the live output rate
	// (results only count tokens when a request ends, which makes bursty rates).
	tokens atomic.Int64
}

// TokensReceived is the number of content chunks received so far by every request.
func (c *Client) TokensReceived() int64 { return c.tokens.Load() }

// APIKeyFromEnv returns the key from OPENAI_API_KEY or VLLM_API_KEY, in that order.
func APIKeyFromEnv(getenv func(string) string) string {
	if k := getenv("OPENAI_API_KEY"); k != "" {
		return k
	}
	return getenv("VLLM_API_KEY")
}

// NewClient checks the configuration and builds a client whose connection pool never limits
// concurrency (Go's default keeps 2 idle connections per host, which would churn).
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = EndpointCompletions
	}
	cfg.RequestTimeout = defaults.Positive(cfg.RequestTimeout, DefaultRequestTimeout)
	cfg.StallTimeout = defaults.Positive(cfg.StallTimeout, DefaultStallTimeout)
	cfg.MaxEventBytes = defaults.Positive(cfg.MaxEventBytes, DefaultMaxEventBytes)
	cfg.MaxBodyBytes = defaults.Positive(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q: want http://host:port or https://host:port", sanitize.URL(cfg.BaseURL))
	}
	tlsCfg, err := tlsconfig.New(cfg.Insecure, cfg.CAFile)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		Proxy:               nil, // loopback and cluster-internal servers: never through a proxy
		DialContext:         (&net.Dialer{Timeout: DefaultConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        10000,
		MaxIdleConnsPerHost: 10000,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   false,
		// Each stream holds a connection and its buffers for its whole life. A request is
		// written once (its body larger than any buffer goes straight to the socket), so 1 KB
		// (not 4) is enough to write with: 3 MB less at 1,000 streams.
		WriteBufferSize: 1 << 10,
	}
	c := &Client{
		cfg:  cfg,
		url:  u.String() + cfg.Endpoint,
		chat: strings.Contains(cfg.Endpoint, "chat"),
		hc:   &http.Client{Transport: tr}, // no Client.Timeout: streams are bounded by contexts
	}
	// Events are parsed in this reader's buffer (longer ones are gathered by EventScanner).
	// At 8 KB, twice the transport's own buffer, a read of a busy stream goes straight from the
	// socket into it, a syscall for up to 8 KB rather than 4 KB and a copy: 10 to 17% less
	// CPU a token at 256 to 1,024 streams, for 4 MB more at 1,000 streams.
	c.readers.New = func() any { return bufio.NewReaderSize(nil, 8<<10) }
	return c, nil
}

// BaseURL returns the server's base URL, credentials included: print RedactedURL instead.
func (c *Client) BaseURL() string { return strings.TrimRight(c.cfg.BaseURL, "/") }

// RedactedURL is the base URL fit to print: no password, no query values.
func (c *Client) RedactedURL() string { return sanitize.URL(c.BaseURL()) }

// Config returns the client's configuration.
func (c *Client) Config() ClientConfig { return c.cfg }

// Prompt is one request's input and its output length.
type Prompt struct {
	Text         string
	InputTokens  int // expected prompt tokens (the server's usage replaces it)
	OutputTokens int // max_tokens
	IgnoreEOS    bool
	// Messages, when set, are the chat form of the prompt (a conversation's history and its
	// next user message): a chat endpoint sends them instead of Text as one user message.
	Messages []ChatMessage
	// Parts are content parts (image_url) a chat endpoint sends after Text in its user message.
	Parts []map[string]any
	// RequestID, when set, is sent as the x-request-id header (vllm bench serve's
	// --request-id-prefix and the request's index).
	RequestID string
	// Model, when set, is the model this request names instead of the client's (a LoRA
	// adapter of vllm bench serve's --lora-modules).
	Model string
}

// zero reports whether p is the zero Prompt.
func (p Prompt) zero() bool {
	return p.Text == "" && p.InputTokens == 0 && p.OutputTokens == 0 && !p.IgnoreEOS && p.Messages == nil && p.RequestID == ""
}

// ErrorClass names why a request failed; empty means it succeeded.
type ErrorClass string

const (
	ErrNone        ErrorClass = ""
	ErrHTTP400     ErrorClass = "http_400"
	ErrHTTP401     ErrorClass = "http_401"
	ErrHTTP403     ErrorClass = "http_403"
	ErrHTTP404     ErrorClass = "http_404"
	ErrHTTP429     ErrorClass = "http_429"
	ErrHTTP4xx     ErrorClass = "http_4xx"
	ErrHTTP5xx     ErrorClass = "http_5xx"
	ErrConnect     ErrorClass = "connect"      // no connection (refused, unreachable, DNS)
	ErrReset       ErrorClass = "reset"        // the connection broke mid-response
	ErrTimeout     ErrorClass = "timeout"      // the request or a read stalled past its deadline
	ErrStreamError ErrorClass = "stream_error" // an error event after the stream began
	ErrOversized   ErrorClass = "oversized"    // an SSE line or event, or a body, over its cap
	ErrProtocol    ErrorClass = "protocol"     // what no OpenAI-compatible server sends: counts out of bounds, JSON for a stream
	ErrTruncated   ErrorClass = "truncated"    // the stream ended without finishing
	ErrNoTokens    ErrorClass = "no_tokens"    // the stream finished without any output
	ErrCanceled    ErrorClass = "canceled"     // stopped by the caller (not a server failure)
)

// Result is one request, measured. Durations are from the actual send unless named otherwise.
type Result struct {
	// Text is the response's text, with ClientConfig.KeepText (not journalled).
	Text   string `json:"-"`
	Index  int    `json:"index"`
	Epoch  int    `json:"epoch"`
	Warmup bool   `json:"warmup,omitempty"`
	// Turn is the request's 1-based turn in a conversation (0 outside one): turn 1 computes
	// its whole prompt, later turns find their history in the prefix cache.
	Turn int `json:"turn,omitempty"`
	// Intended is when the schedule wanted the request sent; Start is when it was. The
	// difference is client-side queueing (open loop with a concurrency cap, or a late loader).
	Intended time.Time `json:"intended"`
	Start    time.Time `json:"start"`
	// FromIntended is true when TTFT and E2EL count from Intended rather than Start (a
	// replay's, see FromIntended).
	FromIntended bool            `json:"from_intended,omitempty"`
	TTFT         time.Duration   `json:"ttft_ns"`
	E2EL         time.Duration   `json:"e2el_ns"`
	ITLs         []time.Duration `json:"itl_ns,omitempty"`
	PromptTokens int             `json:"prompt_tokens"`
	OutputTokens int             `json:"output_tokens"`
	// OutputFromUsage is false when the server sent no usage and the tokens were counted as
	// content chunks.
	OutputFromUsage bool       `json:"output_from_usage"`
	Chunks          int        `json:"chunks"`
	FinishReason    string     `json:"finish_reason,omitempty"`
	Status          int        `json:"status"`
	Error           ErrorClass `json:"error,omitempty"`
	ErrorMessage    string     `json:"error_message,omitempty"`
}

// OK reports whether the request succeeded.
func (r *Result) OK() bool { return r.Error == ErrNone }

// TPOT is (E2EL - TTFT) / (output tokens - 1), as vLLM's benchmark defines it; false for
// requests with fewer than two output tokens.
func (r *Result) TPOT() (time.Duration, bool) {
	if r.OutputTokens < 2 {
		return 0, false
	}
	return (r.E2EL - r.TTFT) / time.Duration(r.OutputTokens-1), true
}

// QueueDelay is how long the request waited on the client before it was sent.
func (r *Result) QueueDelay() time.Duration {
	if r.Intended.IsZero() || r.Start.Before(r.Intended) {
		return 0
	}
	return r.Start.Sub(r.Intended)
}

// TokenSink receives the watched request's text as it arrives.
type TokenSink interface {
	Token(text string, at time.Time)
}

type requestBody struct {
	Model    string           `json:"model,omitempty"`
	Prompt   string           `json:"prompt,omitempty"`
	Messages []map[string]any `json:"messages,omitempty"`
	// RepetitionPenalty is sent as vLLM's completions request sends it, 1.0 always: a server
	// otherwise applies the model's generation_config.json (Qwen2.5's 1.05).
	RepetitionPenalty   *float64        `json:"repetition_penalty,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stream              bool            `json:"stream"`
	StreamOptions       map[string]bool `json:"stream_options"`
	IgnoreEOS           bool            `json:"ignore_eos,omitempty"`
}

// noPenalty is the repetition penalty of 1.0, none.
var noPenalty = 1.0

// RequestBody is the JSON body a client of cfg sends for p (its model, endpoint and extra
// body), for a transport that answers without HTTP: the simulator on its virtual clock.
func RequestBody(cfg ClientConfig, p Prompt) ([]byte, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = EndpointCompletions
	}
	c := &Client{cfg: cfg, chat: strings.Contains(cfg.Endpoint, "chat")}
	return c.body(p)
}

// RequestHeader is the header a client of cfg sends with p's request: its API key and
// --header's headers (see RequestBody).
func RequestHeader(cfg ClientConfig, p Prompt) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	cfg.Extras.setHeaders(h, p.RequestID)
	return h
}

func (c *Client) body(p Prompt) ([]byte, error) {
	model := c.cfg.Model
	if p.Model != "" {
		model = p.Model
	}
	b := requestBody{Model: model, Stream: true, StreamOptions: map[string]bool{"include_usage": true}, IgnoreEOS: p.IgnoreEOS}
	if c.chat {
		b.Messages = []map[string]any{{"role": "user", "content": p.Text}}
		if len(p.Parts) > 0 {
			b.Messages[0]["content"] = append([]map[string]any{{"type": "text", "text": p.Text}}, p.Parts...)
		}
		if len(p.Messages) > 0 {
			b.Messages = make([]map[string]any, len(p.Messages))
			for i, m := range p.Messages {
				b.Messages[i] = map[string]any{"role": m.Role, "content": m.Content}
			}
		}
		b.MaxCompletionTokens = p.OutputTokens
	} else {
		b.Prompt = p.Text
		b.MaxTokens = p.OutputTokens
		b.RepetitionPenalty = &noPenalty
	}
	if c.cfg.Extras.plain(c.chat) {
		return json.Marshal(b)
	}
	return c.cfg.Extras.merge(b, c.chat)
}

// newPost is a request of body to the endpoint with the key and the extra headers.
func (c *Client) newPost(ctx context.Context, body []byte, requestID string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	c.cfg.Extras.setHeaders(req.Header, requestID)
	return req, nil
}

// Do sends one streaming request and measures it. It never panics on bad input and always
// returns within the request deadline; failures come back as a Result with an ErrorClass.
func (c *Client) Do(ctx context.Context, p Prompt, watch TokenSink) Result {
	return c.DoITL(ctx, p, watch, nil)
}

// DoITL is Do that hands each inter-token latency to itl as it arrives instead of keeping it
// in the Result (itl nil: Do). A live view needs no per-request list, whose memory grows with
// every token of every stream in flight: 64 KB a stream at 8,192 output tokens.
func (c *Client) DoITL(ctx context.Context, p Prompt, watch TokenSink, itl func(time.Duration)) Result {
	if c.cfg.Pooling {
		return c.doEmbeddings(ctx, p)
	}
	res := Result{PromptTokens: p.InputTokens}
	timer := NewRequestTimer(&res, p.OutputTokens, itl)
	body, err := c.body(p)
	if err != nil {
		res.Error, res.ErrorMessage = ErrHTTP400, err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	stall := newStallTimer(c.cfg.StallTimeout, cancel)
	defer stall.timer.Stop()

	req, err := c.newPost(ctx, body, p.RequestID)
	if err != nil {
		res.Error, res.ErrorMessage = ErrConnect, err.Error()
		return res
	}
	req.Header.Set("Accept", "text/event-stream")

	start := time.Now()
	res.Start = start
	resp, err := c.hc.Do(req)
	if err != nil {
		res.Error, res.ErrorMessage = classifyTransport(ctx, err, &stall.stalled, &stall.mu, true)
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, min(maxErrorBodyBytes, int64(c.cfg.MaxBodyBytes))))
		FailStatus(&res, resp.StatusCode, msg)
		return res
	}
	st := &stream{c: c, res: &res, timer: timer, watch: watch, maxTokens: p.OutputTokens, maxChunks: maxChunks(c.cfg.Extras.outputBound(p.OutputTokens))}
	if c.cfg.KeepText {
		st.text = &strings.Builder{}
	}
	switch err := c.read(resp.Body, st, stall); {
	case err == nil:
	case errors.Is(err, errJSONBody):
		return res // the error is in res already
	case errors.Is(err, ErrTooLarge):
		res.Error, res.ErrorMessage = ErrOversized, err.Error()
	default:
		res.Error, res.ErrorMessage = classifyTransport(ctx, err, &stall.stalled, &stall.mu, false)
	}
	st.finish()
	return res
}

// maxChunks bounds the content chunks of a request for outputTokens: a server that sends more
// than twice as many chunks as tokens were asked for is not answering this request, and the
// bound keeps ITLs from growing without end.
func maxChunks(outputTokens int) int {
	if outputTokens > 0 {
		return 2*outputTokens + 64
	}
	return 1 << 20
}

// errJSONBody says read found a whole JSON body where a stream was due (and wrote the error).
var errJSONBody = errors.New("a JSON body, not a stream")

// readJSONBody fails a response that is one JSON body instead of an event stream: the server
// ignored "stream": true, or a proxy answered for it.
func (c *Client) readJSONBody(br *bufio.Reader, st *stream) error {
	res := st.res
	body, err := readCapped(br, c.cfg.MaxBodyBytes)
	switch {
	case errors.Is(err, ErrTooLarge):
		return fmt.Errorf("a JSON body in place of an event stream, %w", err)
	case err != nil:
		return err
	}
	res.Error, res.ErrorMessage = ErrProtocol, "the server sent one JSON body, not an event stream"
	if ch := ParseData(body); ch.Kind == ChunkError {
		res.ErrorMessage += ": " + ch.ErrorMessage
	}
	return errJSONBody
}

// stallTimer cancels a request when nothing arrives for its timeout. Reading only notes the
// time of the last byte; the timer re-arms itself for the remainder, so the hot path never
// touches it.
type stallTimer struct {
	mu       sync.Mutex
	stalled  bool
	lastByte atomic.Int64
	timer    *time.Timer
}

func newStallTimer(timeout time.Duration, cancel func()) *stallTimer {
	s := &stallTimer{}
	s.lastByte.Store(time.Now().UnixNano())
	s.timer = time.AfterFunc(timeout, func() {
		idle := time.Since(time.Unix(0, s.lastByte.Load()))
		if idle < timeout {
			s.timer.Reset(timeout - idle)
			return
		}
		s.mu.Lock()
		s.stalled = true
		s.mu.Unlock()
		cancel()
	})
	return s
}

// stream is one response's measurements as its events arrive.
type stream struct {
	c                    *Client
	res                  *Result
	timer                RequestTimer
	watch                TokenSink
	lastEvent            time.Time
	lastChunk            time.Time // the last chunk with a choice: where vLLM's latency ends
	texts                int       // chunks that carried text
	done                 bool
	uncounted            int // content chunks not yet added to c.tokens
	parser               chunkParser
	body                 countingReader
	maxTokens, maxChunks int              // the request's max_tokens, and see maxChunks
	text                 *strings.Builder // the response's text, with ClientConfig.KeepText
}

// MaxKeptText bounds the text a result keeps for --save-detailed: a server's answer is
// hostile input, and the text waits in memory until the request ends.
const MaxKeptText = 1 << 20

// KeepText adds s to b up to MaxKeptText bytes (b nil: nothing is kept).
func KeepText(b *strings.Builder, s string) {
	if b == nil || b.Len() >= MaxKeptText {
		return
	}
	if room := MaxKeptText - b.Len(); len(s) > room {
		s = strings.ToValidUTF8(s[:room], "")
	}
	b.WriteString(s)
}

// read reads the response's lines as they arrive and hands each event to st, until the stream
// ends, an event ends it, or reading fails (the error returned).
func (c *Client) read(body io.Reader, st *stream, stall *stallTimer) error {
	br := c.readers.Get().(*bufio.Reader)
	st.body.r = body
	br.Reset(&st.body)
	defer func() {
		br.Reset(nil)
		c.readers.Put(br)
	}()
	// A body that starts like JSON is a whole response, not a stream.
	if first, err := br.Peek(1); err == nil && (first[0] == '{' || first[0] == '[') {
		stall.lastByte.Store(time.Now().UnixNano())
		return c.readJSONBody(br, st)
	}
	sc := NewEventScanner(br, c.cfg.MaxEventBytes)
	sc.OnBytes = func() { stall.lastByte.Store(time.Now().UnixNano()) }
	defer st.countTokens()
	var at time.Time
	reads := -1
	for {
		ev, err := sc.Next()
		// The events of one read arrived together: they share the time taken after it.
		if st.body.reads != reads {
			reads, at = st.body.reads, time.Now()
			stall.lastByte.Store(at.UnixNano())
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err // a broken connection, or ErrTooLarge
		case !st.handle(ev, at):
			return nil
		}
		if br.Buffered() == 0 {
			st.countTokens() // the next event needs a read: count what this one brought
		}
	}
}

// countingReader counts the reads of a response body.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// countTokens adds the content chunks not yet counted to the client's live count: once a
// read, not once a token, as every stream shares that counter.
func (st *stream) countTokens() {
	if st.uncounted > 0 {
		st.c.tokens.Add(int64(st.uncounted))
		st.uncounted = 0
	}
}

// handle takes one event, received at at; it reports whether the stream goes on.
func (st *stream) handle(ev Event, at time.Time) bool {
	res := st.res
	st.lastEvent = at
	ch := st.parser.parse(ev)
	if ch.Invalid != "" {
		res.Error, res.ErrorMessage = ErrProtocol, ch.Invalid
		return false
	}
	if ch.HasUsage {
		st.timer.Usage(ch.PromptTokens, ch.CompletionTokens)
	}
	switch ch.Kind {
	case ChunkContent:
		if st.timer.Chunks() == st.maxChunks {
			res.Error, res.ErrorMessage = ErrProtocol, fmt.Sprintf("more than %d content chunks for max_tokens %d", st.maxChunks, st.maxTokens)
			return false
		}
		// Every chunk with a choice is timed, as vLLM's client times it (a chat stream's role
		// chunk is its first token, an empty delta one more gap); one with text counts a token
		// until the usage says otherwise.
		tokens := 0
		if len(ch.Text) > 0 {
			tokens = 1
			st.texts++
			st.uncounted++
			if st.watch != nil || st.text != nil {
				text := UnescapeText(ch.Text)
				if st.watch != nil {
					st.watch.Token(text, at)
				}
				KeepText(st.text, text)
			}
		}
		st.timer.Content(at, tokens)
		st.lastChunk = at
		if ch.FinishReason != "" {
			res.FinishReason = sanitize.Text(ch.FinishReason)
		}
	case ChunkError:
		res.Error, res.ErrorMessage = ErrStreamError, ch.ErrorMessage
		return false
	case ChunkDone:
		st.done = true
		return false
	case ChunkOther, ChunkUsage:
	}
	return true
}

// finish completes the result once the stream has ended (RequestTimer.End, at the last event),
// with the error of a stream that ended unfinished or empty.
func (st *stream) finish() {
	res := st.res
	if st.text != nil {
		res.Text = st.text.String()
	}
	end := st.lastEvent
	if !st.lastChunk.IsZero() {
		end = st.lastChunk // not the usage chunk or [DONE] after it
	}
	st.timer.End(end)
	if res.Error != ErrNone {
		return
	}
	switch {
	case !st.done && res.FinishReason == "":
		res.Error, res.ErrorMessage = ErrTruncated, "the stream ended before the response finished"
	case st.texts == 0:
		res.Error, res.ErrorMessage = ErrNoTokens, "the response finished without any output"
	}
}

// FailStatus records in res a server's answer of status (not 200) with body, as Do records
// one: the status, its error class and the server's message.
func FailStatus(res *Result, status int, body []byte) {
	res.Status = status
	res.Error = classifyStatus(status)
	res.ErrorMessage = fmt.Sprintf("HTTP %d: %s", status, errorMessage(bytes.TrimSpace(body)))
}

func classifyStatus(code int) ErrorClass {
	switch code {
	case 400:
		return ErrHTTP400
	case 401:
		return ErrHTTP401
	case 403:
		return ErrHTTP403
	case 404:
		return ErrHTTP404
	case 429:
		return ErrHTTP429
	}
	if code >= 500 {
		return ErrHTTP5xx
	}
	return ErrHTTP4xx
}

// classifyTransport names a network failure: before a response (connect) or during one (reset).
func classifyTransport(ctx context.Context, err error, stalled *bool, mu *sync.Mutex, beforeResponse bool) (ErrorClass, string) {
	mu.Lock()
	s := *stalled
	mu.Unlock()
	switch {
	case s:
		return ErrTimeout, "no data for the stall timeout"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return ErrTimeout, "request deadline exceeded"
	case errors.Is(ctx.Err(), context.Canceled):
		return ErrCanceled, "canceled"
	}
	msg := transportMessage(err)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ErrTimeout, msg
	}
	if beforeResponse {
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return ErrReset, msg
		}
		return ErrConnect, msg
	}
	return ErrReset, msg
}

// transportMessage is err on one line with the URL it names redacted (net/http hides a
// password, not a query string).
func transportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return oneLine(sanitize.Text(ue.Op + " " + sanitize.URL(ue.URL) + ": " + ue.Err.Error()))
	}
	return oneLine(sanitize.Text(err.Error()))
}

// readCapped reads r to its end, or fails with an error wrapping ErrTooLarge once it has
// passed max bytes.
func readCapped(r io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: over %s", ErrTooLarge, byteSize(int64(max)))
	}
	return b, nil
}
