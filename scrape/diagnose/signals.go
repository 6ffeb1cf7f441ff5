package diagnose

import (
	"time"

	"github.com/vllmtop/vllmtop/scrape"
)

// State is how fresh and whole what we know of a server is.
type State int

// States, from the least to the most alarming.
const (
	StateInit      State = iota // never scraped yet
	StateUp                     // a good scrape within the freshness limit
	StateRestarted              // up, and a restart was seen recently (counters reset or the process start time moved)
	StateStale                  // the last good scrape is older than the freshness limit; its numbers are frozen
	StateDown                   // the server does not answer, or answers with an error
)

// String is the badge: "init", "up", "RESTARTED", "STALE", "DOWN".
func (s State) String() string {
	switch s {
	case StateInit:
		return "init"
	case StateUp:
		return "up"
	case StateRestarted:
		return "RESTARTED"
	case StateStale:
		return "STALE"
	case StateDown:
		return "DOWN"
	}
	return "?"
}

// MarshalText writes the badge.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (s *State) UnmarshalText(b []byte) error {
	return unmarshalName(s, b, "state", StateInit, StateUp, StateRestarted, StateStale, StateDown)
}

// Bound says how far a quantile estimate can be trusted.
type Bound int

// Bounds of a histogram quantile estimate.
const (
	Interpolated Bound = iota // between two bucket bounds, linearly interpolated
	AtMost                    // in the lowest bucket: only "≤ V" is sure
	AtLeast                   // in the +Inf bucket: V is the highest finite bound, a lower limit
)

// Quantile is a latency estimated from histogram buckets over a window.
type Quantile struct {
	V     scrape.Value
	Bound Bound
}

// Prefix is "≤", "≥" or "" for showing the value honestly.
func (q Quantile) Prefix() string {
	switch q.Bound {
	case AtMost:
		return "≤"
	case AtLeast:
		return "≥"
	case Interpolated:
	}
	return ""
}

// Signals is what one server, or one data-parallel engine of it, showed: gauges now and
// rates, ratios and latency over the window before now. Absent values are unknown, never 0.
type Signals struct {
	// Subject names the server or engine in verdict texts (already safe to display).
	Subject string
	Model   string
	Engine  string
	Backend scrape.Backend

	State State
	// StateDetail says why a server is DOWN or STALE ("connection refused", "last good
	// scrape 12s ago"), or what restarted it.
	StateDetail string
	// Age is how old the last good data is.
	Age time.Duration

	Running      scrape.Value
	Waiting      scrape.Value
	KVCacheUsage scrape.Value // 0..1

	// WindowSeconds is the span the rates and quantiles cover (0: no window yet).
	WindowSeconds          float64
	GenerationTokensPerSec scrape.Value
	PromptTokensPerSec     scrape.Value
	RequestsPerSec         scrape.Value // finished requests, any reason
	PreemptionsPerSec      scrape.Value
	ErrorsPerSec           scrape.Value // finished with reason "error" or "abort" (vLLM), failures (TGI)
	PrefixCacheHitRate     scrape.Value // 0..1

	TTFTP99 Quantile
	ITLP99  Quantile
	// Means over the window, for the shares of TTFT: queue + prefill ≈ TTFT in vLLM.
	TTFTMean         scrape.Value
	QueueMean        scrape.Value
	PrefillMean      scrape.Value
	PromptTokensMean scrape.Value // prompt length per request
	// TTFTCount and QueueCount are the observations behind TTFTMean and QueueMean: vLLM
	// observes a TTFT at a request's first token and its queue and prefill times at its end,
	// so the two sets of requests differ while the load changes.
	TTFTCount  scrape.Value
	QueueCount scrape.Value

	// The KV cache as vllm:cache_config_info describes it (absent: not exported).
	KVCacheTokens        scrape.Value // this engine's capacity in tokens
	GPUMemoryUtilization scrape.Value // the configured fraction, 0..1
	KVCacheDType         string       // "auto", "fp8", ...
	NumGPUBlocksOverride int          // --num-gpu-blocks-override (0: not set)
}

// Facts are what the client side knows about itself: the load generator's health and the
// limits it was told. Zero values mean "not known" and fire nothing.
type Facts struct {
	// Lag is how far the open-loop dispatcher is behind its schedule.
	Lag time.Duration
	// TargetRate is the requested open-loop rate (req/s), AchievedRate what was sent over
	// the same window.
	TargetRate   float64
	AchievedRate float64
	// RateSeconds is the window both rates are over (0: unknown). Over it a Poisson load sends
	// about TargetRate x RateSeconds requests, give or take its square root: a shortfall within
	// that is chance, not a client that cannot keep up.
	RateSeconds float64
	// MaxNumSeqs is the server's --max-num-seqs when known (supervised, or configured).
	MaxNumSeqs int
	// MaxNumBatchedTokens is its --max-num-batched-tokens, the tokens one engine step
	// computes, when known; unknown, only a demand above every default of vLLM's counts.
	MaxNumBatchedTokens int
}
