package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpFamilies are prometheus-fastapi-instrumentator's default metrics, which vLLM's
// /metrics carries (docs/vllm-behaviour.md#http-metrics), with its names, HELP texts (trailing spaces included),
// label names and buckets, in its registration order.
type httpFamilies struct {
	requests     *prometheus.CounterVec
	requestSize  *prometheus.SummaryVec
	responseSize *prometheus.SummaryVec
	highr        prometheus.Histogram
	duration     *prometheus.HistogramVec
	// empty holds the HELP and TYPE of the labelled families, written before their first child.
	empty map[string][2]string
}

var httpFamilyNames = []string{"http_requests_total", "http_request_size_bytes", "http_response_size_bytes",
	"http_request_duration_highr_seconds", "http_request_duration_seconds"}

var (
	highrBuckets    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 7.5, 10, 30, 60}
	durationBuckets = []float64{0.1, 0.5, 1}
)

// HELP texts of the instrumentator's metrics, trailing spaces included.
const (
	helpHTTPRequests     = "Total number of requests by method, status and handler."
	helpHTTPRequestSize  = "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "
	helpHTTPResponseSize = "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "
	helpHTTPHighr        = "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. "
	helpHTTPDuration     = "Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. "
)

func newHTTPFamilies(reg *prometheus.Registry) *httpFamilies {
	h := &httpFamilies{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "http_requests_total", Help: helpHTTPRequests},
			[]string{"method", "status", "handler"}),
		requestSize: prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "http_request_size_bytes", Help: helpHTTPRequestSize},
			[]string{"handler"}),
		responseSize: prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "http_response_size_bytes", Help: helpHTTPResponseSize},
			[]string{"handler"}),
		highr: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "http_request_duration_highr_seconds", Help: helpHTTPHighr,
			Buckets: highrBuckets}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "http_request_duration_seconds", Help: helpHTTPDuration,
			Buckets: durationBuckets}, []string{"method", "handler"}),
		empty: map[string][2]string{
			"http_requests_total":           {helpHTTPRequests, "counter"},
			"http_request_size_bytes":       {helpHTTPRequestSize, "summary"},
			"http_response_size_bytes":      {helpHTTPResponseSize, "summary"},
			"http_request_duration_seconds": {helpHTTPDuration, "histogram"},
		},
	}
	reg.MustRegister(h.requests, h.requestSize, h.responseSize, h.highr, h.duration)
	return h
}

// excludedHandlers are the routes vLLM tells the instrumentator to leave out.
var excludedHandlers = map[string]bool{"/metrics": true, "/health": true, "/load": true, "/ping": true, "/version": true, "/server_info": true}

// ObserveHTTP records one finished HTTP request as the instrumentator does: handler is the
// matched route's path ("none" for a path no route matches), the status grouped as "2xx",
// the sizes from the Content-Length headers (0 when absent, as for a streamed response),
// the duration until the response was complete. Excluded routes are not recorded.
func (m *Metrics) ObserveHTTP(handler, method string, status int, requestBytes, responseBytes int64, d time.Duration) {
	if excludedHandlers[handler] {
		return
	}
	m.httpRequests.Add(1)
	h := m.http
	class := strconv.Itoa(status/100) + "xx"
	// Children appear in first-seen order, keyed by their label values in label-name order.
	m.series.note("http_requests_total", handler, method, class)
	m.series.note("http_request_size_bytes", handler)
	m.series.note("http_response_size_bytes", handler)
	m.series.note("http_request_duration_seconds", handler, method)
	h.requests.WithLabelValues(method, class, handler).Inc()
	h.requestSize.WithLabelValues(handler).Observe(float64(max(0, requestBytes)))
	h.responseSize.WithLabelValues(handler).Observe(float64(max(0, responseBytes)))
	h.highr.Observe(d.Seconds())
	h.duration.WithLabelValues(method, handler).Observe(d.Seconds())
}
