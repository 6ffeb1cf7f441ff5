package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSyntheticConversationsHaveExactLengths(t *testing.T) {
	v := &Vocab{Words: EstimatedVocab().Words, Overhead: 1}
	s, err := NewSyntheticConversations(SyntheticConversationConfig{Turns: 4, InputLen: 100, OutputLen: 30, RangeRatio: 0.2, SystemLen: 256, PrefixLen: 500, Seed: 7}, v)
	require.NoError(t, err)
	c := s.Conversation(3)
	require.Len(t, c.Turns, 4)
	assert.Len(t, strings.Fields(c.System), 256)
	assert.Equal(t, 256, c.SystemTokens)
	assert.InDelta(t, 600, c.Turns[0].UserTokens, 20, "the first message starts with the conversation's own prefix")
	for k, turn := range c.Turns {
		assert.Len(t, strings.Fields(turn.User), turn.UserTokens)
		if k > 0 {
			assert.InDelta(t, 100, turn.UserTokens, 20)
		}
		assert.InDelta(t, 30, turn.AnswerTokens, 6)
		assert.Empty(t, turn.Recorded)
	}
	assert.Equal(t, c, s.Conversation(3), "a pure function of the index")
	other := s.Conversation(4)
	assert.Equal(t, c.System, other.System, "the system prompt is shared: the cross-conversation prefix")
	assert.NotEqual(t, c.Turns[0].User, other.Turns[0].User)

	for _, bad := range []SyntheticConversationConfig{
		{Turns: 0, InputLen: 1, OutputLen: 1},
		{Turns: 1, InputLen: 0, OutputLen: 1},
		{Turns: 1, InputLen: 1, OutputLen: 1, RangeRatio: 1},
		{Turns: 1, InputLen: 1, OutputLen: 1, SystemLen: -1},
		{Turns: 1, InputLen: 1, OutputLen: 1, PrefixLen: -1},
	} {
		_, err := NewSyntheticConversations(bad, v)
		assert.Error(t, err, "%+v", bad)
	}
}

func TestShareGPTConversationsKeepWholeConversations(t *testing.T) {
	path := "../testdata/sharegpt-conversations.json"
	g, err := LoadShareGPTConversations(path, ShareGPTConversationConfig{Seed: 1})
	require.NoError(t, err)
	byID := map[string]*Conversation{}
	for i := range g.Len() {
		c := g.Conversation(i)
		byID[c.ID] = c
	}
	turns := map[string]int{}
	for id, c := range byID {
		turns[id] = len(c.Turns)
	}
	assert.Equal(t, map[string]int{"a1b2C3d_0": 3, "Zq9xYw1_1": 1, "sys0001_0": 2, "order01_0": 1, "trail01_0": 1}, turns)
	a := byID["a1b2C3d_0"]
	assert.Equal(t, "And if some lines are malformed?", a.Turns[1].User)
	assert.Equal(t, "Read the header first and build a map from name to index.", a.Turns[2].Recorded)
	assert.Equal(t, (len(a.Turns[2].Recorded)+3)/4, a.Turns[2].AnswerTokens, "the recorded answer's length, 4 characters a token")
	assert.Equal(t, "So what should I set max-num-seqs to?", byID["Zq9xYw1_1"].Turns[0].User, "a leading answer is skipped")
	sys := byID["sys0001_0"]
	assert.Equal(t, "You are a terse assistant.", sys.System)
	assert.Equal(t, "7, 11, 13.", sys.Turns[1].Recorded, "chatgpt is the assistant")
	assert.Equal(t, g.Conversation(0), g.Conversation(g.Len()), "cycles")

	cases := []struct {
		name string
		cfg  ShareGPTConversationConfig
		want map[string]int
	}{
		{"min turns", ShareGPTConversationConfig{MinTurns: 2}, map[string]int{"a1b2C3d_0": 3, "sys0001_0": 2}},
		{"max turns", ShareGPTConversationConfig{MinTurns: 2, MaxTurns: 2}, map[string]int{"a1b2C3d_0": 2, "sys0001_0": 2}},
		{"context cap: 48 + 34 fit 90, the third turn would not", ShareGPTConversationConfig{MinTurns: 2, MaxContextTokens: 90}, map[string]int{"a1b2C3d_0": 2, "sys0001_0": 2}},
		{"fixed answers", ShareGPTConversationConfig{MinTurns: 3, OutputLen: 64}, map[string]int{"a1b2C3d_0": 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := LoadShareGPTConversations(path, tc.cfg)
			require.NoError(t, err)
			got := map[string]int{}
			for i := range g.Len() {
				c := g.Conversation(i)
				got[c.ID] = len(c.Turns)
				if tc.cfg.OutputLen > 0 {
					for _, turn := range c.Turns {
						assert.Equal(t, tc.cfg.OutputLen, turn.AnswerTokens)
					}
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestShareGPTConversationsSampleInOnePass(t *testing.T) {
	path := "../testdata/sharegpt-conversations.json"
	seen := map[string]bool{}
	for seed := range int64(20) {
		g, err := LoadShareGPTConversations(path, ShareGPTConversationConfig{Seed: seed, MaxConversations: 2})
		require.NoError(t, err)
		require.Equal(t, 2, g.Len())
		again, err := LoadShareGPTConversations(path, ShareGPTConversationConfig{Seed: seed, MaxConversations: 2})
		require.NoError(t, err)
		assert.Equal(t, g.Conversation(0).ID, again.Conversation(0).ID, "the seed decides")
		seen[g.Conversation(0).ID] = true
		seen[g.Conversation(1).ID] = true
	}
	assert.Len(t, seen, 5, "over 20 seeds every usable conversation gets drawn")
}

func TestShareGPTConversationErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	cases := []struct{ name, text, err string }{
		{"not JSON", "hello", "is not valid JSON (at byte 1)"},
		{"an object", `{"conversations": []}`, "want a JSON list"},
		{"cut short", `[{"id": "x", "conversations": [{"from": "human", "value": "hi"}`, "ends early"},
		{"wrong shape", `[{"id": 5}]`, "want a JSON list of {\"conversations\": [...]}"},
		{"nothing usable", `[{"id": "x", "conversations": [{"from": "human", "value": "hi"}]}]`, "has no usable conversations (1 read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadShareGPTConversations(write(tc.name+".json", tc.text), ShareGPTConversationConfig{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
	_, err := LoadShareGPTConversations(filepath.Join(dir, "missing.json"), ShareGPTConversationConfig{})
	assert.ErrorContains(t, err, "ShareGPT dataset: open")
}

func TestDialogueGrowsTheHistoryTurnByTurn(t *testing.T) {
	v := &Vocab{Words: EstimatedVocab().Words, Overhead: 2}
	c := &Conversation{System: "be brief", SystemTokens: 2, Turns: []Turn{
		{User: "first question", UserTokens: 2, AnswerTokens: 5, Recorded: "recorded one"},
		{User: "second question", UserTokens: 2, AnswerTokens: 3, Recorded: "recorded two"},
		{User: "third", UserTokens: 1, AnswerTokens: 4},
	}}
	d := NewDialogue(c, 9, DialogueConfig{Vocab: v, IgnoreEOS: true})
	r1, ok := d.Next()
	require.True(t, ok)
	assert.Equal(t, 1, r1.Turn)
	assert.Equal(t, 9, r1.Conversation)
	assert.Equal(t, []ChatMessage{{"system", "be brief"}, {"user", "first question"}}, r1.Messages)
	assert.Equal(t, Prompt{Text: "be brief\n\nfirst question", InputTokens: 2 + 1 + 2 + 2, OutputTokens: 5, IgnoreEOS: true, Messages: r1.Messages}, r1.Prompt,
		"the prompt carries the chat form too, for a chat endpoint")
	again, _ := d.Next()
	assert.Equal(t, r1, again, "the same turn until answered")

	d.Answer("the server's answer", 5)
	r2, _ := d.Next()
	assert.Equal(t, 2, r2.Turn)
	assert.Equal(t, []ChatMessage{{"system", "be brief"}, {"user", "first question"}, {"assistant", "the server's answer"}, {"user", "second question"}}, r2.Messages)
	assert.Equal(t, "be brief\n\nfirst question\n\nthe server's answer\n\nsecond question", r2.Prompt.Text)
	assert.True(t, strings.HasPrefix(r2.Prompt.Text, r1.Prompt.Text), "each turn's prompt starts with the last one's: the prefix cache's hit")
	assert.Equal(t, 3, r2.Prompt.OutputTokens)

	d.Answer("", 3) // no text kept: a stand-in of the answer's length
	r3, _ := d.Next()
	standIn := r3.Messages[4].Content
	assert.Len(t, strings.Fields(standIn), 3)
	assert.True(t, strings.HasPrefix(r3.Prompt.Text, r2.Prompt.Text))
	d.Answer("last", 4)
	assert.True(t, d.Done())
	_, ok = d.Next()
	assert.False(t, ok)

	rec := NewDialogue(c, 9, DialogueConfig{Vocab: v, Answers: AnswerRecorded})
	rec.Answer("ignored", 5)
	r, _ := rec.Next()
	assert.Equal(t, "recorded one", r.Messages[2].Content)

	stand := NewDialogue(c, 9, DialogueConfig{Vocab: v, Answers: AnswerStandIn})
	stand.Answer("ignored", 7)
	r, _ = stand.Next()
	assert.Len(t, strings.Fields(r.Messages[2].Content), 7, "the length the server reported")
	stand2 := NewDialogue(c, 9, DialogueConfig{Vocab: v, Answers: AnswerStandIn})
	stand2.Answer("other", 7)
	r2b, _ := stand2.Next()
	assert.Equal(t, r.Messages[2].Content, r2b.Messages[2].Content, "stand-ins are the same for the same conversation and turn")
}

func TestConversationsWaitForAnswersAndThink(t *testing.T) {
	s, err := NewSyntheticConversations(SyntheticConversationConfig{Turns: 3, InputLen: 10, OutputLen: 4}, EstimatedVocab())
	require.NoError(t, err)
	load := func(think time.Duration) *ConversationLoad {
		return &ConversationLoad{Conversations: s, Count: 1, Dialogue: DialogueConfig{Vocab: EstimatedVocab()}, Think: ThinkTime{Mean: think}}
	}
	results, tr, err := replayOn(context.Background(), RunnerConfig{Conversations: load(2 * time.Second), Concurrency: 1}, 300*time.Millisecond)
	require.NoError(t, err)
	var sentAt []time.Duration
	for _, at := range tr.starts {
		sentAt = append(sentAt, at.Sub(replayT0))
	}
	assert.Equal(t, []time.Duration{0, 2300 * time.Millisecond, 4600 * time.Millisecond}, sentAt, "each turn a think time after the last answer")
	require.Len(t, results, 3)
	for i, r := range results {
		assert.Equal(t, i+1, r.Turn)
		assert.Equal(t, i, r.Index)
		assert.Equal(t, replayT0.Add(sentAt[i]), r.Intended)
	}

	clock := NewVirtualClock(replayT0)
	tr = &scripted{clock: clock, fail: ErrHTTP5xx}
	var rec Recorder
	cfg := RunnerConfig{Conversations: load(0), Concurrency: 1, Transport: tr, Clock: clock, Sinks: []func(Result){rec.Add}}
	require.NoError(t, NewRunner(nil, cfg).Run(context.Background()))
	assert.Len(t, tr.starts, 1, "a failed turn ends the conversation")
	assert.Equal(t, ErrHTTP5xx, rec.Results()[0].Error)

	ctx, cancel := context.WithCancel(context.Background())
	tr = &scripted{clock: clock, onSend: cancel}
	cfg.Transport = tr
	assert.ErrorIs(t, NewRunner(nil, cfg).Run(ctx), context.Canceled)
	assert.Len(t, tr.starts, 1, "nothing is sent once the context ends")
}

func TestThinkTimesVaryWithinTheirRange(t *testing.T) {
	th := ThinkTime{Mean: time.Second, RangeRatio: 0.5}
	seen := map[time.Duration]bool{}
	for turn := range 50 {
		d := th.draw(1, 3, turn)
		assert.GreaterOrEqual(t, d, 500*time.Millisecond)
		assert.LessOrEqual(t, d, 1500*time.Millisecond)
		seen[d] = true
	}
	assert.Greater(t, len(seen), 40)
	assert.Equal(t, th.draw(1, 3, 4), th.draw(1, 3, 4))
	assert.Equal(t, 2*time.Second, ThinkTime{Mean: 2 * time.Second}.draw(1, 2, 3))
}

func TestAnswerTextIsBounded(t *testing.T) {
	a := NewAnswerText(10)
	for _, s := range []string{"Hello", ", wor", "ld and more"} {
		a.Token(s, time.Time{})
	}
	assert.Equal(t, "Hello, wor", a.String())
	assert.True(t, a.Truncated())
	u := NewAnswerText(4)
	u.Token("añb", time.Time{})
	u.Token("ñ", time.Time{})
	assert.Equal(t, "añb", u.String(), "ñ is two bytes: it does not fit, and is not cut in half")
}

func TestSummarizeTurns(t *testing.T) {
	ms := time.Millisecond
	results := []Result{
		{Turn: 1, TTFT: 90 * ms, PromptTokens: 1100},
		{Turn: 1, TTFT: 110 * ms, PromptTokens: 1100},
		{Turn: 2, TTFT: 30 * ms, PromptTokens: 1200},
		{Turn: 3, TTFT: 40 * ms, PromptTokens: 1300},
		{Turn: 3, TTFT: 50 * ms, PromptTokens: 1300},
		{Turn: 2, Error: ErrHTTP5xx},
		{Turn: 0, TTFT: time.Second}, // not a conversation
		{Turn: 1, TTFT: time.Second, Warmup: true},
	}
	turns := SummarizeTurns(results, []float64{50})
	require.Len(t, turns, 3)
	assert.Equal(t, []int{1, 2, 3}, []int{turns[0].Turn, turns[1].Turn, turns[2].Turn})
	assert.Equal(t, 2, turns[0].Completed)
	assert.InDelta(t, 100, turns[0].TTFT.Median, 1e-9)
	assert.InDelta(t, 1100, turns[0].PromptTokens, 1e-9)
	assert.Equal(t, 1, turns[1].Completed, "failures are not measured")
	first, later := SummarizeTurnGroups(results, []float64{50})
	assert.Equal(t, 2, first.Completed)
	assert.Equal(t, 3, later.Completed)
	assert.InDelta(t, 40, later.TTFT.Median, 1e-9)
	assert.Less(t, later.TTFT.Median, first.TTFT.Median)
}
