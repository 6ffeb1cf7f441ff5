package fleet

import (
	"math"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// Limits past which a number from a server is not believed: it is dropped (absent) rather
// than shown or summed.
const (
	maxCount   = 1e7  // requests running or waiting
	maxRate    = 1e9  // tokens or requests per second
	maxSeconds = 1e6  // a latency
	maxTokens  = 1e8  // a prompt's length
	maxUnix    = 1e11 // a Unix time (year 5138)
)

func within(v scrape.Value, lo, hi float64) scrape.Value {
	if !v.OK || math.IsNaN(v.V) || v.V < lo || v.V > hi {
		return scrape.Value{}
	}
	return v
}

func withinQ(q diagnose.Quantile, hi float64) diagnose.Quantile {
	q.V = within(q.V, 0, hi)
	return q
}

// bound drops every number of s outside what a real server can report.
func bound(s diagnose.Signals) diagnose.Signals {
	s.Running = within(s.Running, 0, maxCount)
	s.Waiting = within(s.Waiting, 0, maxCount)
	s.KVCacheUsage = within(s.KVCacheUsage, 0, 1)
	s.GenerationTokensPerSec = within(s.GenerationTokensPerSec, 0, maxRate)
	s.PromptTokensPerSec = within(s.PromptTokensPerSec, 0, maxRate)
	s.RequestsPerSec = within(s.RequestsPerSec, 0, maxRate)
	s.PreemptionsPerSec = within(s.PreemptionsPerSec, 0, maxRate)
	s.ErrorsPerSec = within(s.ErrorsPerSec, 0, maxRate)
	s.PrefixCacheHitRate = within(s.PrefixCacheHitRate, 0, 1)
	s.TTFTP99 = withinQ(s.TTFTP99, maxSeconds)
	s.ITLP99 = withinQ(s.ITLP99, maxSeconds)
	s.TTFTMean = within(s.TTFTMean, 0, maxSeconds)
	s.QueueMean = within(s.QueueMean, 0, maxSeconds)
	s.PrefillMean = within(s.PrefillMean, 0, maxSeconds)
	s.PromptTokensMean = within(s.PromptTokensMean, 0, maxTokens)
	return s
}
