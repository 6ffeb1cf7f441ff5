package loadgen

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Defaults of a canary.
const (
	DefaultCanaryInterval = 5 * time.Second
	DefaultCanaryKeep     = 720 // an hour at the default interval
)

// CanaryPrompt is the canary's fixed request: short, the same every time, so what changes in
// its TTFT and TPOT is the server's state, not the request.
var CanaryPrompt = Prompt{Text: "Count from one to ten.", InputTokens: 8, OutputTokens: 16, IgnoreEOS: true}

// CanaryConfig configures a canary probe.
type CanaryConfig struct {
	Interval time.Duration // between two probes (DefaultCanaryInterval)
	Prompt   Prompt        // CanaryPrompt when zero
	Keep     int           // samples kept (DefaultCanaryKeep)
	// Timeout bounds one probe (default: the interval, at least 10 s).
	Timeout time.Duration
	// Ticks, if set, replaces the interval's ticker (tests send the ticks).
	Ticks <-chan time.Time
}

// CanarySample is one probe as a user would have seen it.
type CanarySample struct {
	At           time.Time     `json:"at"`
	TTFT         time.Duration `json:"ttft_ns"`
	TPOT         time.Duration `json:"tpot_ns,omitempty"`
	E2EL         time.Duration `json:"e2el_ns"`
	OutputTokens int           `json:"output_tokens"`
	Error        ErrorClass    `json:"error,omitempty"`
	ErrorMessage string        `json:"error_message,omitempty"`
}

// OK reports whether the probe succeeded.
func (s *CanarySample) OK() bool { return s.Error == ErrNone }

// Canary sends one small fixed request every interval, never more than one at a time, and
// keeps what it measured in a small ring of its own, apart from the load's statistics. A
// tick that comes while a probe is still out is skipped, and counted.
type Canary struct {
	client *Client
	cfg    CanaryConfig

	mu      sync.Mutex
	ring    []CanarySample
	next    int
	sent    int
	done    int
	skipped int
	busy    bool
}

// NewCanary builds a canary on a client (its own, or the load's: the requests are separate).
func NewCanary(c *Client, cfg CanaryConfig) (*Canary, error) {
	if c == nil {
		return nil, errors.New("canary: no client")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultCanaryInterval
	}
	if cfg.Prompt.zero() {
		cfg.Prompt = CanaryPrompt
	}
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultCanaryKeep
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = max(cfg.Interval, 10*time.Second)
	}
	return &Canary{client: c, cfg: cfg}, nil
}

// Interval is the time between two probes.
func (c *Canary) Interval() time.Duration { return c.cfg.Interval }

// Run probes at once and then on every tick until ctx ends.
func (c *Canary) Run(ctx context.Context) error {
	ticks := c.cfg.Ticks
	if ticks == nil {
		t := time.NewTicker(c.cfg.Interval)
		defer t.Stop()
		ticks = t.C
	}
	results := make(chan CanarySample, 1)
	c.start(ctx, results)
	for {
		select {
		case <-ctx.Done():
			c.mu.Lock()
			busy := c.busy
			c.mu.Unlock()
			if busy {
				<-results // the probe ends with ctx; never leave it behind
			}
			return ctx.Err()
		case s := <-results:
			c.record(s)
		case <-ticks:
			c.start(ctx, results)
		}
	}
}

// start sends a probe unless one is out.
func (c *Canary) start(ctx context.Context, results chan<- CanarySample) {
	c.mu.Lock()
	if c.busy {
		c.skipped++
		c.mu.Unlock()
		return
	}
	c.busy = true
	c.sent++
	c.mu.Unlock()
	go func() {
		pctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
		at := time.Now()
		res := c.client.Do(pctx, c.cfg.Prompt, nil)
		s := CanarySample{At: at, TTFT: res.TTFT, E2EL: res.E2EL, OutputTokens: res.OutputTokens, Error: res.Error, ErrorMessage: res.ErrorMessage}
		if tpot, ok := res.TPOT(); ok {
			s.TPOT = tpot
		}
		results <- s
	}()
}

func (c *Canary) record(s CanarySample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = false
	c.done++
	if len(c.ring) < c.cfg.Keep {
		c.ring = append(c.ring, s)
		return
	}
	c.ring[c.next] = s
	c.next = (c.next + 1) % len(c.ring)
}

// Samples returns the kept probes, oldest first.
func (c *Canary) Samples() []CanarySample {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]CanarySample, 0, len(c.ring))
	out = append(out, c.ring[c.next:]...)
	return append(out, c.ring[:c.next]...)
}

// Last is the newest probe that finished.
func (c *Canary) Last() (CanarySample, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ring) == 0 {
		return CanarySample{}, false
	}
	i := (c.next + len(c.ring) - 1) % len(c.ring)
	return c.ring[i], true
}

// CanaryCounts are how many probes were sent and finished, and how many ticks were skipped
// because a probe was still out.
type CanaryCounts struct{ Sent, Done, Skipped int }

// Counts returns the canary's counts.
func (c *Canary) Counts() CanaryCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CanaryCounts{Sent: c.sent, Done: c.done, Skipped: c.skipped}
}
