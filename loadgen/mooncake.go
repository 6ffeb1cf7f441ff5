package loadgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"time"
)

// DefaultTraceBlockSize is the number of prompt tokens one Mooncake hash id stands for
// (Mooncake's FAST'25 traces; AIPerf's --isl-block-size default).
const DefaultTraceBlockSize = 512

// MooncakeOptions configures the Mooncake reader.
type MooncakeOptions struct {
	// BlockSize is the tokens per hash id (0 means DefaultTraceBlockSize). A line's hash_ids
	// must cover its input_length with the last block holding 1 to BlockSize tokens.
	BlockSize int
}

func (o MooncakeOptions) blockSize() int {
	if o.BlockSize <= 0 {
		return DefaultTraceBlockSize
	}
	return o.BlockSize
}

// MooncakeReader reads a Mooncake / AIPerf mooncake_trace JSONL file line by line: one JSON
// object per line with timestamp (milliseconds), input_length, output_length and hash_ids, or
// AIPerf's text_input instead of input_length, and its session_id and delay (milliseconds)
// for multi-turn sessions. Blank lines are skipped, unknown fields ignored.
type MooncakeReader struct {
	s     *lineScanner
	block int
}

// NewMooncakeReader reads the trace from r; name is the file's name for error messages.
func NewMooncakeReader(r io.Reader, name string, opts MooncakeOptions) *MooncakeReader {
	return &MooncakeReader{s: newLineScanner(r, name, maxMooncakeLine), block: opts.blockSize()}
}

// Name is the trace file's name, as errors give it.
func (m *MooncakeReader) Name() string { return m.s.name }

// mooncakeLine is one line as written. Numbers stay raw so a wrong type gets a clear word,
// and absent (or null) fields stay nil.
type mooncakeLine struct {
	Timestamp    json.RawMessage `json:"timestamp"`
	InputLength  json.RawMessage `json:"input_length"`
	OutputLength json.RawMessage `json:"output_length"`
	HashIDs      json.RawMessage `json:"hash_ids"`
	TextInput    *string         `json:"text_input"`
	SessionID    *string         `json:"session_id"`
	Delay        json.RawMessage `json:"delay"`
	Messages     json.RawMessage `json:"messages"`
	Payload      json.RawMessage `json:"payload"`
}

// present reports whether a raw field was given (not absent, not null).
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// number returns a raw field's number literal, or says what it was instead.
func number(raw json.RawMessage) (string, error) {
	s := string(raw)
	switch c := s[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return s, nil
	case c == '"':
		return "", errors.New("got a JSON string, want a number")
	case c == '[':
		return "", errors.New("got a JSON list, want a number")
	case c == '{':
		return "", errors.New("got a JSON object, want a number")
	case c == 'n':
		return "", errors.New("got null, want a number")
	}
	return "", errors.New("got a JSON boolean, want a number")
}

// Next returns the next entry (see TraceReader).
func (m *MooncakeReader) Next() (TraceEntry, error) {
	line, err := m.s.next()
	if err != nil {
		return TraceEntry{}, err
	}
	var l mooncakeLine
	if err := json.Unmarshal(line, &l); err != nil {
		return TraceEntry{}, m.s.errorf("%s", jsonLineError(err))
	}
	e := TraceEntry{Line: m.s.line}
	fail := func(format string, args ...any) (TraceEntry, error) {
		return TraceEntry{}, m.s.errorf(format, args...)
	}
	if present(l.Messages) || present(l.Payload) {
		return fail("\"messages\" and \"payload\" lines are not supported; give input_length (with hash_ids) or text_input")
	}
	if err := m.timing(&e, &l); err != nil {
		return TraceEntry{}, err
	}
	hashIDs := present(l.HashIDs)
	switch {
	case !present(l.InputLength) && l.TextInput == nil:
		return fail("want input_length or text_input")
	case present(l.InputLength) && l.TextInput != nil:
		return fail("input_length and text_input cannot be given together")
	case l.TextInput != nil:
		if hashIDs {
			return fail("hash_ids need input_length, not text_input")
		}
		if *l.TextInput == "" {
			return fail("text_input is empty")
		}
		e.Text = *l.TextInput
	default:
		if err := m.field("input_length", l.InputLength, func(n string) (err error) {
			e.InputLen, err = parseCount(n)
			return err
		}); err != nil {
			return TraceEntry{}, err
		}
		if e.InputLen == 0 {
			return fail("input_length: 0, want at least 1 token")
		}
	}
	if present(l.OutputLength) {
		if err := m.field("output_length", l.OutputLength, func(n string) (err error) {
			e.OutputLen, err = parseCount(n)
			return err
		}); err != nil {
			return TraceEntry{}, err
		}
	}
	if hashIDs {
		if err := m.hashIDs(&e, l.HashIDs); err != nil {
			return TraceEntry{}, err
		}
	}
	return e, nil
}

// field reads a raw number with parse, or says which field was wrong and why.
func (m *MooncakeReader) field(name string, raw json.RawMessage, parse func(string) error) error {
	n, err := number(raw)
	if err == nil {
		err = parse(n)
	}
	if err != nil {
		return m.s.errorf("%s: %v", name, err)
	}
	return nil
}

// timing reads when a line is sent (timestamp, or delay after its session's previous turn)
// and its session into e.
func (m *MooncakeReader) timing(e *TraceEntry, l *mooncakeLine) error {
	if present(l.Timestamp) {
		if err := m.field("timestamp", l.Timestamp, func(n string) (err error) {
			e.Timestamp, err = parseTime(n, time.Millisecond)
			return err
		}); err != nil {
			return err
		}
		e.HasTimestamp = true
	}
	if present(l.Delay) {
		if e.HasTimestamp {
			return m.s.errorf("timestamp and delay cannot be given together")
		}
		if err := m.field("delay", l.Delay, func(n string) (err error) {
			e.Delay, err = parseTime(n, time.Millisecond)
			return err
		}); err != nil {
			return err
		}
	}
	if l.SessionID != nil {
		e.SessionID = *l.SessionID
		if e.SessionID == "" {
			return m.s.errorf("session_id is empty")
		}
	}
	if present(l.Delay) && e.SessionID == "" {
		return m.s.errorf("delay needs a session_id (it is the wait after the session's previous turn)")
	}
	return nil
}

// hashIDs reads a line's hash_ids into e, checking they fit its input length.
func (m *MooncakeReader) hashIDs(e *TraceEntry, raw json.RawMessage) error {
	var ids []json.RawMessage
	if err := json.Unmarshal(raw, &ids); err != nil {
		return m.s.errorf("hash_ids: want a list of whole numbers")
	}
	// As AIPerf: every block but the last is full, the last holds 1 to BlockSize tokens.
	if last := e.InputLen - (len(ids)-1)*m.block; len(ids) > 0 && (last < 1 || last > m.block) {
		return m.s.errorf("input_length %d does not fit %d hash_ids of %d tokens (want %d hash_ids, the last block holding 1 to %d tokens)",
			e.InputLen, len(ids), m.block, ceilDivInt(e.InputLen, m.block), m.block)
	}
	e.HashIDs = make([]int64, len(ids))
	for i, raw := range ids {
		name := fmt.Sprintf("hash_ids[%d]", i)
		if err := m.field(name, raw, func(n string) (err error) {
			if e.HashIDs[i], err = strconv.ParseInt(n, 10, 64); err != nil {
				return fmt.Errorf("%s is not a whole number", quoteValue(n))
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		e.HashIDs = nil
	}
	return nil
}

func ceilDivInt(a, b int) int { return (a + b - 1) / b }

// jsonLineError words a JSON decoding error for one line: which field had the wrong type, or
// that the line is not a JSON object.
func jsonLineError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("want a JSON object, got a JSON %s", te.Value)
		}
		return fmt.Sprintf("%s: got a JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type))
	}
	return "not valid JSON: " + plainMessage(err.Error())
}

func jsonKind(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[json.Number]():
		return "a number"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Slice:
		return "a list"
	}
	return "a number"
}
