package metrics

import (
	"math"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Bucket sets vLLM uses (vllm/v1/metrics/loggers.py).
var (
	iterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	paramsNBuckets        = []float64{1, 2, 5, 10, 20}
	ttftBuckets           = []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
	}
	// Inter-token latency and per-request time per output token share one set.
	tokenLatencyBuckets = []float64{
		0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
	}
	requestLatencyBuckets = []float64{
		0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
	}
)

// build125Buckets is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to and including
// the last value not greater than maxValue. The client library adds +Inf.
func build125Buckets(maxValue int) []float64 {
	var buckets []float64
	for scale := 1.0; ; scale *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * scale
			if v > float64(maxValue) {
				return buckets
			}
			buckets = append(buckets, v)
		}
	}
}

// families registers metrics that all carry the same constant labels (model_name and
// engine), as every vLLM engine metric does.
// The names registered are appended to order, the exposition's family order.
type families struct {
	reg    *prometheus.Registry
	order  *[]string
	series *seriesOrder
	labels prometheus.Labels
}

func (f families) register(name string, c prometheus.Collector) {
	f.reg.MustRegister(c)
	*f.order = append(*f.order, name)
}

// Counter names include "_total" because the client library exposes a counter under exactly
// the name it is given, and vLLM's exposed counter samples all end in "_total".
func (f families) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: f.labels})
	f.register(name, c)
	return c
}

// counterVec registers a counter with one extra label and creates a child for every value
// now, so each series is exposed at 0 before anything happens.
func (f families) counterVec(name, help, label string, values ...string) map[string]prometheus.Counter {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: f.labels}, []string{label})
	return registerChildren(f, name, v, v.WithLabelValues, values)
}

func (f families) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: f.labels})
	f.register(name, g)
	return g
}

// gaugeVec is counterVec for gauges.
func (f families) gaugeVec(name, help, label string, values ...string) map[string]prometheus.Gauge {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: f.labels}, []string{label})
	return registerChildren(f, name, v, v.WithLabelValues, values)
}

// registerChildren registers the family vec and creates the child of every label value, in
// the order given, keyed by the value.
func registerChildren[T any](f families, name string, vec prometheus.Collector, with func(...string) T, values []string) map[string]T {
	f.register(name, vec)
	out := make(map[string]T, len(values))
	for _, value := range values {
		f.series.note(name, value)
		out[value] = with(value)
	}
	return out
}

func (f families) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: f.labels, Buckets: buckets})
	f.register(name, h)
	return h
}

// seriesOrder remembers the order in which each family's children were created, keyed by
// the values of their variable labels, so the exposition lists them in that order as
// prometheus_client does. It is safe for concurrent use.
type seriesOrder struct {
	mu    sync.Mutex
	ranks map[string]map[string]int
}

// note records a child of family with the given variable label values, if it is new.
func (o *seriesOrder) note(family string, values ...string) {
	key := strings.Join(values, "\x00")
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ranks == nil {
		o.ranks = map[string]map[string]int{}
	}
	r := o.ranks[family]
	if r == nil {
		r = map[string]int{}
		o.ranks[family] = r
	}
	if _, ok := r[key]; !ok {
		r[key] = len(r)
	}
}

// rank is the creation index of a series: its label values other than the constant ones,
// in label-name order, looked up among those noted (unknown series last).
func (o *seriesOrder) rank(family string, labels []*dto.LabelPair, constant map[string]bool) int {
	var values []string
	for _, l := range labels {
		if !constant[l.GetName()] {
			values = append(values, l.GetValue())
		}
	}
	key := strings.Join(values, "\x00")
	o.mu.Lock()
	defer o.mu.Unlock()
	if r, ok := o.ranks[family][key]; ok {
		return r
	}
	return math.MaxInt32
}
