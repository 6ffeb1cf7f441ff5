package loadgen

import (
	"strings"
)

// TracePromptConfig says how trace entries become prompts.
type TracePromptConfig struct {
	// BlockSize is the tokens per hash id (0 means DefaultTraceBlockSize); use the reader's.
	BlockSize int
	// IgnoreEOS asks the server for exactly the trace's output length (vLLM's ignore_eos), for
	// entries that give one.
	IgnoreEOS bool
	Seed      int64
}

// TracePrompts builds prompts of a trace entry's exact input length from a calibrated
// vocabulary (one token per word). An entry with hash ids gets one block of words per id, the
// last block cut short so the prompt has input_length tokens with the vocabulary's overhead:
// equal ids give equal blocks wherever they appear, so the server's prefix cache sees the
// sharing production saw. An entry without hash ids (BurstGPT) gets random words of its own,
// shared with no other prompt. Prompt is a pure function of (seed, index, entry) and safe for
// concurrent use.
type TracePrompts struct {
	vocab  *Vocab
	cfg    TracePromptConfig
	digits int
}

// NewTracePrompts builds prompts from v.
func NewTracePrompts(v *Vocab, cfg TracePromptConfig) *TracePrompts {
	if cfg.BlockSize <= 0 {
		cfg.BlockSize = DefaultTraceBlockSize
	}
	// A block starts with its hash id written in base len(Words), least significant digit
	// first, in as many words as ids below 2^32 need: different ids differ within those first
	// words (in the first word unless they are equal modulo len(Words)), so the server block
	// that holds the boundary differs and prefix hits stop exactly at the last shared block.
	digits, span := 1, uint64(len(v.Words))
	for span < 1<<32 {
		span *= uint64(len(v.Words))
		digits++
	}
	return &TracePrompts{vocab: v, cfg: cfg, digits: min(digits, cfg.BlockSize)}
}

// BlockSize is the tokens per hash id.
func (p *TracePrompts) BlockSize() int { return p.cfg.BlockSize }

// Prompt returns the prompt for the index-th entry of a replay.
func (p *TracePrompts) Prompt(index int, e TraceEntry) Prompt {
	out := Prompt{OutputTokens: e.OutputLen, IgnoreEOS: p.cfg.IgnoreEOS && e.OutputLen > 0}
	if e.Text != "" {
		out.Text, out.InputTokens = e.Text, max(1, (len(e.Text)+3)/4)
		return out
	}
	words := max(1, e.InputLen-p.vocab.Overhead)
	var b strings.Builder
	b.Grow(words * 7)
	// Words no hash id names are random, from a key of their own per index.
	key := splitmix(splitmix(uint64(p.cfg.Seed)^0x7ace) ^ uint64(index))
	if len(e.HashIDs) == 0 {
		for j := 0; j < words; j++ {
			p.word(&b, splitmix(key^uint64(j)))
		}
	} else {
		bs := p.cfg.BlockSize
		for k, id := range e.HashIDs {
			n := min(bs, words-k*bs)
			if n <= 0 {
				break
			}
			p.block(&b, id, n)
		}
		// Hash ids that cover fewer tokens than input_length (a lenient reader): pad at random.
		for j := len(e.HashIDs) * bs; j < words; j++ {
			p.word(&b, splitmix(key^uint64(j)))
		}
	}
	out.Text = b.String()
	out.InputTokens = words + p.vocab.Overhead
	return out
}

// block writes the first n words of the block hash id id names.
func (p *TracePrompts) block(b *strings.Builder, id int64, n int) {
	v := uint64(len(p.vocab.Words))
	u := uint64(id)
	key := splitmix(uint64(p.cfg.Seed) ^ splitmix(uint64(id)))
	for j := 0; j < n; j++ {
		if j < p.digits {
			p.wordAt(b, int(u%v))
			u /= v
			continue
		}
		p.word(b, splitmix(key^uint64(j)))
	}
}

func (p *TracePrompts) word(b *strings.Builder, r uint64) {
	p.wordAt(b, int(r%uint64(len(p.vocab.Words))))
}

func (p *TracePrompts) wordAt(b *strings.Builder, i int) {
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString(p.vocab.Words[i])
}

// splitmix is SplitMix64's finaliser: a cheap, well-mixed hash of one word.
func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}
