package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
)

// Caps on what a server may send. Past a cap the request fails (class ErrOversized, or
// ErrProtocol for numbers) and the run goes on.
const (
	// DefaultMaxEventBytes caps one SSE line and one event's data (its "data:" lines joined).
	// A vLLM chunk is a few hundred bytes; a megabyte is a broken or hostile server.
	DefaultMaxEventBytes = 1 << 20
	// MaxUsageTokens bounds a token count a server reports in "usage": 2^26 (67,108,864) is
	// above every model's context length (the longest today are 10 M tokens) and small enough
	// that summing a million requests cannot overflow. A count above it is a protocol error,
	// not a number to add up.
	MaxUsageTokens = 1 << 26
)

// ErrTooLarge is wrapped by every error about something over its cap: an SSE line or event,
// a response body.
var ErrTooLarge = errors.New("too large")

// ChunkKind classifies one server-sent event of an OpenAI-compatible stream.
type ChunkKind uint8

const (
	ChunkOther   ChunkKind = iota // no choices, no usage: ignored
	ChunkContent                  // carries a choice (text, a delta, or a finish reason)
	ChunkUsage                    // "choices":[] with the usage totals
	ChunkError                    // an error object sent after the stream began
	ChunkDone                     // data: [DONE]
)

// Chunk is one parsed event. Text is the raw JSON string content (escapes not undone) and
// aliases the input: copy it to keep it.
type Chunk struct {
	Kind         ChunkKind
	Text         []byte
	FinishReason string
	// Usage is set when the chunk carries usage (the final usage chunk, or every chunk with
	// continuous_usage_stats).
	HasUsage         bool
	PromptTokens     int
	CompletionTokens int
	// ErrorMessage is the server's message of an error chunk, sanitised for a terminal and
	// folded onto one line of at most 300 bytes.
	ErrorMessage string
	// Invalid says why the chunk breaks the protocol (a usage count that is not a count in
	// 0..MaxUsageTokens); the numbers it carried are then not used.
	Invalid string
}

var (
	dataField   = []byte("data:")
	doneData    = []byte("[DONE]")
	errorPrefix = []byte(`{"error"`)
	objectError = []byte(`"object":"error"`)
)

// parseSlow decodes a chunk with encoding/json: what parseFast cannot read exactly.
func parseSlow(data []byte) Chunk {
	var v struct {
		Choices *[]struct {
			Text  *string `json:"text"`
			Delta *struct {
				Content   *string `json:"content"`
				Reasoning *string `json:"reasoning"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     json.RawMessage `json:"prompt_tokens"`
			CompletionTokens json.RawMessage `json:"completion_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(data, &v) != nil {
		return Chunk{}
	}
	var c Chunk
	if v.Usage != nil {
		// Usage is there when it has a count; the first count that is not one is reported.
		var ok, okC bool
		var why string
		if c.PromptTokens, ok, why = tokenCount("prompt_tokens", v.Usage.PromptTokens); why != "" {
			return Chunk{Invalid: why}
		}
		if c.CompletionTokens, okC, why = tokenCount("completion_tokens", v.Usage.CompletionTokens); why != "" {
			return Chunk{Invalid: why}
		}
		c.HasUsage = ok || okC
	}
	if v.Choices == nil || len(*v.Choices) == 0 {
		if c.HasUsage {
			c.Kind = ChunkUsage
		}
		return c
	}
	c.Kind = ChunkContent
	ch := (*v.Choices)[0]
	var text string
	switch {
	case ch.Text != nil:
		text = *ch.Text
	case ch.Delta != nil && ch.Delta.Content != nil && *ch.Delta.Content != "":
		text = *ch.Delta.Content
	case ch.Delta != nil && ch.Delta.Reasoning != nil:
		text = *ch.Delta.Reasoning
	}
	if text != "" {
		// Re-escape so Text has the same form as the fast path's.
		b, _ := json.Marshal(text)
		c.Text = b[1 : len(b)-1]
	}
	if ch.FinishReason != nil {
		c.FinishReason = *ch.FinishReason
	}
	return c
}

// ParseData parses the payload of one `data:` event. An ordinary chunk is read in one pass
// that picks out the few fields a benchmark needs (parseFast); error objects, and chunks that
// pass cannot read as encoding/json would, are decoded properly.
func ParseData(data []byte) Chunk {
	c, _ := parseData(data)
	return c
}

// errorWindow is how far into a payload an error object names itself.
const errorWindow = 64

// parseData is ParseData, and where the chunk's text starts in data when the single pass read
// it (-1 when not).
func parseData(data []byte) (Chunk, int) {
	trimmed := bytes.TrimSpace(data)
	if bytes.Equal(trimmed, doneData) {
		return Chunk{Kind: ChunkDone}, -1
	}
	// An error object starts the payload (vLLM) or names itself early (older flat errors).
	if bytes.HasPrefix(trimmed, errorPrefix) || bytes.Contains(trimmed[:min(len(trimmed), errorWindow)], objectError) {
		return Chunk{Kind: ChunkError, ErrorMessage: errorMessage(trimmed)}, -1
	}
	if c, at, ok := parseFast(trimmed); ok {
		if len(trimmed) != len(data) {
			at = -1
		}
		return c, at
	}
	return parseSlow(trimmed), -1
}

// chunkParser parses the events of one stream. A stream's content chunks differ, as a rule,
// only in their text: it keeps the bytes around the text of the last one read in full, and a
// chunk made of the same bytes around another plain JSON string is that chunk with another
// text, found without reading it all again.
type chunkParser struct {
	around []byte // the last content chunk's bytes before its text, then those after it
	before int    // how many are before it (0: none kept)
	last   Chunk  // that chunk
}

// parse is ParseEvent.
func (p *chunkParser) parse(ev Event) Chunk {
	if ev.IsError() {
		return ParseEvent(ev)
	}
	d := ev.Data
	if p.before > 0 && len(d) > len(p.around) {
		before, after := p.around[:p.before], p.around[p.before:]
		if bytes.HasPrefix(d, before) && bytes.HasSuffix(d, after) {
			if text := d[len(before) : len(d)-len(after)]; plainString(text) {
				c := p.last
				c.Text = text
				return c
			}
		}
	}
	c, at := parseData(d)
	// Keep the bytes around the text when they start with the bytes ParseData looks at for an
	// error object: a chunk that shares them is no error object either.
	if c.Kind == ChunkContent && c.Invalid == "" && at >= errorWindow && len(c.Text) > 0 {
		p.around = append(append(p.around[:0], d[:at]...), d[at+len(c.Text):]...)
		p.before, p.last = at, c
	}
	return c
}

// plainString reports whether b is the inside of a JSON string as parseFast reads it: no
// quote but an escaped one, no control character, and no escape left open at the end.
func plainString(b []byte) bool { return stringEnd(b) == len(b) }

// tokenCount reads a usage count from its JSON token. ok is false when there is none (the key
// is absent, or null); why is set when there is one but it is not a whole number in
// 0..MaxUsageTokens.
func tokenCount(name string, tok []byte) (n int, ok bool, why string) {
	tok = bytes.TrimSpace(tok)
	if len(tok) == 0 || string(tok) == "null" {
		return 0, false, ""
	}
	bad := func() (int, bool, string) {
		shown := tok
		if len(shown) > 32 {
			shown = append(shown[:29:29], "..."...)
		}
		return 0, false, fmt.Sprintf("usage.%s is %s, not a token count (0 to %d)", name, sanitize.Text(string(shown)), MaxUsageTokens)
	}
	if len(tok) <= 9 {
		v, err := strconv.Atoi(string(tok))
		if err == nil {
			if v < 0 || v > MaxUsageTokens {
				return bad()
			}
			return v, true, ""
		}
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f > MaxUsageTokens {
		return bad()
	}
	return int(f), true, ""
}

// errorMessage extracts the message of {"error": {...}}, {"error": "..."} or a flat
// {"object":"error","message":...}, sanitised and on one line.
func errorMessage(data []byte) string {
	return oneLine(sanitize.Text(rawErrorMessage(data)))
}

func rawErrorMessage(data []byte) string {
	var nested struct {
		Error json.RawMessage `json:"error"`
		Msg   string          `json:"message"`
	}
	if json.Unmarshal(data, &nested) != nil {
		return string(truncate(data, 200))
	}
	if nested.Msg != "" {
		return nested.Msg
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(nested.Error, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	var s string
	if json.Unmarshal(nested.Error, &s) == nil {
		return s
	}
	return string(truncate(data, 200))
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// UnescapeText turns a chunk's raw JSON string content into text.
func UnescapeText(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil {
		return string(raw)
	}
	return s
}

// Event is one server-sent event: its type (the "event:" field; empty for the default,
// "message") and its data ("data:" lines joined by newlines). Both alias the reader's buffers
// and are valid until its next call.
type Event struct {
	Type []byte
	Data []byte
}

// IsError reports whether the event is typed "error" ("event: error"), which some servers and
// proxies send in place of an error object in the data.
func (e Event) IsError() bool { return string(e.Type) == "error" }

// ParseEvent parses one event: an "event: error" is an error chunk whatever its data (the
// message comes from the data when it has one); any other event is ParseData of its data.
func ParseEvent(e Event) Chunk {
	if e.IsError() {
		msg := "error event"
		if d := bytes.TrimSpace(e.Data); len(d) > 0 {
			msg = errorMessage(d)
		}
		return Chunk{Kind: ChunkError, ErrorMessage: msg}
	}
	return ParseData(e.Data)
}

// EventReader splits an SSE byte stream, fed line by line, into events: "data:" lines joined
// by newlines and an optional "event:" type, dispatched at a blank line (or at the end of the
// stream); comments and other fields are skipped. Lines may end in \n or \r\n. An event with
// no data is not dispatched, except an "event: error".
//
// MaxBytes caps an event's data (DefaultMaxEventBytes when 0). The line that would pass it
// gets an error wrapping ErrTooLarge; the event is dropped and the rest of its lines are
// skipped up to the next blank line, so the reader never holds more than MaxBytes.
type EventReader struct {
	MaxBytes int

	data     []byte
	typ      []byte
	dataSeen bool // a data line of the current event was read (the next one joins with '\n')
	skipping bool // the current event went over the cap: skip to its end
}

// Line feeds one line (without its terminator) and returns the event the line completes.
// The returned event is valid until the next call.
func (r *EventReader) Line(line []byte) (Event, bool, error) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) == 0 {
		if r.skipping {
			r.reset()
			return Event{}, false, nil
		}
		ev, ok := r.dispatch()
		return ev, ok, nil
	}
	if line[0] == ':' || r.skipping {
		return Event{}, false, nil
	}
	field, value, found := bytes.Cut(line, []byte{':'})
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(field) {
	case "data":
		size := len(value)
		if r.dataSeen {
			size += len(r.data) + 1
		}
		if size > r.max() {
			return r.tooLarge()
		}
		if r.dataSeen {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.dataSeen = true
	case "event":
		if len(value) > r.max() {
			return r.tooLarge()
		}
		r.typ = append(r.typ[:0], value...)
	}
	return Event{}, false, nil
}

// Flush returns a pending event at the end of a stream that lacks the final blank line.
func (r *EventReader) Flush() (Event, bool) {
	if r.skipping {
		r.reset()
		return Event{}, false
	}
	return r.dispatch()
}

func (r *EventReader) max() int {
	if r.MaxBytes > 0 {
		return r.MaxBytes
	}
	return DefaultMaxEventBytes
}

// dispatch ends the current event: it is returned if it has data or is an error.
func (r *EventReader) dispatch() (Event, bool) {
	ev := Event{Type: r.typ, Data: r.data}
	ok := r.dataSeen || ev.IsError()
	r.reset()
	return ev, ok
}

func (r *EventReader) reset() {
	r.data, r.typ = r.data[:0], r.typ[:0]
	r.dataSeen, r.skipping = false, false
}

func (r *EventReader) tooLarge() (Event, bool, error) {
	r.reset()
	r.skipping = true
	return Event{}, false, fmt.Errorf("%w: an SSE event over %s", ErrTooLarge, byteSize(int64(r.max())))
}

// EventScanner reads the events of an SSE stream with every line and event capped, so a
// server that never ends a line or an event cannot make it hold more than its caps.
type EventScanner struct {
	br      *bufio.Reader
	events  EventReader
	long    []byte // a line longer than the reader's buffer, so far
	maxLine int
	// OnBytes, when set, is called after a read that returned bytes but no event: a stall
	// watchdog notes the time there, and at every event Next returns.
	OnBytes func()
	err     error // set once the scanner is done: io.EOF or why it stopped
}

// NewEventScanner reads from br with lines and events capped at maxBytes
// (DefaultMaxEventBytes when 0).
func NewEventScanner(br *bufio.Reader, maxBytes int) *EventScanner {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxEventBytes
	}
	return &EventScanner{br: br, events: EventReader{MaxBytes: maxBytes}, maxLine: maxBytes}
}

// Next returns the next event. At the end of the stream it returns a last event that lacked
// its blank line, if any, and then io.EOF. Other errors are the reader's (the connection
// broke) or wrap ErrTooLarge; once Next has returned an error it returns it again. The event
// is valid until the next call.
func (s *EventScanner) Next() (Event, error) {
	if s.err != nil {
		return Event{}, s.err
	}
	if ev, ok := s.buffered(); ok {
		return ev, nil
	}
	if s.br.Buffered() == 0 && s.clean() {
		// Nothing held: wait for the next read here, so that an event it brings whole is
		// handed over in place.
		if _, err := s.br.Peek(1); err != nil {
			s.err = err
			return Event{}, err
		}
		if ev, ok := s.buffered(); ok {
			return ev, nil
		}
		if s.OnBytes != nil {
			s.OnBytes()
		}
	}
	return s.lines()
}

// clean reports whether no event is under way: the next byte starts one.
func (s *EventScanner) clean() bool {
	return !s.events.dataSeen && len(s.events.typ) == 0 && len(s.long) == 0 && !s.events.skipping
}

// buffered returns the next event without reading and without copying it when the reader
// holds all of it and it is the usual one: a single data line, then a blank line. The event
// aliases the reader's buffer, which only a read refills.
func (s *EventScanner) buffered() (Event, bool) {
	if !s.clean() {
		return Event{}, false
	}
	data, n := s.usual()
	if n == 0 {
		return Event{}, false
	}
	_, _ = s.br.Discard(n) // n bytes are buffered: no read
	return Event{Data: data}, true
}

// usual finds a whole usual event at the start of the reader's buffer: its data, and the
// bytes it takes (0 when there is none, or it is over a cap: lines reports that).
func (s *EventScanner) usual() ([]byte, int) {
	buf, _ := s.br.Peek(s.br.Buffered())
	if !bytes.HasPrefix(buf, dataField) {
		return nil, 0
	}
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 || nl > s.maxLine {
		return nil, 0
	}
	end := nl + 1
	switch rest := buf[end:]; {
	case len(rest) > 0 && rest[0] == '\n':
		end++
	case len(rest) > 1 && rest[0] == '\r' && rest[1] == '\n':
		end += 2
	default:
		return nil, 0
	}
	value := bytes.TrimSuffix(buf[len(dataField):nl], []byte{'\r'})
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	if len(value) > s.events.max() {
		return nil, 0
	}
	return value, end
}

// lines reads line by line until an event ends.
func (s *EventScanner) lines() (Event, error) {
	for {
		line, err := s.br.ReadSlice('\n')
		// Bytes came: note it, unless this line ends an event (the caller notes that one).
		if len(line) > 0 && s.OnBytes != nil && !endsEvent(line) {
			s.OnBytes()
		}
		n := len(s.long) + len(line)
		if err == nil {
			n-- // the '\n' is not part of the line
		}
		if n > s.maxLine {
			s.err = fmt.Errorf("%w: an SSE line over %s", ErrTooLarge, byteSize(int64(s.maxLine)))
			return Event{}, s.err
		}
		if err == bufio.ErrBufferFull {
			s.long = append(s.long, line...)
			continue
		}
		if len(s.long) > 0 {
			line = append(s.long, line...)
			s.long = s.long[:0]
		}
		if err != nil {
			s.err = err
		}
		if len(line) > 0 {
			ev, ok, lerr := s.events.Line(bytes.TrimSuffix(line, []byte{'\n'}))
			if lerr != nil {
				s.err = lerr
				return Event{}, lerr
			}
			if ok {
				return ev, nil
			}
		}
		if err != nil {
			if err == io.EOF {
				if ev, ok := s.events.Flush(); ok {
					return ev, nil
				}
			}
			return Event{}, err
		}
	}
}

// endsEvent reports whether line is a blank line, the usual end of an event.
func endsEvent(line []byte) bool {
	return len(line) == 1 || len(line) == 2 && line[0] == '\r'
}

// byteSize words a cap: "1 MiB", "64 KiB", "100 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
