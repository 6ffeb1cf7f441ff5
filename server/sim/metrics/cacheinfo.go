package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllmtop/vllmtop/server/sim"
)

// cacheConfigLabels is vLLM's CacheConfig rendered as vllm:cache_config_info labels: every
// field as Python's str() of its value, plus engine. The simulator has no CPU offloading,
// Mamba layers or sliding window, so those fields keep vLLM's defaults.
func cacheConfigLabels(s *sim.Setup, engine string) prometheus.Labels {
	c := s.Capacity
	cacheDType := strings.ToLower(s.KVCacheDType)
	if cacheDType == "" {
		cacheDType = "auto"
	}
	override := "None"
	if s.NumGPUBlocksOverride > 0 {
		override = strconv.Itoa(s.NumGPUBlocksOverride)
	}
	return prometheus.Labels{
		"_block_size_resolved":       "True",
		"block_size":                 strconv.Itoa(s.BlockSize),
		"cache_dtype":                cacheDType,
		"calculate_kv_scales":        "False",
		"enable_prefix_caching":      pyBool(s.PrefixCachingEnabled()),
		"engine":                     engine,
		"gpu_memory_utilization":     pyFloat(s.GPUMemoryUtilization),
		"is_attention_free":          "False",
		"kv_cache_dtype_skip_layers": "[]",
		"kv_cache_max_concurrency":   pyFloat(c.MaxConcurrency),
		"kv_cache_memory_bytes":      "None",
		"kv_cache_size_tokens":       strconv.Itoa(c.KVCacheTokens),
		"kv_offloading_backend":      "native",
		"kv_offloading_size":         "None",
		"kv_sharing_fast_prefill":    "False",
		"mamba_block_size":           "None",
		"mamba_cache_dtype":          "auto",
		"mamba_cache_mode":           "none",
		"mamba_page_size_padded":     "None",
		"mamba_ssm_cache_dtype":      "auto",
		"num_cpu_blocks":             "None",
		"num_gpu_blocks":             strconv.Itoa(c.NumGPUBlocks),
		"num_gpu_blocks_override":    override,
		"prefix_caching_hash_algo":   "sha256",
		"prefix_match_unit":          "None",
		"skip_page_size_padded":      "None",
		"sliding_window":             "None",
		// Only inferred: the resolved setup no longer says whether --block-size was given,
		// so an explicit default reads as not specified.
		"user_specified_block_size":       pyBool(s.BlockSize != sim.DefaultBlockSize),
		"user_specified_mamba_block_size": "False",
	}
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pyFloat is Python's str(float), as vLLM prints numbers.
func pyFloat(f float64) string { return sim.PyFloat(f) }
