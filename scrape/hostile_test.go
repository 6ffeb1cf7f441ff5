package scrape

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/base/refused"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// The hostile-server suite for /metrics: each case ends in a one-line error or a snapshot
// whose strings are all safe for a terminal and whose numbers are all sane, within bounded
// memory and under a deadline.

func serveMetrics(t *testing.T, body []byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// stringsIn collects every string in v, map keys included.
func stringsIn(v reflect.Value, out *[]string) {
	switch v.Kind() {
	case reflect.String:
		*out = append(*out, v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			stringsIn(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			stringsIn(v.Field(i), out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			stringsIn(v.Index(i), out)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			stringsIn(iter.Key(), out)
			stringsIn(iter.Value(), out)
		}
	default:
	}
}

func assertAllSafe(t *testing.T, v any) {
	t.Helper()
	var all []string
	stringsIn(reflect.ValueOf(v), &all)
	require.NotEmpty(t, all)
	for _, s := range all {
		assert.Equal(t, sanitize.Text(s), s, "a string with controls: %q", s)
	}
}

// finiteNumbers fails on any NaN or infinity in the mapped fields of a snapshot or window
// (Unmapped keeps what the server sent, as data).
func finiteNumbers(t *testing.T, v any) {
	t.Helper()
	var walk func(reflect.Value, string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Float64:
			f := v.Float()
			if math.IsNaN(f) || math.IsInf(f, 0) && !strings.HasSuffix(path, "UpperBound") {
				t.Errorf("%s is %v", path, f)
			}
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), path)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if name := v.Type().Field(i).Name; name != "Unmapped" {
					walk(v.Field(i), path+"."+name)
				}
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i), path)
			}
		case reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				walk(iter.Value(), path+"["+iter.Key().String()+"]")
			}
		default:
		}
	}
	walk(reflect.ValueOf(v), "")
}

func TestHostileLabels(t *testing.T) {
	raw := "\x1b]0;pwned\x07\x1b[2J\u009b31m\u202e\b"
	body := "# HELP vllm:num_requests_running Number of requests " + raw + "running.\n" +
		"# TYPE vllm:num_requests_running gauge\n" +
		"vllm:num_requests_running{engine=\"0" + raw + "\",model_name=\"evil" + raw + "model\"} 3\n" +
		"# TYPE vllm:request_success_total counter\n" +
		"vllm:request_success_total{engine=\"0" + raw + "\",finished_reason=\"stop" + raw + "\",model_name=\"evil" + raw + "model\"} 5\n" +
		"# TYPE vllm:cache_config_info gauge\n" +
		"vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto" + raw + "\",engine=\"0" + raw + "\",\"odd" + raw + "label\"=\"x" + raw + "\"} 1\n" +
		"# HELP weird_metric help " + raw + "\n" +
		"weird_metric{path=\"/a" + raw + "\"} 1\n" +
		"{\"quoted" + raw + "name\",label=\"v\"} 2\n"
	s, err := Parse(strings.NewReader(body))
	require.NoError(t, err)
	require.Len(t, s.Models, 1)
	assert.Equal(t, "evilmodel", s.Models[0].Name)
	assert.Equal(t, "0", s.Models[0].Engines[0].Engine)
	assert.Equal(t, map[string]float64{"stop": 5}, s.Models[0].Total.FinishedByReason)
	require.Len(t, s.Cache, 1)
	assert.Equal(t, "auto", s.Cache[0].CacheDType)
	assert.Equal(t, "x", s.Cache[0].Labels["oddlabel"])
	assertAllSafe(t, s)

	prev := s
	s.Time = prev.Time.Add(time.Second)
	w := Compare(&prev, &s)
	assertAllSafe(t, w)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `\u001b`)
	assert.NotContains(t, string(b), "\u202e")
}

func TestHostileNumbers(t *testing.T) {
	body := "# TYPE vllm:num_requests_running gauge\n" +
		"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} NaN\n" +
		"vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 2\n" +
		"# TYPE vllm:num_requests_waiting gauge\n" +
		"vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} -4\n" +
		"# TYPE vllm:kv_cache_usage_perc gauge\n" +
		"vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 7\n" +
		"vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.5\n" +
		"# TYPE vllm:prompt_tokens_total counter\n" +
		"vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 1e300\n" +
		"vllm:prompt_tokens_total{engine=\"1\",model_name=\"m\"} +Inf\n" +
		"# TYPE vllm:generation_tokens_total counter\n" +
		"vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 9007199254740992\n" +
		"# TYPE vllm:time_to_first_token_seconds histogram\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} NaN\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 3\n" +
		"vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 1\n" +
		"vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 3\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"NaN\",model_name=\"m\"} 1\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\",model_name=\"m\"} 1\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\",model_name=\"m\"} 2\n" +
		"vllm:time_to_first_token_seconds_sum{engine=\"1\",model_name=\"m\"} 0.5\n" +
		"vllm:time_to_first_token_seconds_count{engine=\"1\",model_name=\"m\"} 2\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"2\",le=\"+Inf\",model_name=\"m\"} 2\n" +
		"vllm:time_to_first_token_seconds_sum{engine=\"2\",model_name=\"m\"} +Inf\n" +
		"vllm:time_to_first_token_seconds_count{engine=\"2\",model_name=\"m\"} 2\n" +
		"# TYPE vllm:cache_config_info gauge\n" +
		"vllm:cache_config_info{block_size=\"1e300\",engine=\"0\",num_gpu_blocks=\"1e300\",kv_cache_size_tokens=\"-5\"} 1\n" +
		"process_start_time_seconds NaN\n"
	s, err := Parse(strings.NewReader(body))
	require.NoError(t, err)
	m := only(t, s, "m")
	e0, _ := m.Engine("0")
	e1, _ := m.Engine("1")
	assert.False(t, e0.Running.OK, "NaN is not a count")
	is(t, 2, e1.Running, "the sane engine")
	assert.False(t, e0.Waiting.OK, "negative")
	assert.False(t, e0.KVCacheUsage.OK, "a fraction of 7")
	is(t, 0.5, m.Total.KVCacheUsage, "the sane engine's fraction")
	assert.False(t, e0.PromptTokens.OK, "1e300 is past 2^53")
	assert.False(t, e1.PromptTokens.OK, "+Inf")
	is(t, 9007199254740992, e0.GenerationTokens, "2^53 itself is still a count")
	assert.Nil(t, e0.TTFTSeconds, "a NaN bucket count")
	require.NotNil(t, e1.TTFTSeconds, "a NaN bound is dropped, the rest kept")
	assert.Equal(t, []Bucket{{0.1, 1}, {math.Inf(1), 2}}, e1.TTFTSeconds.Buckets)
	e2, _ := m.Engine("2")
	assert.Nil(t, e2.TTFTSeconds, "an infinite sum")
	assert.False(t, s.Capacity.KVCacheTokens.OK, "1e300 × 1e300 blocks is no capacity")
	assert.False(t, s.Cache[0].BlockSizeTokens.OK)
	assert.False(t, s.ProcessStartSeconds.OK)
	assert.NotEmpty(t, s.Warnings)
	left := 0
	for _, w := range s.Warnings {
		assert.NotContains(t, w, "\n")
		if strings.Contains(w, "values left out") {
			left++
			assert.Regexp(t, `^\d+ values left out: NaN, infinite, negative or absurd \(\d+ famil(y|ies): `, w)
		}
	}
	assert.Equal(t, 1, left, "one counted warning for every value left out: %q", s.Warnings)
	assert.GreaterOrEqual(t, s.IgnoredValues, 7)
	finiteNumbers(t, s)

	prev := s
	cur := s
	cur.Time = prev.Time.Add(time.Second)
	finiteNumbers(t, Compare(&prev, &cur))
}

func TestHostileDuplicates(t *testing.T) {
	body := "# TYPE vllm:num_requests_running gauge\n" +
		"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3\n" +
		"vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 5\n" + // the same labels in another order
		"vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 1\n" +
		"# TYPE vllm:prompt_tokens_total counter\n" +
		"vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 10\n" +
		"vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 10\n" +
		"vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 12\n" +
		"# TYPE vllm:e2e_request_latency_seconds histogram\n" +
		"vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 1\n" +
		"vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 2\n" +
		"vllm:e2e_request_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 3\n" +
		"vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\"} 2\n" +
		"vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 4\n" +
		"vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 6\n" +
		"vllm:e2e_request_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 7\n" +
		"vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\"} 6\n" +
		"# TYPE other gauge\n" +
		"other{a=\"1\"} 1\n" +
		"other{a=\"1\"} 2\n"
	s, err := Parse(strings.NewReader(body))
	require.NoError(t, err)
	m := only(t, s, "m")
	e0, _ := m.Engine("0")
	is(t, 5, e0.Running, "not 3 + 5: the last of the repeats")
	is(t, 6, m.Total.Running, "engines still add up")
	is(t, 12, e0.PromptTokens, "not 32")
	require.NotNil(t, e0.E2ESeconds)
	assert.Equal(t, &Histogram{Buckets: []Bucket{{1, 4}, {math.Inf(1), 6}}, Count: 6, Sum: 7}, e0.E2ESeconds,
		"the last series, which the parser's count and sum belong to")
	require.Len(t, s.Unmapped, 1)
	assert.Len(t, s.Unmapped[0].Series, 1)
	is(t, 2, s.Unmapped[0].Series[0].Value, "unmapped families too")
	assert.Equal(t, 1+2+1+1, s.DuplicateSeries)
	assert.Equal(t, "5 duplicate series, the last of each kept (4 families: other, vllm:e2e_request_latency_seconds, vllm:num_requests_running, …)", s.Warnings[0])

	clean, err := Parse(bytes.NewReader(seriesExposition(3, 2, 1)))
	require.NoError(t, err)
	assert.Zero(t, clean.DuplicateSeries)
	assert.Empty(t, clean.Warnings)
}

func TestHostileEmptyAndHugeBodies(t *testing.T) {
	for _, body := range []string{"", "\n\n  \n"} {
		c, err := NewClient(serveMetrics(t, []byte(body)).URL)
		require.NoError(t, err)
		_, err = c.Scrape(context.Background())
		require.ErrorIs(t, err, ErrEmptyBody)
		assert.Equal(t, c.URL()+": empty /metrics body", err.Error())
	}

	// A body that never ends is cut at the cap: what the server wrote and what the client
	// allocated stay near it.
	var written atomic.Int64
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		line := []byte("vllm:num_requests_running{model_name=\"m\"} 1\n")
		for written.Load() < 1<<30 {
			n, err := w.Write(line)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer endless.Close()
	c, err := NewClient(endless.URL, WithMaxBodyBytes(1<<20), WithTimeout(20*time.Second))
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = c.Scrape(context.Background())
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(32<<20))
	assert.Less(t, written.Load(), int64(32<<20))
}

// 100,000 series in one scrape: parsed, mapped and compared in bounded memory and well within
// a deadline (155 s of CPU before comparisons used maps).
func TestHostileHundredThousandSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 2 × 100,000 series")
	}
	pairs := 100_000 / seriesPerEngine
	bodies := [][]byte{seriesExposition(pairs, 1, 1), seriesExposition(pairs, 1, 2)}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(bodies[min(n.Add(1)-1, 1)])
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, WithTimeout(60*time.Second))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prev, err := c.Scrape(ctx)
	require.NoError(t, err)
	cur, err := c.Scrape(ctx)
	require.NoError(t, err)
	cur.Time = prev.Time.Add(time.Second)
	require.Len(t, cur.Models, pairs)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan Window, 1)
	go func() {
		w := Compare(&prev, &cur)
		WriteText(io.Discard, c.URL(), &cur, &w, time.Now()) // the report of vllmtop metrics --window
		done <- w
	}()
	var w Window
	select {
	case w = <-done:
	case <-ctx.Done():
		t.Fatal("Compare of 100,000 series did not finish")
	}
	runtime.ReadMemStats(&after)
	t.Logf("Compare and the report of %d series allocated %d MiB", 100_000, (after.TotalAlloc-before.TotalAlloc)>>20)
	require.Len(t, w.Models, pairs)
	is(t, 100, w.Models[pairs-1].Total.PromptTokensPerSec, "the window is right")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "Compare and the report allocate in proportion to the series")
}

// Credentials and query strings never reach a message or the printed URL.
func TestHostileURLsAreRedacted(t *testing.T) {
	addr := refused.Addr(t)
	target := "http://user:PW123@" + addr + "/metrics?token=SECRET9"
	c, err := NewClient(target, WithTimeout(2*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "http://user:***@"+addr+"/metrics?token=***", c.URL())
	_, err = c.Scrape(context.Background())
	require.Error(t, err)
	var se *Error
	require.True(t, errors.As(err, &se))
	for _, msg := range []string{err.Error(), c.URL()} {
		assert.NotContains(t, msg, "PW123")
		assert.NotContains(t, msg, "SECRET9")
	}
	hand := &Error{URL: target, Err: errors.New("boom\x1b[2J")}
	assert.Equal(t, "http://user:***@"+addr+"/metrics?token=***: boom", hand.Error())

	_, err = MetricsURL("http://user:PW123@host:port/?token=SECRET9")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "PW123")
	assert.NotContains(t, err.Error(), "SECRET9")
	_, err = MetricsURL("ftp://user:PW123@host/?token=SECRET9")
	assert.NotContains(t, err.Error(), "PW123")
}
