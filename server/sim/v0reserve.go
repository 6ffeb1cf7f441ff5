package sim

import "sort"

// Before 0.6.4 the V0 worker took the profile run's peak as the device's free memory after it
// (torch.cuda.mem_get_info), so it counted what PyTorch's caching allocator had reserved, not
// the peak of live tensors: a freed block is reused only by a tensor that fits in it, so a
// layer whose tensors outgrow the blocks the layer before freed takes new segments beside them.
// v0ReservedForward replays the profile forward's allocations through a model of the
// allocator and returns what it leaves reserved (docs/calibration.md#v0-reserved-memory).

const (
	allocRound      = 512     // every request is rounded up to 512 bytes
	allocSmallSize  = 1 << 20 // requests up to 1 MiB come from the small pool's 2 MiB segments
	allocSmallSeg   = 2 << 20
	allocMinLarge   = 10 << 20 // requests under 10 MiB get a 20 MiB segment
	allocLargeSeg   = 20 << 20
	allocLargeRound = 2 << 20 // larger ones a segment of their size, rounded up to 2 MiB
)

// allocBlock is a piece of a segment, free or in use; prev and next are its neighbours in the
// segment, with which a freed block merges.
type allocBlock struct {
	size       int64
	small      bool
	free       bool
	prev, next *allocBlock
}

// cachingAllocator follows CUDACachingAllocator.cpp's rules for blocks without expandable
// segments: best fit among the cached free blocks of the request's pool, a split when more than
// 1 MiB (large pool) or 512 bytes (small pool) would be left, a new segment when nothing fits,
// and nothing given back to the device (the profile run calls empty_cache before, not after).
type cachingAllocator struct {
	free     []*allocBlock // sorted by size
	reserved int64
}

func (a *cachingAllocator) malloc(n int64) *allocBlock {
	size := max(allocRound, (n+allocRound-1)/allocRound*allocRound)
	small := size <= allocSmallSize
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].size >= size })
	for i < len(a.free) && a.free[i].small != small {
		i++
	}
	var b *allocBlock
	if i < len(a.free) {
		b = a.free[i]
		a.free = append(a.free[:i], a.free[i+1:]...)
	} else {
		seg := int64(allocSmallSeg)
		switch {
		case !small && size < allocMinLarge:
			seg = allocLargeSeg
		case !small:
			seg = (size + allocLargeRound - 1) / allocLargeRound * allocLargeRound
		}
		a.reserved += seg
		b = &allocBlock{size: seg, small: small}
	}
	rest := b.size - size
	if (small && rest >= allocRound) || (!small && rest > allocSmallSize) {
		tail := &allocBlock{size: rest, small: small, free: true, prev: b, next: b.next}
		if b.next != nil {
			b.next.prev = tail
		}
		b.next, b.size = tail, size
		a.insert(tail)
	}
	b.free = false
	return b
}

func (a *cachingAllocator) release(b *allocBlock) {
	b.free = true
	if p := b.prev; p != nil && p.free {
		a.remove(p)
		absorb(p, b)
		b = p
	}
	if n := b.next; n != nil && n.free {
		a.remove(n)
		absorb(b, n)
	}
	a.insert(b)
}

// absorb merges n, the block after b in their segment, into b.
func absorb(b, n *allocBlock) {
	b.size += n.size
	b.next = n.next
	if n.next != nil {
		n.next.prev = b
	}
}

func (a *cachingAllocator) insert(b *allocBlock) {
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].size >= b.size })
	a.free = append(a.free, nil)
	copy(a.free[i+1:], a.free[i:])
	a.free[i] = b
}

func (a *cachingAllocator) remove(b *allocBlock) {
	for i, f := range a.free {
		if f == b {
			a.free = append(a.free[:i], a.free[i+1:]...)
			return
		}
	}
}

// forwardTape replays a forward pass's activations: tensors of the batch's tokens times a
// width, in the model's dtype, allocated and freed in the order the model code does.
type forwardTape struct {
	alloc  cachingAllocator
	tokens float64
	bytes  float64 // per element
	// trace, where record is set, is the sequence of requests the allocator saw, for replaying it
	// through PyTorch's own allocator (docs/measurements/v0-allocator); live names each block's
	// tensor in it.
	record bool
	trace  []tapeEvent
	live   map[*allocBlock]int
}

// tapeEvent is one request of a recorded tape: tensor ID allocated with Bytes, or freed.
type tapeEvent struct {
	Free  bool  `json:"free,omitempty"`
	ID    int   `json:"id"`
	Bytes int64 `json:"bytes,omitempty"`
}

// tensor allocates tokens x width elements; fixed allocates n bytes whatever the batch.
func (t *forwardTape) tensor(width float64) *allocBlock { return t.fixed(t.tokens * width * t.bytes) }

func (t *forwardTape) fixed(n float64) *allocBlock {
	b := t.alloc.malloc(int64(n))
	if t.record {
		if t.live == nil {
			t.live = map[*allocBlock]int{}
		}
		id := len(t.trace)
		t.live[b] = id
		t.trace = append(t.trace, tapeEvent{ID: id, Bytes: int64(n)})
	}
	return b
}

func (t *forwardTape) drop(bs ...*allocBlock) {
	for _, b := range bs {
		if t.record {
			t.trace = append(t.trace, tapeEvent{Free: true, ID: t.live[b]})
			delete(t.live, b)
		}
		t.alloc.release(b)
	}
}
