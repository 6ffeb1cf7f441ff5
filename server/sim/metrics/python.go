package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// pythonCollector stands in for prometheus_client's GC and platform collectors, which vLLM's
// API server registers by default: python_gc_objects_collected_total,
// python_gc_objects_uncollectable_total and python_gc_collections_total by generation, and
// python_info. The simulator has no Python garbage collector, so the counts are plausible
// rather than measured: they start where a freshly started vLLM API server is (the 0.25.1
// capture in testdata) and grow with the requests served and the time up, as a real server's
// do. Like the real ones they carry no _created series.
type pythonCollector struct {
	start    time.Time
	now      func() time.Time
	requests *atomic.Int64

	collected, uncollectable, collections, info *prometheus.Desc
}

func newPythonCollector(now func() time.Time, requests *atomic.Int64) *pythonCollector {
	gen := []string{"generation"}
	return &pythonCollector{
		start: now(), now: now, requests: requests,
		collected:     prometheus.NewDesc("python_gc_objects_collected_total", "Objects collected during gc", gen, nil),
		uncollectable: prometheus.NewDesc("python_gc_objects_uncollectable_total", "Uncollectable objects found during GC", gen, nil),
		collections:   prometheus.NewDesc("python_gc_collections_total", "Number of times this generation was collected", gen, nil),
		info: prometheus.NewDesc("python_info", "Python platform information", nil, prometheus.Labels{
			"implementation": "CPython", "major": "3", "minor": "12", "patchlevel": "11", "version": "3.12.11"}),
	}
}

// pythonFamilies is the order prometheus_client registers them in.
var pythonFamilies = []string{"python_gc_objects_collected_total", "python_gc_objects_uncollectable_total", "python_gc_collections_total", "python_info"}

func (c *pythonCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.collected
	ch <- c.uncollectable
	ch <- c.collections
	ch <- c.info
}

func (c *pythonCollector) Collect(ch chan<- prometheus.Metric) {
	// A generation-0 collection every ~700 allocations: about two per request served plus
	// a slow background rate; generation 1 every ~11 of those, generation 2 every ~158.
	work := float64(c.requests.Load())*2 + c.now().Sub(c.start).Seconds()*0.2
	gen0 := float64(int64(1422 + work))
	gen1 := float64(int64(129 + work/11))
	gen2 := float64(int64(9 + work/158))
	for i, v := range [][2]float64{{14926 + 10.5*(gen0-1422), gen0}, {1883 + 14.6*(gen1-129), gen1}, {1291 + 143*(gen2-9), gen2}} {
		g := string(rune('0' + i))
		ch <- prometheus.MustNewConstMetric(c.collected, prometheus.CounterValue, float64(int64(v[0])), g)
		ch <- prometheus.MustNewConstMetric(c.uncollectable, prometheus.CounterValue, 0, g)
		ch <- prometheus.MustNewConstMetric(c.collections, prometheus.CounterValue, v[1], g)
	}
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1)
}

// processFamilies are the process_* families prometheus_client's ProcessCollector exports,
// in its order. Go's collector exports more (network bytes of the whole namespace, the
// virtual memory limit); those are dropped, as vLLM has none of them.
var processFamilies = []string{"process_virtual_memory_bytes", "process_resident_memory_bytes",
	"process_start_time_seconds", "process_cpu_seconds_total", "process_open_fds", "process_max_fds"}

// keepFamily reports whether a gathered family belongs on vLLM's endpoint.
func keepFamily(mf *dto.MetricFamily, known map[string]bool) bool {
	return known[mf.GetName()]
}
