package metrics

import (
	"bytes"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/vllmtop/vllmtop/server/sim"
)

// engineIndex is the engine label of the first (or only) data-parallel engine.
const engineIndex = "0"

// constantLabels are the labels every child of an engine family shares.
var constantLabels = map[string]bool{"model_name": true, "engine": true}

// Label values vLLM creates a series for at startup.
var (
	waitReasons   = []string{"capacity", "deferred"}
	sleepStates   = []string{"awake", "weights_offloaded", "discard_all"}
	promptSources = []string{"local_compute", "local_cache_hit", "external_kv_transfer"}
	// The cache tiers of vllm:prompt_tokens_cached_by_source; without KV connectors or
	// offloading every cached token comes from the device's prefix cache.
	cacheSources = []string{"device", "host", "p2p", "disk", "external_unspecified"}
)

// Metrics holds one engine's vLLM metric families and serves them. Families a release does
// not have stay nil (see features).
type Metrics struct {
	reg    *prometheus.Registry
	on     bool // false with --disable-log-stats: no vllm: family is registered or set
	order  []string
	series seriesOrder
	feat   features
	// engines are the families of data-parallel engines 1 and up (see NewEngines).
	engines []*Metrics

	http         *httpFamilies
	httpRequests atomic.Int64 // instrumented requests, for the python_gc counts

	running, waiting, kvUsage, legacyKVUsage prometheus.Gauge
	waitingBy, sleepState                    map[string]prometheus.Gauge

	prefixQueries, prefixHits             prometheus.Counter
	legacyPrefixQueries, legacyPrefixHits prometheus.Counter
	preemptions                           prometheus.Counter
	promptTokens                          prometheus.Counter
	promptBySource                        map[string]prometheus.Counter
	promptCached, promptRecomputed        prometheus.Counter
	cachedBySource                        map[string]prometheus.Counter
	generationTokens                      prometheus.Counter
	success                               map[string]prometheus.Counter

	specDrafts, specDraftTokens, specAccepted prometheus.Counter
	specPerPos                                []prometheus.Counter

	iterationTokens             prometheus.Histogram
	ttft, itl, legacyTPOT, tpot prometheus.Histogram

	e2e, queue, inference, prefill, decode prometheus.Histogram

	promptLen, generationLen, maxGeneration prometheus.Histogram
	paramsN, paramsMaxTokens, prefillKV     prometheus.Histogram

	// What the flags turn on (see Extras).
	extra                          Extras
	setup                          *sim.Setup
	now                            func() time.Time
	flops, readBytes, writeBytes   prometheus.Counter
	kvLifetime, kvIdle, kvReuseGap prometheus.Histogram
	loraInfo                       *prometheus.GaugeVec
}

// New registers the families of vLLM's /metrics for one engine ("0") and one model name as
// the setup's release has them, all series present from startup with value 0 (every
// finished_reason, every waiting reason, every sleep_state, ...): Python's gc and platform
// families, the process families, the engine families, vllm:cache_config_info and the HTTP
// families. logStats=false mimics --disable-log-stats: no vllm: families at all.
func New(setup *sim.Setup, modelName string, logStats bool) *Metrics {
	return newMetrics(setup, modelName, logStats, time.Now)
}

func newMetrics(setup *sim.Setup, modelName string, logStats bool, now func() time.Time) *Metrics {
	return newMetricsExtras(setup, modelName, logStats, now, Extras{})
}

func newMetricsExtras(setup *sim.Setup, modelName string, logStats bool, now func() time.Time, x Extras) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, on: logStats, feat: featuresOf(setup.Version), extra: x, setup: setup, now: now}
	m.feat.applyShowHidden(setup.Version, x.ShowHiddenFor)
	reg.MustRegister(newPythonCollector(now, &m.httpRequests))
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.order = append(m.order, pythonFamilies...)
	m.order = append(m.order, processFamilies...)
	if logStats {
		m.registerEngine(setup, modelName, engineIndex)
	}
	m.http = newHTTPFamilies(reg)
	m.order = append(m.order, httpFamilyNames...)
	return m
}

// registerEngine registers the vllm: families in vLLM's construction order
// (PrometheusStatLogger.__init__, docs/vllm-behaviour.md#engine-metrics): spec decoding first, then the MFU counters,
// scheduler gauges, cache counters, token counters, histograms, and cache_config_info.
func (m *Metrics) registerEngine(setup *sim.Setup, modelName, engine string) {
	f := families{reg: m.reg, order: &m.order, series: &m.series, labels: prometheus.Labels{"model_name": modelName, "engine": engine}}
	m.registerSpecDecode(f, setup.Speculative)
	m.registerSchedulerAndCache(f)
	m.registerTokenCounters(f)
	m.registerHistograms(f, m.buckets("request_tokens", build125Buckets(setup.MaxModelLen)))
	m.registerExtras(f)
	m.registerCacheConfigInfo(setup, engine)
}

// registerSpecDecode registers the speculative decoding counters, when sp is set, and the
// MFU counters of the releases that have them.
func (m *Metrics) registerSpecDecode(f families, sp *sim.SpeculativeConfig) {
	ft := m.feat
	if sp != nil {
		m.specDrafts = f.counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.")
		m.specDraftTokens = f.counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.")
		m.specAccepted = f.counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.")
		positions := make([]string, sp.NumSpeculativeTokens)
		for i := range positions {
			positions[i] = strconv.Itoa(i)
		}
		perPos := f.counterVec("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.", "position", positions...)
		for _, p := range positions {
			m.specPerPos = append(m.specPerPos, perPos[p])
		}
	}
	if ft.mfuCounters {
		// They only move with --enable-mfu-metrics.
		m.flops = f.counter("vllm:estimated_flops_per_gpu_total", "Estimated number of floating point operations per GPU (for Model Flops Utilization calculations).")
		m.readBytes = f.counter("vllm:estimated_read_bytes_per_gpu_total", "Estimated number of bytes read from memory per GPU (for Model Flops Utilization calculations).")
		m.writeBytes = f.counter("vllm:estimated_write_bytes_per_gpu_total", "Estimated number of bytes written to memory per GPU (for Model Flops Utilization calculations).")
	}
}

// registerSchedulerAndCache registers the scheduler gauges and the KV and prefix cache
// families.
func (m *Metrics) registerSchedulerAndCache(f families) {
	ft := m.feat
	m.running = f.gauge("vllm:num_requests_running", "Number of requests in model execution batches.")
	m.waiting = f.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.")
	if ft.waitingByReason {
		m.waitingBy = f.gaugeVec("vllm:num_requests_waiting_by_reason", "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.", "reason", waitReasons...)
	}
	if ft.sleepState {
		m.sleepState = f.gaugeVec("vllm:engine_sleep_state", "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.", "sleep_state", sleepStates...)
		m.sleepState["awake"].Set(1) // the simulated engine never sleeps
	}
	if ft.legacyCacheNames {
		m.legacyKVUsage = f.gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.")
		m.legacyPrefixQueries = f.counter("vllm:gpu_prefix_cache_queries_total", "GPU prefix cache queries, in terms of number of queriedtokens. DEPRECATED: Use vllm:prefix_cache_queries instead.")
		m.legacyPrefixHits = f.counter("vllm:gpu_prefix_cache_hits_total", "GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use vllm:prefix_cache_hits instead.")
	}
	m.kvUsage = f.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.")

	m.prefixQueries = f.counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.")
	m.prefixHits = f.counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.")
	if ft.externalAndMMCache {
		// No KV connector and no multi-modal inputs: these stay at 0.
		f.counter("vllm:external_prefix_cache_queries_total", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.")
		f.counter("vllm:external_prefix_cache_hits_total", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.")
		f.counter("vllm:mm_cache_queries_total", "Multi-modal cache queries, in terms of number of queried items.")
		f.counter("vllm:mm_cache_hits_total", "Multi-modal cache hits, in terms of number of cached items.")
	}
	m.preemptions = f.counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.")
}

// registerTokenCounters registers the prompt and generation token counters and the finished
// requests by reason.
func (m *Metrics) registerTokenCounters(f families) {
	ft := m.feat
	m.promptTokens = f.counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.")
	if ft.promptBySource {
		m.promptBySource = f.counterVec("vllm:prompt_tokens_by_source_total", "Number of prompt tokens by source.", "source", promptSources...)
		m.promptCached = f.counter("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).")
	}
	if ft.cachedBySource {
		m.cachedBySource = f.counterVec("vllm:prompt_tokens_cached_by_source_total", "Number of cached prompt tokens by the cache tier that held them.", "source", cacheSources...)
	}
	if ft.promptRecomputed {
		m.promptRecomputed = f.counter("vllm:prompt_tokens_recomputed_total", "Number of cached tokens recomputed for forward pass.")
	}
	m.generationTokens = f.counter("vllm:generation_tokens_total", "Number of generation tokens processed.")
	m.success = f.counterVec("vllm:request_success_total", "Count of successfully processed requests.", "finished_reason", ft.finishReasonsOf()...)
}

// registerHistograms registers the request, token and latency histograms; tokens are the
// buckets of the token-count histograms.
func (m *Metrics) registerHistograms(f families, tokens []float64) {
	ft := m.feat
	itl := m.buckets("inter_token_latency", tokenLatencyBuckets)
	lat := m.buckets("request_latency", requestLatencyBuckets)
	m.promptLen = f.histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokens)
	m.generationLen = f.histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", tokens)
	m.iterationTokens = f.histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", m.buckets("iteration_tokens", iterationTokenBuckets))
	m.maxGeneration = f.histogram("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", tokens)
	m.paramsN = f.histogram("vllm:request_params_n", "Histogram of the n request parameter.", m.buckets("request_params_n", paramsNBuckets))
	m.paramsMaxTokens = f.histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", tokens)
	m.ttft = f.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", m.buckets("time_to_first_token", ttftBuckets))
	if ft.legacyTPOT {
		help := "Histogram of time per output token in seconds."
		if ft.legacyTPOTHelp {
			help += "DEPRECATED: Use vllm:inter_token_latency_seconds instead."
		}
		m.legacyTPOT = f.histogram("vllm:time_per_output_token_seconds", help, itl)
	}
	if ft.interTokenLatency {
		m.itl = f.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itl)
	}
	if ft.requestTPOT {
		m.tpot = f.histogram("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itl)
	}
	m.e2e = f.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", lat)
	m.queue = f.histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", lat)
	m.inference = f.histogram("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", lat)
	m.prefill = f.histogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", lat)
	m.decode = f.histogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", lat)
	if ft.prefillKVComputed {
		m.prefillKV = f.histogram("vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", tokens)
	}
}

func (m *Metrics) registerCacheConfigInfo(setup *sim.Setup, engine string) {
	ft := m.feat
	// vLLM's "info" emulation: a gauge at 1 whose labels are the cache configuration. It has
	// the engine label but, unlike the other families, no model_name.
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "vllm:cache_config_info",
		Help:        "Information of the LLMEngine CacheConfig",
		ConstLabels: withCacheLabels(cacheConfigLabels(setup, engine, ft), m.extra.CacheLabels),
	})
	m.reg.MustRegister(info)
	m.order = append(m.order, "vllm:cache_config_info")
	info.Set(1)
}

// ContentType is the Content-Type of vLLM's /metrics: prometheus_client's
// CONTENT_TYPE_LATEST, version=1.0.0 since prometheus_client 0.23 (the same syntax).
func (m *Metrics) ContentType() string {
	if m.feat.contentType100 {
		return "text/plain; version=1.0.0; charset=utf-8"
	}
	return "text/plain; version=0.0.4; charset=utf-8"
}

// Handler serves the text exposition. Like vLLM's /metrics it always answers in the classic
// text format, uncompressed, whatever the request's Accept headers ask for.
func (m *Metrics) Handler() http.Handler {
	known := make(map[string]bool, len(m.order))
	for _, name := range m.order {
		known[name] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mfs, err := m.reg.Gather()
		if err != nil {
			http.Error(w, "gathering metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		kept := mfs[:0]
		for _, mf := range mfs {
			if keepFamily(mf, known) {
				kept = append(kept, mf)
			}
		}
		// Render fully before writing so a failure can still become a 500.
		var body bytes.Buffer
		rank := func(family string, labels []*dto.LabelPair) int { return m.series.rank(family, labels, constantLabels) }
		if err := writeExposition(&body, kept, m.order, rank, m.http.empty); err != nil {
			http.Error(w, "encoding metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", m.ContentType())
		_, _ = w.Write(body.Bytes())
	})
}

// ObserveStep records one engine step. Idle results only refresh the gauges.
func (m *Metrics) ObserveStep(r *sim.StepResult) {
	if !m.on {
		return
	}
	m.running.Set(float64(r.Running))
	m.waiting.Set(float64(r.Waiting))
	if m.waitingBy != nil {
		// The simulated scheduler never defers a request, so all waiting is for capacity.
		m.waitingBy["capacity"].Set(float64(r.Waiting))
		m.waitingBy["deferred"].Set(0)
	}
	m.kvUsage.Set(r.KVCacheUsage())
	setGauge(m.legacyKVUsage, r.KVCacheUsage())
	m.observeResidency(r.KVEvictions)
	if r.Idle {
		return
	}
	m.observeMFU(r)

	m.prefixQueries.Add(float64(r.PrefixQueries))
	m.prefixHits.Add(float64(r.PrefixHits))
	add(m.legacyPrefixQueries, r.PrefixQueries)
	add(m.legacyPrefixHits, r.PrefixHits)
	m.preemptions.Add(float64(r.Preempted))
	m.promptTokens.Add(float64(r.PromptTokens))
	// Cached prompt tokens are not computed this step, so vLLM leaves them out of the
	// iteration size; the engine's prefill count already excludes them.
	m.iterationTokens.Observe(float64(r.PrefillTokens + r.DecodeTokens))
	if m.specDrafts != nil {
		m.specDrafts.Add(float64(r.SpecDrafts))
		m.specDraftTokens.Add(float64(r.SpecDraftTokens))
		m.specAccepted.Add(float64(r.SpecAccepted))
		for p, n := range r.SpecAcceptedPerPos {
			if p < len(m.specPerPos) {
				m.specPerPos[p].Add(float64(n))
			}
		}
	}

	generated := 0
	for i := range r.Outputs {
		o := &r.Outputs[i]
		generated += max(1, len(o.Tokens))
		if o.Index > 0 {
			// One observation per decode iteration, however many tokens it produced.
			observe(m.itl, m.wall(o.Gap))
			observe(m.legacyTPOT, m.wall(o.Gap))
			continue
		}
		// A first token means the request's prefill finished in this step: split its prompt
		// into what the prefix cache supplied and what was computed.
		if m.promptBySource != nil {
			cached := o.Seq.CachedTokens
			m.promptBySource["local_compute"].Add(float64(len(o.Seq.Prompt) - cached))
			m.promptBySource["local_cache_hit"].Add(float64(cached))
			m.promptCached.Add(float64(cached))
		}
		if m.cachedBySource != nil {
			m.cachedBySource["device"].Add(float64(o.Seq.CachedTokens))
		}
		m.ttft.Observe(m.seconds(o.Seq.Times.Arrival, reported(r.Streamed, r.End)))
	}
	m.generationTokens.Add(float64(generated))
}

// ObserveEnded records a request that finished or was aborted. Every ended request counts
// in vllm:request_success_total; the per-request histograms take only those that ran to
// completion, since an aborted request may lack some of the timestamps they need.
func (m *Metrics) ObserveEnded(s *sim.Sequence) {
	if !m.on {
		return
	}
	c, ok := m.success[string(s.Reason)]
	if !ok {
		return // not one of the release's finish reasons: nothing to count it under
	}
	c.Inc()
	if s.Reason == sim.FinishAbort {
		return
	}

	t := s.Times
	decode := m.seconds(t.FirstToken, t.LastToken)
	m.e2e.Observe(m.seconds(t.Arrival, reported(t.Reported, t.Finished)))
	m.queue.Observe(m.seconds(t.TakenIn, t.FirstScheduled))
	m.prefill.Observe(m.seconds(t.FirstScheduled, t.FirstToken))
	m.decode.Observe(decode)
	m.inference.Observe(m.seconds(t.FirstScheduled, t.LastToken))
	// The first token comes from the prefill, so it does not count as a decoded token.
	perToken := 0.0
	if s.Outputs > 1 {
		perToken = decode / float64(s.Outputs-1)
	}
	observe(m.tpot, perToken)

	m.promptLen.Observe(float64(len(s.Prompt)))
	m.generationLen.Observe(float64(s.Outputs))
	m.paramsMaxTokens.Observe(float64(s.MaxTokens))
	m.maxGeneration.Observe(float64(s.MaxTokens))
	n := s.N
	if n < 1 {
		n = 1
	}
	m.paramsN.Observe(float64(n))
	observe(m.prefillKV, float64(len(s.Prompt)-s.CachedTokens))
}

// reported is when vLLM's API server stamped an output: when its loop took it up, or the
// engine's time where the owner did not ask the loop (Engine.Streamed).
func reported(loop, engine time.Time) time.Time {
	if loop.IsZero() {
		return engine
	}
	return loop
}

// seconds is the span from..to of the simulated clock, in the wall-clock seconds it took.
func (m *Metrics) seconds(from, to time.Time) float64 { return m.wall(to.Sub(from)) }

// wall converts a simulated duration to wall-clock seconds (Extras.Speed).
func (m *Metrics) wall(d time.Duration) float64 {
	if m.extra.Speed > 0 {
		return d.Seconds() / m.extra.Speed
	}
	return d.Seconds()
}

// Nil-safe updates of the families a release may lack.
func observe(h prometheus.Histogram, v float64) {
	if h != nil {
		h.Observe(v)
	}
}

func add(c prometheus.Counter, n int) {
	if c != nil {
		c.Add(float64(n))
	}
}

func setGauge(g prometheus.Gauge, v float64) {
	if g != nil {
		g.Set(v)
	}
}
