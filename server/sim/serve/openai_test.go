package serve

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOfficialOpenAIClientStreams checks the simulator against a client written elsewhere:
// the official OpenAI Go SDK streams a chat completion and a completion.
func TestOfficialOpenAIClientStreams(t *testing.T) {
	s := startServer(t, "--api-key", "test-key")
	client := openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
	ctx := context.Background()

	chat := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "Qwen/Qwen3-0.6B",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say something about KV caches.")},
		MaxTokens:     openai.Int(20),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithJSONSet("ignore_eos", true))
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for chat.Next() {
		acc.AddChunk(chat.Current())
		chunks++
	}
	require.NoError(t, chat.Err())
	assert.Equal(t, 22, chunks, "role chunk, 20 tokens, usage chunk")
	require.Len(t, acc.Choices, 1)
	assert.NotEmpty(t, acc.Choices[0].Message.Content)
	assert.Equal(t, "length", acc.Choices[0].FinishReason)
	assert.EqualValues(t, 20, acc.Usage.CompletionTokens)
	assert.Positive(t, acc.Usage.PromptTokens)

	comp := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model:         openai.CompletionNewParamsModel("Qwen/Qwen3-0.6B"),
		Prompt:        openai.CompletionNewParamsPromptUnion{OfString: openai.String("The scheduler")},
		MaxTokens:     openai.Int(8),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithJSONSet("ignore_eos", true))
	text, finish := "", ""
	var completionTokens int64
	for comp.Next() {
		c := comp.Current()
		for _, ch := range c.Choices {
			text += ch.Text
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
		if c.Usage.CompletionTokens > 0 {
			completionTokens = c.Usage.CompletionTokens
		}
	}
	require.NoError(t, comp.Err())
	assert.NotEmpty(t, text)
	assert.Equal(t, "length", finish)
	assert.EqualValues(t, 8, completionTokens)

	// A wrong key fails. vLLM's 401 body is {"error":"Unauthorized"} (a string, not the
	// OpenAI error object), which the SDK reports as a decoding error, as it does for real vLLM.
	bad := openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	_, err := bad.Models.List(ctx)
	require.Error(t, err)
}
