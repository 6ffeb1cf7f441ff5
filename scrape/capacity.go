package scrape

import "github.com/vllmtop/vllmtop/server/sim/capacity"

// CacheInfo is what vllm:cache_config_info says of the KV cache, as capacity.Build takes it
// (zero where it says nothing).
func (c Capacity) CacheInfo() capacity.CacheInfo {
	return capacity.CacheInfo{BlockSize: int(c.BlockSizeTokens.Or(0)), NumGPUBlocks: int(c.NumGPUBlocks.Or(0)),
		KVCacheTokens: int(c.KVCacheTokens.Or(0)), MaxConcurrency: c.MaxConcurrency.Or(0), Util: c.GPUMemoryUtilization.Or(0)}
}
