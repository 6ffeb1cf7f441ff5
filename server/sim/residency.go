package sim

import "time"

// KV block residency (vLLM's --kv-cache-metrics): for a sample of the prefix cache's blocks,
// when each was made, when it was last touched and the gaps between touches, reported when
// the block is evicted.

// KVEviction is one sampled cached block leaving the cache.
type KVEviction struct {
	Lifetime  time.Duration   // made to evicted
	Idle      time.Duration   // last touched to evicted
	ReuseGaps []time.Duration // between consecutive touches, the most recent few
}

// maxReuseGaps is how many recent gaps a block keeps (vLLM keeps a small ring buffer).
const maxReuseGaps = 4

// residency is the sampling state of the pool; nil when --kv-cache-metrics is off.
type residency struct {
	sample    float64
	now       time.Time
	evictions []KVEviction
}

// blockTimes are a sampled block's timestamps.
type blockTimes struct {
	born, touched time.Time
	gaps          []time.Duration
}

// sampled decides, from the block's hash, whether it is one of the sampled fraction.
func (r *residency) sampled(hash uint64) bool {
	return float64(splitmix(hash)>>11)/(1<<53) < r.sample
}

func (p *blockPool) noteMade(b *cachedBlock) {
	if r := p.residency; r != nil && r.sampled(b.hash) {
		b.times = &blockTimes{born: r.now, touched: r.now}
	}
}

func (p *blockPool) noteTouched(b *cachedBlock) {
	if t := b.times; t != nil {
		now := p.residency.now
		t.gaps = append(t.gaps, now.Sub(t.touched))
		if len(t.gaps) > maxReuseGaps {
			t.gaps = t.gaps[len(t.gaps)-maxReuseGaps:]
		}
		t.touched = now
	}
}

func (p *blockPool) noteEvicted(b *cachedBlock) {
	if t := b.times; t != nil {
		r := p.residency
		r.evictions = append(r.evictions, KVEviction{Lifetime: r.now.Sub(t.born), Idle: r.now.Sub(t.touched), ReuseGaps: t.gaps})
	}
}

// startResidencyStep sets the time of the step's cache events and clears the last step's.
func (e *Engine) startResidencyStep(now time.Time) {
	if r := e.pool.residency; r != nil {
		r.now = now
		r.evictions = r.evictions[:0]
	}
}

// residencyEvictions are the sampled evictions of the step (nil without --kv-cache-metrics).
func (e *Engine) residencyEvictions() []KVEviction {
	if r := e.pool.residency; r != nil {
		return r.evictions
	}
	return nil
}
