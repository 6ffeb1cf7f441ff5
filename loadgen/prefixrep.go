package loadgen

import (
	"fmt"
	"math/rand/v2"
)

// PrefixRepetitionConfig is vllm bench serve's prefix_repetition dataset:
// --prefix-repetition-prefix-len, -suffix-len, -num-prefixes and -output-len.
type PrefixRepetitionConfig struct {
	PrefixLen, SuffixLen, NumPrefixes, OutputLen int
}

func (c PrefixRepetitionConfig) check(numPrompts int) error {
	switch {
	case c.PrefixLen < 0 || c.SuffixLen < 0 || c.PrefixLen+c.SuffixLen < 1:
		return fmt.Errorf("--prefix-repetition-prefix-len and -suffix-len must not be negative, and not both 0")
	case c.NumPrefixes < 1:
		return fmt.Errorf("--prefix-repetition-num-prefixes must be at least 1")
	case c.OutputLen < 1:
		return fmt.Errorf("--prefix-repetition-output-len must be at least 1")
	case numPrompts > 0 && numPrompts < c.NumPrefixes:
		return fmt.Errorf("--num-prompts (%d) must be at least --prefix-repetition-num-prefixes (%d)", numPrompts, c.NumPrefixes)
	}
	return nil
}

// prefixRepetition is NumPrefixes random prefixes, each shared by num_prompts/NumPrefixes
// prompts (the first num_prompts%NumPrefixes prefixes by one more) with a random suffix of
// their own, in shuffled order, as vLLM's PrefixRepetitionRandomDataset builds them.
type prefixRepetition struct {
	cfg       PrefixRepetitionConfig
	vocab     *Vocab
	seed      int64
	group     []int // the prefix of each prompt, in sending order
	suffix    []int // the prompt's key for its suffix
	ignoreEOS bool
}

func newPrefixRepetition(cfg PrefixRepetitionConfig, numPrompts int, v *Vocab, seed int64, shuffle bool) *prefixRepetition {
	n := numPrompts
	if n <= 0 {
		n = cfg.NumPrefixes * 100 // bound by --duration: cycle a long list
	}
	if n > MaxScaledArrivals {
		// More prompts than a list should hold (16 bytes each): cycle one of whole rounds of the
		// prefixes, each pass with new suffixes (Prompt), as a --duration run does.
		n = max(cfg.NumPrefixes, MaxScaledArrivals/cfg.NumPrefixes*cfg.NumPrefixes)
	}
	p := &prefixRepetition{cfg: cfg, vocab: v, seed: seed}
	per, rest := n/cfg.NumPrefixes, n%cfg.NumPrefixes
	for g := range cfg.NumPrefixes {
		for range per + btoi(g < rest) {
			p.group = append(p.group, g)
		}
	}
	p.suffix = make([]int, n)
	for i := range p.suffix {
		p.suffix[i] = i
	}
	if shuffle {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x9e9))
		rng.Shuffle(n, func(i, j int) {
			p.group[i], p.group[j] = p.group[j], p.group[i]
			p.suffix[i], p.suffix[j] = p.suffix[j], p.suffix[i]
		})
	}
	return p
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *prefixRepetition) Name() string {
	c := p.cfg
	return fmt.Sprintf("prefix_repetition %d prefixes of %d + %d tokens / %d out", c.NumPrefixes, c.PrefixLen, c.SuffixLen, c.OutputLen)
}

// Prompt is the i-th prompt: its group's prefix, then its own suffix; vLLM counts
// prefix + suffix tokens and the server adds its special tokens.
func (p *prefixRepetition) Prompt(i int) Prompt {
	k := i % len(p.group)
	prefix := randomText(p.vocab, rand.New(rand.NewPCG(uint64(p.seed), 0x9e9000+uint64(p.group[k]))), p.cfg.PrefixLen)
	suffix := randomText(p.vocab, rand.New(rand.NewPCG(uint64(p.seed)^0x5f, uint64(p.suffix[k])+uint64(i/len(p.group))<<32)), p.cfg.SuffixLen)
	text := prefix
	if prefix != "" && suffix != "" {
		text += " "
	}
	text += suffix
	return Prompt{Text: text, InputTokens: p.cfg.PrefixLen + p.cfg.SuffixLen + p.vocab.Overhead, OutputTokens: p.cfg.OutputLen, IgnoreEOS: p.ignoreEOS}
}
