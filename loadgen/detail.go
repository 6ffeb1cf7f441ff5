package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"time"
)

// The columns of --save-detailed, in vLLM's order, and where each is in a spilled row.
var detailColumns = []string{"input_lens", "output_lens", "ttfts", "itls", "start_times", "generated_texts", "errors"}

const (
	colIn = iota
	colOut
	colTTFT
	colITLs
	colStart
	colText
	colError
	rowCells
)

// detailSpill writes the per-request arrays of --save-detailed to a file as the requests
// finish, one row a line in request order (a result that finishes early waits for those
// before it, so what waits is about what is in flight), so that a run keeps none of them in
// memory. Its columns are read back one at a time when the result is written.
type detailSpill struct {
	f       *os.File
	w       *bufio.Writer
	err     error
	next    int                   // the index the file waits for
	pending map[int]*bytes.Buffer // rows finished before their turn
	first   int64                 // the earliest start (unix nanoseconds), 0 before any
	done    bool
}

// EnableDetail makes the tally spill the per-request arrays of --save-detailed to a file in
// dir ("" for the system's temporary directory), for DetailFields; Close removes it.
func (t *Tally) EnableDetail(dir string) error {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("per-request results: %w", err)
		}
	}
	f, err := os.CreateTemp(dir, ".vllmtop-detail-*.jsonl")
	if err != nil {
		return fmt.Errorf("per-request results: %w", err)
	}
	t.mu.Lock()
	t.detail = &detailSpill{f: f, w: bufio.NewWriterSize(f, 64<<10), pending: map[int]*bytes.Buffer{}}
	t.mu.Unlock()
	return nil
}

// DetailFields are the --save-detailed arrays (input_lens, output_lens, ttfts, itls,
// start_times, generated_texts, errors; times in seconds) as fields of a result document,
// each written from the spill file when the document is; nil without EnableDetail. No result
// may be added after it.
func (t *Tally) DetailFields() []Field {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.detail
	if d == nil {
		return nil
	}
	d.finish()
	out := make([]Field, len(detailColumns))
	for i, name := range detailColumns {
		out[i] = Field{name, detailColumn{d, i}}
	}
	return out
}

// Close removes the spill file, if any.
func (t *Tally) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.detail == nil {
		return nil
	}
	d := t.detail
	t.detail = nil
	_ = d.f.Close()
	return os.Remove(d.f.Name())
}

func (d *detailSpill) add(r *Result) {
	if d.done {
		return
	}
	if !r.Start.IsZero() && (d.first == 0 || r.Start.UnixNano() < d.first) {
		d.first = r.Start.UnixNano()
	}
	row := detailRow(r)
	if r.Index != d.next {
		d.pending[r.Index] = row
		return
	}
	d.write(row)
	d.next++
	for {
		row, ok := d.pending[d.next]
		if !ok {
			return
		}
		delete(d.pending, d.next)
		d.write(row)
		d.next++
	}
}

func (d *detailSpill) write(row *bytes.Buffer) {
	if d.err == nil {
		_, d.err = d.w.Write(row.Bytes())
	}
}

// finish writes the rows still waiting (after a missing one), in order, and flushes.
func (d *detailSpill) finish() {
	if d.done {
		return
	}
	d.done = true
	idx := make([]int, 0, len(d.pending))
	for i := range d.pending {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		d.write(d.pending[i])
	}
	d.pending = nil
	if d.err == nil {
		d.err = d.w.Flush()
	}
}

// detailRow is one request's line: [input, output, ttft, [itls], start (unix ns, 0 when it
// never started), text, error], numbers written as Python writes them.
func detailRow(r *Result) *bytes.Buffer {
	var b bytes.Buffer
	out, ttft := 0, 0.0
	if r.OK() {
		out, ttft = r.OutputTokens, r.TTFT.Seconds()
	}
	fmt.Fprintf(&b, "[%d,%d,%s,[", r.PromptTokens, out, pyRepr(ttft))
	if r.OK() {
		for i, d := range r.ITLs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(pyRepr(d.Seconds()))
		}
	}
	var start int64
	if !r.Start.IsZero() {
		start = r.Start.UnixNano()
	}
	msg := ""
	if !r.OK() {
		msg = string(r.Error) + ": " + r.ErrorMessage
	}
	text, _ := json.Marshal(r.Text)
	m, _ := json.Marshal(msg)
	fmt.Fprintf(&b, "],%d,%s,%s]\n", start, text, m)
	return &b
}

// detailColumn is one array of the spill, written as JSON by reading the file through.
type detailColumn struct {
	d   *detailSpill
	col int
}

// WriteJSON writes the column as a JSON array, reading the spill one row at a time.
func (c detailColumn) WriteJSON(w io.Writer) error {
	d := c.d
	if d.err != nil {
		return fmt.Errorf("per-request results: %w", d.err)
	}
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	br := bufio.NewReaderSize(d.f, 64<<10)
	bw := bufio.NewWriter(w)
	bw.WriteByte('[')
	for n := 0; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		var cells []json.RawMessage
		if err := json.Unmarshal(line, &cells); err != nil || len(cells) != rowCells {
			return fmt.Errorf("per-request results: row %d is damaged", n+1)
		}
		if n > 0 {
			bw.WriteString(", ")
		}
		cell := cells[c.col]
		if c.col == colStart {
			cell = d.relativeStart(cell)
		}
		bw.Write(cell)
	}
	bw.WriteByte(']')
	return bw.Flush()
}

// relativeStart turns a row's start (unix ns) into seconds since the run's first start.
func (d *detailSpill) relativeStart(cell json.RawMessage) json.RawMessage {
	ns, err := strconv.ParseInt(string(cell), 10, 64)
	if err != nil || ns == 0 {
		return json.RawMessage(pyRepr(0))
	}
	return json.RawMessage(pyRepr(time.Duration(ns - d.first).Seconds()))
}

// MarshalJSON writes the column into memory, for a document marshalled whole.
func (c detailColumn) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	err := c.WriteJSON(&b)
	return b.Bytes(), err
}
