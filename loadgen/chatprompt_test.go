package loadgen

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTokenizer counts one token a word, BOS on a bare prompt, and a chat template of 30
// tokens (its own BOS among them) on a chat message.
type fakeTokenizer struct{ chat bool }

func (fakeTokenizer) TokenStrings(_ context.Context, text string) ([]string, error) {
	var out []string
	for _, w := range strings.Fields(text) {
		out = append(out, " "+w)
	}
	return out, nil
}

func (f fakeTokenizer) PromptTokens(ctx context.Context, text string) (int, error) {
	if f.chat {
		return len(strings.Fields(text)) + 30, nil
	}
	return f.BarePromptTokens(ctx, text)
}

func (f fakeTokenizer) ChatForm() bool { return f.chat }

func (fakeTokenizer) BarePromptTokens(_ context.Context, text string) (int, error) {
	return len(strings.Fields(text)) + 1, nil
}

// vLLM's random dataset takes the tokenizer's special tokens off --random-input-len and sends
// the rest as the user message, the server's chat template on top of it.
func TestRandomChatPromptsCarryTheTemplateOnTop(t *testing.T) {
	for _, tc := range []struct {
		chat          bool
		words, counts int
	}{{false, 99, 100}, {true, 99, 129}} {
		v, err := CalibrateVocab(context.Background(), fakeTokenizer{tc.chat})
		require.NoError(t, err)
		w, err := NewRandom(RandomConfig{InputLen: 100, OutputLen: 8, PrefixLen: 4}, v)
		require.NoError(t, err)
		p := w.Prompt(3)
		assert.Equal(t, 4+tc.words, len(strings.Fields(p.Text)), "chat %v: prefix and input words", tc.chat)
		assert.Equal(t, 4+tc.counts, p.InputTokens, "chat %v: what the server counts", tc.chat)
	}
}
