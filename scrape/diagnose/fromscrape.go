package diagnose

import (
	"slices"
	"strconv"

	"github.com/vllmtop/vllmtop/scrape"
)

// FromStats fills the numbers of Signals from one (model, engine)'s gauges now and its
// window; a nil r (no window yet) leaves every rate and quantile absent. Identity and
// state (Subject, State, ...) are the caller's.
func FromStats(gauges *scrape.Stats, r *scrape.Rates, windowSeconds float64) Signals {
	s := Signals{Running: gauges.Running, Waiting: gauges.Waiting, KVCacheUsage: gauges.KVCacheUsage}
	if r == nil || windowSeconds <= 0 {
		return s
	}
	s.WindowSeconds = windowSeconds
	s.GenerationTokensPerSec = r.GenerationTokensPerSec
	s.PromptTokensPerSec = r.PromptTokensPerSec
	s.RequestsPerSec = r.RequestsPerSec
	if r.Preemptions.OK {
		s.PreemptionsPerSec = scrape.Some(r.Preemptions.V / windowSeconds)
	}
	if r.FinishedByReason != nil {
		// vLLM: "error" and "abort"; TGI: its failure counter, keyed "error".
		s.ErrorsPerSec = scrape.Some((r.FinishedByReason["error"] + r.FinishedByReason["abort"]) / windowSeconds)
	}
	s.PrefixCacheHitRate = r.PrefixCacheHitRate
	s.TTFTP99 = p99(r.TTFTSeconds)
	s.ITLP99 = p99(r.ITLSeconds)
	s.TTFTMean = mean(r.TTFTSeconds)
	s.QueueMean = mean(r.QueueSeconds)
	s.PrefillMean = mean(r.PrefillSeconds)
	s.TTFTCount, s.QueueCount = count(r.TTFTSeconds), count(r.QueueSeconds)
	s.PromptTokensMean = mean(r.PromptTokensPerRequest)
	return s
}

func p99(d *scrape.Dist) Quantile {
	if d == nil {
		return Quantile{}
	}
	q := Quantile{V: d.P99}
	switch {
	case slices.Contains(d.Saturated, "p99"):
		q.Bound = AtLeast
	case slices.Contains(d.InFirstBucket, "p99"):
		q.Bound = AtMost
	}
	return q
}

func count(d *scrape.Dist) scrape.Value {
	if d == nil {
		return scrape.Value{}
	}
	return scrape.Some(d.Count)
}

func mean(d *scrape.Dist) scrape.Value {
	if d == nil {
		return scrape.Value{}
	}
	return d.Mean
}

// FromWindow gives the Signals of every (model, engine) of a server between two scrapes, for
// `vllmtop metrics --window`: one per model when it has one engine, one per engine
// otherwise (subject "NAME engine N"). cur is the later snapshot, w = scrape.Compare(prev,
// cur). A restart between the scrapes marks every Signals as restarted.
func FromWindow(subject string, cur *scrape.Snapshot, w *scrape.Window) []Signals {
	var out []Signals
	state := StateUp
	if w.Restarted {
		state = StateRestarted
	}
	for _, m := range cur.Models {
		var mw *scrape.ModelWindow
		for i := range w.Models {
			if w.Models[i].Name == m.Name {
				mw = &w.Models[i]
			}
		}
		name := subject
		if len(cur.Models) > 1 {
			name = subject + " " + m.Name
		}
		for _, e := range m.Engines {
			var r *scrape.Rates
			if mw != nil && !w.Restarted {
				for i := range mw.Engines {
					if mw.Engines[i].Engine == e.Engine {
						r = &mw.Engines[i].Rates
					}
				}
			}
			s := FromStats(&e.Stats, r, w.ElapsedSeconds)
			s.Subject, s.Model, s.Engine, s.Backend, s.State = name, m.Name, e.Engine, cur.Backend, state
			if len(m.Engines) > 1 {
				s.Subject = name + " engine " + e.Engine
			}
			if w.Restarted {
				s.StateDetail = "counters reset between the scrapes"
			}
			cacheFacts(&s, cur, e.Engine, len(m.Engines))
			out = append(out, s)
		}
	}
	return out
}

// cacheFacts fills what vllm:cache_config_info says of engine's KV cache.
func cacheFacts(s *Signals, cur *scrape.Snapshot, engine string, engines int) {
	for _, c := range cur.Cache {
		if c.Engine != engine {
			continue
		}
		s.GPUMemoryUtilization, s.KVCacheDType = c.GPUMemoryUtilization, c.CacheDType
		s.KVCacheTokens = c.KVCacheSizeTokens
		if n, err := strconv.Atoi(c.Labels["num_gpu_blocks_override"]); err == nil && n > 0 {
			s.NumGPUBlocksOverride = n
		}
	}
	if !s.KVCacheTokens.OK && engines == 1 {
		s.KVCacheTokens = cur.Capacity.KVCacheTokens
	}
}

// Server is every verdict on one server between two scrapes: each engine's rules and the
// imbalance between its engines, sorted worst first.
func Server(subject string, cur *scrape.Snapshot, w *scrape.Window, f Facts, th Thresholds) []Verdict {
	sigs := FromWindow(subject, cur, w)
	var out []Verdict
	for i := range sigs {
		out = append(out, Evaluate(&sigs[i], f, th)...)
	}
	byModel := map[string][]Signals{}
	for _, s := range sigs {
		byModel[s.Model] = append(byModel[s.Model], s)
	}
	for model, group := range byModel {
		if len(group) > 1 {
			out = append(out, Imbalance(GroupName(len(group), "engines", model), group, th)...)
		}
	}
	out = append(out, Client(f, th)...)
	Sort(out)
	return out
}

// GroupName is "2 engines of MODEL".
func GroupName(n int, what, model string) string {
	if model == "" {
		return short(float64(n)) + " " + what
	}
	return short(float64(n)) + " " + what + " of " + model
}
