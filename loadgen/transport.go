package loadgen

import (
	"context"
	"time"
)

// Transport sends requests for a Runner: the scheduler decides when, the transport how. A
// Client sends over HTTP and streams SSE; a simulated engine on a VirtualClock is another.
type Transport interface {
	// Start sends p and returns at once. It calls done once, with the request measured, from
	// a goroutine of its own or, on a VirtualClock, from the clock's timers (or before it
	// returns, for a request refused at once). watch, when set,
	// receives the output as it arrives; itl, when set, each inter-token latency, which the
	// Result then does not keep. Cancelling ctx aborts the request (ErrCanceled).
	Start(ctx context.Context, p Prompt, watch TokenSink, itl func(time.Duration), done func(Result))
	// TokensReceived counts the output chunks received so far, for a live token rate.
	TokensReceived() int64
}

// Start sends p over HTTP on a goroutine of its own (Transport).
func (c *Client) Start(ctx context.Context, p Prompt, watch TokenSink, itl func(time.Duration), done func(Result)) {
	go func() { done(c.DoITL(ctx, p, watch, itl)) }()
}
