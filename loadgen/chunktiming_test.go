package loadgen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// vLLM's client times every chunk with a choice: a chat stream's role chunk is its first token
// and the finish chunk's empty delta one more gap; its latency ends at the last such chunk, not
// at the usage chunk or [DONE] after it.
func TestEveryChunkWithAChoiceIsTimed(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	res := Result{Start: t0}
	st := &stream{res: &res, timer: NewRequestTimer(&res, 10, nil), maxTokens: 10, maxChunks: maxChunks(10)}
	events := []struct {
		data string
		at   time.Time
	}{
		{`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, ms(100)},
		{`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`, ms(110)},
		{`{"choices":[{"index":0,"delta":{"reasoning_content":"b"},"finish_reason":null}]}`, ms(130)},
		{`{"choices":[{"index":0,"delta":{"content":"c"},"finish_reason":null}]}`, ms(140)},
		{`{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}`, ms(150)},
		{`{"choices":[],"usage":{"prompt_tokens":5,"total_tokens":8,"completion_tokens":3}}`, ms(400)},
		{`[DONE]`, ms(500)},
	}
	for _, ev := range events {
		if !st.handle(Event{Data: []byte(ev.data)}, ev.at) {
			break
		}
	}
	st.finish()
	assert.Equal(t, ErrNone, res.Error, res.ErrorMessage)
	assert.Equal(t, 100*time.Millisecond, res.TTFT, "the role chunk")
	ms4 := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}
	assert.Equal(t, ms4, res.ITLs, "a gap before each later chunk with a choice, text or not")
	assert.Equal(t, 150*time.Millisecond, res.E2EL, "the finish chunk, not the usage or [DONE]")
	assert.Equal(t, 5, res.Chunks)
	assert.Equal(t, 3, res.OutputTokens, "the usage's count")
	assert.Equal(t, 5, res.PromptTokens)
}

// A stream whose chunks carry no text at all is still no output here (vLLM's client would call
// it a success with nothing generated).
func TestChunksWithoutTextAreNoOutput(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := Result{Start: t0}
	st := &stream{res: &res, timer: NewRequestTimer(&res, 10, nil), maxTokens: 10, maxChunks: maxChunks(10)}
	st.handle(Event{Data: []byte(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)}, t0.Add(time.Millisecond))
	st.handle(Event{Data: []byte(`{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}`)}, t0.Add(2*time.Millisecond))
	st.handle(Event{Data: []byte(`[DONE]`)}, t0.Add(3*time.Millisecond))
	st.finish()
	assert.Equal(t, ErrNoTokens, res.Error)
}
