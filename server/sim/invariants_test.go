package sim

import (
	"testing"

	"github.com/vllmtop/vllmtop/internal/base/hostileseed"
)

// checkPool verifies the block accounting: every block in use is held by a live request
// (privately or through a cached block with holders), and use never exceeds capacity.
func checkPool(t *testing.T, e *Engine, live map[*Sequence]bool) {
	t.Helper()
	p := e.pool
	if p.used < 0 || p.used > p.capacity || p.used+p.idle > p.capacity {
		t.Fatalf("pool out of bounds: used %d idle %d capacity %d", p.used, p.idle, p.capacity)
	}
	private := 0
	refs := map[*cachedBlock]int{}
	for s := range live {
		if s.Finished() {
			continue
		}
		private += s.blocks - len(s.cached)
		for _, b := range s.cached {
			refs[b]++
		}
		if s.blocks < len(s.cached) {
			t.Fatalf("request holds %d blocks but %d cached ones", s.blocks, len(s.cached))
		}
	}
	for b, n := range refs {
		if b.refs != n {
			t.Fatalf("cached block has %d refs, %d holders", b.refs, n)
		}
	}
	if got := private + len(refs); got != p.used {
		t.Fatalf("pool says %d used, requests hold %d", p.used, got)
	}
}

// FuzzEngineInvariants runs any sequence of arrivals, aborts and steps: blocks used never
// exceed the total, every request ends (finished or aborted) exactly once, and a request that
// finishes emitted exactly its output length.
func FuzzEngineInvariants(f *testing.F) {
	for _, b := range hostileseed.Files(f, "traces") {
		f.Add(b[:min(len(b), 200)]) // arbitrary bytes as operations
	}
	f.Add([]byte{0, 10, 20, 0, 30, 5, 2, 2, 2, 1, 0, 2, 2, 2})
	f.Add([]byte{0, 255, 255, 0, 255, 255, 0, 255, 255, 2, 2, 2, 2, 1, 1, 2, 2})
	f.Add([]byte{0, 1, 1, 3, 0, 1, 1, 2, 1, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		cfg := Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", NumGPUBlocksOverride: 24, MaxModelLen: 256,
			MaxNumBatchedTokens: 64, MaxNumSeqs: 6, Seed: 3}
		if len(ops) > 0 && ops[0]%2 == 1 {
			cfg.PrefixCaching = Off
		}
		s, err := Resolve(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		e := NewEngine(s)
		now := t0
		live := map[*Sequence]bool{}
		var order []*Sequence
		ended := map[*Sequence]int{}
		emitted := map[*Sequence]int{}
		step := func() {
			r := e.Step(now)
			if r.Idle {
				if !r.NextReady.IsZero() {
					now = r.NextReady
				}
				return
			}
			now = r.End
			for _, o := range r.Outputs {
				if o.Seq.state == stateDone && !o.Finished {
					t.Fatal("output from a finished request")
				}
				if o.Index != emitted[o.Seq] {
					t.Fatalf("output index %d, want %d", o.Index, emitted[o.Seq])
				}
				emitted[o.Seq]++
				if o.Finished {
					ended[o.Seq]++
				}
			}
			checkPool(t, e, live)
		}
		for i := 0; i+2 < len(ops); i += 3 {
			switch ops[i] % 4 {
			case 0: // arrival: prompt of 1..200 tokens, some sharing a prefix
				n := 1 + int(ops[i+1])%200
				prompt := fixedPrompt(n, int(ops[i+2])%3)
				seq, err := e.Add(Request{Prompt: prompt, MaxTokens: 1 + int(ops[i+2])%50, IgnoreEOS: ops[i+2]%2 == 0, Arrival: now})
				if err == nil {
					live[seq] = true
					order = append(order, seq)
				}
			case 1: // abort one
				if len(order) > 0 {
					seq := order[int(ops[i+1])%len(order)]
					if e.Abort(seq, now) {
						ended[seq]++
					}
					checkPool(t, e, live)
				}
			default:
				for k := 0; k < 1+int(ops[i+1])%4; k++ {
					step()
				}
			}
		}
		for guard := 0; e.HasWork(); guard++ {
			if guard > 100000 {
				t.Fatal("engine does not drain")
			}
			step()
		}
		for _, seq := range order {
			if ended[seq] != 1 {
				t.Fatalf("request ended %d times", ended[seq])
			}
			if seq.Reason != FinishAbort {
				if emitted[seq] != seq.target || seq.Outputs != seq.target {
					t.Fatalf("emitted %d (Outputs %d), want %d", emitted[seq], seq.Outputs, seq.target)
				}
			} else if emitted[seq] != seq.Outputs {
				t.Fatalf("aborted request emitted %d, counted %d", emitted[seq], seq.Outputs)
			}
		}
		if e.pool.used != 0 {
			t.Fatalf("%d blocks still used after all requests ended", e.pool.used)
		}
	})
}
