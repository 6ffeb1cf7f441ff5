package metrics

import "github.com/vllmtop/vllmtop/server/sim"

// features are the parts of vLLM's /metrics that changed between releases, as docs/vllm-behaviour.md#metric-renames-by-version
// dates them (merge dates mapped to the first release after them), plus two captures: the
// 0.25.1 one in testdata and an older one with prompt_tokens_recomputed (0.16-0.19).
type features struct {
	legacyCacheNames   bool // gpu_cache_usage_perc, gpu_prefix_cache_*: deprecated 0.9.2, hidden in 0.11 (PR #24245)
	legacyTPOT         bool // time_per_output_token_seconds: renamed in 0.11 (PR #24110), hidden in 0.12
	legacyTPOTHelp     bool // ... with "DEPRECATED" in its HELP (0.11 only)
	interTokenLatency  bool // inter_token_latency_seconds: 0.11 (PR #24110)
	requestTPOT        bool // request_time_per_output_token_seconds: 0.11 (PR #24015)
	sleepState         bool // engine_sleep_state: 0.11.1 (PR #24176, 2025-10-29)
	externalAndMMCache bool // external_prefix_cache_*, mm_cache_*: 0.11.1 (PRs #26245, #26285)
	prefillKVComputed  bool // request_prefill_kv_computed_tokens: 0.13 (PR #30189, 2025-12-09)
	errorReason        bool // finished_reason="error": 0.13 (PR #26813, 2025-12-10)
	mfuCounters        bool // estimated_*_per_gpu: present in the 0.16-0.19 capture; 0.15 assumed
	promptBySource     bool // prompt_tokens_by_source, prompt_tokens_cached: 0.16 (PR #33290, 2026-02-04)
	promptRecomputed   bool // prompt_tokens_recomputed: 0.16 (PR #33290) until 0.20 (removed by PR #38709, 2026-04)
	repetitionReason   bool // finished_reason="repetition": 0.17 (PR #35451, 2026-03-03)
	waitingByReason    bool // num_requests_waiting_by_reason: 0.20 (PR #38435, 2026-04-13)
	cacheCapacity      bool // cache_config_info kv_cache_size_tokens/kv_cache_max_concurrency: 0.23 (PR #42206, 2026-06-12)
	prefixMatchUnit    bool // cache_config_info prefix_match_unit, was hash_block_size: 0.26 (PR #46384, 2026-07-12)
	cachedBySource     bool // prompt_tokens_cached_by_source{source}: 0.31 (PR #56318, merged 2026-10; release inferred)
	contentType100     bool // Content-Type version=1.0.0: prometheus_client 0.23 (2025-09), in 0.11 images on
}

func featuresOf(v sim.Version) features {
	return features{
		legacyCacheNames:   !v.AtLeast("0.11.0"),
		legacyTPOT:         !v.AtLeast("0.12.0"),
		legacyTPOTHelp:     v.AtLeast("0.11.0"),
		interTokenLatency:  v.AtLeast("0.11.0"),
		requestTPOT:        v.AtLeast("0.11.0"),
		sleepState:         v.AtLeast("0.11.1"),
		externalAndMMCache: v.AtLeast("0.11.1"),
		prefillKVComputed:  v.AtLeast("0.13.0"),
		errorReason:        v.AtLeast("0.13.0"),
		mfuCounters:        v.AtLeast("0.15.0"),
		promptBySource:     v.AtLeast("0.16.0"),
		promptRecomputed:   v.AtLeast("0.16.0") && !v.AtLeast("0.20.0"),
		repetitionReason:   v.AtLeast("0.17.0"),
		waitingByReason:    v.AtLeast("0.20.0"),
		cacheCapacity:      v.AtLeast("0.23.0"),
		prefixMatchUnit:    v.AtLeast("0.26.0"),
		cachedBySource:     v.AtLeast("0.31.0"),
		contentType100:     v.AtLeast("0.11.0"),
	}
}

// finishReasonsOf lists the finished_reason series the release creates at startup.
func (f features) finishReasonsOf() []string {
	out := []string{"stop", "length", "abort"}
	if f.errorReason {
		out = append(out, "error")
	}
	if f.repetitionReason {
		out = append(out, "repetition")
	}
	return out
}
