package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllmtop/vllmtop/server/sim"
)

// Extras are the metrics vllm serve's flags turn on or reshape.
type Extras struct {
	// LoRA is --enable-lora: vllm:lora_requests_info, with MaxLoras as its max_lora label.
	LoRA     bool
	MaxLoras int
	// KVCacheMetrics is --kv-cache-metrics: the KV block residency histograms.
	KVCacheMetrics bool
	// MFU is --enable-mfu-metrics: the estimated_*_per_gpu counters move.
	MFU bool
	// Buckets is --custom-histogram-buckets: bucket bounds by family key.
	Buckets map[string][]float64
	// ShowHiddenFor is --show-hidden-metrics-for-version.
	ShowHiddenFor string
	// Speed is --sim-speed, simulated seconds per wall-clock second (0: 1). Durations are
	// reported in wall-clock seconds, the clock the clients and a scraper's rates run on, so
	// a sped-up server reads as a faster one rather than as two clocks.
	Speed float64
	// CacheLabels are vllm:cache_config_info labels of CacheConfig fields set by flags the
	// simulator takes without modelling (--prefix-caching-hash-algo, --kv-offloading-size, ...),
	// as vLLM's str() renders them; they replace the defaults of the same labels.
	CacheLabels map[string]string
}

// bucketFamilies are the keys --custom-histogram-buckets takes (vLLM's Production Metrics page).
var bucketFamilies = []string{"request_latency", "time_to_first_token", "inter_token_latency", "iteration_tokens",
	"request_params_n", "request_tokens", "kv_cache_residency"}

// kvResidencyBuckets are vLLM's bounds for the KV block residency histograms, in seconds.
var kvResidencyBuckets = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800}

// ParseCustomBuckets reads --custom-histogram-buckets: a JSON object of family keys to bucket
// lists, each positive, finite and strictly increasing.
func ParseCustomBuckets(text string) (map[string][]float64, error) {
	var raw map[string][]float64
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, fmt.Errorf("want a JSON object of bucket lists: %v", err)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		known := false
		for _, f := range bucketFamilies {
			known = known || f == k
		}
		if !known {
			return nil, fmt.Errorf("unknown bucket family %q (choose from %s)", k, strings.Join(bucketFamilies, ", "))
		}
		b := raw[k]
		if len(b) == 0 || len(b) > 100 {
			return nil, fmt.Errorf("%s: between 1 and 100 bounds", k)
		}
		for i, v := range b {
			if !(v > 0) || math.IsInf(v, 0) || (i > 0 && v <= b[i-1]) {
				return nil, fmt.Errorf("%s: bucket values must be positive, finite and strictly increasing", k)
			}
		}
	}
	return raw, nil
}

// buckets is the family's bounds: the custom ones, else def.
func (m *Metrics) buckets(family string, def []float64) []float64 {
	if b, ok := m.extra.Buckets[family]; ok {
		return b
	}
	return def
}

// showHidden reports whether --show-hidden-metrics-for-version names the release before v's
// minor one, which is what brings back the metrics v hides (vLLM's _prev_minor_version_was).
func showHidden(v sim.Version, flag string) bool {
	if flag == "" || v[1] == 0 {
		return false
	}
	w, err := sim.ParseVersion(flag)
	return err == nil && w[0] == v[0] && w[1] == v[1]-1
}

// applyShowHidden brings back the families hidden in the release after they were deprecated.
func (f *features) applyShowHidden(v sim.Version, flag string) {
	if !showHidden(v, flag) {
		return
	}
	switch v[1] {
	case 11: // gpu_cache_usage_perc and gpu_prefix_cache_*: deprecated 0.9.2, hidden 0.11
		f.legacyCacheNames = true
	case 12: // time_per_output_token_seconds: deprecated 0.11, hidden 0.12
		f.legacyTPOT = true
	}
}

// registerExtras registers the families the flags turn on, after the histograms as vLLM does.
func (m *Metrics) registerExtras(f families) {
	if m.extra.KVCacheMetrics {
		b := m.buckets("kv_cache_residency", kvResidencyBuckets)
		sample := " Sampled metrics (controlled by --kv-cache-metrics-sample)."
		m.kvLifetime = f.histogram("vllm:kv_block_lifetime_seconds", "Histogram of KV cache block lifetime from allocation to eviction."+sample, b)
		m.kvIdle = f.histogram("vllm:kv_block_idle_before_evict_seconds", "Histogram of idle time before KV cache block eviction."+sample, b)
		m.kvReuseGap = f.histogram("vllm:kv_block_reuse_gap_seconds", "Histogram of time gaps between consecutive KV cache block accesses. Only the most recent accesses are recorded (ring buffer)."+sample, b)
	}
	if m.extra.LoRA {
		// No model_name or engine label: vLLM declares only the three adapter labels.
		m.loraInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:lora_requests_info", Help: "Running stats on lora requests."},
			[]string{"max_lora", "waiting_lora_adapters", "running_lora_adapters"})
		m.reg.MustRegister(m.loraInfo)
		m.order = append(m.order, "vllm:lora_requests_info")
	}
}

// ObserveLoRA records the adapters of the running and waiting requests, as vLLM does at each
// scheduler report: the series of that combination is set to the current time.
func (m *Metrics) ObserveLoRA(running, waiting []string) {
	if !m.on || m.loraInfo == nil {
		return
	}
	g := m.loraInfo.WithLabelValues(strconv.Itoa(m.extra.MaxLoras), strings.Join(waiting, ","), strings.Join(running, ","))
	g.Set(float64(m.now().UnixNano()) / 1e9)
}

// observeMFU counts one step's estimated work per GPU from the roofline model's inputs: two
// FLOPs per active parameter and computed token, the weights and the used KV cache read once,
// and the new tokens' K and V written.
func (m *Metrics) observeMFU(r *sim.StepResult) {
	if !m.extra.MFU || m.flops == nil || m.setup == nil {
		return
	}
	s := m.setup
	tp := float64(max(1, s.TensorParallelSize))
	params := s.ModelProfile.ActiveParams
	if params == 0 {
		params = s.ModelProfile.Params
	}
	tokens := float64(r.ScheduledTokens)
	c := s.Capacity
	m.flops.Add(2 * params * tokens / tp)
	m.readBytes.Add(float64(c.WeightsBytes) + r.KVCacheUsage()*float64(c.NumGPUBlocks)*float64(c.BlockBytes))
	m.writeBytes.Add(tokens * float64(c.BytesPerToken+c.SlidingBytesPerToken))
}

// observeResidency records the step's sampled KV block evictions.
func (m *Metrics) observeResidency(evs []sim.KVEviction) {
	if m.kvLifetime == nil {
		return
	}
	for _, ev := range evs {
		m.kvLifetime.Observe(m.wall(ev.Lifetime))
		m.kvIdle.Observe(m.wall(ev.Idle))
		for _, g := range ev.ReuseGaps {
			m.kvReuseGap.Observe(m.wall(g))
		}
	}
}

// NewWithExtras is New with the families and buckets the flags in x ask for.
func NewWithExtras(setup *sim.Setup, modelName string, logStats bool, x Extras) *Metrics {
	return newMetricsExtras(setup, modelName, logStats, time.Now, x)
}
