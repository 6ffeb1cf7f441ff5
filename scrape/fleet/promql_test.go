package fleet

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSelector(t *testing.T) {
	for _, c := range []struct{ in, name, want, err string }{
		{in: `{job="vllm"}`, name: "up", want: `up{job="vllm"}`},
		{in: ` {job="vllm", namespace=~"prod|canary",} `, name: "vllm:num_requests_running", want: `vllm:num_requests_running{job="vllm", namespace=~"prod|canary"}`},
		{in: ``, name: "up", want: `up{}`},
		{in: `{}`, name: "up", want: `up{}`},
		{in: `job="vllm"`, err: "want label matchers in braces"},
		{in: `{a="b"} or up{x="y"}`, err: "braces inside"},
		{in: "{a=\"b\"\n}", err: "want label matchers in braces"},
	} {
		s, err := parseSelector(c.in)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, s.of(c.name), c.in)
	}
	s, _ := parseSelector(`{job="vllm"}`)
	assert.Equal(t, `x{job="vllm",finished_reason=~"error|abort"}`, s.of("x", `finished_reason=~"error|abort"`))
}

func TestRowQueriesReadEveryName(t *testing.T) {
	s, _ := parseSelector(DefaultSelector)
	q := rowQueries(s, time.Minute)
	var kv, itl string
	for _, x := range q {
		switch x.field {
		case FieldKVCacheUsage:
			kv = x.query
		case FieldITLP99:
			itl = x.query
		}
	}
	// The new name first, then the old one, then SGLang's; each tagged with its backend.
	assert.Less(t, strings.Index(kv, "vllm:kv_cache_usage_perc"), strings.Index(kv, "vllm:gpu_cache_usage_perc"))
	assert.Less(t, strings.Index(kv, "vllm:gpu_cache_usage_perc"), strings.Index(kv, "sglang:token_usage"))
	assert.Contains(t, kv, `"vllmtop_backend", "sglang"`)
	assert.Contains(t, itl, `histogram_quantile(0.99, sum by (instance, model_name, engine, le) (rate(vllm:inter_token_latency_seconds_bucket{job="vllm"}[1m])))`)
	assert.Contains(t, itl, "vllm:time_per_output_token_seconds_bucket")
	assert.NotContains(t, itl, "request_time_per_output_token", "the per-request TPOT is another quantity")
}

func TestTransportsCapAndAuthorize(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		_, _ = w.Write([]byte(strings.Repeat("x", 2000)))
	}))
	defer srv.Close()
	origin, _ := url.Parse(srv.URL)
	rt := originTransport{rt: cappedTransport{rt: http.DefaultTransport, max: 1000}, origin: origin, key: "k3y"}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err == nil {
		_, err = resp.Body.Read(make([]byte, 4096))
		for err == nil {
			_, err = resp.Body.Read(make([]byte, 4096))
		}
		resp.Body.Close()
	}
	assert.ErrorContains(t, err, "over")
	assert.Equal(t, "Bearer k3y", auth)
	assert.Empty(t, req.Header.Get("Authorization"), "the caller's request is not modified")
}

func TestNewPrometheusErrors(t *testing.T) {
	_, err := NewPrometheus(PrometheusConfig{})
	assert.EqualError(t, err, "no Prometheus URL given")
	_, err = NewPrometheus(PrometheusConfig{URL: "prom:9090", Selector: "job=vllm"})
	assert.ErrorContains(t, err, `selector "job=vllm": want label matchers in braces, e.g. {job="vllm"}`)
}
