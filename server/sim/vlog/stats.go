package vlog

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
)

// DefaultStatsInterval is VLLM_LOG_STATS_INTERVAL's default.
const DefaultStatsInterval = 10 * time.Second

// prefixWindowRequests is the number of recent requests vLLM's prefix-cache hit rate covers
// (CachingMetrics(max_recent_requests=1000)).
const prefixWindowRequests = 1000

// Stats accumulates engine steps and writes vLLM's periodic stats line from the API server
// (vllm/v1/metrics/loggers.py LoggingStatLogger, docs/vllm-behaviour.md#periodic-stats-line):
//
//	Engine 000: Avg prompt throughput: 61.2 tokens/s, Avg generation throughput: 1203.4 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.3%, Prefix cache hit rate: 0.0%
//
// The throughputs are the tokens of the interval over its length: prompt tokens are the ones
// computed (prefix-cache hits excluded, recomputation after preemption included), generation
// tokens the ones sampled. Running, Waiting and the KV-cache usage are the last step's.
// "Preemptions: N" appears only when the interval had preemptions. When this interval and the
// previous one both had zero throughput, vLLM logs the line at DEBUG, so Stats writes nothing.
//
// The prefix-cache hit rate is hit tokens over queried tokens across the most recent lookups,
// dropping the oldest while the window holds more than 1000 requests (always keeping the
// newest), as vLLM's CachingMetrics does. A step does not say how many requests it looked up,
// only how many prompt tokens; the count is estimated as the queried tokens over the mean
// prompt length of the prompts completed so far (at least one request per step with lookups).
//
// Observe and Tick may be called from different goroutines.
type Stats struct {
	mu       sync.Mutex
	l        *Logger
	engine   int // the data-parallel engine index of the "Engine 000:" prefix
	interval time.Duration
	last     time.Time
	speed    float64 // simulated seconds per wall-clock second (SetSpeed); 0 is 1

	promptTokens, genTokens, preemptions int
	lastPrompt, lastGen                  float64

	running, waiting int
	kvUsage          float64

	// Speculative decoding over the interval (SpecDecodingLogging).
	specDrafts, specDraftTokens, specAccepted int
	specPerPos                                []int

	promptsDone, promptTokensDone int64
	window                        []prefixObs
	winRequests                   int64
	winQueries, winHits           int64
}

type prefixObs struct{ requests, queries, hits int64 }

// NewStats returns a Stats logging through l every interval (DefaultStatsInterval if not
// positive). The first interval starts at l's current time; the times passed to Tick must
// come from the same clock.
func NewStats(l *Logger, interval time.Duration) *Stats {
	if interval <= 0 {
		interval = DefaultStatsInterval
	}
	return &Stats{l: l, interval: interval, last: l.now()}
}

// SetSpeed makes the times passed to Tick simulated ones running speed times faster than the
// wall clock (--sim-speed): the interval and the throughputs are then counted in wall-clock
// time, the time the clients and a scraper's rates run on.
func (s *Stats) SetSpeed(speed float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.speed = speed
}

// Observe records one engine step.
func (s *Stats) Observe(r *sim.StepResult) {
	if r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.promptTokens += r.PrefillTokens
	for i := range r.Outputs {
		s.genTokens += max(1, len(r.Outputs[i].Tokens))
	}
	s.preemptions += r.Preempted
	s.running, s.waiting = r.Running, r.Waiting
	s.specDrafts += r.SpecDrafts
	s.specDraftTokens += r.SpecDraftTokens
	s.specAccepted += r.SpecAccepted
	for len(s.specPerPos) < len(r.SpecAcceptedPerPos) {
		s.specPerPos = append(s.specPerPos, 0)
	}
	for p, n := range r.SpecAcceptedPerPos {
		s.specPerPos[p] += n
	}
	s.kvUsage = r.KVCacheUsage()
	s.promptsDone += int64(r.PromptsCompleted)
	s.promptTokensDone += int64(r.PromptTokens)
	if r.PrefixQueries > 0 {
		requests := int64(1)
		if s.promptsDone > 0 && s.promptTokensDone > 0 {
			mean := float64(s.promptTokensDone) / float64(s.promptsDone)
			requests = max(1, int64(math.Round(float64(r.PrefixQueries)/mean)))
		}
		s.observePrefix(prefixObs{requests, int64(r.PrefixQueries), int64(r.PrefixHits)})
	}
}

func (s *Stats) observePrefix(o prefixObs) {
	s.window = append(s.window, o)
	s.winRequests += o.requests
	s.winQueries += o.queries
	s.winHits += o.hits
	drop := 0
	for len(s.window)-drop > 1 && s.winRequests > prefixWindowRequests {
		old := s.window[drop]
		s.winRequests -= old.requests
		s.winQueries -= old.queries
		s.winHits -= old.hits
		drop++
	}
	if drop > 0 {
		n := copy(s.window, s.window[drop:])
		clear(s.window[n:])
		s.window = s.window[:n]
	}
}

// hitRate is the prefix-cache hit rate over the window, as a fraction.
func (s *Stats) hitRate() float64 {
	if s.winQueries == 0 {
		return 0
	}
	return float64(s.winHits) / float64(s.winQueries)
}

// Tick ends the current interval if at least the interval has passed since the last one ended,
// and writes the stats line unless the engine was idle for this and the previous interval.
func (s *Stats) Tick(now time.Time) {
	s.mu.Lock()
	if now.Before(s.last) {
		// A clock that went backwards: start over from now.
		s.last = now
		s.mu.Unlock()
		return
	}
	d := now.Sub(s.last)
	if s.speed > 0 {
		d = time.Duration(float64(d) / s.speed)
	}
	if d < s.interval {
		s.mu.Unlock()
		return
	}
	elapsed := d.Seconds()
	prompt := float64(s.promptTokens) / elapsed
	gen := float64(s.genTokens) / elapsed
	idle := prompt == 0 && gen == 0 && s.lastPrompt == 0 && s.lastGen == 0
	s.lastPrompt, s.lastGen = prompt, gen
	preemptions := s.preemptions
	s.promptTokens, s.genTokens, s.preemptions = 0, 0, 0
	s.last = now
	line := fmt.Sprintf("Engine %03d: ", s.engine) + statsLine(prompt, gen, s.running, s.waiting, preemptions, s.kvUsage, s.hitRate())
	spec := ""
	if s.specDrafts > 0 {
		spec = specLine(s.specDrafts, s.specDraftTokens, s.specAccepted, s.specPerPos, elapsed)
	}
	s.specDrafts, s.specDraftTokens, s.specAccepted = 0, 0, 0
	clear(s.specPerPos)
	s.mu.Unlock()
	if !idle {
		s.l.API(Info, "loggers.py:310", line)
		if spec != "" {
			s.l.API(Info, "metrics.py:97", spec)
		}
	}
}

// specLine is SpecDecodingLogging.log's message (vllm/v1/spec_decode/metrics.py): the mean
// acceptance length counts the bonus token; per-position rates are accepted ÷ drafts.
func specLine(drafts, draftTokens, accepted int, perPos []int, elapsed float64) string {
	rates := make([]string, len(perPos))
	for i, n := range perPos {
		rates[i] = fmt.Sprintf("%.3f", float64(n)/float64(drafts))
	}
	acceptance := math.NaN()
	if draftTokens > 0 {
		acceptance = float64(accepted) / float64(draftTokens) * 100
	}
	return fmt.Sprintf("SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens, Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%",
		1+float64(accepted)/float64(drafts), float64(accepted)/elapsed, float64(draftTokens)/elapsed, accepted, draftTokens, strings.Join(rates, ", "), acceptance)
}

// statsLine builds LoggingStatLogger's message after its "Engine NNN: " prefix; kvUsage and
// hitRate are fractions.
func statsLine(prompt, gen float64, running, waiting, preemptions int, kvUsage, hitRate float64) string {
	parts := []string{
		fmt.Sprintf("Avg prompt throughput: %.1f tokens/s", prompt),
		fmt.Sprintf("Avg generation throughput: %.1f tokens/s", gen),
		fmt.Sprintf("Running: %d reqs", running),
		fmt.Sprintf("Waiting: %d reqs", waiting),
	}
	if preemptions > 0 {
		parts = append(parts, fmt.Sprintf("Preemptions: %d", preemptions))
	}
	parts = append(parts,
		fmt.Sprintf("GPU KV cache usage: %.1f%%", kvUsage*100),
		fmt.Sprintf("Prefix cache hit rate: %.1f%%", hitRate*100),
	)
	return strings.Join(parts, ", ")
}
