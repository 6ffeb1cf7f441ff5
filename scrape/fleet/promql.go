package fleet

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// DefaultSelector picks vLLM's targets in a Prometheus that scrapes them as job "vllm".
const DefaultSelector = `{job="vllm"}`

// backendLabel is added to every row query to say which backend's metric answered.
const backendLabel = "vllmtop_backend"

// by is what every row query keeps of a series: the target and the (model, engine).
const by = "instance, model_name, engine"

// selector is a label selector split into its matchers, so a metric name and extra
// matchers can be put around them.
type selector struct{ inner string }

// parseSelector accepts "{...}" (or empty, meaning every target). The matchers are checked
// by Prometheus itself on the first query; here only the shape is, so a mistake is reported
// before any query with the selector named.
// CheckSelector says whether s is a selector a Prometheus source takes ("" is the default).
func CheckSelector(s string) error {
	_, err := parseSelector(s)
	return err
}

func parseSelector(s string) (selector, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = "{}"
	}
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") || strings.ContainsAny(s, "\n\r") {
		return selector{}, fmt.Errorf("selector %q: want label matchers in braces, e.g. %s", s, DefaultSelector)
	}
	inner := strings.TrimSpace(s[1 : len(s)-1])
	if strings.ContainsAny(inner, "{}") {
		return selector{}, fmt.Errorf("selector %q: braces inside the matchers", s)
	}
	return selector{inner: strings.TrimSuffix(inner, ",")}, nil
}

// of is the series selector name{matchers, extra...}.
func (s selector) of(name string, extra ...string) string {
	ms := extra
	if s.inner != "" {
		ms = append([]string{s.inner}, extra...)
	}
	return name + "{" + strings.Join(ms, ",") + "}"
}

// alt is one way to read a field: the backend it belongs to and its expression.
type alt struct {
	backend scrape.Backend
	expr    string
}

// rowQuery reads one field of every row.
type rowQuery struct {
	field Field
	set   func(*diagnose.Signals, float64)
	max   float64 // values above this (or below 0) are not believed
	query string
}

// tag adds the backend label to an alternative, so the answer says whose metric it was.
func tag(a alt) string {
	return fmt.Sprintf(`label_replace(%s, "%s", "%s", "instance", ".*")`, a.expr, backendLabel, a.backend)
}

// oneOf joins alternatives with "or": the first that has a series for a row wins, so the
// new name of a renamed metric is preferred to the old one.
func oneOf(alts ...alt) string {
	parts := make([]string, len(alts))
	for i, a := range alts {
		parts[i] = tag(a)
	}
	return strings.Join(parts, " or ")
}

func promDuration(d time.Duration) string { return model.Duration(d).String() }

// rowQueries are the PromQL of every field of a row: the same metrics, under the same old
// and new names, as scrape maps from a direct scrape.
func rowQueries(sel selector, window time.Duration) []rowQuery {
	w := promDuration(window)
	gauge := func(agg string, b scrape.Backend, names ...string) []alt {
		var out []alt
		for _, n := range names {
			out = append(out, alt{b, fmt.Sprintf("%s by (%s) (%s)", agg, by, sel.of(n))})
		}
		return out
	}
	rate := func(b scrape.Backend, names ...string) []alt {
		var out []alt
		for _, n := range names {
			out = append(out, alt{b, fmt.Sprintf("sum by (%s) (rate(%s[%s]))", by, sel.of(n), w)})
		}
		return out
	}
	p99 := func(b scrape.Backend, names ...string) []alt {
		var out []alt
		for _, n := range names {
			out = append(out, alt{b, fmt.Sprintf("histogram_quantile(0.99, sum by (%s, le) (rate(%s[%s])))", by, sel.of(n+"_bucket"), w)})
		}
		return out
	}
	mean := func(b scrape.Backend, names ...string) []alt {
		var out []alt
		for _, n := range names {
			out = append(out, alt{b, fmt.Sprintf("sum by (%s) (rate(%s[%s])) / sum by (%s) (rate(%s[%s]))",
				by, sel.of(n+"_sum"), w, by, sel.of(n+"_count"), w)})
		}
		return out
	}
	ratio := func(b scrape.Backend, num, den string) alt {
		return alt{b, fmt.Sprintf("sum by (%s) (rate(%s[%s])) / sum by (%s) (rate(%s[%s]))", by, sel.of(num), w, by, sel.of(den), w)}
	}
	cat := func(groups ...[]alt) string {
		var all []alt
		for _, g := range groups {
			all = append(all, g...)
		}
		return oneOf(all...)
	}
	v, sg, tg := scrape.BackendVLLM, scrape.BackendSGLang, scrape.BackendTGI
	errorsTGI := []alt{{tg, fmt.Sprintf("sum by (%s) (rate(%s[%s]))", by, sel.of("tgi_request_failure"), w)}}
	errorsVLLM := []alt{{v, fmt.Sprintf("sum by (%s) (rate(%s[%s]))", by, sel.of("vllm:request_success_total", `finished_reason=~"error|abort"`), w)}}
	return []rowQuery{
		{FieldRunning, func(s *diagnose.Signals, x float64) { s.Running = scrape.Some(x) }, maxCount,
			cat(gauge("sum", v, "vllm:num_requests_running"), gauge("sum", sg, "sglang:num_running_reqs", "sglang:num_requests_running"), gauge("sum", tg, "tgi_batch_current_size"))},
		{FieldWaiting, func(s *diagnose.Signals, x float64) { s.Waiting = scrape.Some(x) }, maxCount,
			cat(gauge("sum", v, "vllm:num_requests_waiting"), gauge("sum", sg, "sglang:num_queue_reqs", "sglang:num_requests_waiting", "sglang:queue_req"), gauge("sum", tg, "tgi_queue_size"))},
		{FieldKVCacheUsage, func(s *diagnose.Signals, x float64) { s.KVCacheUsage = scrape.Some(x) }, 1,
			cat(gauge("max", v, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"), gauge("max", sg, "sglang:token_usage"))},
		{FieldGenTokens, func(s *diagnose.Signals, x float64) { s.GenerationTokensPerSec = scrape.Some(x) }, maxRate,
			cat(rate(v, "vllm:generation_tokens_total"), rate(sg, "sglang:generation_tokens_total"))},
		{FieldPromptTokens, func(s *diagnose.Signals, x float64) { s.PromptTokensPerSec = scrape.Some(x) }, maxRate,
			cat(rate(v, "vllm:prompt_tokens_total"), rate(sg, "sglang:prompt_tokens_total"))},
		{"requests_per_sec", func(s *diagnose.Signals, x float64) { s.RequestsPerSec = scrape.Some(x) }, maxRate,
			cat(rate(v, "vllm:request_success_total"))},
		{FieldPreemptions, func(s *diagnose.Signals, x float64) { s.PreemptionsPerSec = scrape.Some(x) }, maxRate,
			cat(rate(v, "vllm:num_preemptions_total"))},
		{FieldErrors, func(s *diagnose.Signals, x float64) { s.ErrorsPerSec = scrape.Some(x) }, maxRate,
			cat(errorsVLLM, errorsTGI)},
		{FieldPrefixHits, func(s *diagnose.Signals, x float64) { s.PrefixCacheHitRate = scrape.Some(x) }, 1,
			oneOf(ratio(v, "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"),
				ratio(v, "vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"))},
		{FieldTTFTP99, func(s *diagnose.Signals, x float64) { s.TTFTP99 = diagnose.Quantile{V: scrape.Some(x)} }, maxSeconds,
			cat(p99(v, "vllm:time_to_first_token_seconds"), p99(sg, "sglang:time_to_first_token_seconds"))},
		{FieldITLP99, func(s *diagnose.Signals, x float64) { s.ITLP99 = diagnose.Quantile{V: scrape.Some(x)} }, maxSeconds,
			cat(p99(v, "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
				p99(sg, "sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"))},
		{"ttft_mean", func(s *diagnose.Signals, x float64) { s.TTFTMean = scrape.Some(x) }, maxSeconds,
			cat(mean(v, "vllm:time_to_first_token_seconds"), mean(sg, "sglang:time_to_first_token_seconds"))},
		{FieldQueueMean, func(s *diagnose.Signals, x float64) { s.QueueMean = scrape.Some(x) }, maxSeconds,
			cat(mean(v, "vllm:request_queue_time_seconds"), mean(sg, "sglang:queue_time_seconds", "sglang:waiting_request_latency_seconds"),
				mean(tg, "tgi_request_queue_duration"))},
		{FieldPrefillMean, func(s *diagnose.Signals, x float64) { s.PrefillMean = scrape.Some(x) }, maxSeconds,
			cat(mean(v, "vllm:request_prefill_time_seconds"))},
		{"prompt_tokens_mean", func(s *diagnose.Signals, x float64) { s.PromptTokensMean = scrape.Some(x) }, maxTokens,
			cat(mean(v, "vllm:request_prompt_tokens"), mean(sg, "sglang:request_prompt_tokens"), mean(tg, "tgi_request_input_length"))},
	}
}

// instanceQueries are per target: up, when it was last scraped, how often, restarts.
type instanceQueries struct {
	up, lastScrape, scrapes, processStart, processChanges string
	// cacheConfig is vLLM's cache_config_info, whose gpu_memory_utilization label is a
	// row's configured utilisation.
	cacheConfig string
	// counterResets are added up per instance: one query each, since the same labels under
	// two names cannot share a vector.
	counterResets []string
}

func newInstanceQueries(sel selector, window, hold time.Duration) instanceQueries {
	h := promDuration(hold)
	resets := func(name string) string {
		return fmt.Sprintf("sum by (instance) (resets(%s[%s]))", sel.of(name), h)
	}
	return instanceQueries{
		up:             sel.of("up"),
		lastScrape:     "timestamp(" + sel.of("up") + ")",
		scrapes:        fmt.Sprintf("count_over_time(%s[%s])", sel.of("up"), promDuration(window)),
		processStart:   "max by (instance) (" + sel.of("process_start_time_seconds") + ")",
		processChanges: fmt.Sprintf("max by (instance) (changes(%s[%s]))", sel.of("process_start_time_seconds"), h),
		cacheConfig:    sel.of("vllm:cache_config_info"),
		counterResets: []string{resets("vllm:prompt_tokens_total"), resets("vllm:request_success_total"),
			resets("sglang:prompt_tokens_total"), resets("tgi_request_success")},
	}
}

// historyQueries are the charted metrics over time, by row.
func historyQueries(q []rowQuery) map[Metric]string {
	find := func(f Field) string {
		for _, x := range q {
			if x.field == f {
				return x.query
			}
		}
		panic("fleet: no query for " + string(f))
	}
	return map[Metric]string{
		MetricRunning: find(FieldRunning), MetricWaiting: find(FieldWaiting), MetricKVCacheUsage: find(FieldKVCacheUsage),
		MetricGenTokens: find(FieldGenTokens), MetricTTFTP99: find(FieldTTFTP99),
	}
}

// errNoTargets is a selector that matches no target's up series.
var errNoTargets = errors.New("no target matches the selector")
