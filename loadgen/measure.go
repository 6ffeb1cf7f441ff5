package loadgen

import "time"

// maxITLPrealloc caps the inter-token latencies allocated ahead for one request: a max_tokens
// far past what a server streams must not reserve memory it never fills.
const maxITLPrealloc = 1 << 16

// RequestTimer measures one request from its timed output: the one definition of its TTFT,
// inter-token latencies, E2E latency, chunk and token counts, which every Transport feeds
// (the HTTP client with each SSE event's arrival, a simulated engine with each step's end).
// TPOT then follows from the Result (Result.TPOT).
type RequestTimer struct {
	res     *Result
	itl     func(time.Duration) // nil: ITLs are kept in res
	last    time.Time           // the last content chunk
	chunks  int                 // content chunks so far
	counted int                 // output tokens the chunks carried
	usage   int                 // output tokens the server's usage said, when seen
	seen    bool                // a usage count arrived
}

// NewRequestTimer measures into res a request for up to maxTokens output tokens; its
// latencies count from res.Start, which the transport sets when it sends. itl, when set,
// receives each inter-token latency as it arrives instead of res keeping it: a live view needs
// no per-request list, whose memory grows with every token of every stream in flight.
func NewRequestTimer(res *Result, maxTokens int, itl func(time.Duration)) RequestTimer {
	if itl == nil {
		res.ITLs = make([]time.Duration, 0, min(max(maxTokens-1, 0), maxITLPrealloc))
	}
	return RequestTimer{res: res, itl: itl}
}

// Content records a content chunk that arrived at at carrying tokens output tokens (1 a chunk
// where the transport cannot count them: a server's usage then replaces the count).
func (m *RequestTimer) Content(at time.Time, tokens int) {
	switch {
	case m.chunks == 0:
		m.res.TTFT = at.Sub(m.res.Start)
	case m.itl != nil:
		m.itl(at.Sub(m.last))
	default:
		m.res.ITLs = append(m.res.ITLs, at.Sub(m.last))
	}
	m.last = at
	m.chunks++
	m.counted += tokens
}

// Chunks is the number of content chunks recorded so far.
func (m *RequestTimer) Chunks() int { return m.chunks }

// Usage records the server's own token counts (a prompt count of 0 keeps the expected one);
// the output count replaces the chunks' count.
func (m *RequestTimer) Usage(promptTokens, outputTokens int) {
	if promptTokens > 0 {
		m.res.PromptTokens = promptTokens
	}
	m.usage, m.seen = outputTokens, true
}

// End completes the Result once the request is over: at is when its last event arrived (zero
// when none did), which the E2E latency counts to.
func (m *RequestTimer) End(at time.Time) {
	res := m.res
	res.Chunks = m.chunks
	if !at.IsZero() {
		res.E2EL = at.Sub(res.Start)
	}
	res.OutputTokens, res.OutputFromUsage = m.counted, m.seen
	if m.seen {
		res.OutputTokens = m.usage
	}
}
