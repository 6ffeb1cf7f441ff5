package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// Workload produces the i-th request's prompt. Implementations are safe for concurrent use.
type Workload interface {
	Prompt(i int) Prompt
	Name() string
}

// Vocab is a set of words each known to be one token after a space for the server's tokenizer,
// and the tokens its prompt form adds (BOS, chat template), so prompts of an exact length can
// be built without a tokenizer here.
type Vocab struct {
	Words []string
	// Overhead is what the server adds to a prompt of n words: it counts n + Overhead tokens.
	Overhead int
	// Checked is true when the counts come from the server's /tokenize, false when estimated.
	Checked bool
	// Template is the part of Overhead a chat template adds beyond the bare prompt's special
	// tokens (0 for the completions API): the random dataset sends it on top of the input
	// length, as vLLM's does.
	Template int
}

// vocabCandidates are common short English words; most are one token in every BPE vocabulary.
var vocabCandidates = strings.Fields(`the of and to in is that for it as with was on be by this are from at or an
have which not but all they their has more one can will there been would its were when also into other time
some these may only first new than use over such most any model data system each two used what many like then
them where well out about after way because through between both make while memory cache token batch request
server latency prefill decode engine block queue kernel layer weights compute step load serve stream every
second minute value number small large fast slow high low less under above still just very much even here
today people world year day work life part place case week group point home water room mother area money story
fact month lot right study book eye job word issue side kind head house friend father power hour game line end
member law car city name team minute idea body back parent face others level office door health person art war
history party result change morning reason research girl guy moment air teacher force education`)

// EstimatedVocab is the fallback when the server has no /tokenize: one token per word, one BOS.
func EstimatedVocab() *Vocab {
	return &Vocab{Words: vocabCandidates, Overhead: 1}
}

// Tokenizer is what building prompts of exact lengths asks of a server's tokenizer: the token
// strings of a text (no special tokens), and how many tokens a prompt counts in the endpoint's
// form (chat template or BOS included). A *Client asks the server's /tokenize; the simulator on
// its virtual clock answers from its own tokenizer.
type Tokenizer interface {
	// TokenStrings returns ErrNoTokenize when the server has no tokenizer endpoint.
	TokenStrings(ctx context.Context, text string) ([]string, error)
	PromptTokens(ctx context.Context, text string) (int, error)
}

// ErrNoTokenize is a server without /tokenize: prompt lengths are then estimated.
var ErrNoTokenize = errors.New("the server has no /tokenize")

// TokenStrings asks the server's /tokenize for the token strings of text.
func (c *Client) TokenStrings(ctx context.Context, text string) ([]string, error) {
	var tok struct {
		Count     int      `json:"count"`
		TokenStrs []string `json:"token_strs"`
	}
	status, err := c.postJSON(ctx, "/tokenize", map[string]any{"model": c.cfg.Model, "prompt": text, "add_special_tokens": false, "return_token_strs": true}, &tok)
	if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
		return nil, ErrNoTokenize
	}
	return tok.TokenStrs, err
}

// PromptTokens asks the server's /tokenize how many tokens text counts as a prompt of the
// client's endpoint (a user message for chat).
func (c *Client) PromptTokens(ctx context.Context, text string) (int, error) {
	var count struct {
		Count int `json:"count"`
	}
	body := map[string]any{"model": c.cfg.Model, "prompt": text}
	if c.chat {
		body = map[string]any{"model": c.cfg.Model, "messages": []map[string]string{{"role": "user", "content": text}}}
	}
	_, err := c.postJSON(ctx, "/tokenize", body, &count)
	return count.Count, err
}

// CalibrateVocab asks the tokenizer which candidate words are single tokens and what a prompt's
// overhead is for the endpoint's prompt form. A server without /tokenize gives the estimated
// vocabulary and no error; other failures are errors.
func CalibrateVocab(ctx context.Context, t Tokenizer) (*Vocab, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	text := " " + strings.Join(vocabCandidates, " ")
	strs, err := t.TokenStrings(ctx, text)
	if errors.Is(err, ErrNoTokenize) {
		return EstimatedVocab(), nil
	}
	if err != nil {
		return nil, err
	}
	v := &Vocab{Checked: true}
	// A word is one token when some token spans exactly " word" in the text.
	spans := map[[2]int]bool{}
	pos := 0
	for _, ts := range strs {
		n := len(normalizeTokenStr(ts))
		spans[[2]int{pos, pos + n}] = true
		pos += n
	}
	if pos != len(text) {
		return nil, fmt.Errorf("%s: token strings do not spell the prompt (%d of %d bytes); cannot build exact prompts", tokenizerName(t), pos, len(text))
	}
	pos = 0
	for _, w := range vocabCandidates {
		if spans[[2]int{pos, pos + 1 + len(w)}] {
			v.Words = append(v.Words, w)
		}
		pos += 1 + len(w)
	}
	if len(v.Words) < 32 {
		return nil, fmt.Errorf("the server's tokenizer splits too many common words (%d single-token words of %d): cannot build exact prompts", len(v.Words), len(vocabCandidates))
	}
	// The overhead: count a known prompt in the endpoint's own form.
	n, err := t.PromptTokens(ctx, strings.Join(v.Words[:10], " "))
	if err != nil {
		return nil, err
	}
	if n < 0 || n > MaxUsageTokens {
		return nil, fmt.Errorf("%s: a count of %d tokens for 10 words", tokenizerName(t), n)
	}
	v.Overhead = max(0, n-10)
	if err := calibrateTemplate(ctx, t, v, strings.Join(v.Words[:10], " "), 10, n); err != nil {
		return nil, err
	}
	return v, nil
}

// tokenizerName names a tokenizer in a message: the server's /tokenize for a client.
func tokenizerName(t Tokenizer) string {
	if c, ok := t.(*Client); ok {
		return c.RedactedURL() + "/tokenize" // never a key in the URL's userinfo
	}
	return "the tokenizer"
}

// normalizeTokenStr maps byte-level BPE (Ġ) and SentencePiece (▁) space markers to a space.
func normalizeTokenStr(s string) string {
	return strings.NewReplacer("Ġ", " ", "▁", " ").Replace(s)
}

func (c *Client) postJSON(ctx context.Context, path string, in, out any) (int, error) {
	b, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL()+path, strings.NewReader(string(b)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s%s: %s", c.RedactedURL(), path, transportMessage(err))
	}
	defer resp.Body.Close()
	data, err := readCapped(resp.Body, c.cfg.MaxBodyBytes)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s%s: %w", c.RedactedURL(), path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("%s%s: HTTP %d: %s", c.RedactedURL(), path, resp.StatusCode, errorMessage(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("%s%s: %s", c.RedactedURL(), path, oneLine(sanitize.Text(err.Error())))
	}
	return resp.StatusCode, nil
}

// RandomConfig is vllm bench serve's random dataset.
type RandomConfig struct {
	InputLen   int     // --random-input-len
	OutputLen  int     // --random-output-len
	RangeRatio float64 // --random-range-ratio: lengths uniform in [L(1-r), L(1+r)]
	PrefixLen  int     // --random-prefix-len / --prefix-len: tokens shared by every prompt
	IgnoreEOS  bool
	Seed       int64
	// OutputRangeRatio, when set, is the output's ratio, RangeRatio then the input's only
	// (--random-range-ratio '{"input": 0.3, "output": 0.5}').
	OutputRangeRatio *float64
}

// Random builds prompts of exact token lengths from a calibrated vocabulary. Prompt(i) is a
// pure function of (seed, i): the same seed gives the same run.
type Random struct {
	cfg    RandomConfig
	vocab  *Vocab
	prefix []string
}

// MaxRandomTokens bounds a random prompt (prefix included) and its output: 16 Mi tokens, over
// the longest context any model serves (10 M).
const MaxRandomTokens = 1 << 24

// NewRandom checks cfg and builds the shared prefix.
func NewRandom(cfg RandomConfig, v *Vocab) (*Random, error) {
	if cfg.InputLen < 1 || cfg.OutputLen < 1 {
		return nil, fmt.Errorf("random input and output lengths must be at least 1 (got %d and %d)", cfg.InputLen, cfg.OutputLen)
	}
	if o := cfg.outputRatio(); !(cfg.RangeRatio >= 0 && cfg.RangeRatio < 1 && o >= 0 && o < 1) { // NaN fails
		if o == cfg.RangeRatio {
			return nil, fmt.Errorf("--random-range-ratio must be in [0, 1), got %g", cfg.RangeRatio)
		}
		return nil, fmt.Errorf("--random-range-ratio must be in [0, 1), got input %g and output %g", cfg.RangeRatio, o)
	}
	if cfg.PrefixLen < 0 {
		return nil, fmt.Errorf("--prefix-len must not be negative, got %d", cfg.PrefixLen)
	}
	if top := float64(cfg.PrefixLen) + float64(cfg.InputLen)*(1+cfg.RangeRatio); top > MaxRandomTokens || float64(cfg.OutputLen)*(1+cfg.outputRatio()) > MaxRandomTokens {
		// Building such a prompt takes gigabytes, for a request every server refuses.
		return nil, fmt.Errorf("random lengths reach %.0f prompt and %.0f output tokens: at most %d each, longer than any model's context",
			top, float64(cfg.OutputLen)*(1+cfg.outputRatio()), MaxRandomTokens)
	}
	r := &Random{cfg: cfg, vocab: v}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed))
	for i := 0; i < cfg.PrefixLen; i++ {
		r.prefix = append(r.prefix, v.Words[rng.IntN(len(v.Words))])
	}
	return r, nil
}

// Name describes the workload.
func (r *Random) Name() string {
	return fmt.Sprintf("random %d in / %d out", r.cfg.InputLen, r.cfg.OutputLen)
}

// Prompt returns the i-th prompt: the shared prefix, then random words, input length and output
// length drawn as vLLM's benchmark draws them; the prompt counts the prefix plus the input length.
func (r *Random) Prompt(i int) Prompt {
	rng := rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(i)+1))
	in := uniformLen(rng, r.cfg.InputLen, r.cfg.RangeRatio)
	out := max(1, uniformLen(rng, r.cfg.OutputLen, r.cfg.outputRatio()))
	// vLLM: the prefix and a chat template come on top of the input length.
	words := max(1, in-(r.vocab.Overhead-r.vocab.Template))
	var b strings.Builder
	b.Grow((len(r.prefix) + words) * 7)
	for j, w := range r.prefix {
		if j > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	for j := 0; j < words; j++ {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(r.vocab.Words[rng.IntN(len(r.vocab.Words))])
	}
	return Prompt{Text: b.String(), InputTokens: len(r.prefix) + words + r.vocab.Overhead, OutputTokens: out, IgnoreEOS: r.cfg.IgnoreEOS}
}

// outputRatio is the output length's range ratio.
func (cfg RandomConfig) outputRatio() float64 {
	if cfg.OutputRangeRatio != nil {
		return *cfg.OutputRangeRatio
	}
	return cfg.RangeRatio
}

// uniformLen draws from [floor(L(1-r)), ceil(L(1+r))].
func uniformLen(rng *rand.Rand, l int, r float64) int {
	if r == 0 {
		return l
	}
	lo := int(math.Floor(float64(l) * (1 - r)))
	hi := int(math.Ceil(float64(l) * (1 + r)))
	return lo + rng.IntN(hi-lo+1)
}

// Fixed sends one prompt every time.
type Fixed struct {
	P Prompt
}

// Name describes the workload.
func (f *Fixed) Name() string { return fmt.Sprintf("fixed prompt, %d out", f.P.OutputTokens) }

// Prompt returns the fixed prompt.
func (f *Fixed) Prompt(int) Prompt { return f.P }

// ShareGPT replays the first two turns of ShareGPT conversations: the human turn as the prompt,
// the length of the answer as the output length.
type ShareGPT struct {
	prompts []Prompt
	order   []int
}

// LoadShareGPT reads a ShareGPT JSON file ([{"conversations":[{"from":"human","value":...},
// {"from":"gpt","value":...}]}, ...]), keeps the pairs vLLM's benchmark keeps (prompt and answer
// of at least 4 tokens, prompt at most 1024, both at most 2048), and shuffles them with seed.
// Token counts are estimated at 4 characters per token unless count is given.
func LoadShareGPT(path string, seed int64, outputLen int, ignoreEOS bool, count func(string) int) (*ShareGPT, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ShareGPT dataset: %w", err)
	}
	var convs []struct {
		Conversations []struct {
			From  string `json:"from"`
			Value string `json:"value"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(data, &convs); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("ShareGPT dataset %s is not valid JSON (at byte %d): %v", path, se.Offset, err)
		}
		return nil, fmt.Errorf("ShareGPT dataset %s: want a JSON list of {\"conversations\": [...]}: %s", path, jsonShape(err))
	}
	if count == nil {
		count = func(s string) int { return max(1, (len(s)+3)/4) }
	}
	g := &ShareGPT{}
	for _, c := range convs {
		if len(c.Conversations) < 2 {
			continue
		}
		prompt, answer := c.Conversations[0].Value, c.Conversations[1].Value
		in, out := count(prompt), count(answer)
		if outputLen > 0 {
			out = outputLen
		}
		if in < 4 || out < 4 && outputLen <= 0 || in > 1024 || in+out > 2048 { // vLLM: no minimum for a given output length
			continue
		}
		g.prompts = append(g.prompts, Prompt{Text: prompt, InputTokens: in, OutputTokens: out, IgnoreEOS: ignoreEOS})
	}
	if len(g.prompts) == 0 {
		return nil, fmt.Errorf("ShareGPT dataset %s has no usable conversations (%d read; each needs a prompt and an answer of 4-1024 and 4-2048 tokens)", path, len(convs))
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5ba2e))
	g.order = rng.Perm(len(g.prompts))
	return g, nil
}

// Name describes the workload.
func (g *ShareGPT) Name() string { return fmt.Sprintf("sharegpt (%d conversations)", len(g.prompts)) }

// Len is the number of usable conversations.
func (g *ShareGPT) Len() int { return len(g.prompts) }

// Prompt returns the i-th conversation in the shuffled order, cycling (oversampling).
func (g *ShareGPT) Prompt(i int) Prompt { return g.prompts[g.order[i%len(g.order)]] }

// jsonShape says what a JSON decoder found where a file's shape wanted something else, in the
// file's words ("a string at conversations, byte 19"), not the Go types it was decoded into.
func jsonShape(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	where := strings.TrimPrefix(te.Field, ".")
	if where == "" {
		return fmt.Sprintf("found a JSON %s (byte %d)", te.Value, te.Offset)
	}
	return fmt.Sprintf("found a JSON %s at %s (byte %d)", te.Value, where, te.Offset)
}
