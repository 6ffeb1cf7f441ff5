package recorder

import (
	"sync"

	"github.com/vllmtop/vllmtop/internal/base/untrusted"
	"github.com/vllmtop/vllmtop/loadgen"
)

// DefaultMaxResults is how many client results a Results keeps: minutes of a load at a
// few dozen requests a second, a few MB.
const DefaultMaxResults = 20_000

// Results keeps the client's most recent request results for a bundle, at most max of
// them, each without its inter-token latencies (a long stream's would be unbounded) and
// with its error message cut to a display line. Add fits loadgen's sinks; it is safe for
// concurrent use.
type Results struct {
	mu   sync.Mutex
	buf  []loadgen.Result
	next int // where the next result goes once buf is full
	max  int
}

// NewResults keeps at most max results (DefaultMaxResults when max ≤ 0).
func NewResults(max int) *Results {
	if max <= 0 {
		max = DefaultMaxResults
	}
	return &Results{max: max}
}

// Add keeps r, dropping the oldest past the cap.
func (k *Results) Add(r loadgen.Result) {
	r.ITLs = nil
	if len(r.ErrorMessage) > untrusted.MaxText {
		r.ErrorMessage = untrusted.Text(r.ErrorMessage)
	}
	r.FinishReason = untrusted.Text(r.FinishReason)
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.buf) < k.max {
		k.buf = append(k.buf, r)
		return
	}
	k.buf[k.next] = r
	k.next = (k.next + 1) % k.max
}

// Snapshot copies the kept results, oldest first; none from a nil Results.
func (k *Results) Snapshot() []loadgen.Result {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]loadgen.Result, 0, len(k.buf))
	out = append(out, k.buf[k.next:]...)
	return append(out, k.buf[:k.next]...)
}
