package sim

// blockPool is a paged KV cache of fixed-size blocks with prefix caching: full prompt blocks
// are kept in a cache keyed by the hash of the prompt up to and including the block, shared
// by reference count, and evicted least-recently-freed first when fresh blocks run out.
//
// Counts are in pool blocks. A cached block stands for one block position of a request in
// every full-attention group, so it costs unit pool blocks (1 unless a hybrid model has
// more than one full-attention group).
type blockPool struct {
	capacity int // usable blocks: num_gpu_blocks - 1 (block 0 is vLLM's null block)
	unit     int // pool blocks per cached block
	used     int // blocks held by at least one request
	cache    map[uint64]*cachedBlock
	// Idle cached blocks (no holder) form a list, oldest first; they count as free.
	idleHead, idleTail *cachedBlock
	idle               int
	residency          *residency // sampled block lifetimes, with --kv-cache-metrics
}

type cachedBlock struct {
	hash       uint64
	refs       int
	prev, next *cachedBlock
	times      *blockTimes // set for a sampled block
}

func newBlockPool(capacity, unit int, prefixCaching bool) *blockPool {
	p := &blockPool{capacity: capacity, unit: max(1, unit)}
	if prefixCaching {
		p.cache = make(map[uint64]*cachedBlock)
	}
	return p
}

// free is how many blocks an allocation can take, evicting idle cached blocks if need be.
func (p *blockPool) free() int { return p.capacity - p.used }

// take allocates n fresh blocks; the caller checked free() >= n.
func (p *blockPool) take(n int) {
	for fresh := p.capacity - p.used - p.idle; fresh < n; fresh += p.unit {
		p.evictOldest()
	}
	p.used += n
}

// release returns n fresh (uncached) blocks.
func (p *blockPool) release(n int) { p.used -= n }

// lookup returns the cached block for hash, or nil.
func (p *blockPool) lookup(hash uint64) *cachedBlock {
	if p.cache == nil {
		return nil
	}
	return p.cache[hash]
}

// acquire adds a holder to a cached block, taking it off the idle list if it was idle.
func (p *blockPool) acquire(b *cachedBlock) {
	p.noteTouched(b)
	if b.refs == 0 {
		p.unlinkIdle(b)
		p.used += p.unit
	}
	b.refs++
}

// drop removes a holder; a block with no holder stays cached but idle (and so free).
func (p *blockPool) drop(b *cachedBlock) {
	b.refs--
	if b.refs == 0 {
		if b.times != nil {
			b.times.touched = p.residency.now // its last use: idle from here
		}
		p.used -= p.unit
		p.linkIdle(b)
	}
}

// publish turns one of a holder's fresh blocks into a cached block for hash. If another
// request cached the same content meanwhile, the holder switches to that block and its own
// copy is released.
func (p *blockPool) publish(hash uint64) *cachedBlock {
	if b, ok := p.cache[hash]; ok {
		p.acquire(b)
		p.release(p.unit)
		return b
	}
	b := &cachedBlock{hash: hash, refs: 1}
	p.cache[hash] = b
	p.noteMade(b)
	return b
}

func (p *blockPool) evictOldest() {
	b := p.idleHead
	p.unlinkIdle(b)
	delete(p.cache, b.hash)
	p.noteEvicted(b)
}

func (p *blockPool) linkIdle(b *cachedBlock) {
	b.prev, b.next = p.idleTail, nil
	if p.idleTail != nil {
		p.idleTail.next = b
	} else {
		p.idleHead = b
	}
	p.idleTail = b
	p.idle += p.unit
}

func (p *blockPool) unlinkIdle(b *cachedBlock) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		p.idleHead = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		p.idleTail = b.prev
	}
	b.prev, b.next = nil, nil
	p.idle -= p.unit
}

// hashBlocks returns the chained hash of each full block of tokens: block i's hash covers
// tokens [0, (i+1) x blockSize), so equal hashes mean equal prefixes.
func hashBlocks(tokens []int, blockSize int) []uint64 {
	n := len(tokens) / blockSize
	hashes := make([]uint64, n)
	h := uint64(14695981039346656037)
	for i := 0; i < n; i++ {
		for _, t := range tokens[i*blockSize : (i+1)*blockSize] {
			h ^= uint64(t)
			h *= 1099511628211
		}
		hashes[i] = h
	}
	return hashes
}
