package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTokenizeRule(t *testing.T) {
	cases := []struct {
		text   string
		pieces []string
	}{
		{"Hello, world!", []string{"Hello", ",", " world", "!"}},
		{"The year 20261130 ends", []string{"The", " year", " 202", "611", "30", " ends"}},
		{"internationalization", []string{"intern", "ationa", "lizati", "on"}},
		{"a  b\n", []string{"a", " ", " b", "\n"}},
		{"", nil},
		{"naïve café", []string{"naïve", " café"}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.pieces, TokenStrings(tc.text), "%q", tc.text)
		assert.Equal(t, len(tc.pieces), CountTokens(tc.text))
		assert.Len(t, Tokenize(tc.text), len(tc.pieces))
		assert.Equal(t, tc.text, strings.Join(tc.pieces, ""), "pieces cover the text")
	}
}

func TestTokenizeIsStableAndPrefixPreserving(t *testing.T) {
	a := Tokenize("Explain continuous batching in vLLM. Then explain paged attention.")
	b := Tokenize("Explain continuous batching in vLLM. Then explain paged attention.")
	assert.Equal(t, a, b)
	c := Tokenize("Explain continuous batching in vLLM. Then explain prefix caching.")
	assert.Equal(t, a[:10], c[:10], "a shared prefix gives shared ids")
	// Roughly 0.75 words per token on English prose, as a BPE tokenizer gives.
	prose := strings.Repeat("The scheduler admits waiting requests while the token budget lasts and preempts the newest one when blocks run out. ", 20)
	words := len(strings.Fields(prose))
	ratio := float64(words) / float64(CountTokens(prose))
	assert.InDelta(t, 0.75, ratio, 0.12)
}

func TestDetokenizeGeneratedWords(t *testing.T) {
	ids := []int{wordBase, wordBase + 1, wordBase + len(outputWords) - 3}
	assert.Equal(t, " the of.", Detokenize(ids))
	assert.Equal(t, " <42>", TokenText(42))
	for _, id := range Tokenize("any prompt text") {
		assert.GreaterOrEqual(t, id, wordBase+len(outputWords), "prompt ids never collide with generated words")
	}
}
