package scrape

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdataDir holds the captured expositions (each with its provenance on the first line).
const testdataDir = "../testdata"

func load(t testing.TB, name string) Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join(testdataDir, name))
	require.NoError(t, err)
	defer f.Close()
	s, err := Parse(f)
	require.NoError(t, err, name)
	return s
}

// is asserts a present value.
func is(t *testing.T, want float64, v Value, what string) {
	t.Helper()
	if assert.True(t, v.OK, "%s is absent, want %v", what, want) {
		assert.InDelta(t, want, v.V, math.Abs(want)*1e-12, what)
	}
}

func absent(t *testing.T, v Value, what string) {
	t.Helper()
	assert.False(t, v.OK, "%s should be absent, got %v", what, v.V)
}

func hist(t *testing.T, h *Histogram, count, sum float64, what string) {
	t.Helper()
	if !assert.NotNil(t, h, what) {
		return
	}
	assert.Equal(t, count, h.Count, what+" count")
	assert.InDelta(t, sum, h.Sum, math.Abs(sum)*1e-12, what+" sum")
	last := h.Buckets[len(h.Buckets)-1]
	assert.True(t, math.IsInf(last.UpperBound, 1), what+" ends with +Inf")
	assert.Equal(t, count, last.Count, what+" +Inf bucket = count")
}

func only(t *testing.T, s Snapshot, model string) *Model {
	t.Helper()
	require.Len(t, s.Models, 1)
	m, ok := s.Model(model)
	require.True(t, ok, "model %q in %v", model, s.Models[0].Name)
	return m
}

func unmappedNames(s Snapshot) []string {
	var out []string
	for _, f := range s.Unmapped {
		out = append(out, f.Name)
	}
	return out
}

func unmapped(s Snapshot, name string) (Family, bool) {
	for _, f := range s.Unmapped {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}

// TestFixtures maps every captured /metrics body and checks the numbers against the file.
func TestFixtures(t *testing.T) {
	tests := []struct {
		file    string
		backend Backend
		check   func(t *testing.T, s Snapshot)
	}{
		{"vllm-v0-0.5-metrics-opt-125m.prom", BackendVLLM, func(t *testing.T, s Snapshot) {
			m := only(t, s, "facebook/opt-125m")
			require.Len(t, m.Engines, 1)
			assert.Equal(t, "0", m.Engines[0].Engine, "no engine label means engine 0")
			st := m.Total
			is(t, 0, st.Running, "running")
			is(t, 0, st.Waiting, "waiting")
			is(t, 0, st.Swapped, "swapped")
			is(t, 0, st.KVCacheUsage, "gpu_cache_usage_perc as KV usage")
			is(t, 0, st.Preemptions, "preemptions")
			is(t, 5, st.PromptTokens, "prompt tokens")
			is(t, 7, st.GenerationTokens, "generation tokens")
			is(t, 1, st.RequestsFinished, "finished")
			assert.Equal(t, map[string]float64{"length": 1}, st.FinishedByReason)
			absent(t, st.PrefixCacheQueries, "V0 has no prefix-cache counters")
			absent(t, st.Awake, "V0 has no sleep state")
			hist(t, st.TTFTSeconds, 1, 0.31326723098754883, "TTFT")
			hist(t, st.ITLSeconds, 6, 0.19016313552856445, "time_per_output_token as ITL")
			hist(t, st.E2ESeconds, 1, 0.5034303665161133, "E2E")
			hist(t, st.PromptTokensPerRequest, 1, 5, "prompt tokens per request")
			hist(t, st.GenerationTokensPerRequest, 1, 7, "generation tokens per request")
			hist(t, st.ParamsN, 1, 1, "n")
			assert.Nil(t, st.TPOTSeconds, "V0 has no per-request TPOT")
			assert.Nil(t, st.QueueSeconds)
			// All six ITL observations are in (0.025, 0.05]: the median interpolates to the middle.
			is(t, 0.0375, Quantile(0.5, nil, st.ITLSeconds), "ITL p50 since start")

			require.Len(t, s.Cache, 1)
			c := s.Cache[0]
			assert.Equal(t, "0", c.Engine)
			is(t, 16, c.BlockSizeTokens, "block size")
			is(t, 7281, c.NumGPUBlocks, "blocks")
			is(t, 0.9, c.GPUMemoryUtilization, "gpu util")
			is(t, 0, c.PrefixCaching, "prefix caching off")
			absent(t, c.KVCacheSizeTokens, "no kv_cache_size_tokens before 2026-06")
			assert.Equal(t, "4294967296", c.Labels["swap_space_bytes"])
			is(t, 7281*16, s.Capacity.KVCacheTokens, "capacity from blocks × block size")
			absent(t, s.Capacity.MaxConcurrency, "max concurrency")
			is(t, 1.7181405583e+09, s.ProcessStartSeconds, "process start")
			assert.Subset(t, unmappedNames(s), []string{
				"vllm:cpu_cache_usage_perc", "vllm:avg_prompt_throughput_toks_per_s",
				"vllm:request_params_best_of", "python_gc_objects_collected_total", "process_resident_memory_bytes",
			})
		}},
		{"vllm-0.6-fork-v0-metrics-multiproc-opt-1.3b.prom", BackendVLLM, func(t *testing.T, s Snapshot) {
			st := only(t, s, "/gpfs/scratch/bsc98/bsc098069/llm_benchmarking/models/opt/opt-1.3b").Total
			is(t, 0, st.Running, "running")
			is(t, 0, st.Waiting, "waiting")
			is(t, 0, st.Swapped, "swapped")
			is(t, 0, st.KVCacheUsage, "KV usage")
			is(t, 0, st.Preemptions, "preemptions")
			is(t, 0, st.PromptTokens, "prompt tokens: present and zero")
			is(t, 0, st.GenerationTokens, "generation tokens")
			absent(t, st.RequestsFinished, "no request_success family in this scrape")
			absent(t, st.PrefixCacheHits, "prefix cache hits")
			assert.Nil(t, st.TTFTSeconds, "no histograms at server start in multiprocess mode")
			is(t, 0.225, s.Capacity.GPUMemoryUtilization, "gpu util")
			is(t, 3581*16, s.Capacity.KVCacheTokens, "capacity")
			absent(t, s.ProcessStartSeconds, "multiprocess mode has no process_*")
			assert.Subset(t, unmappedNames(s), []string{
				"vllm:gpu_prefix_cache_hit_rate", "vllm:cpu_prefix_cache_hit_rate",
				"vllm:scheduler_total_time", "vllm:model_forward_total_time",
			})
			f, _ := unmapped(s, "vllm:gpu_prefix_cache_hit_rate")
			require.Len(t, f.Series, 1)
			is(t, -1, f.Series[0].Value, "raw gauge kept")
		}},
		{"vllm-v1-metrics-qwen3-30b-specdecode.prom", BackendVLLM, func(t *testing.T, s Snapshot) {
			m := only(t, s, "qwen3-30b-tq")
			require.Len(t, m.Engines, 1)
			assert.Equal(t, "0", m.Engines[0].Engine)
			assert.Equal(t, "engine", m.KVCacheUsageBasis)
			st := m.Total
			is(t, 1, st.Running, "running")
			is(t, 2, st.Waiting, "waiting")
			assert.Nil(t, st.WaitingByReason, "no waiting_by_reason in this version")
			is(t, 0.0010077742585661298, st.KVCacheUsage, "KV usage")
			is(t, 1, st.Awake, "awake")
			is(t, 1.9106864e+07, st.PrefixCacheQueries, "prefix queries")
			is(t, 5.819712e+06, st.PrefixCacheHits, "prefix hits")
			is(t, 5.819712e+06/1.9106864e+07, PrefixCacheHitRate(nil, &st), "lifetime prefix hit rate")
			is(t, 1.9045253e+07, st.PromptTokens, "prompt tokens")
			is(t, 6.723875e+06, st.GenerationTokens, "generation tokens")
			is(t, 5.793216e+06, st.PromptTokensCached, "cached prompt tokens")
			is(t, 52043, st.RequestsFinished, "finished")
			assert.Equal(t, map[string]float64{"stop": 51319, "length": 724, "abort": 0, "error": 0, "repetition": 0}, st.FinishedByReason)
			is(t, 2.121962e+06, st.SpecDecodeDrafts, "drafts")
			is(t, 1.1501084e+07, st.SpecDecodeDraftTokens, "draft tokens")
			is(t, 4.574989e+06, st.SpecDecodeAcceptedTokens, "accepted tokens")
			hist(t, st.TTFTSeconds, 52916, 3.8408829580595493e+06, "TTFT")
			hist(t, st.ITLSeconds, 2.155457e+06, 366813.3155220201, "ITL")
			hist(t, st.TPOTSeconds, 52043, 2979.432286309289, "TPOT")
			hist(t, st.QueueSeconds, 52043, 3.560128002164351e+06, "queue")
			hist(t, st.PrefillSeconds, 52043, 14951.528692015272, "prefill")
			hist(t, st.DecodeSeconds, 52043, 363558.4132051199, "decode")
			hist(t, st.IterationTokens, 2.208376e+06, 2.5769128e+07, "iteration tokens")
			is(t, 64*6947, s.Capacity.KVCacheTokens, "capacity: blocks × block size (no kv_cache_size_tokens label)")
			assert.Equal(t, "turboquant_k3v4_nc", s.Cache[0].CacheDType)
			assert.Subset(t, unmappedNames(s), []string{
				"vllm:prompt_tokens_recomputed_total", "vllm:spec_decode_num_accepted_tokens_per_pos_total",
				"http_requests_total", "vllm:mm_cache_queries_total",
			})
		}},
		{"vllm-0.25.1-metrics-opt-125m-tp2-idle.prom", BackendVLLM, func(t *testing.T, s Snapshot) {
			st := only(t, s, "opt-125m-tp2").Total
			for what, v := range map[string]Value{
				"running": st.Running, "waiting": st.Waiting, "KV": st.KVCacheUsage, "preemptions": st.Preemptions,
				"prompt": st.PromptTokens, "generation": st.GenerationTokens, "prefix queries": st.PrefixCacheQueries,
				"prefix hits": st.PrefixCacheHits, "finished": st.RequestsFinished,
			} {
				is(t, 0, v, what+" (idle: present, zero)")
			}
			assert.Equal(t, map[string]float64{"capacity": 0, "deferred": 0}, st.WaitingByReason)
			hist(t, st.TTFTSeconds, 0, 0, "TTFT")
			absent(t, Quantile(0.5, nil, st.TTFTSeconds), "no observations: no quantile")
			absent(t, PrefixCacheHitRate(nil, &st), "no lookups: no hit rate")
			is(t, 400448, s.Capacity.KVCacheTokens, "kv_cache_size_tokens")
			is(t, 195.53125, s.Capacity.MaxConcurrency, "max concurrency")
			is(t, 25028, s.Capacity.NumGPUBlocks, "blocks")
			is(t, 0.3, s.Capacity.GPUMemoryUtilization, "gpu util")
			is(t, 1.78692899276e+09, s.ProcessStartSeconds, "process start")
			f, ok := unmapped(s, "http_requests_total")
			require.True(t, ok)
			require.Len(t, f.Series, 1)
			assert.Equal(t, map[string]string{"handler": "/v1/models", "method": "GET", "status": "2xx"}, f.Series[0].Labels)
			is(t, 1, f.Series[0].Value, "http requests")
		}},
		{"vllm-0.24-single-engine-rust-vllmtop.prom", BackendVLLM, func(t *testing.T, s Snapshot) {
			st := only(t, s, "example-org/example-model-27B").Total
			is(t, 3.763908e+06, st.PromptTokens, "prompt tokens")
			is(t, 54939, st.GenerationTokens, "generation tokens")
			is(t, 91, st.RequestsFinished, "finished")
			is(t, 91, Some(st.FinishedByReason["stop"]), "stop")
			hist(t, st.TTFTSeconds, 102, 2509.4076895713806, "TTFT")
			hist(t, st.ITLSeconds, 54837, 9315.990682553733, "ITL")
			hist(t, st.E2ESeconds, 91, 10054.123458623886, "E2E")
			hist(t, st.PromptTokensPerRequest, 91, 3.500561e+06, "prompt tokens per request")
			hist(t, st.PrefillKVComputedTokens, 91, 3.500561e+06, "prefill KV computed")
			// TTFT buckets: ≤20 s: 49, ≤40 s: 84, ≤80 s: 102 of 102.
			is(t, 20+20*(51.0-49)/(84-49), Quantile(0.5, nil, st.TTFTSeconds), "TTFT p50")
			is(t, 40+40*(91.8-84)/(102-84), Quantile(0.9, nil, st.TTFTSeconds), "TTFT p90")
			is(t, 40+40*(100.98-84)/(102-84), Quantile(0.99, nil, st.TTFTSeconds), "TTFT p99")
			// A hybrid Mamba model: capacity is kv_cache_size_tokens, not 442 × 784.
			is(t, 342803, s.Capacity.KVCacheTokens, "capacity")
			is(t, 1.3076923076923077, s.Capacity.MaxConcurrency, "max concurrency")
			f, ok := unmapped(s, "vllm:tool_call_parser_invocations_total")
			require.True(t, ok)
			assert.Len(t, f.Series, 12)
		}},
		{"vllm-metrics-synthetic-single-process.txt", BackendVLLM, func(t *testing.T, s Snapshot) {
			st := only(t, s, "Qwen/Qwen3-0.6B").Total
			is(t, 100, st.PromptTokens, "prompt")
			is(t, 100, st.GenerationTokens, "generation")
			is(t, 100, st.PrefixCacheQueries, "prefix queries")
			is(t, 0, st.PrefixCacheHits, "prefix hits")
			is(t, 10, Some(st.FinishedByReason["length"]), "length")
			hist(t, st.TTFTSeconds, 10, 0.15808985526784966, "TTFT")
			hist(t, st.ITLSeconds, 90, 0.4468048320002945, "ITL")
			hist(t, st.TPOTSeconds, 10, 0.04964498133336607, "TPOT")
			hist(t, st.QueueSeconds, 10, 0.0019505305427673634, "queue")
			is(t, 1221776, s.Capacity.KVCacheTokens, "capacity")
			is(t, 76361, s.Capacity.NumGPUBlocks, "blocks")
			is(t, 29.828515625, s.Capacity.MaxConcurrency, "max concurrency")
		}},
		{"vllm-metrics-synthetic-multiprocess-dp2.txt", BackendVLLM, func(t *testing.T, s Snapshot) {
			m := only(t, s, "Qwen/Qwen3-0.6B")
			require.Len(t, m.Engines, 2)
			assert.Equal(t, []string{"0", "1"}, []string{m.Engines[0].Engine, m.Engines[1].Engine})
			assert.Equal(t, []string{"0", "1"}, s.Engines())
			e0, e1 := m.Engines[0], m.Engines[1]
			is(t, 100, e0.PromptTokens, "engine 0 prompt")
			is(t, 0, e1.PromptTokens, "engine 1 prompt")
			is(t, 100, m.Total.PromptTokens, "total prompt")
			is(t, 100, m.Total.GenerationTokens, "total generation")
			is(t, 10, m.Total.RequestsFinished, "total finished")
			hist(t, e0.TTFTSeconds, 10, 0.15808985526784966, "engine 0 TTFT")
			hist(t, e1.TTFTSeconds, 0, 0, "engine 1 TTFT")
			hist(t, m.Total.TTFTSeconds, 10, 0.15808985526784966, "merged TTFT")
			is(t, 0, m.Total.KVCacheUsage, "KV")
			assert.Equal(t, "capacity-weighted", m.KVCacheUsageBasis)
			require.Len(t, s.Cache, 2)
			is(t, 2*1221776, s.Capacity.KVCacheTokens, "capacity sums the engines")
			is(t, 2*29.828515625, s.Capacity.MaxConcurrency, "max concurrency sums the engines")
			is(t, 152722, s.Capacity.NumGPUBlocks, "blocks as reported (vLLM already summed them)")
			absent(t, s.ProcessStartSeconds, "multiprocess mode")
		}},
		{"sglang-v0.3.5-metrics-gemma-2-9b-docs.prom", BackendSGLang, func(t *testing.T, s Snapshot) {
			st := only(t, s, "google/gemma-2-9b-it").Total
			is(t, 0, st.Running, "running")
			is(t, 0, st.Waiting, "waiting")
			is(t, 0.01, st.KVCacheUsage, "token_usage")
			is(t, 506780, st.PromptTokens, "prompt")
			is(t, 424549, st.GenerationTokens, "generation")
			hist(t, st.TTFTSeconds, 2124, 656.0780844688416, "TTFT")
			hist(t, st.ITLSeconds, 422425, 29846.5393948555, "time_per_output_token as ITL")
			hist(t, st.E2ESeconds, 2104, 70517.99934530258, "E2E")
			hist(t, st.QueueSeconds, 2104, 24885.007263183594, "waiting_request_latency as queue")
			hist(t, st.PromptTokensPerRequest, 2104, 500552, "prompt tokens per request")
			is(t, 161721, s.Capacity.KVCacheTokens, "max_total_num_tokens")
			absent(t, st.PrefixCacheQueries, "no prefix counters")
			assert.Subset(t, unmappedNames(s), []string{"sglang:cache_hit_rate", "sglang:queue_req", "sglang:max_running_requests"})
		}},
		{"sglang-v0.4-metrics-llama-3.1-8b-loaded-docs.prom", BackendSGLang, func(t *testing.T, s Snapshot) {
			st := only(t, s, "meta-llama/Llama-3.1-8B-Instruct").Total
			is(t, 162, st.Running, "num_running_reqs")
			is(t, 2826, st.Waiting, "num_queue_reqs")
			is(t, 0.28, st.KVCacheUsage, "token_usage")
			is(t, 8.128902e+06, st.PromptTokens, "prompt")
			is(t, 7.557572e+06, st.GenerationTokens, "generation")
			hist(t, st.TTFTSeconds, 11008, 2.3518979474117756e+06, "TTFT")
			hist(t, st.E2ESeconds, 11228, 3.116093850019932e+06, "E2E")
			hist(t, st.ITLSeconds, 7.400757e+06, 866964.5791549598, "ITL")
			f, ok := unmapped(s, "sglang:func_latency_seconds")
			require.True(t, ok, "a name label that is not a model stays raw")
			assert.Equal(t, "generate_request", f.Series[0].Labels["name"])
		}},
		{"tgi-metrics-payload.prom", BackendTGI, func(t *testing.T, s Snapshot) {
			st := only(t, s, "").Total
			is(t, 0, st.Running, "batch_current_size")
			is(t, 0, st.Waiting, "queue_size")
			is(t, 111, st.RequestsFinished, "finished")
			assert.Equal(t, map[string]float64{"success": 109, "error": 2}, st.FinishedByReason)
			absent(t, st.PromptTokens, "TGI has no token counters")
			absent(t, st.KVCacheUsage, "KV")
			hist(t, st.E2ESeconds, 109, 541.2140316159999, "request_duration")
			hist(t, st.QueueSeconds, 109, 295.275961956, "queue")
			hist(t, st.InferenceSeconds, 109, 245.91743839099996, "inference")
			hist(t, st.TPOTSeconds, 109, 8.643160945, "mean time per token")
			hist(t, st.PromptTokensPerRequest, 109, 662, "input length")
			hist(t, st.GenerationTokensPerRequest, 109, 3423, "generated tokens")
			hist(t, st.MaxTokensPerRequest, 109, 5120, "max new tokens")
			// request_duration: ≤3.787675244106352 s: 51, ≤5.681512866159528 s: 77 of 109.
			lo, hi := 3.787675244106352, 5.681512866159528
			is(t, lo+(hi-lo)*(54.5-51)/(77-51), Quantile(0.5, nil, st.E2ESeconds), "E2E p50")
			f, ok := unmapped(s, "tgi_request_skipped_tokens")
			require.True(t, ok)
			require.NotNil(t, f.Series[0].Summary)
			assert.Equal(t, 3423.0, f.Series[0].Summary.Count)
			assert.Len(t, f.Series[0].Summary.Quantiles, 7)
			f, ok = unmapped(s, "tgi_batch_next_size")
			require.True(t, ok)
			assert.Len(t, f.Series[0].Histogram.Buckets, 1025)
		}},
		{"triton-23.11-trtllm-metrics-nv_trt_llm-docs.prom", BackendUnknown, func(t *testing.T, s Snapshot) {
			assert.Empty(t, s.Models)
			assert.Equal(t, []string{
				"nv_trt_llm_general_statistics", "nv_trt_llm_inflight_batcher_statistics",
				"nv_trt_llm_kv_cache_block_statistics", "nv_trt_llm_request_statistics",
				"nv_trt_llm_runtime_memory_statistics",
			}, unmappedNames(s))
			n := 0
			for _, f := range s.Unmapped {
				n += len(f.Series)
			}
			assert.Equal(t, 16, n, "every sample kept")
			f, _ := unmapped(s, "nv_trt_llm_request_statistics")
			for _, x := range f.Series {
				if x.Labels["request_type"] == "max" {
					is(t, 512, x.Value, "max requests")
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s := load(t, tt.file)
			assert.Equal(t, tt.backend, s.Backend)
			assert.True(t, sort.StringsAreSorted(unmappedNames(s)))
			for _, f := range s.Unmapped {
				assert.False(t, strings.HasSuffix(f.Name, "_created"), "%s should be ignored", f.Name)
			}
			_, err := json.Marshal(s)
			require.NoError(t, err)
			tt.check(t, s)
		})
	}
}

// TestEveryFixtureIsTested keeps the table above in step with testdata.
func TestEveryFixtureIsTested(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdataDir, "*.prom"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(testdataDir, "vllm-metrics-*.txt"))
	require.NoError(t, err)
	assert.Len(t, append(files, more...), 11, "add new /metrics fixtures to TestFixtures")
}

func TestParseAliases(t *testing.T) {
	t.Run("new name wins, old one is listed", func(t *testing.T) {
		s, err := Parse(strings.NewReader(`# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
`))
		require.NoError(t, err)
		is(t, 0.5, only(t, s, "m").Total.KVCacheUsage, "kv_cache_usage_perc")
		assert.Equal(t, []string{"vllm:gpu_cache_usage_perc"}, unmappedNames(s))
	})
	t.Run("0.9.2 to 0.11 prefix-cache names", func(t *testing.T) {
		s, err := Parse(strings.NewReader(`# TYPE vllm:gpu_prefix_cache_queries_total counter
vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 400.0
# TYPE vllm:gpu_prefix_cache_hits_total counter
vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 100.0
`))
		require.NoError(t, err)
		st := only(t, s, "m").Total
		is(t, 400, st.PrefixCacheQueries, "queries")
		is(t, 100, st.PrefixCacheHits, "hits")
		is(t, 0.25, PrefixCacheHitRate(nil, &st), "hit rate")
		assert.Empty(t, s.Unmapped)
	})
	t.Run("exact names only", func(t *testing.T) {
		// The per-request TPOT must not be taken for the per-token one.
		s, err := Parse(strings.NewReader(`# TYPE vllm:request_time_per_output_token_seconds histogram
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 1
vllm:request_time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 1
vllm:request_time_per_output_token_seconds_count{engine="0",model_name="m"} 1
vllm:request_time_per_output_token_seconds_sum{engine="0",model_name="m"} 0.05
`))
		require.NoError(t, err)
		st := only(t, s, "m").Total
		assert.Nil(t, st.ITLSeconds)
		hist(t, st.TPOTSeconds, 1, 0.05, "TPOT")
	})
}

func TestParseModelsAndEngines(t *testing.T) {
	// The spec-decode capture again as engine "1" and as a second model, as a server with
	// data parallelism or several models would print it.
	raw, err := os.ReadFile(filepath.Join(testdataDir, "vllm-v1-metrics-qwen3-30b-specdecode.prom"))
	require.NoError(t, err)
	var b strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		b.WriteString(line + "\n")
		if strings.HasPrefix(line, "vllm:") && strings.Contains(line, `engine="0"`) && !strings.Contains(line, "_created") {
			b.WriteString(strings.Replace(line, `engine="0"`, `engine="1"`, 1) + "\n")
			b.WriteString(strings.Replace(line, `model_name="qwen3-30b-tq"`, `model_name="other"`, 1) + "\n")
		}
	}
	s, err := Parse(strings.NewReader(b.String()))
	require.NoError(t, err)
	require.Len(t, s.Models, 2)
	assert.Equal(t, "other", s.Models[0].Name, "models sorted, kept apart")
	other := s.Models[0]
	require.Len(t, other.Engines, 1)
	is(t, 1.9045253e+07, other.Total.PromptTokens, "the other model is not summed in")

	m := s.Models[1]
	require.Len(t, m.Engines, 2)
	for _, e := range m.Engines {
		is(t, 1.9045253e+07, e.PromptTokens, "engine "+e.Engine+" prompt")
		is(t, 1, e.Running, "engine "+e.Engine+" running")
	}
	is(t, 2*1.9045253e+07, m.Total.PromptTokens, "summed prompt")
	is(t, 2, m.Total.Running, "summed running")
	is(t, 2*52043, m.Total.RequestsFinished, "summed finished")
	is(t, 2*51319, Some(m.Total.FinishedByReason["stop"]), "summed stop")
	hist(t, m.Total.TTFTSeconds, 2*52916, 2*3.8408829580595493e+06, "merged TTFT")
	// Equal engines: the merged quantile is each engine's.
	is(t, Quantile(0.9, nil, m.Engines[0].TTFTSeconds).V, Quantile(0.9, nil, m.Total.TTFTSeconds), "merged p90")
	// Without kv_cache_size_tokens the total KV is the fullest engine, and says so.
	assert.Equal(t, "max", m.KVCacheUsageBasis)
	is(t, 0.0010077742585661298, m.Total.KVCacheUsage, "max KV")
	assert.Equal(t, []string{"0", "1"}, s.Engines())
}

func TestParseKVAcrossEngines(t *testing.T) {
	const head = "# TYPE vllm:kv_cache_usage_perc gauge\n" +
		`vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.2` + "\n" +
		`vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.8` + "\n" +
		"# TYPE vllm:cache_config_info gauge\n"
	t.Run("capacity-weighted", func(t *testing.T) {
		s, err := Parse(strings.NewReader(head +
			`vllm:cache_config_info{engine="0",kv_cache_size_tokens="3000"} 1` + "\n" +
			`vllm:cache_config_info{engine="1",kv_cache_size_tokens="1000"} 1` + "\n"))
		require.NoError(t, err)
		m := only(t, s, "m")
		assert.Equal(t, "capacity-weighted", m.KVCacheUsageBasis)
		is(t, (0.2*3000+0.8*1000)/4000, m.Total.KVCacheUsage, "weighted")
		is(t, 4000, s.Capacity.KVCacheTokens, "capacity")
	})
	t.Run("max without capacities", func(t *testing.T) {
		s, err := Parse(strings.NewReader(head + `vllm:cache_config_info{engine="0",num_gpu_blocks="10",block_size="16"} 1` + "\n"))
		require.NoError(t, err)
		m := only(t, s, "m")
		assert.Equal(t, "max", m.KVCacheUsageBasis)
		is(t, 0.8, m.Total.KVCacheUsage, "max")
	})
}

func TestParseAbsentIsNotZero(t *testing.T) {
	s, err := Parse(strings.NewReader("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 0\n"))
	require.NoError(t, err)
	st := only(t, s, "m").Total
	is(t, 0, st.Running, "running")
	absent(t, st.Waiting, "waiting")
	absent(t, st.KVCacheUsage, "KV")
	absent(t, st.PromptTokens, "prompt tokens")
	assert.Nil(t, st.TTFTSeconds)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"running":0`)
	assert.Contains(t, string(b), `"waiting":null`)
	assert.NotContains(t, string(b), `"swapped"`, "V0-only fields are left out when absent")
}

func TestParseOddInput(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"no trailing newline", "vllm:num_requests_running{model_name=\"m\"} 3", true},
		{"comments and blank lines", "# HELP x y\n\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 2\n", true},
		{"histogram sum before buckets", "# TYPE vllm:e2e_request_latency_seconds histogram\n" +
			"vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} 3\n" +
			"vllm:e2e_request_latency_seconds_count{model_name=\"m\"} 2\n" +
			"vllm:e2e_request_latency_seconds_bucket{le=\"1.0\",model_name=\"m\"} 1\n" +
			"vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 2\n", true},
		{"HTML", "<!DOCTYPE html><html><body>502 Bad Gateway</body></html>\n", false},
		{"JSON", `{"error":"not found"}` + "\n", false},
		{"garbage value", "vllm:num_requests_running abc\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(strings.NewReader(tt.in))
			if !tt.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "not Prometheus text")
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, s.Models)
		})
	}
	s, err := Parse(strings.NewReader("vllm:num_requests_running{model_name=\"m\"} 3"))
	require.NoError(t, err)
	is(t, 3, only(t, s, "m").Total.Running, "untyped sample without newline")

	for _, empty := range []string{"", "\n", " \t\r\n\n"} {
		s, err := Parse(strings.NewReader(empty))
		require.ErrorIs(t, err, ErrEmptyBody, "%q is not an idle server", empty)
		assert.Equal(t, "empty /metrics body", err.Error())
		assert.Nil(t, s.Models)
	}
}

func TestRawFamilies(t *testing.T) {
	f, err := os.Open(filepath.Join(testdataDir, "vllm-0.25.1-metrics-opt-125m-tp2-idle.prom"))
	require.NoError(t, err)
	defer f.Close()
	fams, err := RawFamilies(f)
	require.NoError(t, err)
	names := make([]string, len(fams))
	for i, fam := range fams {
		names[i] = fam.Name
	}
	assert.True(t, sort.StringsAreSorted(names))
	assert.Contains(t, names, "vllm:prompt_tokens_created", "the raw dump drops nothing")
	b, err := json.Marshal(fams)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"name":"vllm:kv_cache_usage_perc"`)

	_, err = RawFamilies(strings.NewReader("<html>"))
	assert.Error(t, err)
}

func TestDropCreated(t *testing.T) {
	in := "# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n" +
		"# TYPE vllm:prompt_tokens_created gauge\n" +
		"vllm:prompt_tokens_created{engine=\"0\",model_name=\"m\"} 1.7e+09\n" +
		"# HELP vllm:prompt_tokens Mentions x_created in its text.\n" +
		"# TYPE vllm:prompt_tokens_total counter\n" +
		"vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 5.0\n" +
		"process_start_time_seconds 1.7e+09\n" +
		"http_requests_created 1"
	want := "# HELP vllm:prompt_tokens Mentions x_created in its text.\n" +
		"# TYPE vllm:prompt_tokens_total counter\n" +
		"vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 5.0\n" +
		"process_start_time_seconds 1.7e+09\n"
	assert.Equal(t, want, string(dropCreated([]byte(in))))
	plain := []byte("vllm:num_requests_running 1\n")
	assert.Equal(t, plain, dropCreated(plain))
}
