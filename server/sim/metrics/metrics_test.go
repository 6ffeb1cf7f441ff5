package metrics

import (
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
)

const (
	modelName   = "Qwen/Qwen3-0.6B"
	fixturePath = "../../../testdata/vllm-metrics-synthetic-single-process.txt"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func resolve(t *testing.T, cfg sim.Config) *sim.Setup {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = modelName
	}
	if cfg.GPU == "" {
		cfg.GPU = "H100"
	}
	s, err := sim.Resolve(cfg, nil)
	require.NoError(t, err)
	return s
}

func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err)
	return fams
}

// scrape serves one GET /metrics and parses the body.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	// vLLM ignores content negotiation; so must we.
	req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	req.Header.Set("Accept-Encoding", "gzip")
	m.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/plain; version=1.0.0; charset=utf-8", rec.Header().Get("Content-Type"), "prometheus_client 0.23 and later")
	require.Empty(t, rec.Header().Get("Content-Encoding"))
	return parse(t, rec.Body.String())
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// labelNames is the union of the label names of a family's series ("le" and "quantile" are
// folded into the histogram and summary structures by the parser).
func labelNames(mf *dto.MetricFamily) []string {
	set := map[string]bool{}
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			set[lp.GetName()] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// seriesKeys renders each series' labels as a sorted string, for set comparison.
func seriesKeys(mf *dto.MetricFamily) []string {
	var keys []string
	for _, m := range mf.GetMetric() {
		var parts []string
		for k, v := range labelMap(m) {
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		keys = append(keys, strings.Join(parts, ","))
	}
	sort.Strings(keys)
	return keys
}

func upperBounds(h *dto.Histogram) []float64 {
	var b []float64
	for _, bk := range h.GetBucket() {
		b = append(b, bk.GetUpperBound())
	}
	return b
}

// series returns the one series of family name whose labels include all of want (given as
// name, value pairs).
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) *dto.Metric {
	t.Helper()
	mf, ok := fams[name]
	require.True(t, ok, "family %s missing", name)
	var found *dto.Metric
	for _, m := range mf.GetMetric() {
		labels := labelMap(m)
		match := true
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				match = false
			}
		}
		if match {
			require.Nil(t, found, "%s%v matches more than one series", name, want)
			found = m
		}
	}
	require.NotNil(t, found, "%s%v has no series", name, want)
	return found
}

func counter(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	return series(t, fams, name, want...).GetCounter().GetValue()
}

func gauge(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	return series(t, fams, name, want...).GetGauge().GetValue()
}

func histogram(t *testing.T, fams map[string]*dto.MetricFamily, name string) *dto.Histogram {
	t.Helper()
	return series(t, fams, name).GetHistogram()
}

// TestFamiliesMatchVLLMFixture compares our exposition with vLLM's, rendered by vLLM's own
// metric definitions: same vllm: families, types, HELP, label names, series and buckets.
func TestFamiliesMatchVLLMFixture(t *testing.T) {
	raw, err := os.ReadFile(fixturePath)
	require.NoError(t, err)
	fixture := parse(t, string(raw))

	// The fixture was rendered from the source of the 0.26 era.
	setup := resolve(t, sim.Config{VLLMVersion: "0.26.0"})
	// The fixture was rendered for Qwen/Qwen3-0.6B at max_model_len 40960, which fixes the
	// 1-2-5 token buckets.
	require.Equal(t, 40960, setup.MaxModelLen)
	ours := scrape(t, New(setup, modelName, true))

	// Fixture vllm: families the simulator deliberately does not produce, with the reason.
	// None today: the capture holds only the always-present engine families, all of which
	// the simulator can produce (LoRA, speculative decoding and KV connectors add families
	// only when enabled, and the capture has none of them).
	notProduced := map[string]string{}

	compared := 0
	for name, want := range fixture {
		if !strings.HasPrefix(name, "vllm:") || strings.HasSuffix(name, "_created") {
			continue
		}
		if reason, skip := notProduced[name]; skip {
			assert.NotContains(t, ours, name, "listed as not produced: %s", reason)
			continue
		}
		got, ok := ours[name]
		if !assert.True(t, ok, "missing family %s", name) {
			continue
		}
		compared++
		assert.Equal(t, want.GetType(), got.GetType(), "type of %s", name)
		assert.Equal(t, want.GetHelp(), got.GetHelp(), "HELP of %s", name)
		assert.Equal(t, labelNames(want), labelNames(got), "label names of %s", name)
		if name != "vllm:cache_config_info" {
			// Same model name, so every labelled series must match exactly: every
			// finished_reason, reason, sleep_state and source.
			assert.Equal(t, seriesKeys(want), seriesKeys(got), "series of %s", name)
		}
		if want.GetType() == dto.MetricType_HISTOGRAM {
			assert.Equal(t, upperBounds(want.GetMetric()[0].GetHistogram()), upperBounds(got.GetMetric()[0].GetHistogram()), "buckets of %s", name)
		}
	}
	assert.Equal(t, 36, compared, "number of vllm: families compared")

	// And nothing of ours that vLLM lacks.
	for name := range ours {
		if strings.HasPrefix(name, "vllm:") {
			assert.Contains(t, fixture, name, "family %s is not in vLLM's exposition", name)
		}
	}
}

// TestEverySeriesStartsAtZero: as in vLLM, all series exist before the first request.
func TestEverySeriesStartsAtZero(t *testing.T) {
	fams := scrape(t, New(resolve(t, sim.Config{}), modelName, true))

	for name, mf := range fams {
		if !strings.HasPrefix(name, "vllm:") || strings.HasSuffix(name, "_created") {
			continue // _created holds creation times, not values
		}
		for _, m := range mf.GetMetric() {
			labels := labelMap(m)
			assert.Equal(t, "0", labels["engine"], "%s engine label", name)
			if name == "vllm:cache_config_info" {
				assert.NotContains(t, labels, "model_name")
				assert.Equal(t, 1.0, m.GetGauge().GetValue())
				continue
			}
			assert.Equal(t, modelName, labels["model_name"], "%s model_name label", name)
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				assert.Zero(t, m.GetCounter().GetValue(), "%s%v", name, labels)
			case dto.MetricType_GAUGE:
				want := 0.0
				if name == "vllm:engine_sleep_state" && labels["sleep_state"] == "awake" {
					want = 1
				}
				assert.Equal(t, want, m.GetGauge().GetValue(), "%s%v", name, labels)
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				assert.Zero(t, h.GetSampleCount(), "%s count", name)
				assert.Zero(t, h.GetSampleSum(), "%s sum", name)
				for _, b := range h.GetBucket() {
					assert.Zero(t, b.GetCumulativeCount(), "%s bucket %g", name, b.GetUpperBound())
				}
			default:
				t.Errorf("%s has unexpected type %v", name, mf.GetType())
			}
		}
	}

	for _, r := range []string{"stop", "length", "abort", "error", "repetition"} {
		assert.Zero(t, counter(t, fams, "vllm:request_success_total", "finished_reason", r))
	}
	for _, s := range []string{"local_compute", "local_cache_hit", "external_kv_transfer"} {
		assert.Zero(t, counter(t, fams, "vllm:prompt_tokens_by_source_total", "source", s))
	}
	for _, r := range []string{"capacity", "deferred"} {
		assert.Zero(t, gauge(t, fams, "vllm:num_requests_waiting_by_reason", "reason", r))
	}
	assert.Equal(t, 1.0, gauge(t, fams, "vllm:engine_sleep_state", "sleep_state", "awake"))
	assert.Zero(t, gauge(t, fams, "vllm:engine_sleep_state", "sleep_state", "weights_offloaded"))
	assert.Zero(t, gauge(t, fams, "vllm:engine_sleep_state", "sleep_state", "discard_all"))
	assert.Zero(t, counter(t, fams, "vllm:prompt_tokens_total"))
	assert.Zero(t, counter(t, fams, "vllm:estimated_flops_per_gpu_total"))
	assert.Zero(t, histogram(t, fams, "vllm:time_to_first_token_seconds").GetSampleCount())
}

func prompt(n, salt int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = 1000 + (i*7+salt*131)%50000
	}
	return p
}

// tally is what the test itself counts from the engine's results, to check the metrics by.
type tally struct {
	seqs                        []*sim.Sequence
	ended                       []*sim.Sequence // finished or aborted, in order
	steps, iterationTokens      int
	outputs, firstTokens        int
	promptTokens, cachedAtFirst int
	prefixQueries, prefixHits   int
	preempted                   int
	ttftSum, itlSum             float64
	lastRunning, lastWaiting    int
	lastKV                      float64
}

// drive runs reqs through a real engine in virtual time, feeding every step and every ended
// request to m. The request at index abort is aborted once it has abortAfter outputs.
func drive(t *testing.T, m *Metrics, setup *sim.Setup, reqs []sim.Request, abort, abortAfter int) *tally {
	t.Helper()
	e := sim.NewEngine(setup)
	var tl tally
	for _, r := range reqs {
		s, err := e.Add(r)
		require.NoError(t, err)
		tl.seqs = append(tl.seqs, s)
	}
	victim := tl.seqs[abort]
	now := t0
	for i := 0; e.HasWork(); i++ {
		require.Less(t, i, 1_000_000, "engine does not drain")
		r := e.Step(now)
		m.ObserveStep(r)
		tl.lastRunning, tl.lastWaiting, tl.lastKV = r.Running, r.Waiting, r.KVCacheUsage()
		if r.Idle {
			require.True(t, r.NextReady.After(now), "idle with nothing to wait for")
			now = r.NextReady
			continue
		}
		now = r.End
		tl.steps++
		tl.iterationTokens += r.PrefillTokens + r.DecodeTokens
		tl.prefixQueries += r.PrefixQueries
		tl.prefixHits += r.PrefixHits
		tl.preempted += r.Preempted
		tl.outputs += len(r.Outputs)
		for _, o := range r.Outputs {
			if o.Index == 0 {
				tl.firstTokens++
				tl.promptTokens += len(o.Seq.Prompt)
				tl.cachedAtFirst += o.Seq.CachedTokens
				tl.ttftSum += r.End.Sub(o.Seq.Arrival).Seconds()
			} else {
				tl.itlSum += o.Gap.Seconds()
			}
		}
		for _, s := range r.Finished {
			m.ObserveEnded(s)
			tl.ended = append(tl.ended, s)
		}
		if !victim.Finished() && victim.Outputs >= abortAfter {
			require.True(t, e.Abort(victim, now))
			m.ObserveEnded(victim)
			tl.ended = append(tl.ended, victim)
		}
	}
	return &tl
}

// TestDrivenEngine checks exact metric values against a real engine run in virtual time.
func TestDrivenEngine(t *testing.T) {
	scenarios := []struct {
		name  string
		cfg   sim.Config
		reqs  []sim.Request
		abort int // index of the request aborted after five outputs
		check func(t *testing.T, tl *tally)
	}{
		{
			name: "prefix cache hits",
			cfg:  sim.Config{},
			reqs: []sim.Request{
				{Prompt: prompt(200, 1), MaxTokens: 40, IgnoreEOS: true, Arrival: t0},
				{Prompt: prompt(37, 2), MaxTokens: 1, IgnoreEOS: true, Arrival: t0}, // one token: TPOT 0
				{Prompt: prompt(500, 3), MaxTokens: 64, IgnoreEOS: true, Arrival: t0},
				{Prompt: prompt(120, 4), MaxTokens: 200, IgnoreEOS: true, Arrival: t0}, // aborted
				// The first request's prompt again, later: its blocks are in the prefix cache.
				{Prompt: prompt(200, 1), MaxTokens: 10, IgnoreEOS: true, Arrival: t0.Add(time.Second)},
			},
			abort: 3,
			check: func(t *testing.T, tl *tally) {
				require.Equal(t, 192, tl.seqs[4].CachedTokens, "scenario must hit the prefix cache")
				require.Zero(t, tl.preempted)
			},
		},
		{
			name: "preemption",
			// A KV cache just over one max_model_len request, so growing requests preempt.
			cfg: sim.Config{MaxModelLen: 1024, NumGPUBlocksOverride: 80},
			reqs: []sim.Request{
				{Prompt: prompt(300, 5), MaxTokens: 400, IgnoreEOS: true, Arrival: t0},
				{Prompt: prompt(300, 6), MaxTokens: 400, IgnoreEOS: true, Arrival: t0},
				{Prompt: prompt(300, 7), MaxTokens: 400, IgnoreEOS: true, Arrival: t0}, // aborted
				{Prompt: prompt(300, 8), MaxTokens: 400, IgnoreEOS: true, Arrival: t0},
			},
			abort: 2,
			check: func(t *testing.T, tl *tally) {
				require.Positive(t, tl.preempted, "scenario must preempt")
			},
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			setup := resolve(t, sc.cfg)
			m := New(setup, modelName, true)
			tl := drive(t, m, setup, sc.reqs, sc.abort, 5)
			sc.check(t, tl)
			checkTotals(t, scrape(t, m), tl)
		})
	}
}

func checkTotals(t *testing.T, fams map[string]*dto.MetricFamily, tl *tally) {
	t.Helper()
	const eps = 1e-9
	n := len(tl.seqs)
	require.Len(t, tl.ended, n)

	// Every request got a first token (the abort comes after five outputs).
	sumPrompt, sumOutputs := 0, 0
	for _, s := range tl.seqs {
		sumPrompt += len(s.Prompt)
		sumOutputs += s.Outputs
	}
	assert.Equal(t, n, tl.firstTokens)
	assert.Equal(t, sumPrompt, tl.promptTokens)
	assert.Equal(t, sumOutputs, tl.outputs)

	// Counters.
	assert.Equal(t, float64(sumOutputs), counter(t, fams, "vllm:generation_tokens_total"))
	assert.Equal(t, float64(sumPrompt), counter(t, fams, "vllm:prompt_tokens_total"))
	assert.Equal(t, float64(sumPrompt-tl.cachedAtFirst), counter(t, fams, "vllm:prompt_tokens_by_source_total", "source", "local_compute"))
	assert.Equal(t, float64(tl.cachedAtFirst), counter(t, fams, "vllm:prompt_tokens_by_source_total", "source", "local_cache_hit"))
	assert.Zero(t, counter(t, fams, "vllm:prompt_tokens_by_source_total", "source", "external_kv_transfer"))
	assert.Equal(t, float64(tl.cachedAtFirst), counter(t, fams, "vllm:prompt_tokens_cached_total"))
	assert.Equal(t, float64(tl.prefixQueries), counter(t, fams, "vllm:prefix_cache_queries_total"))
	assert.Equal(t, float64(tl.prefixHits), counter(t, fams, "vllm:prefix_cache_hits_total"))
	assert.Equal(t, float64(tl.preempted), counter(t, fams, "vllm:num_preemptions_total"))
	assert.Equal(t, float64(n-1), counter(t, fams, "vllm:request_success_total", "finished_reason", "length"))
	assert.Equal(t, 1.0, counter(t, fams, "vllm:request_success_total", "finished_reason", "abort"))
	for _, r := range []string{"stop", "error", "repetition"} {
		assert.Zero(t, counter(t, fams, "vllm:request_success_total", "finished_reason", r))
	}

	// Gauges after the last step: the engine is drained.
	assert.Zero(t, tl.lastRunning)
	assert.Zero(t, tl.lastWaiting)
	assert.Zero(t, tl.lastKV)
	assert.Zero(t, gauge(t, fams, "vllm:num_requests_running"))
	assert.Zero(t, gauge(t, fams, "vllm:num_requests_waiting"))
	assert.Zero(t, gauge(t, fams, "vllm:num_requests_waiting_by_reason", "reason", "capacity"))
	assert.Zero(t, gauge(t, fams, "vllm:kv_cache_usage_perc"))

	// Per-step and per-token histograms.
	it := histogram(t, fams, "vllm:iteration_tokens_total")
	assert.Equal(t, uint64(tl.steps), it.GetSampleCount())
	assert.Equal(t, float64(tl.iterationTokens), it.GetSampleSum())
	ttft := histogram(t, fams, "vllm:time_to_first_token_seconds")
	assert.Equal(t, uint64(tl.firstTokens), ttft.GetSampleCount())
	assert.InDelta(t, tl.ttftSum, ttft.GetSampleSum(), eps)
	itl := histogram(t, fams, "vllm:inter_token_latency_seconds")
	assert.Equal(t, uint64(sumOutputs-tl.firstTokens), itl.GetSampleCount())
	assert.InDelta(t, tl.itlSum, itl.GetSampleSum(), eps)

	// Per-request histograms take the requests that ran to completion.
	var e2e, queue, prefill, decode, inference, tpot float64
	var promptLen, genLen, maxTokens, computed float64
	done := 0
	for _, s := range tl.ended {
		if s.Reason == sim.FinishAbort {
			continue
		}
		done++
		tm := s.Times
		e2e += tm.Finished.Sub(tm.Arrival).Seconds()
		queue += tm.FirstScheduled.Sub(tm.TakenIn).Seconds()
		prefill += tm.FirstToken.Sub(tm.FirstScheduled).Seconds()
		d := tm.LastToken.Sub(tm.FirstToken).Seconds()
		decode += d
		inference += tm.LastToken.Sub(tm.FirstScheduled).Seconds()
		if s.Outputs > 1 {
			tpot += d / float64(s.Outputs-1)
		}
		promptLen += float64(len(s.Prompt))
		genLen += float64(s.Outputs)
		maxTokens += float64(s.MaxTokens)
		computed += float64(len(s.Prompt) - s.CachedTokens)
	}
	require.Equal(t, n-1, done)
	for name, sum := range map[string]float64{
		"vllm:e2e_request_latency_seconds":           e2e,
		"vllm:request_queue_time_seconds":            queue,
		"vllm:request_prefill_time_seconds":          prefill,
		"vllm:request_decode_time_seconds":           decode,
		"vllm:request_inference_time_seconds":        inference,
		"vllm:request_time_per_output_token_seconds": tpot,
		"vllm:request_prompt_tokens":                 promptLen,
		"vllm:request_generation_tokens":             genLen,
		"vllm:request_params_max_tokens":             maxTokens,
		"vllm:request_max_num_generation_tokens":     maxTokens,
		"vllm:request_params_n":                      float64(done),
		"vllm:request_prefill_kv_computed_tokens":    computed,
	} {
		h := histogram(t, fams, name)
		assert.Equal(t, uint64(done), h.GetSampleCount(), "%s count", name)
		assert.InDelta(t, sum, h.GetSampleSum(), eps, "%s sum", name)
	}
}

// TestDisableLogStats: --disable-log-stats leaves no vllm: family, and observing is harmless.
func TestDisableLogStats(t *testing.T) {
	setup := resolve(t, sim.Config{})
	m := New(setup, modelName, false)
	tl := drive(t, m, setup, []sim.Request{
		{Prompt: prompt(50, 1), MaxTokens: 8, IgnoreEOS: true, Arrival: t0},
		{Prompt: prompt(50, 2), MaxTokens: 8, IgnoreEOS: true, Arrival: t0},
	}, 1, 2)
	require.Len(t, tl.ended, 2)
	for name := range scrape(t, m) {
		assert.False(t, strings.HasPrefix(name, "vllm:"), "family %s with log stats disabled", name)
	}
}

// TestCacheConfigInfo: the capacity the simulator computed is readable from the labels.
func TestCacheConfigInfo(t *testing.T) {
	for _, cfg := range []sim.Config{
		{},
		{GPUMemoryUtilization: 0.85, BlockSize: 32, KVCacheDType: "fp8", PrefixCaching: sim.Off, MaxModelLen: 8192},
	} {
		setup := resolve(t, cfg)
		fams := scrape(t, New(setup, modelName, true))
		mf := fams["vllm:cache_config_info"]
		require.NotNil(t, mf)
		require.Len(t, mf.GetMetric(), 1)
		info := mf.GetMetric()[0]
		assert.Equal(t, 1.0, info.GetGauge().GetValue())
		l := labelMap(info)
		c := setup.Capacity

		assert.Equal(t, strconv.Itoa(c.NumGPUBlocks), l["num_gpu_blocks"])
		assert.Equal(t, strconv.Itoa(c.KVCacheTokens), l["kv_cache_size_tokens"])
		assert.Equal(t, pyFloat(setup.GPUMemoryUtilization), l["gpu_memory_utilization"])
		gmu, err := strconv.ParseFloat(l["gpu_memory_utilization"], 64)
		require.NoError(t, err)
		assert.Equal(t, setup.GPUMemoryUtilization, gmu)
		conc, err := strconv.ParseFloat(l["kv_cache_max_concurrency"], 64)
		require.NoError(t, err)
		assert.Equal(t, c.MaxConcurrency, conc)
		assert.Equal(t, strconv.Itoa(setup.BlockSize), l["block_size"])
		assert.Equal(t, "0", l["engine"])
		assert.NotContains(t, l, "model_name")

		if cfg.BlockSize == 0 {
			assert.Equal(t, "0.92", l["gpu_memory_utilization"])
			assert.Equal(t, "auto", l["cache_dtype"])
			assert.Equal(t, "True", l["enable_prefix_caching"])
			assert.Equal(t, "False", l["user_specified_block_size"])
		} else {
			assert.Equal(t, "0.85", l["gpu_memory_utilization"])
			assert.Equal(t, "fp8", l["cache_dtype"])
			assert.Equal(t, "False", l["enable_prefix_caching"])
			assert.Equal(t, "True", l["user_specified_block_size"])
			assert.Equal(t, "32", l["block_size"])
		}
	}
}

func TestBuild125Buckets(t *testing.T) {
	// Examples from vLLM's build_1_2_5_buckets.
	assert.Equal(t, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000}, build125Buckets(4096))
	last := func(b []float64) float64 { return b[len(b)-1] }
	assert.Equal(t, 20000.0, last(build125Buckets(40960)))
	assert.Equal(t, 100000.0, last(build125Buckets(131072)))
	assert.Equal(t, 100.0, last(build125Buckets(100)), "a bound equal to the maximum is kept")
	assert.Equal(t, []float64{1}, build125Buckets(1))
}

func TestPyFloat(t *testing.T) {
	for f, want := range map[float64]string{
		0.92:                "0.92",
		1:                   "1.0",
		0:                   "0.0",
		29.828515625:        "29.828515625",
		123456789:           "123456789.0",
		0.0001:              "0.0001",
		0.00001:             "1e-05",
		1e16:                "1e+16",
		1.5e16:              "1.5e+16",
		9999999999999998:    "9999999999999998.0",
		-2.5:                "-2.5",
		math.Inf(1):         "inf",
		0.30000000000000004: "0.30000000000000004",
	} {
		assert.Equal(t, want, pyFloat(f), "%v", f)
	}
}

// TestConcurrentScrape scrapes while the engine runs; run with -race.
func TestConcurrentScrape(t *testing.T) {
	setup := resolve(t, sim.Config{})
	m := New(setup, modelName, true)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rec := httptest.NewRecorder()
				m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK {
					t.Errorf("scrape: status %d", rec.Code)
					return
				}
			}
		}()
	}
	var reqs []sim.Request
	for i := range 8 {
		reqs = append(reqs, sim.Request{Prompt: prompt(100+10*i, i), MaxTokens: 32, IgnoreEOS: true, Arrival: t0})
	}
	drive(t, m, setup, reqs, 0, 3)
	close(stop)
	wg.Wait()
	assert.Equal(t, 7.0, counter(t, scrape(t, m), "vllm:request_success_total", "finished_reason", "length"))
}

// A sped-up server (--sim-speed) reports its durations in wall-clock seconds, the clock its
// clients and a scraper's rates run on; token counts do not change.
func TestSpeedReportsWallClockDurations(t *testing.T) {
	reqs := []sim.Request{
		{Prompt: prompt(300, 1), MaxTokens: 40, IgnoreEOS: true, Arrival: t0},
		{Prompt: prompt(120, 2), MaxTokens: 60, IgnoreEOS: true, Arrival: t0.Add(50 * time.Millisecond)},
	}
	setup := resolve(t, sim.Config{})
	plain := New(setup, modelName, true)
	drive(t, plain, setup, reqs, 1, 1_000_000)
	fast := NewWithExtras(setup, modelName, true, Extras{Speed: 4})
	drive(t, fast, setup, reqs, 1, 1_000_000)
	p, f := scrape(t, plain), scrape(t, fast)
	for _, name := range []string{"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
		"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
		"vllm:request_decode_time_seconds", "vllm:request_time_per_output_token_seconds"} {
		hp, hf := histogram(t, p, name), histogram(t, f, name)
		require.Positive(t, hp.GetSampleCount(), name)
		assert.Equal(t, hp.GetSampleCount(), hf.GetSampleCount(), name)
		assert.InDelta(t, hp.GetSampleSum()/4, hf.GetSampleSum(), 1e-9, name)
	}
	assert.Equal(t, histogram(t, p, "vllm:request_prompt_tokens").GetSampleSum(), histogram(t, f, "vllm:request_prompt_tokens").GetSampleSum())
	assert.Equal(t, counter(t, p, "vllm:generation_tokens_total"), counter(t, f, "vllm:generation_tokens_total"))
}

// Flags the simulator takes without modelling still show in cache_config_info as vLLM's
// CacheConfig holds them; a label the release lacks is not added.
func TestCacheConfigInfoShowsAcceptedFlags(t *testing.T) {
	m := NewEnginesWithExtras(resolve(t, sim.Config{}), "m", true, 1, Extras{CacheLabels: map[string]string{
		"prefix_caching_hash_algo": "xxhash", "kv_offloading_size": "10.0", "no_such_field": "x"}})
	fams := scrape(t, m)
	info := fams["vllm:cache_config_info"]
	require.NotNil(t, info)
	labels := labelMap(info.GetMetric()[0])
	assert.Equal(t, "xxhash", labels["prefix_caching_hash_algo"])
	assert.Equal(t, "10.0", labels["kv_offloading_size"])
	assert.NotContains(t, labels, "no_such_field")
}

// vLLM's API server stamps time to first token and end-to-end latency when its loop takes up
// the output (IterationStats), so a busy loop shows in them; the engine's own time is the
// fallback where nothing asked the loop.
func TestLatenciesEndWhereTheAPIServerTookTheOutputUp(t *testing.T) {
	setup := resolve(t, sim.Config{})
	m := New(setup, modelName, true)
	seq := &sim.Sequence{Request: sim.Request{Prompt: prompt(10, 1), MaxTokens: 1}, Reason: sim.FinishLength, Outputs: 1}
	seq.Times = sim.Times{Arrival: t0, FirstToken: t0.Add(10 * time.Millisecond), LastToken: t0.Add(10 * time.Millisecond),
		Finished: t0.Add(10 * time.Millisecond), Reported: t0.Add(50 * time.Millisecond)}
	r := &sim.StepResult{Start: t0, End: t0.Add(10 * time.Millisecond), Streamed: t0.Add(50 * time.Millisecond),
		Outputs: []sim.Output{{Seq: seq, Index: 0, Tokens: []int{1}, Finished: true}}, Finished: []*sim.Sequence{seq}}
	m.ObserveStep(r)
	m.ObserveEnded(seq)
	fams := scrape(t, m)
	assert.InDelta(t, 0.05, histogram(t, fams, "vllm:time_to_first_token_seconds").GetSampleSum(), 1e-9)
	assert.InDelta(t, 0.05, histogram(t, fams, "vllm:e2e_request_latency_seconds").GetSampleSum(), 1e-9)

	m = New(setup, modelName, true)
	r.Streamed, seq.Times.Reported = time.Time{}, time.Time{}
	m.ObserveStep(r)
	m.ObserveEnded(seq)
	fams = scrape(t, m)
	assert.InDelta(t, 0.01, histogram(t, fams, "vllm:time_to_first_token_seconds").GetSampleSum(), 1e-9, "the engine's time")
	assert.InDelta(t, 0.01, histogram(t, fams, "vllm:e2e_request_latency_seconds").GetSampleSum(), 1e-9)
}

// cache_config_info names the cache dtype of the API server's config: the one a ModelOpt
// checkpoint set as it was built, but auto for a compressed-tensors declaration, which only the
// worker's attention layers apply.
func TestCacheConfigInfoNamesTheCheckpointsKVDType(t *testing.T) {
	base := `"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 16,
		"num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"`
	for quant, want := range map[string]string{
		`{"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}`:                                                                                          "fp8_e4m3",
		`{"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}, "kv_cache_scheme": {"num_bits": 8, "type": "float"}}`: "auto",
	} {
		m, err := sim.ModelFromHFConfig("acme/m", []byte(`{`+base+`, "quantization_config": `+quant+`}`))
		require.NoError(t, err)
		p := sim.BuiltinProfiles()
		p.Prefer(m)
		setup, err := sim.Resolve(sim.Config{Model: "acme/m", GPU: "H100-SXM-80GB", MaxModelLen: 8192}, p)
		require.NoError(t, err)
		require.True(t, setup.KVDTypeFromCheckpoint, quant)
		mf := scrape(t, New(setup, modelName, true))["vllm:cache_config_info"]
		require.NotNil(t, mf)
		assert.Equal(t, want, labelMap(mf.GetMetric()[0])["cache_dtype"], quant)
	}
}
