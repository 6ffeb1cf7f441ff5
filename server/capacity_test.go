package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

func TestLoggedCapacityIsWhatTheRunLogged(t *testing.T) {
	st := Status{GPUMemoryUtilization: 0.9, ModelGiB: 15, KVCacheGiB: 54, KVCacheTokens: 540000, KVCacheBlocks: 33750,
		MaxConcurrency: 4.12, MaxModelLen: 131072}
	assert.Equal(t, capacity.Logged{Util: 0.9, KVTokens: 540000, KVBlocks: 33750, MaxConcurrency: 4.12, MaxModelLen: 131072,
		KVGiB: 54, WeightsGiB: 15}, LoggedCapacity(st))
	assert.Equal(t, capacity.Logged{}, LoggedCapacity(Status{}), "nothing logged yet")
}
