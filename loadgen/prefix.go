package loadgen

import (
	"math/rand/v2"
	"strings"
)

// DefaultSharedPrefixLen is the system prompt the prefix-caching demo shares, in tokens.
const DefaultSharedPrefixLen = 1024

// prefixed adds n tokens before each prompt of w: the same n for every request (a shared
// system prompt, which a server's prefix cache computes once), or, with shared false, n of
// the request's own, so that both send the same number of tokens and differ only in what the
// cache can reuse. A chat endpoint gets them as a system message.
type prefixed struct {
	w      Workload
	vocab  *Vocab
	n      int
	shared bool
	seed   int64
	system string // the shared prefix
}

func newPrefixed(w Workload, v *Vocab, n int, shared bool, seed int64) *prefixed {
	p := &prefixed{w: w, vocab: v, n: n, shared: shared, seed: seed}
	p.system = randomText(v, rand.New(rand.NewPCG(uint64(seed), 0x5a5e)), n)
	return p
}

// Name is w's with "prefix on" or "prefix off".
func (p *prefixed) Name() string {
	if p.shared {
		return p.w.Name() + ", prefix on"
	}
	return p.w.Name() + ", prefix off"
}

func (p *prefixed) Prompt(i int) Prompt {
	q := p.w.Prompt(i)
	system := p.system
	if !p.shared {
		system = randomText(p.vocab, rand.New(rand.NewPCG(uint64(p.seed)^0x0417, uint64(i)+1)), p.n)
	}
	user := q.Text
	q.Text = system + " " + user
	q.InputTokens += p.n
	q.Messages = []ChatMessage{{Role: "system", Content: system}, {Role: "user", Content: user}}
	return q
}

// SplitPrefixName splits a workload name of the prefix demo into the workload's and "prefix
// on" or "prefix off" ("" for other names).
func SplitPrefixName(name string) (base, prefix string) {
	for _, s := range []string{"prefix on", "prefix off"} {
		if b, ok := strings.CutSuffix(name, ", "+s); ok {
			return b, s
		}
	}
	return name, ""
}
