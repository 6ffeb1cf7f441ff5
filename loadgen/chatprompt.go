package loadgen

import "context"

// bareTokenizer is a Tokenizer that can also count a prompt in its bare form, the completions
// API's (the tokenizer's special tokens, no chat template), when its own form is a chat
// message.
type bareTokenizer interface {
	ChatForm() bool
	BarePromptTokens(ctx context.Context, text string) (int, error)
}

// ChatForm reports whether the client's prompts are chat messages.
func (c *Client) ChatForm() bool { return c.chat }

// BarePromptTokens asks the server's /tokenize how many tokens text counts as a completions
// prompt, special tokens included.
func (c *Client) BarePromptTokens(ctx context.Context, text string) (int, error) {
	var count struct {
		Count int `json:"count"`
	}
	_, err := c.postJSON(ctx, "/tokenize", map[string]any{"model": c.cfg.Model, "prompt": text}, &count)
	return count.Count, err
}

// calibrateTemplate sets v.Template: the tokens a chat message's template adds beyond the
// bare prompt's special tokens (n: the chat count of words tokens). vLLM's random dataset
// takes only the special tokens off its input length and lets the server's template come on
// top, so a chat prompt counts that many tokens more than a completions one.
func calibrateTemplate(ctx context.Context, t Tokenizer, v *Vocab, text string, words, n int) error {
	bt, ok := t.(bareTokenizer)
	if !ok || !bt.ChatForm() {
		return nil
	}
	bare, err := bt.BarePromptTokens(ctx, text)
	if err != nil {
		return err
	}
	v.Template = max(0, n-max(bare, words))
	return nil
}
