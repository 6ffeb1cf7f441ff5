package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// TimedTraceConfig is vllm bench serve's timed_trace dataset (--timed-trace-*): a JSONL trace
// whose fields are named by the Label flags, timestamps in units of SecMultiplier seconds,
// and ChunkSize prompt tokens per hash id.
type TimedTraceConfig struct {
	ChunkSize                                             int     // --timed-trace-chunk-hash-size (vLLM's default 16)
	SecMultiplier                                         float64 // --timed-trace-sec-multiplier: seconds per timestamp unit (1)
	LabelTimestamp, LabelInput, LabelOutput, LabelHashIDs string
}

// DefaultTimedTrace is vLLM's defaults.
var DefaultTimedTrace = TimedTraceConfig{ChunkSize: 16, SecMultiplier: 1, LabelTimestamp: "timestamp",
	LabelInput: "input_length", LabelOutput: "output_length", LabelHashIDs: "hash_ids"}

// Check refuses settings vLLM's TimedTrace cannot read a trace with.
func (c TimedTraceConfig) Check() error {
	switch {
	case c.ChunkSize < 1 || c.ChunkSize > MaxTraceTokens:
		return fmt.Errorf("--timed-trace-chunk-hash-size must be from 1 to %d, got %d", MaxTraceTokens, c.ChunkSize)
	case !(c.SecMultiplier > 0) || math.IsInf(c.SecMultiplier, 0):
		return fmt.Errorf("--timed-trace-sec-multiplier must be a positive number, got %g", c.SecMultiplier)
	case c.LabelTimestamp == "" || c.LabelInput == "" || c.LabelOutput == "" || c.LabelHashIDs == "":
		return fmt.Errorf("the --timed-trace-label-* flags must not be empty")
	}
	return nil
}

// TimedTraceReader reads a timed_trace JSONL file line by line. As vLLM expands it, a prompt
// is ChunkSize tokens per hash id up to the line's input length (so fewer hash ids make a
// shorter prompt); a line without hash ids gets input-length tokens of its own.
type TimedTraceReader struct {
	s   *lineScanner
	cfg TimedTraceConfig
}

// NewTimedTraceReader reads the trace from r; name is the file's name for error messages.
func NewTimedTraceReader(r io.Reader, name string, cfg TimedTraceConfig) *TimedTraceReader {
	return &TimedTraceReader{s: newLineScanner(r, name, maxMooncakeLine), cfg: cfg}
}

// Next returns the next entry (see TraceReader).
func (t *TimedTraceReader) Next() (TraceEntry, error) {
	line, err := t.s.next()
	if err != nil {
		return TraceEntry{}, err
	}
	var l map[string]json.RawMessage
	if err := json.Unmarshal(line, &l); err != nil {
		return TraceEntry{}, t.s.errorf("%s", jsonLineError(err))
	}
	e := TraceEntry{Line: t.s.line, HasTimestamp: true}
	c := t.cfg
	ts, err := t.number(l, c.LabelTimestamp, "--timed-trace-label-timestamp")
	if err != nil {
		return e, err
	}
	secs := ts * c.SecMultiplier
	if !(secs >= 0 && secs <= maxTraceSeconds) {
		return e, t.s.errorf("%s: %g seconds, want 0 to %g", c.LabelTimestamp, secs, float64(maxTraceSeconds))
	}
	e.Timestamp = time.Duration(secs * float64(time.Second))
	in, err := t.count(l, c.LabelInput, "--timed-trace-label-input-length")
	if err != nil {
		return e, err
	}
	if e.OutputLen, err = t.count(l, c.LabelOutput, "--timed-trace-label-output-length"); err != nil {
		return e, err
	}
	if err := t.hashIDs(&e, l[c.LabelHashIDs], in); err != nil {
		return e, err
	}
	if e.InputLen < 1 {
		return e, t.s.errorf("%s: %d, want at least 1 token", c.LabelInput, e.InputLen)
	}
	return e, nil
}

// number reads a required numeric field; flag names the flag that renames it.
func (t *TimedTraceReader) number(l map[string]json.RawMessage, label, flag string) (float64, error) {
	raw, ok := l[label]
	if !ok || !present(raw) {
		return 0, t.s.errorf("no %q field (%s names it)", label, flag)
	}
	n, err := number(raw)
	if err != nil {
		return 0, t.s.errorf("%s: %v", label, err)
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return 0, t.s.errorf("%s: %s is not a number", label, quoteValue(n))
	}
	return f, nil
}

func (t *TimedTraceReader) count(l map[string]json.RawMessage, label, flag string) (int, error) {
	f, err := t.number(l, label, flag)
	if err != nil {
		return 0, err
	}
	if f < 0 || f != math.Trunc(f) || f > MaxTraceTokens {
		return 0, t.s.errorf("%s: %g, want a whole number of tokens from 0 to %d", label, f, MaxTraceTokens)
	}
	return int(f), nil
}

// hashIDs keeps the ids the prompt uses and cuts the input length to what they cover.
func (t *TimedTraceReader) hashIDs(e *TraceEntry, raw json.RawMessage, in int) error {
	e.InputLen = in
	if !present(raw) {
		return nil
	}
	var ids []int64
	if err := json.Unmarshal(raw, &ids); err != nil {
		return t.s.errorf("%s: want a list of whole numbers", t.cfg.LabelHashIDs)
	}
	if len(ids) == 0 {
		return nil
	}
	e.InputLen = min(in, len(ids)*t.cfg.ChunkSize)
	e.HashIDs = ids[:ceilDivInt(e.InputLen, t.cfg.ChunkSize)]
	return nil
}
