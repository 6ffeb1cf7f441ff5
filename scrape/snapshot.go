package scrape

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"time"
)

// Backend is the inference server software a scrape came from, recognised by its metric
// name prefix.
type Backend int

// Backends recognised by their metric name prefixes.
const (
	BackendUnknown Backend = iota // no family with a known prefix: only raw families
	BackendVLLM                   // "vllm:"
	BackendSGLang                 // "sglang:"
	BackendTGI                    // "tgi_" (Hugging Face text-generation-inference)
)

// String returns the backend's short name: "unknown", "vllm", "sglang" or "tgi".
func (b Backend) String() string {
	switch b {
	case BackendUnknown:
		return "unknown"
	case BackendVLLM:
		return "vllm"
	case BackendSGLang:
		return "sglang"
	case BackendTGI:
		return "tgi"
	}
	return "Backend(" + strconv.Itoa(int(b)) + ")"
}

// MarshalText implements encoding.TextMarshaler (JSON carries the short name).
func (b Backend) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// Snapshot is one /metrics scrape mapped to typed fields. Values a server does not expose are
// absent (Value.OK false, nil histograms, nil maps), never zero.
type Snapshot struct {
	// Time is when the response arrived (set by Client.Scrape; Parse leaves it zero). It keeps
	// Go's monotonic clock reading, so rates between two snapshots of this process are immune
	// to wall-clock steps.
	Time    time.Time `json:"time,omitzero"`
	Backend Backend   `json:"backend"`

	// Models holds one entry per model label value (vLLM's model_name), sorted by name, never
	// merged. A backend without a model label (TGI) has one model named "".
	Models []Model `json:"models"`

	// Cache is vllm:cache_config_info, one entry per engine, sorted by engine. It carries no
	// model label, so it belongs to the server rather than to a model.
	Cache []CacheConfig `json:"cache,omitempty"`
	// Capacity is the KV-cache capacity of the whole server, derived from Cache (or SGLang's
	// max_total_num_tokens).
	Capacity Capacity `json:"capacity"`

	// ProcessStartSeconds is process_start_time_seconds, the Unix time the API-server process
	// started. vLLM's multiprocess mode (data parallel) does not export it.
	ProcessStartSeconds Value `json:"process_start_seconds"`

	// Unmapped holds every family that no field above took, sorted by name, with its samples.
	// "_created" families (client_python's creation timestamps) are dropped, not listed.
	Unmapped []Family `json:"unmapped,omitempty"`

	// Warnings are mapping problems that did not stop the scrape, e.g. engines whose
	// histogram bucket layouts differ and so have no merged total.
	Warnings []string `json:"warnings,omitempty"`

	// DuplicateSeries counts the series that repeated a label set already seen in their
	// family: a broken exporter, or two processes writing one exposition. Only the last of
	// each was used; a non-zero count deserves a warning where the numbers are shown.
	DuplicateSeries int `json:"duplicate_series,omitempty"`
	// IgnoredValues counts the values of mapped families left out because no field can hold
	// them (NaN, infinite, negative, above 2^53, a fraction outside 0..1). Each of the two
	// counts has one warning, naming the first families it was found in.
	IgnoredValues int `json:"ignored_values,omitempty"`
}

// Model returns the model with that name.
func (s *Snapshot) Model(name string) (*Model, bool) {
	for i := range s.Models {
		if s.Models[i].Name == name {
			return &s.Models[i], true
		}
	}
	return nil, false
}

// Engines returns every engine index seen in the mapped families or the cache config,
// sorted numerically.
func (s *Snapshot) Engines() []string {
	seen := map[string]bool{}
	for _, m := range s.Models {
		for _, e := range m.Engines {
			seen[e.Engine] = true
		}
	}
	for _, c := range s.Cache {
		seen[c.Engine] = true
	}
	out := make([]string, 0, len(seen))
	for e := range seen {
		out = append(out, e)
	}
	sortEngines(out)
	return out
}

// Model is everything a server reports for one model name: the sum over its engines and each
// engine on its own.
type Model struct {
	Name string `json:"name"`
	// Total sums the engines: gauges and counters add up, histograms merge bucket by bucket
	// (only when every engine has the same bucket layout), and KVCacheUsage is combined as
	// KVCacheUsageBasis says.
	Total Stats `json:"total"`
	// KVCacheUsageBasis says how Total.KVCacheUsage was made from the engines: "engine" (a
	// single engine), "capacity-weighted" (a mean weighted by each engine's
	// kv_cache_size_tokens) or "max" (the fullest engine, when capacities are unknown).
	KVCacheUsageBasis string `json:"kv_cache_usage_basis,omitempty"`
	// Engines holds each data-parallel engine's own numbers, sorted numerically. A series
	// without an engine label (vLLM before V1's engine label, SGLang, TGI) is engine "0".
	Engines []EngineStats `json:"engines"`
}

// Engine returns the stats of one engine.
func (m *Model) Engine(engine string) (*EngineStats, bool) {
	for i := range m.Engines {
		if m.Engines[i].Engine == engine {
			return &m.Engines[i], true
		}
	}
	return nil, false
}

// EngineStats are the numbers of one engine.
type EngineStats struct {
	Engine string `json:"engine"`
	Stats
}

// Stats are the mapped numbers of one (model, engine), or their sum. Gauges are current
// values; counters are totals since the server started (see Rate and Compare for windows);
// histograms are cumulative since the server started (see Quantile).
type Stats struct {
	// Scheduler gauges.
	Running         Value              `json:"running"`                     // requests in the running batch
	Waiting         Value              `json:"waiting"`                     // requests queued (vLLM ≥ 2026-04 includes deferred ones)
	WaitingByReason map[string]float64 `json:"waiting_by_reason,omitempty"` // vLLM: "capacity", "deferred"
	Swapped         Value              `json:"swapped,omitzero"`            // V0 only: requests swapped to CPU
	KVCacheUsage    Value              `json:"kv_cache_usage"`              // 0..1 of the KV-cache blocks
	// Awake is 1 when the engine is awake and 0 when it sleeps (vllm:engine_sleep_state).
	Awake Value `json:"awake,omitzero"`

	// Counters since the server started.
	Preemptions                Value              `json:"preemptions"`
	PromptTokens               Value              `json:"prompt_tokens"`     // every prompt token, cached ones included
	GenerationTokens           Value              `json:"generation_tokens"` // every generated token
	PromptTokensCached         Value              `json:"prompt_tokens_cached,omitzero"`
	PrefixCacheQueries         Value              `json:"prefix_cache_queries"` // tokens looked up
	PrefixCacheHits            Value              `json:"prefix_cache_hits"`    // tokens found
	ExternalPrefixCacheQueries Value              `json:"external_prefix_cache_queries,omitzero"`
	ExternalPrefixCacheHits    Value              `json:"external_prefix_cache_hits,omitzero"`
	RequestsFinished           Value              `json:"requests_finished"` // every finished request, any reason
	FinishedByReason           map[string]float64 `json:"finished_by_reason,omitempty"`
	SpecDecodeDrafts           Value              `json:"spec_decode_drafts,omitzero"`
	SpecDecodeDraftTokens      Value              `json:"spec_decode_draft_tokens,omitzero"`
	SpecDecodeAcceptedTokens   Value              `json:"spec_decode_accepted_tokens,omitzero"`

	// Latency histograms, in seconds.
	TTFTSeconds      *Histogram `json:"ttft_seconds,omitempty"`      // time to first token
	ITLSeconds       *Histogram `json:"itl_seconds,omitempty"`       // inter-token latency, one observation per token gap
	TPOTSeconds      *Histogram `json:"tpot_seconds,omitempty"`      // time per output token, one observation per request
	E2ESeconds       *Histogram `json:"e2e_seconds,omitempty"`       // arrival to finish
	QueueSeconds     *Histogram `json:"queue_seconds,omitempty"`     // waiting before first scheduled
	PrefillSeconds   *Histogram `json:"prefill_seconds,omitempty"`   // scheduled to first token
	DecodeSeconds    *Histogram `json:"decode_seconds,omitempty"`    // first to last token
	InferenceSeconds *Histogram `json:"inference_seconds,omitempty"` // scheduled to last token

	// Token-count histograms, in tokens (ParamsN in sequences).
	PromptTokensPerRequest     *Histogram `json:"prompt_tokens_per_request,omitempty"`
	GenerationTokensPerRequest *Histogram `json:"generation_tokens_per_request,omitempty"`
	MaxTokensPerRequest        *Histogram `json:"max_tokens_per_request,omitempty"` // the max_tokens parameter
	MaxGenerationTokens        *Histogram `json:"max_generation_tokens,omitempty"`
	PrefillKVComputedTokens    *Histogram `json:"prefill_kv_computed_tokens,omitempty"` // prompt tokens not served by the prefix cache
	IterationTokens            *Histogram `json:"iteration_tokens,omitempty"`           // tokens per engine step
	ParamsN                    *Histogram `json:"params_n,omitempty"`
}

// Histogram is a cumulative Prometheus histogram: Buckets are sorted by upper bound and end
// with the +Inf bucket, whose count equals Count.
type Histogram struct {
	Buckets []Bucket
	Count   float64
	Sum     float64
}

// Bucket is one cumulative bucket: the number of observations ≤ UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Mean is Sum/Count, absent when there are no observations.
func (h *Histogram) Mean() Value {
	if h == nil || !(h.Count > 0) {
		return Value{}
	}
	return Some(h.Sum / h.Count)
}

// MarshalJSON writes {"count":…,"sum":…,"buckets":[{"le":"0.5","count":…},…]}; bounds are
// strings so "+Inf" survives.
func (h Histogram) MarshalJSON() ([]byte, error) {
	type bucket struct {
		LE    string `json:"le"`
		Count Value  `json:"count"`
	}
	out := struct {
		Count   Value    `json:"count"`
		Sum     Value    `json:"sum"`
		Buckets []bucket `json:"buckets"`
	}{Count: Some(h.Count), Sum: Some(h.Sum), Buckets: make([]bucket, len(h.Buckets))}
	for i, b := range h.Buckets {
		out.Buckets[i] = bucket{LE: formatFloat(b.UpperBound), Count: Some(b.Count)}
	}
	return json.Marshal(out)
}

// sameLayout reports whether two histograms have the same bucket bounds.
func sameLayout(a, b *Histogram) bool {
	if len(a.Buckets) != len(b.Buckets) {
		return false
	}
	for i := range a.Buckets {
		if a.Buckets[i].UpperBound != b.Buckets[i].UpperBound {
			return false
		}
	}
	return true
}

// mergeHist adds b into a copy of a; ok is false when the bucket layouts differ.
func mergeHist(a, b *Histogram) (*Histogram, bool) {
	switch {
	case a == nil && b == nil:
		return nil, true
	case a == nil:
		return cloneHist(b), true
	case b == nil:
		return cloneHist(a), true
	}
	if !sameLayout(a, b) {
		return nil, false
	}
	out := cloneHist(a)
	for i := range out.Buckets {
		out.Buckets[i].Count += b.Buckets[i].Count
	}
	out.Count += b.Count
	out.Sum += b.Sum
	return out, true
}

func cloneHist(h *Histogram) *Histogram {
	out := *h
	out.Buckets = append([]Bucket(nil), h.Buckets...)
	return &out
}

// CacheConfig is one engine's vllm:cache_config_info: vLLM's CacheConfig as labels, whose
// set changes between versions. Numbers that vLLM printed as "None" are absent.
type CacheConfig struct {
	Engine          string `json:"engine"`
	BlockSizeTokens Value  `json:"block_size_tokens"`
	// NumGPUBlocks is as vLLM reports it: its frontend sums the blocks over data-parallel
	// engines, so with DP>1 every engine shows the server's total.
	NumGPUBlocks Value `json:"num_gpu_blocks"`
	// GPUMemoryUtilization is the configured fraction (0..1), not a measurement.
	GPUMemoryUtilization Value `json:"gpu_memory_utilization"`
	// KVCacheSizeTokens is this engine's KV-cache capacity in tokens (vLLM ≥ 2026-06).
	KVCacheSizeTokens Value `json:"kv_cache_size_tokens"`
	// MaxConcurrency is how many requests of the full model length fit in this engine's KV
	// cache at once (kv_cache_max_concurrency, vLLM ≥ 2026-06).
	MaxConcurrency Value  `json:"max_concurrency"`
	CacheDType     string `json:"cache_dtype,omitempty"`
	// PrefixCaching is 1 when prefix caching is on, 0 when off.
	PrefixCaching Value `json:"prefix_caching"`
	// Labels holds every label as printed (Python str() values such as "None", "True").
	Labels map[string]string `json:"labels"`
}

// Capacity is the server's KV-cache capacity.
type Capacity struct {
	// KVCacheTokens is the capacity in tokens over all engines: the sum of the engines'
	// kv_cache_size_tokens; or num_gpu_blocks × block_size for one engine of a plain attention
	// model (on hybrid Mamba models that product is not the token capacity); or SGLang's
	// max_total_num_tokens.
	KVCacheTokens Value `json:"kv_cache_tokens"`
	// MaxConcurrency sums the engines' kv_cache_max_concurrency: requests of the full model
	// length that fit at once.
	MaxConcurrency       Value `json:"max_concurrency"`
	BlockSizeTokens      Value `json:"block_size_tokens"`
	NumGPUBlocks         Value `json:"num_gpu_blocks"`         // as reported (already summed over engines by vLLM)
	GPUMemoryUtilization Value `json:"gpu_memory_utilization"` // configured, 0..1
}

// Family is a metric family as the server sent it, kept when no Snapshot field took it.
type Family struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"` // counter, gauge, histogram, summary, untyped, ...
	Help   string   `json:"help,omitempty"`
	Series []Series `json:"series"`
}

// Series is one sample set of a Family: Value for counters, gauges and untyped samples,
// Histogram or Summary otherwise.
type Series struct {
	Labels    map[string]string `json:"labels,omitempty"`
	Value     Value             `json:"value,omitzero"`
	Histogram *Histogram        `json:"histogram,omitempty"`
	Summary   *Summary          `json:"summary,omitempty"`
}

// Summary is a Prometheus summary: precomputed quantiles since the process started.
type Summary struct {
	Count     float64
	Sum       float64
	Quantiles []SummaryQuantile
}

// SummaryQuantile is one quantile of a Summary.
type SummaryQuantile struct {
	Quantile float64
	Value    float64
}

// MarshalJSON writes {"count":…,"sum":…,"quantiles":{"0.5":…}}.
func (s Summary) MarshalJSON() ([]byte, error) {
	type q struct {
		Q string `json:"quantile"`
		V Value  `json:"value"`
	}
	out := struct {
		Count     Value `json:"count"`
		Sum       Value `json:"sum"`
		Quantiles []q   `json:"quantiles,omitempty"`
	}{Count: Some(s.Count), Sum: Some(s.Sum)}
	for _, x := range s.Quantiles {
		out.Quantiles = append(out.Quantiles, q{formatFloat(x.Quantile), Some(x.Value)})
	}
	return json.Marshal(out)
}

// sortEngines orders engine indices numerically ("2" before "10"), other strings after them.
func sortEngines(es []string) {
	sort.Slice(es, func(i, j int) bool { return engineLess(es[i], es[j]) })
}

func engineLess(a, b string) bool {
	ai, aerr := strconv.Atoi(a)
	bi, berr := strconv.Atoi(b)
	switch {
	case aerr == nil && berr == nil:
		return ai < bi
	case aerr == nil:
		return true
	case berr == nil:
		return false
	}
	return a < b
}

// maxValue returns the larger of two values, ignoring absent ones and NaN.
func maxValue(a, b Value) Value {
	switch {
	case !b.OK || math.IsNaN(b.V):
		return a
	case !a.OK || math.IsNaN(a.V):
		return b
	case b.V > a.V:
		return b
	}
	return a
}
