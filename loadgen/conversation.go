package loadgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// ChatMessage is one message of a chat request, as /v1/chat/completions takes it.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Turn is one exchange of a conversation: what the user says and how long the answer is.
type Turn struct {
	User         string
	UserTokens   int // the message's length (estimated for a dataset's text)
	AnswerTokens int // the answer's target length: max_tokens
	// Recorded is the dataset's own answer ("" in synthetic conversations).
	Recorded string
}

// Conversation is a dialogue to replay turn by turn.
type Conversation struct {
	ID string
	// System is a system prompt sent first in every turn ("" for none).
	System       string
	SystemTokens int
	Turns        []Turn
}

// Conversations is a source of conversations: Conversation(i) is the i-th to play. It is a
// pure function of i and safe for concurrent use.
type Conversations interface {
	Conversation(i int) *Conversation
	Name() string
}

// SyntheticConversationConfig describes made-up conversations of given lengths.
type SyntheticConversationConfig struct {
	Turns     int // user turns per conversation
	InputLen  int // tokens of each user message
	OutputLen int // tokens of each answer
	// RangeRatio draws each length uniformly from [L(1-r), L(1+r)], as --random-range-ratio.
	RangeRatio float64
	// SystemLen is the length of a system prompt every conversation shares (0: none): the
	// prefix a server caches across conversations.
	SystemLen int
	// PrefixLen adds this many tokens, unique to the conversation, at the start of its first
	// message (vLLM's multi-turn prefix_num_tokens: a document the user asks about). Later
	// turns find it in the prefix cache.
	PrefixLen int
	Seed      int64
}

// SyntheticConversations makes conversations of random words of exact token lengths.
type SyntheticConversations struct {
	cfg    SyntheticConversationConfig
	vocab  *Vocab
	system string
}

// NewSyntheticConversations checks cfg.
func NewSyntheticConversations(cfg SyntheticConversationConfig, v *Vocab) (*SyntheticConversations, error) {
	if cfg.Turns < 1 {
		return nil, fmt.Errorf("a conversation needs at least 1 turn, got %d", cfg.Turns)
	}
	if cfg.InputLen < 1 || cfg.OutputLen < 1 {
		return nil, fmt.Errorf("turn input and output lengths must be at least 1 (got %d and %d)", cfg.InputLen, cfg.OutputLen)
	}
	if cfg.RangeRatio < 0 || cfg.RangeRatio >= 1 {
		return nil, fmt.Errorf("the range ratio must be in [0, 1), got %g", cfg.RangeRatio)
	}
	if cfg.SystemLen < 0 || cfg.PrefixLen < 0 {
		return nil, fmt.Errorf("prefix lengths must not be negative, got %d and %d", cfg.SystemLen, cfg.PrefixLen)
	}
	s := &SyntheticConversations{cfg: cfg, vocab: v}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5157))
	s.system = randomText(v, rng, cfg.SystemLen)
	return s, nil
}

// Name describes the conversations.
func (s *SyntheticConversations) Name() string {
	return fmt.Sprintf("conversations of %d turns, %d in / %d out", s.cfg.Turns, s.cfg.InputLen, s.cfg.OutputLen)
}

// Conversation returns the i-th conversation.
func (s *SyntheticConversations) Conversation(i int) *Conversation {
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(i)+1))
	c := &Conversation{ID: fmt.Sprintf("synthetic-%d", i), System: s.system, SystemTokens: s.cfg.SystemLen}
	for k := range s.cfg.Turns {
		in := max(1, uniformLen(rng, s.cfg.InputLen, s.cfg.RangeRatio))
		out := max(1, uniformLen(rng, s.cfg.OutputLen, s.cfg.RangeRatio))
		if k == 0 && s.cfg.PrefixLen > 0 {
			in += s.cfg.PrefixLen
		}
		c.Turns = append(c.Turns, Turn{User: randomText(s.vocab, rng, in), UserTokens: in, AnswerTokens: out})
	}
	return c
}

// randomText is n words of v, one token each.
func randomText(v *Vocab, rng *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n * 7)
	for j := 0; j < n; j++ {
		if j > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v.Words[rng.IntN(len(v.Words))])
	}
	return b.String()
}

// ShareGPTConversationConfig chooses the conversations kept from a ShareGPT file.
type ShareGPTConversationConfig struct {
	Seed int64
	// MaxConversations keeps this many, drawn uniformly in one pass (0: all). Only those
	// are held in memory.
	MaxConversations int
	MinTurns         int // drop conversations with fewer turns (0 means 1)
	MaxTurns         int // cut conversations after this many turns (0: no cut)
	// MaxContextTokens cuts a conversation before the turn whose history, message and
	// answer would not fit (the server's max_model_len; 0: no cut).
	MaxContextTokens int
	// OutputLen replaces every answer's recorded length (0: the recorded answer's).
	OutputLen int
	// Count estimates a text's tokens (nil: 4 characters a token).
	Count func(string) int
}

// ShareGPTConversations replays whole ShareGPT conversations.
type ShareGPTConversations struct {
	convs []*Conversation
	order []int
}

// shareGPTItem is one element of a ShareGPT file, as LoadShareGPT reads it.
type shareGPTItem struct {
	ID            string `json:"id"`
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// LoadShareGPTConversations reads a ShareGPT JSON file ([{"id": ..., "conversations":
// [{"from": "human", "value": ...}, {"from": "gpt", ...}, ...]}, ...]) one conversation at a
// time and keeps whole conversations. Roles map as vLLM's multi-turn benchmark maps them
// (human/user; gpt/chatgpt/bing/bard/assistant; a first system message); a leading answer is
// skipped; a conversation is cut at the first message out of turn, an empty one, or a user
// message with no answer.
func LoadShareGPTConversations(path string, cfg ShareGPTConversationConfig) (*ShareGPTConversations, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ShareGPT dataset: %w", err)
	}
	defer f.Close()
	if cfg.Count == nil {
		cfg.Count = func(s string) int { return max(1, (len(s)+3)/4) }
	}
	cfg.MinTurns = max(cfg.MinTurns, 1)
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc0117))
	dec := json.NewDecoder(f)
	badJSON := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("ShareGPT dataset %s is not valid JSON (at byte %d): %v", path, se.Offset, err)
		}
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("ShareGPT dataset %s ends early (at byte %d)", path, dec.InputOffset())
		}
		return fmt.Errorf("ShareGPT dataset %s: want a JSON list of {\"conversations\": [...]} (at byte %d): %s", path, dec.InputOffset(), jsonShape(err))
	}
	if tok, err := dec.Token(); err != nil {
		return nil, badJSON(err)
	} else if tok != json.Delim('[') {
		return nil, fmt.Errorf("ShareGPT dataset %s: want a JSON list of {\"conversations\": [...]}", path)
	}
	g := &ShareGPTConversations{}
	read, usable := 0, 0
	for dec.More() {
		var item shareGPTItem
		if err := dec.Decode(&item); err != nil {
			return nil, badJSON(err)
		}
		read++
		c := conversationOf(item, cfg)
		if len(c.Turns) < cfg.MinTurns {
			continue
		}
		// Reservoir sampling: every usable conversation is kept with the same chance.
		switch {
		case cfg.MaxConversations <= 0 || len(g.convs) < cfg.MaxConversations:
			g.convs = append(g.convs, c)
		default:
			if j := rng.IntN(usable + 1); j < cfg.MaxConversations {
				g.convs[j] = c
			}
		}
		usable++
	}
	if _, err := dec.Token(); err != nil {
		return nil, badJSON(err)
	}
	if len(g.convs) == 0 {
		return nil, fmt.Errorf("ShareGPT dataset %s has no usable conversations (%d read; each needs %d or more turns of a user message and an answer)", path, read, cfg.MinTurns)
	}
	g.order = rng.Perm(len(g.convs))
	return g, nil
}

// conversationOf turns one ShareGPT item into the turns it can replay.
func conversationOf(item shareGPTItem, cfg ShareGPTConversationConfig) *Conversation {
	c := &Conversation{ID: item.ID}
	msgs := item.Conversations
	if len(msgs) > 0 && shareGPTRole(msgs[0].From) == "system" {
		c.System, c.SystemTokens = msgs[0].Value, cfg.Count(msgs[0].Value)
		msgs = msgs[1:]
	}
	for len(msgs) > 0 && shareGPTRole(msgs[0].From) == "assistant" {
		msgs = msgs[1:] // the answer to a question from an earlier part
	}
	context := c.SystemTokens
	for len(msgs) >= 2 {
		user, answer := msgs[0], msgs[1]
		if shareGPTRole(user.From) != "user" || shareGPTRole(answer.From) != "assistant" || user.Value == "" || answer.Value == "" {
			break
		}
		t := Turn{User: user.Value, UserTokens: cfg.Count(user.Value), AnswerTokens: cfg.Count(answer.Value), Recorded: answer.Value}
		if cfg.OutputLen > 0 {
			t.AnswerTokens = cfg.OutputLen
		}
		if cfg.MaxContextTokens > 0 && context+t.UserTokens+t.AnswerTokens > cfg.MaxContextTokens {
			break
		}
		if cfg.MaxTurns > 0 && len(c.Turns) == cfg.MaxTurns {
			break
		}
		context += t.UserTokens + t.AnswerTokens
		c.Turns = append(c.Turns, t)
		msgs = msgs[2:]
	}
	return c
}

func shareGPTRole(from string) string {
	switch from {
	case "human", "user":
		return "user"
	case "gpt", "chatgpt", "bing", "bard", "assistant":
		return "assistant"
	case "system":
		return "system"
	}
	return ""
}

// Name describes the dataset.
func (g *ShareGPTConversations) Name() string {
	return fmt.Sprintf("sharegpt conversations (%d)", len(g.convs))
}

// Len is the number of conversations kept.
func (g *ShareGPTConversations) Len() int { return len(g.convs) }

// Conversation returns the i-th conversation in the shuffled order, cycling.
func (g *ShareGPTConversations) Conversation(i int) *Conversation {
	return g.convs[g.order[i%len(g.order)]]
}

// AnswerMode says what a turn's history holds for the earlier answers.
type AnswerMode int

const (
	// AnswerReceived: the answers the server gave (a stand-in where none was kept), as a
	// user's chat client resends them. The default.
	AnswerReceived AnswerMode = iota
	// AnswerRecorded: the dataset's answers (ShareGPT), stand-ins for synthetic turns.
	AnswerRecorded
	// AnswerStandIn: words of the answer's length, from the vocabulary.
	AnswerStandIn
)

func (m AnswerMode) String() string {
	switch m {
	case AnswerReceived:
		return "received"
	case AnswerRecorded:
		return "recorded"
	case AnswerStandIn:
		return "stand-in"
	}
	return fmt.Sprintf("AnswerMode(%d)", int(m))
}

// DialogueConfig says how a conversation's turns become requests.
type DialogueConfig struct {
	Vocab     *Vocab // stand-in answers, and the prompt form's overhead
	Answers   AnswerMode
	IgnoreEOS bool // each answer is exactly its target length
	Seed      int64
}

// TurnRequest is one turn to send, in both of vLLM's prompt forms.
type TurnRequest struct {
	Conversation int // the conversation's index
	Turn         int // 1-based
	// Messages is the chat form for /v1/chat/completions: the system prompt, the earlier
	// turns and their answers, then this turn's user message.
	Messages []ChatMessage
	// Prompt is the same as one text for /v1/completions (the messages' contents joined by
	// a blank line), with the turn's answer length; InputTokens is an estimate.
	Prompt Prompt
}

// messageSeparator joins the messages of the completions form.
const messageSeparator = "\n\n"

// Dialogue is one conversation being played: the history so far and the next turn. It is
// not safe for concurrent use (a conversation's turns are sequential by nature).
type Dialogue struct {
	conv    *Conversation
	index   int
	cfg     DialogueConfig
	next    int
	history []ChatMessage
	text    string // the history as the completions form
	tokens  int    // its estimated length, in tokens
}

// NewDialogue starts the index-th conversation c.
func NewDialogue(c *Conversation, index int, cfg DialogueConfig) *Dialogue {
	d := &Dialogue{conv: c, index: index, cfg: cfg}
	if c.System != "" {
		d.history = []ChatMessage{{Role: "system", Content: c.System}}
		d.text, d.tokens = c.System, c.SystemTokens
	}
	return d
}

// Done reports whether every turn has been answered.
func (d *Dialogue) Done() bool { return d.next >= len(d.conv.Turns) }

// Next returns the request for the next turn; false when the conversation is over. It
// returns the same turn until Answer is called.
func (d *Dialogue) Next() (TurnRequest, bool) {
	if d.Done() {
		return TurnRequest{}, false
	}
	t := d.conv.Turns[d.next]
	msgs := make([]ChatMessage, len(d.history), len(d.history)+1)
	copy(msgs, d.history)
	msgs = append(msgs, ChatMessage{Role: "user", Content: t.User})
	text, tokens := t.User, t.UserTokens
	if d.text != "" {
		text = d.text + messageSeparator + t.User
		tokens += d.tokens + 1
	}
	overhead := 0
	if d.cfg.Vocab != nil {
		overhead = d.cfg.Vocab.Overhead
	}
	return TurnRequest{
		Conversation: d.index,
		Turn:         d.next + 1,
		Messages:     msgs,
		Prompt:       Prompt{Text: text, InputTokens: tokens + overhead, OutputTokens: t.AnswerTokens, IgnoreEOS: d.cfg.IgnoreEOS, Messages: msgs},
	}, true
}

// Answer records the answer to the turn Next returned: its text ("" if not kept) and its
// length in tokens (0 if unknown: the target). The next turn's history holds the answer the
// configured AnswerMode chooses.
func (d *Dialogue) Answer(text string, outputTokens int) {
	if d.Done() {
		return
	}
	t := d.conv.Turns[d.next]
	if outputTokens <= 0 {
		outputTokens = t.AnswerTokens
	}
	answer, answerTokens := text, outputTokens
	switch d.cfg.Answers {
	case AnswerRecorded:
		answer, answerTokens = t.Recorded, t.AnswerTokens
	case AnswerStandIn:
		answer = ""
	}
	if answer == "" {
		answer, answerTokens = d.standIn(outputTokens), outputTokens
	}
	d.history = append(d.history, ChatMessage{Role: "user", Content: t.User}, ChatMessage{Role: "assistant", Content: answer})
	if d.text != "" {
		d.text += messageSeparator
		d.tokens++
	}
	d.text += t.User + messageSeparator + answer
	d.tokens += t.UserTokens + 1 + answerTokens
	d.next++
}

// standIn is an answer of n tokens of the vocabulary, the same for the same conversation
// and turn.
func (d *Dialogue) standIn(n int) string {
	if d.cfg.Vocab == nil || len(d.cfg.Vocab.Words) == 0 {
		return strings.TrimSpace(strings.Repeat("answer ", max(1, n)))
	}
	rng := rand.New(rand.NewPCG(uint64(d.cfg.Seed)^0xa11, uint64(d.index)<<20|uint64(d.next)))
	return randomText(d.cfg.Vocab, rng, max(1, n))
}

// AnswerText keeps an answer's text as it streams in (a TokenSink for Client.Do), up to a
// bound. Client.Do calls Token from the request's goroutine; read String after Do returns.
type AnswerText struct {
	b         strings.Builder
	max       int
	truncated bool
}

// NewAnswerText keeps at most maxBytes of text.
func NewAnswerText(maxBytes int) *AnswerText { return &AnswerText{max: maxBytes} }

// Token appends text.
func (a *AnswerText) Token(text string, _ time.Time) {
	if room := a.max - a.b.Len(); len(text) > room {
		cut := max(0, room)
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut-- // never half a character
		}
		text, a.truncated = text[:cut], true
	}
	a.b.WriteString(text)
}

// String is the text so far.
func (a *AnswerText) String() string { return a.b.String() }

// Truncated reports whether text was dropped at the bound.
func (a *AnswerText) Truncated() bool { return a.truncated }

// ThinkTime is the pause between an answer and the user's next message.
type ThinkTime struct {
	Mean time.Duration
	// RangeRatio draws each pause uniformly from [Mean(1-r), Mean(1+r)].
	RangeRatio float64
}

// draw is the pause after turn turn (1-based) of conversation conv, for a dialogue of seed.
func (t ThinkTime) draw(seed int64, conv, turn int) time.Duration {
	if t.RangeRatio <= 0 || t.Mean <= 0 {
		return max(0, t.Mean)
	}
	rng := rand.New(rand.NewPCG(uint64(seed)^0x7417, uint64(conv)<<20|uint64(turn)))
	f := 1 + t.RangeRatio*(2*rng.Float64()-1)
	return time.Duration(float64(t.Mean) * f)
}

// TurnStats is one turn's share of a run: turn 1 computes its whole prompt; later turns can
// find their history in the server's prefix cache.
type TurnStats struct {
	Turn         int // 1-based; in SummarizeTurnGroups, 2 stands for every later turn
	Completed    int
	PromptTokens float64 // mean
	TTFT         Dist
}

// SummarizeTurns groups the successful conversation results (Turn > 0) by turn, with
// percentiles ps of TTFT.
func SummarizeTurns(results []Result, ps []float64) []TurnStats {
	byTurn := map[int][]*Result{}
	for i := range results {
		if r := &results[i]; r.Turn > 0 && r.OK() && !r.Warmup {
			byTurn[r.Turn] = append(byTurn[r.Turn], r)
		}
	}
	out := make([]TurnStats, 0, len(byTurn))
	for turn, rs := range byTurn {
		out = append(out, turnStats(turn, rs, ps))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Turn < out[j].Turn })
	return out
}

// SummarizeTurnGroups is the comparison prefix caching shows in: first turns against every
// later turn.
func SummarizeTurnGroups(results []Result, ps []float64) (first, later TurnStats) {
	var a, b []*Result
	for i := range results {
		switch r := &results[i]; {
		case r.Turn <= 0 || !r.OK() || r.Warmup:
		case r.Turn == 1:
			a = append(a, r)
		default:
			b = append(b, r)
		}
	}
	return turnStats(1, a, ps), turnStats(2, b, ps)
}

func turnStats(turn int, rs []*Result, ps []float64) TurnStats {
	s := TurnStats{Turn: turn, Completed: len(rs)}
	ttft := make([]float64, 0, len(rs))
	for _, r := range rs {
		ttft = append(ttft, ms(r.TTFT))
		s.PromptTokens += float64(r.PromptTokens)
	}
	if len(rs) > 0 {
		s.PromptTokens /= float64(len(rs))
	}
	s.TTFT = dist(ttft, ps)
	return s
}
