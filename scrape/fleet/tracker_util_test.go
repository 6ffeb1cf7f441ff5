package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/vllmtop/vllmtop/scrape"
)

func TestEngineUtilIsTheConfiguredFraction(t *testing.T) {
	s := &scrape.Snapshot{Cache: []scrape.CacheConfig{{Engine: "0", GPUMemoryUtilization: scrape.Some(0.5)}, {Engine: "1", GPUMemoryUtilization: scrape.Some(0.8)}}}
	assert.Equal(t, scrape.Some(0.8), engineUtil(s, "1"))
	s = &scrape.Snapshot{Capacity: scrape.Capacity{GPUMemoryUtilization: scrape.Some(0.9)}}
	assert.Equal(t, scrape.Some(0.9), engineUtil(s, "0"), "the server's, where the engine has none")
	s = &scrape.Snapshot{Capacity: scrape.Capacity{GPUMemoryUtilization: scrape.Some(7)}}
	assert.False(t, engineUtil(s, "0").OK, "outside 0..1 is not a fraction")
}
