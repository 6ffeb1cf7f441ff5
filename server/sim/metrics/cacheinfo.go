package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllmtop/vllmtop/server/sim"
)

// cacheConfigLabels is vLLM's CacheConfig rendered as vllm:cache_config_info labels: every
// field as Python's str() of its value, plus engine, with the field set of the release
// (the 0.26 one of docs/vllm-behaviour.md#cache_config_info; 0.23-0.25 as the 0.25.1 capture, with hash_block_size;
// older as a 0.16-0.19 capture, without the capacity fields). The simulator has no CPU
// offloading, so those fields keep vLLM's defaults.
func cacheConfigLabels(s *sim.Setup, engine string, f features) prometheus.Labels {
	c := s.Capacity
	l := c.Layout
	cacheDType := s.EngineConfigKVDType()
	override := "None"
	if s.NumGPUBlocksOverride > 0 {
		override = strconv.Itoa(s.NumGPUBlocksOverride)
	}
	mambaBlock, mambaPadded, mambaSSM, mambaMode := "None", "None", "auto", "none"
	if l.MambaLayers > 0 {
		mambaMode = l.MambaCacheMode
		if l.MambaPaddingPercent > 0 {
			mambaPadded = strconv.FormatInt(l.PageBytes, 10)
		}
		if d := s.ModelProfile.MambaSSMDType; d != "" {
			mambaSSM = strings.ToLower(d) // copied from the HF config (verify_and_update_config)
		}
		if mambaMode == "align" {
			mambaBlock = strconv.Itoa(l.BlockSize)
		}
	}
	window := "None"
	if l.SlidingLayers > 0 {
		window = strconv.Itoa(l.SlidingWindow)
	}
	labels := prometheus.Labels{
		"_block_size_resolved":       "True",
		"block_size":                 strconv.Itoa(l.BlockSize),
		"cache_dtype":                cacheDType,
		"calculate_kv_scales":        "False",
		"enable_prefix_caching":      pyBool(s.PrefixCachingEnabled()),
		"engine":                     engine,
		"gpu_memory_utilization":     pyFloat(s.GPUMemoryUtilization),
		"is_attention_free":          "False",
		"kv_cache_dtype_skip_layers": "[]",
		"kv_cache_memory_bytes":      "None",
		"kv_offloading_backend":      "native",
		"kv_offloading_size":         "None",
		"kv_sharing_fast_prefill":    "False",
		"mamba_block_size":           mambaBlock,
		"mamba_cache_dtype":          "auto",
		"mamba_cache_mode":           mambaMode,
		"mamba_page_size_padded":     mambaPadded,
		"mamba_ssm_cache_dtype":      mambaSSM,
		"num_cpu_blocks":             "None",
		"num_gpu_blocks":             strconv.Itoa(c.NumGPUBlocks),
		"num_gpu_blocks_override":    override,
		"prefix_caching_hash_algo":   "sha256",
		"sliding_window":             window,
		// Only inferred: the resolved setup no longer says whether --block-size was given,
		// so an explicit default reads as not specified.
		"user_specified_block_size": pyBool(s.BlockSize != sim.DefaultBlockSize),
	}
	if !f.cacheCapacity {
		labels["cpu_kvcache_space_bytes"] = "None"
		return labels
	}
	labels["kv_cache_max_concurrency"] = pyFloat(c.MaxConcurrency)
	labels["kv_cache_size_tokens"] = strconv.Itoa(c.KVCacheTokens)
	labels["skip_page_size_padded"] = "None"
	labels["user_specified_mamba_block_size"] = "False"
	if f.prefixMatchUnit {
		labels["prefix_match_unit"] = "None"
	} else {
		labels["hash_block_size"] = "None"
	}
	return labels
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pyFloat is Python's str(float), as vLLM prints numbers.
func pyFloat(f float64) string { return sim.PyFloat(f) }

// withCacheLabels sets the labels of over that the release's field set has.
func withCacheLabels(labels, over prometheus.Labels) prometheus.Labels {
	for k, v := range over {
		if _, ok := labels[k]; ok {
			labels[k] = v
		}
	}
	return labels
}
