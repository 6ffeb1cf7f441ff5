package scrape

import "strings"

// This file is the one place that knows metric names. Each rule maps one Snapshot field to the
// names that carry it, in order of preference: the first name present in a scrape is used and
// the others, if also present (vLLM exposes old and new names side by side while a name is
// deprecated), are left in Snapshot.Unmapped rather than counted twice. Names are matched
// exactly, never by substring: "vllm:num_requests_waiting" is a prefix of
// "vllm:num_requests_waiting_by_reason", and "vllm:time_per_output_token_seconds" (per token)
// is a substring of "vllm:request_time_per_output_token_seconds" (per request).

type ruleKind int

const (
	kindSum            ruleKind = iota // gauge or counter: series of one (model, engine) add up
	kindMax                            // a fraction: the largest series of one (model, engine)
	kindByLabel                        // a map keyed by one label (or one fixed key), plus an optional total
	kindAwake                          // vllm:engine_sleep_state: the sleep_state="awake" series
	kindHist                           // a histogram
	kindCacheInfo                      // vllm:cache_config_info
	kindProcessStart                   // process_start_time_seconds
	kindCapacityTokens                 // SGLang's KV-cache size in tokens
)

type rule struct {
	names   []string
	backend Backend
	kind    ruleKind
	value   func(*Stats) *Value      // kindSum, kindMax, kindAwake; kindByLabel's total (may be nil)
	hist    func(*Stats) **Histogram // kindHist
	byMap   func(*Stats) *map[string]float64
	label   string // kindByLabel: the label whose values key byMap
	key     string // kindByLabel without a label: the fixed key
}

func vllm(names ...string) []string {
	for i, n := range names {
		names[i] = "vllm:" + n
	}
	return names
}

func sglang(names ...string) []string {
	for i, n := range names {
		names[i] = "sglang:" + n
	}
	return names
}

func (s *Stats) running() *Value                 { return &s.Running }
func (s *Stats) waiting() *Value                 { return &s.Waiting }
func (s *Stats) kvUsage() *Value                 { return &s.KVCacheUsage }
func (s *Stats) promptTokens() *Value            { return &s.PromptTokens }
func (s *Stats) generationTokens() *Value        { return &s.GenerationTokens }
func (s *Stats) finished() *Value                { return &s.RequestsFinished }
func (s *Stats) finishedBy() *map[string]float64 { return &s.FinishedByReason }

func (s *Stats) ttft() **Histogram      { return &s.TTFTSeconds }
func (s *Stats) itl() **Histogram       { return &s.ITLSeconds }
func (s *Stats) tpot() **Histogram      { return &s.TPOTSeconds }
func (s *Stats) e2e() **Histogram       { return &s.E2ESeconds }
func (s *Stats) queue() **Histogram     { return &s.QueueSeconds }
func (s *Stats) prefill() **Histogram   { return &s.PrefillSeconds }
func (s *Stats) decode() **Histogram    { return &s.DecodeSeconds }
func (s *Stats) inference() **Histogram { return &s.InferenceSeconds }
func (s *Stats) promptLen() **Histogram { return &s.PromptTokensPerRequest }
func (s *Stats) genLen() **Histogram    { return &s.GenerationTokensPerRequest }
func (s *Stats) maxTokens() **Histogram { return &s.MaxTokensPerRequest }
func (s *Stats) maxGen() **Histogram    { return &s.MaxGenerationTokens }
func (s *Stats) prefillKV() **Histogram { return &s.PrefillKVComputedTokens }
func (s *Stats) iteration() **Histogram { return &s.IterationTokens }
func (s *Stats) paramsN() **Histogram   { return &s.ParamsN }

// rules: vLLM (V0, V1 and the renames of docs/vllm-behaviour.md#metric-renames-by-version), SGLang and TGI where the meaning is
// the same as vLLM's.
var rules = []*rule{
	// vLLM scheduler gauges.
	{names: vllm("num_requests_running"), backend: BackendVLLM, kind: kindSum, value: (*Stats).running},
	{names: vllm("num_requests_waiting"), backend: BackendVLLM, kind: kindSum, value: (*Stats).waiting},
	{names: vllm("num_requests_waiting_by_reason"), backend: BackendVLLM, kind: kindByLabel, label: "reason",
		byMap: func(s *Stats) *map[string]float64 { return &s.WaitingByReason }},
	{names: vllm("num_requests_swapped"), backend: BackendVLLM, kind: kindSum, value: func(s *Stats) *Value { return &s.Swapped }},
	{names: vllm("kv_cache_usage_perc", "gpu_cache_usage_perc"), backend: BackendVLLM, kind: kindMax, value: (*Stats).kvUsage},
	{names: vllm("engine_sleep_state"), backend: BackendVLLM, kind: kindAwake, value: func(s *Stats) *Value { return &s.Awake }},

	// vLLM counters (every exposed counter sample ends in _total, V0 and V1 alike).
	{names: vllm("num_preemptions_total"), backend: BackendVLLM, kind: kindSum, value: func(s *Stats) *Value { return &s.Preemptions }},
	{names: vllm("prompt_tokens_total"), backend: BackendVLLM, kind: kindSum, value: (*Stats).promptTokens},
	{names: vllm("generation_tokens_total"), backend: BackendVLLM, kind: kindSum, value: (*Stats).generationTokens},
	{names: vllm("prompt_tokens_cached_total"), backend: BackendVLLM, kind: kindSum, value: func(s *Stats) *Value { return &s.PromptTokensCached }},
	{names: vllm("prefix_cache_queries_total", "gpu_prefix_cache_queries_total"), backend: BackendVLLM, kind: kindSum,
		value: func(s *Stats) *Value { return &s.PrefixCacheQueries }},
	{names: vllm("prefix_cache_hits_total", "gpu_prefix_cache_hits_total"), backend: BackendVLLM, kind: kindSum,
		value: func(s *Stats) *Value { return &s.PrefixCacheHits }},
	{names: vllm("external_prefix_cache_queries_total"), backend: BackendVLLM, kind: kindSum,
		value: func(s *Stats) *Value { return &s.ExternalPrefixCacheQueries }},
	{names: vllm("external_prefix_cache_hits_total"), backend: BackendVLLM, kind: kindSum,
		value: func(s *Stats) *Value { return &s.ExternalPrefixCacheHits }},
	{names: vllm("request_success_total"), backend: BackendVLLM, kind: kindByLabel, label: "finished_reason",
		byMap: (*Stats).finishedBy, value: (*Stats).finished},
	{names: vllm("spec_decode_num_drafts_total"), backend: BackendVLLM, kind: kindSum, value: func(s *Stats) *Value { return &s.SpecDecodeDrafts }},
	{names: vllm("spec_decode_num_draft_tokens_total"), backend: BackendVLLM, kind: kindSum,
		value: func(s *Stats) *Value { return &s.SpecDecodeDraftTokens }},
	{names: vllm("spec_decode_num_accepted_tokens_total"), backend: BackendVLLM, kind: kindSum,
		value: func(s *Stats) *Value { return &s.SpecDecodeAcceptedTokens }},

	// vLLM histograms.
	{names: vllm("time_to_first_token_seconds"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).ttft},
	{names: vllm("inter_token_latency_seconds", "time_per_output_token_seconds"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).itl},
	{names: vllm("request_time_per_output_token_seconds"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).tpot},
	{names: vllm("e2e_request_latency_seconds"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).e2e},
	{names: vllm("request_queue_time_seconds"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).queue},
	{names: vllm("request_prefill_time_seconds"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).prefill},
	{names: vllm("request_decode_time_seconds"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).decode},
	{names: vllm("request_inference_time_seconds"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).inference},
	{names: vllm("request_prompt_tokens"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).promptLen},
	{names: vllm("request_generation_tokens"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).genLen},
	{names: vllm("request_params_max_tokens"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).maxTokens},
	{names: vllm("request_max_num_generation_tokens"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).maxGen},
	{names: vllm("request_prefill_kv_computed_tokens"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).prefillKV},
	{names: vllm("iteration_tokens_total"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).iteration},
	{names: vllm("request_params_n"), backend: BackendVLLM, kind: kindHist, hist: (*Stats).paramsN},

	{names: vllm("cache_config_info"), backend: BackendVLLM, kind: kindCacheInfo},
	{names: []string{"process_start_time_seconds"}, kind: kindProcessStart},

	// SGLang: names from v0.3.5 to v0.4 and later. Its time_per_output_token_seconds is
	// observed once per generated token (its count tracks generation_tokens_total, not the
	// request count), so it is the inter-token latency. cache_hit_rate is not mapped: v0.3.5
	// prints a percentage and v0.4 a fraction under the same name.
	{names: sglang("num_running_reqs", "num_requests_running"), backend: BackendSGLang, kind: kindSum, value: (*Stats).running},
	{names: sglang("num_queue_reqs", "num_requests_waiting", "queue_req"), backend: BackendSGLang, kind: kindSum, value: (*Stats).waiting},
	{names: sglang("token_usage"), backend: BackendSGLang, kind: kindMax, value: (*Stats).kvUsage},
	{names: sglang("prompt_tokens_total"), backend: BackendSGLang, kind: kindSum, value: (*Stats).promptTokens},
	{names: sglang("generation_tokens_total"), backend: BackendSGLang, kind: kindSum, value: (*Stats).generationTokens},
	{names: sglang("time_to_first_token_seconds"), backend: BackendSGLang, kind: kindHist, hist: (*Stats).ttft},
	{names: sglang("inter_token_latency_seconds", "time_per_output_token_seconds"), backend: BackendSGLang, kind: kindHist, hist: (*Stats).itl},
	{names: sglang("e2e_request_latency_seconds"), backend: BackendSGLang, kind: kindHist, hist: (*Stats).e2e},
	{names: sglang("queue_time_seconds", "waiting_request_latency_seconds"), backend: BackendSGLang, kind: kindHist, hist: (*Stats).queue},
	{names: sglang("request_prompt_tokens"), backend: BackendSGLang, kind: kindHist, hist: (*Stats).promptLen},
	{names: sglang("request_generation_tokens"), backend: BackendSGLang, kind: kindHist, hist: (*Stats).genLen},
	{names: sglang("max_total_num_tokens"), backend: BackendSGLang, kind: kindCapacityTokens},

	// TGI: no model label and no token counters. tgi_request_success and tgi_request_failure
	// together count every finished request, as vllm:request_success_total does; TGI has no
	// finish reason, so they are keyed "success" and "error".
	{names: []string{"tgi_batch_current_size"}, backend: BackendTGI, kind: kindSum, value: (*Stats).running},
	{names: []string{"tgi_queue_size"}, backend: BackendTGI, kind: kindSum, value: (*Stats).waiting},
	{names: []string{"tgi_request_success"}, backend: BackendTGI, kind: kindByLabel, key: "success",
		byMap: (*Stats).finishedBy, value: (*Stats).finished},
	{names: []string{"tgi_request_failure"}, backend: BackendTGI, kind: kindByLabel, key: "error",
		byMap: (*Stats).finishedBy, value: (*Stats).finished},
	{names: []string{"tgi_request_duration"}, backend: BackendTGI, kind: kindHist, hist: (*Stats).e2e},
	{names: []string{"tgi_request_queue_duration"}, backend: BackendTGI, kind: kindHist, hist: (*Stats).queue},
	{names: []string{"tgi_request_inference_duration"}, backend: BackendTGI, kind: kindHist, hist: (*Stats).inference},
	{names: []string{"tgi_request_mean_time_per_token_duration"}, backend: BackendTGI, kind: kindHist, hist: (*Stats).tpot},
	{names: []string{"tgi_request_input_length"}, backend: BackendTGI, kind: kindHist, hist: (*Stats).promptLen},
	{names: []string{"tgi_request_generated_tokens"}, backend: BackendTGI, kind: kindHist, hist: (*Stats).genLen},
	{names: []string{"tgi_request_max_new_tokens"}, backend: BackendTGI, kind: kindHist, hist: (*Stats).maxTokens},
}

type ruleRef struct {
	r    *rule
	pref int // position in r.names: lower is preferred
}

var ruleIndex = func() map[string]ruleRef {
	idx := make(map[string]ruleRef)
	for _, r := range rules {
		for i, n := range r.names {
			if _, dup := idx[n]; dup {
				panic("scrape: metric name in two rules: " + n)
			}
			idx[n] = ruleRef{r, i}
		}
	}
	return idx
}()

// backendOf recognises a family name's backend by its prefix.
func backendOf(name string) Backend {
	switch {
	case strings.HasPrefix(name, "vllm:"):
		return BackendVLLM
	case strings.HasPrefix(name, "sglang:"):
		return BackendSGLang
	case strings.HasPrefix(name, "tgi_"):
		return BackendTGI
	}
	return BackendUnknown
}

// modelLabels are the labels that name the model, by backend: SGLang v0.3.5 used "name".
func modelLabel(b Backend, name string) bool {
	switch b {
	case BackendVLLM:
		return name == "model_name"
	case BackendSGLang:
		return name == "model_name" || name == "name"
	}
	return false
}

// engineLabel is vLLM's data-parallel engine index label.
const engineLabel = "engine"

// defaultEngine is the engine of series that have no engine label.
const defaultEngine = "0"

// createdSuffix marks client_python's creation-timestamp families, which are ignored.
const createdSuffix = "_created"
