package server

import "github.com/vllmtop/vllmtop/server/sim/capacity"

// LoggedCapacity is what the run of st logged of its KV cache, as capacity.Build takes it.
func LoggedCapacity(st Status) capacity.Logged {
	return capacity.Logged{Util: st.GPUMemoryUtilization, KVTokens: st.KVCacheTokens, KVBlocks: st.KVCacheBlocks,
		MaxConcurrency: st.MaxConcurrency, MaxModelLen: st.MaxModelLen, KVGiB: st.KVCacheGiB, WeightsGiB: st.ModelGiB}
}
