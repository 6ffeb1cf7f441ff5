package loadgen

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"time"
)

// BurstGPTOptions chooses the rows of a BurstGPT trace to replay.
type BurstGPTOptions struct {
	// Model keeps the rows of one model. Empty means "GPT-4", the rows vLLM's
	// --dataset-name burstgpt keeps; "*" keeps every model ("ChatGPT" and "GPT-4").
	Model string
	// KeepFailed keeps rows whose Response tokens is 0, the trace's failed requests. vLLM
	// drops them (it keeps Response tokens > 0), and so does the default.
	KeepFailed bool
}

// DefaultBurstGPTModel is the model vLLM's benchmark replays from a BurstGPT trace.
const DefaultBurstGPTModel = "GPT-4"

// The BurstGPT columns this reader needs, by their header names.
var burstGPTColumns = []string{"Timestamp", "Model", "Request tokens", "Response tokens"}

// BurstGPTReader reads a BurstGPT CSV trace (Timestamp, Model, Request tokens, Response tokens,
// Total tokens, Log Type; HPMLL/BurstGPT) line by line. Timestamps are seconds.
type BurstGPTReader struct {
	s        *lineScanner
	opts     BurstGPTOptions
	cols     map[string]int
	nfields  int
	filtered int
	headerOK bool
	fields   []string
}

// NewBurstGPTReader reads the trace from r; name is the file's name for error messages.
func NewBurstGPTReader(r io.Reader, name string, opts BurstGPTOptions) *BurstGPTReader {
	if opts.Model == "" {
		opts.Model = DefaultBurstGPTModel
	}
	return &BurstGPTReader{s: newLineScanner(r, name, maxBurstGPTLine), opts: opts}
}

// Name is the trace file's name, as errors give it.
func (b *BurstGPTReader) Name() string { return b.s.name }

// Filtered is the number of well-formed rows skipped so far for their model or as failures.
func (b *BurstGPTReader) Filtered() int { return b.filtered }

// Next returns the next row that passes the filters (see TraceReader).
func (b *BurstGPTReader) Next() (TraceEntry, error) {
	for {
		line, err := b.s.next()
		if err != nil {
			if err == io.EOF && !b.headerOK {
				return TraceEntry{}, fmt.Errorf("%s: empty BurstGPT trace (no header line)", b.s.name)
			}
			return TraceEntry{}, err
		}
		if err := b.split(line); err != nil {
			return TraceEntry{}, err
		}
		if !b.headerOK {
			if err := b.header(); err != nil {
				return TraceEntry{}, err
			}
			continue
		}
		e, keep, err := b.row()
		if err != nil {
			return TraceEntry{}, err
		}
		if keep {
			return e, nil
		}
		b.filtered++
	}
}

// split cuts a line into fields: on commas, or as CSV when the line quotes a field.
func (b *BurstGPTReader) split(line []byte) error {
	b.fields = b.fields[:0]
	text := string(line)
	if !strings.ContainsRune(text, '"') {
		for f := range strings.SplitSeq(text, ",") {
			b.fields = append(b.fields, strings.TrimSpace(f))
		}
		return nil
	}
	rec, err := csv.NewReader(strings.NewReader(text)).Read()
	if err != nil {
		return b.s.errorf("not a CSV line: %s", plainMessage(err.Error()))
	}
	for _, f := range rec {
		b.fields = append(b.fields, strings.TrimSpace(f))
	}
	return nil
}

func (b *BurstGPTReader) header() error {
	b.cols = map[string]int{}
	for i, f := range b.fields {
		if i == 0 {
			f = strings.TrimPrefix(f, "\ufeff") // a spreadsheet's byte-order mark
		}
		b.cols[f] = i
	}
	var missing []string
	for _, c := range burstGPTColumns {
		if _, ok := b.cols[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return b.s.errorf("not a BurstGPT header: missing column %s (want Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type)",
			strings.Join(missing, ", "))
	}
	b.nfields = len(b.fields)
	b.headerOK = true
	return nil
}

// row parses one data row; keep is false for a well-formed row the options filter out.
func (b *BurstGPTReader) row() (e TraceEntry, keep bool, err error) {
	if len(b.fields) != b.nfields {
		return e, false, b.s.errorf("%d fields, want %d as in the header", len(b.fields), b.nfields)
	}
	get := func(col string) string { return b.fields[b.cols[col]] }
	e.Line = b.s.line
	e.Model = get("Model")
	if i, ok := b.cols["Log Type"]; ok {
		e.LogType = b.fields[i]
	}
	if e.Timestamp, err = parseTime(get("Timestamp"), time.Second); err != nil {
		return e, false, b.s.errorf("Timestamp: %v", err)
	}
	e.HasTimestamp = true
	if e.InputLen, err = parseCount(get("Request tokens")); err != nil {
		return e, false, b.s.errorf("Request tokens: %v", err)
	}
	if e.OutputLen, err = parseCount(get("Response tokens")); err != nil {
		return e, false, b.s.errorf("Response tokens: %v", err)
	}
	if b.opts.Model != "*" && e.Model != b.opts.Model {
		return e, false, nil
	}
	if e.OutputLen == 0 && !b.opts.KeepFailed {
		return e, false, nil
	}
	return e, true, nil
}
