package loadgen

// A single pass over a stream chunk's JSON that picks out the fields parseSlow decodes (see
// parseFast).

import "bytes"

var (
	nullLiteral  = []byte("null")
	trueLiteral  = []byte("true")
	falseLiteral = []byte("false")
)

// parseFast decodes what parseSlow decodes in one pass over the JSON, without allocating (but
// for a finish reason), and says where the text starts in data (-1 with none). ok is false
// where it cannot promise parseSlow's answer: JSON that is not well formed, a key that is
// escaped, not ASCII, repeated, or matches a field only when case is ignored (encoding/json
// matches those), or a field of a type that makes encoding/json fail. The caller then
// decodes with parseSlow.
func parseFast(data []byte) (c Chunk, textAt int, ok bool) {
	w := jsonWalk{b: data}
	var f chunkFields
	if !w.topLevel(&f) {
		return Chunk{}, -1, false
	}
	c, textAt = f.chunk(), -1
	if len(c.Text) > 0 {
		textAt = cap(data) - cap(c.Text) // c.Text is data[textAt:...]
	}
	return c, textAt, true
}

// chunkFields are the raw fields of a chunk, as parseSlow's decode finds them.
type chunkFields struct {
	choices                 int // how many
	first                   choiceFields
	usage                   bool
	promptTok, completedTok []byte // raw JSON values; nil when absent
}

// choiceFields are the first choice's raw strings (escapes kept), each with whether it was
// there and not null.
type choiceFields struct {
	text, content, reasoning, finish          []byte
	hasText, hasContent, hasReasoning, hasFin bool
}

// chunk turns the fields into a Chunk as parseSlow does.
func (f *chunkFields) chunk() Chunk {
	var c Chunk
	if f.usage {
		var ok, okC bool
		var why string
		if c.PromptTokens, ok, why = tokenCount("prompt_tokens", f.promptTok); why != "" {
			return Chunk{Invalid: why}
		}
		if c.CompletionTokens, okC, why = tokenCount("completion_tokens", f.completedTok); why != "" {
			return Chunk{Invalid: why}
		}
		c.HasUsage = ok || okC
	}
	if f.choices == 0 {
		if c.HasUsage {
			c.Kind = ChunkUsage
		}
		return c
	}
	c.Kind = ChunkContent
	ch := &f.first
	switch {
	case ch.hasText:
		c.Text = ch.text
	case ch.hasContent && len(ch.content) > 0:
		c.Text = ch.content
	case ch.hasReasoning:
		c.Text = ch.reasoning
	}
	if len(c.Text) == 0 {
		c.Text = nil
	}
	if ch.hasFin {
		c.FinishReason = UnescapeText(ch.finish)
	}
	return c
}

// jsonWalk reads JSON from b at i.
type jsonWalk struct {
	b []byte
	i int
}

// topLevel reads the chunk object and nothing after it but white space.
func (w *jsonWalk) topLevel(f *chunkFields) bool {
	if !w.open('{') {
		return false
	}
	var seenChoices, seenUsage bool
	for first := true; ; first = false {
		key, end, ok := w.member(first)
		switch {
		case !ok:
			return false
		case end:
			w.space()
			return w.i == len(w.b)
		}
		switch string(key) {
		case "choices":
			if seenChoices || !w.choices(f) {
				return false
			}
			seenChoices = true
		case "usage":
			if seenUsage || !w.usage(f) {
				return false
			}
			seenUsage = true
		default:
			if foldsTo(key, "choices", "usage") || !w.skip() {
				return false
			}
		}
	}
}

// choices reads the choices array (or null), keeping the first choice's fields.
func (w *jsonWalk) choices(f *chunkFields) bool {
	if w.null() {
		return true
	}
	if !w.open('[') {
		return false
	}
	for first := true; ; first = false {
		end, ok := w.element(first)
		switch {
		case !ok:
			return false
		case end:
			return true
		}
		var ch choiceFields
		if !w.null() && !w.choice(&ch) {
			return false
		}
		if f.choices == 0 {
			f.first = ch
		}
		f.choices++
	}
}

// choice reads one choice object: its text, delta and finish reason (each a string or null:
// anything else fails encoding/json's decode, so it fails here).
func (w *jsonWalk) choice(ch *choiceFields) bool {
	if !w.open('{') {
		return false
	}
	var seenText, seenDelta, seenFin bool
	for first := true; ; first = false {
		key, end, ok := w.member(first)
		switch {
		case !ok:
			return false
		case end:
			return true
		}
		switch string(key) {
		case "text":
			ok = !seenText && w.stringOrNull(&ch.text, &ch.hasText)
			seenText = true
		case "delta":
			ok = !seenDelta && (w.null() || w.delta(ch))
			seenDelta = true
		case "finish_reason":
			ok = !seenFin && w.stringOrNull(&ch.finish, &ch.hasFin)
			seenFin = true
		default:
			ok = !foldsTo(key, "text", "delta", "finish_reason") && w.skip()
		}
		if !ok {
			return false
		}
	}
}

// delta reads a chat choice's delta object: its content and reasoning.
func (w *jsonWalk) delta(ch *choiceFields) bool {
	if !w.open('{') {
		return false
	}
	var seenContent, seenReasoning bool
	for first := true; ; first = false {
		key, end, ok := w.member(first)
		switch {
		case !ok:
			return false
		case end:
			return true
		}
		switch string(key) {
		case "content":
			ok = !seenContent && w.stringOrNull(&ch.content, &ch.hasContent)
			seenContent = true
		case "reasoning":
			ok = !seenReasoning && w.stringOrNull(&ch.reasoning, &ch.hasReasoning)
			seenReasoning = true
		default:
			ok = !foldsTo(key, "content", "reasoning") && w.skip()
		}
		if !ok {
			return false
		}
	}
}

// usage reads the usage object (or null), keeping its two counts' raw values.
func (w *jsonWalk) usage(f *chunkFields) bool {
	if w.null() {
		return true
	}
	if !w.open('{') {
		return false
	}
	f.usage = true
	for first := true; ; first = false {
		key, end, ok := w.member(first)
		switch {
		case !ok:
			return false
		case end:
			return true
		}
		var into *[]byte
		switch string(key) {
		case "prompt_tokens":
			into = &f.promptTok
		case "completion_tokens":
			into = &f.completedTok
		default:
			if foldsTo(key, "prompt_tokens", "completion_tokens") || !w.skip() {
				return false
			}
			continue
		}
		start := w.i
		if *into != nil || !w.skip() {
			return false
		}
		*into = w.b[start:w.i]
	}
}

// foldsTo reports whether key is one of names when case is ignored (encoding/json takes it
// for that field; keys here are ASCII). Bytes that no name has may match too: that only sends
// the chunk to the full decode.
func foldsTo(key []byte, names ...string) bool {
	for _, name := range names {
		if len(key) != len(name) {
			continue
		}
		same := true
		for i := range len(key) {
			if key[i]|0x20 != name[i]|0x20 {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

func (w *jsonWalk) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// open reads white space and then c.
func (w *jsonWalk) open(c byte) bool {
	w.space()
	if w.i < len(w.b) && w.b[w.i] == c {
		w.i++
		return true
	}
	return false
}

// null reads white space and a null, if that is what comes.
func (w *jsonWalk) null() bool {
	w.space()
	if bytes.HasPrefix(w.b[w.i:], nullLiteral) {
		w.i += len(nullLiteral)
		return true
	}
	return false
}

// member reads up to the next member's value of an object whose '{' is read: the ',' before
// it unless first, its key (plain ASCII, no escapes), and the ':'. end is true at the '}'.
func (w *jsonWalk) member(first bool) (key []byte, end, ok bool) {
	w.space()
	if w.i >= len(w.b) {
		return nil, false, false
	}
	switch c := w.b[w.i]; {
	case c == '}' && first:
		w.i++
		return nil, true, true
	case first:
	case c == '}':
		w.i++
		return nil, true, true
	case c != ',':
		return nil, false, false
	default:
		w.i++
		w.space()
	}
	if w.i >= len(w.b) || w.b[w.i] != '"' {
		return nil, false, false
	}
	start := w.i + 1
	for j := start; j < len(w.b); j++ {
		switch c := w.b[j]; {
		case c == '"':
			w.i = j + 1
			if !w.open(':') {
				return nil, false, false
			}
			w.space()
			return w.b[start:j], false, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false, false
		}
	}
	return nil, false, false
}

// element reads up to the next element of an array whose '[' is read; end is true at the ']'.
func (w *jsonWalk) element(first bool) (end, ok bool) {
	w.space()
	if w.i >= len(w.b) {
		return false, false
	}
	switch c := w.b[w.i]; {
	case c == ']':
		w.i++
		return true, true
	case first:
	case c != ',':
		return false, false
	default:
		w.i++
		w.space()
	}
	return false, true
}

// stringOrNull reads a string into body (its raw bytes) and sets has, or reads a null.
func (w *jsonWalk) stringOrNull(body *[]byte, has *bool) bool {
	if w.null() {
		return true
	}
	if w.i >= len(w.b) || w.b[w.i] != '"' {
		return false
	}
	s, ok := w.str()
	*body, *has = s, ok
	return ok
}

// str reads the string at i (its '"'), returning its raw bytes.
func (w *jsonWalk) str() ([]byte, bool) {
	start := w.i + 1
	end := stringEnd(w.b[start:])
	if end < 0 || start+end == len(w.b) {
		return nil, false
	}
	w.i = start + end + 1
	return w.b[start : start+end], true
}

// stringEnd finds the closing quote of a JSON string whose inside starts b: its index, or
// len(b) when b has none; -1 at a control character or an escape left open at the end.
func stringEnd(b []byte) int {
	j := 0
	for ; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j
		case c == '\\':
			j++
		case c < 0x20:
			return -1
		}
	}
	if j > len(b) {
		return -1
	}
	return len(b)
}

// skip reads any value: a string, a number, a literal, or an object or array (of which it
// follows only the nesting and the strings).
func (w *jsonWalk) skip() bool {
	w.space()
	if w.i >= len(w.b) {
		return false
	}
	switch c := w.b[w.i]; {
	case c == '"':
		_, ok := w.str()
		return ok
	case c == '{' || c == '[':
		return w.skipNested()
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range [][]byte{trueLiteral, falseLiteral, nullLiteral} {
			if bytes.HasPrefix(w.b[w.i:], lit) {
				w.i += len(lit)
				return true
			}
		}
		return false
	case c == '-' || c >= '0' && c <= '9':
		start := w.i
		for w.i < len(w.b) && isNumberByte(w.b[w.i]) {
			w.i++
		}
		return w.i > start
	}
	return false
}

// maxSkipDepth bounds the nesting skipNested follows: deeper is left to encoding/json, which
// has a bound of its own.
const maxSkipDepth = 256

// skipNested reads an object or an array and everything in it.
func (w *jsonWalk) skipNested() bool {
	depth := 0
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case '"':
			if _, ok := w.str(); !ok {
				return false
			}
			continue
		case '{', '[':
			if depth++; depth > maxSkipDepth {
				return false
			}
		case '}', ']':
			depth--
			if depth == 0 {
				w.i++
				return true
			}
		}
		w.i++
	}
	return false
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
