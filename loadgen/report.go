package loadgen

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/outfile"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
)

// Backends as vllm bench serve names them; the endpoint decides which one a run uses.
const (
	BackendCompletions = "openai"
	BackendChat        = "openai-chat"
)

// Backend resolves vllm bench serve's --backend against --endpoint (endpointGiven: the user
// set it): an empty backend follows the endpoint, openai-chat moves the endpoint to the chat
// API unless one was given. It returns the backend and the endpoint.
func Backend(backend, endpoint string, endpointGiven bool) (string, string, error) {
	switch backend {
	case "":
		backend = BackendCompletions
		if strings.Contains(endpoint, "chat") {
			backend = BackendChat
		}
	case BackendChat, "openai-chat-completions":
		backend = BackendChat
		if !endpointGiven {
			endpoint = EndpointChat
		}
		// vLLM's check of the URL its chat request function posts to; without it the run
		// would send completions requests and label them chat.
		if !strings.HasSuffix(endpoint, "chat/completions") {
			return "", "", fmt.Errorf("--backend %s: OpenAI Chat Completions API URL must end with 'chat/completions' (use --endpoint %s)", backend, EndpointChat)
		}
	case BackendCompletions, BackendVLLM:
	case BackendEmbeddings:
		// vLLM's check of the URL its embeddings request function posts to.
		if !strings.HasSuffix(endpoint, "embeddings") {
			return "", "", fmt.Errorf("--backend %s: OpenAI Embeddings API URL must end with 'embeddings' (use --endpoint %s)", backend, EndpointEmbeddings)
		}
	default:
		return "", "", backendRefusal(backend)
	}
	if !strings.HasPrefix(endpoint, "/") {
		return "", "", fmt.Errorf("--endpoint %q: want a path such as /v1/completions", endpoint)
	}
	return backend, endpoint, nil
}

// PercentileMetrics are the latency metrics vllm bench serve can report, in its print order.
var PercentileMetrics = []string{"ttft", "tpot", "itl", "e2el"}

// RunInfo is what a report says about a run besides its statistics: the command line's
// choices, as vllm bench serve prints and saves them.
type RunInfo struct {
	Date        time.Time
	Backend     string // BackendCompletions or BackendChat
	Label       string // --label; "" is none (null in the JSON)
	ModelID     string
	TokenizerID string // "" means the model
	NumPrompts  int
	// RequestRate is in requests per second; +Inf means every request at once.
	RequestRate    float64
	Burstiness     float64
	MaxConcurrency int // 0: not set
	Goodput        Goodput
	// Metrics are the selected percentile metrics (a subset of PercentileMetrics) and
	// Percentiles the percentiles reported for each (e.g. 99 or 99.9).
	Metrics     []string
	Percentiles []float64
	Metadata    []Field // --metadata key=value pairs, in order
	Ramp        Ramp    // --ramp-up-strategy and its bounds
}

func (info RunInfo) selected(metric string) bool {
	for _, m := range info.Metrics {
		if m == metric {
			return true
		}
	}
	return false
}

// ParsePercentileMetrics reads --percentile-metrics ("ttft,tpot,itl"): known names only.
func ParsePercentileMetrics(s string) ([]string, error) {
	var out []string
	for _, m := range commaList(s) {
		known := false
		for _, k := range append(PercentileMetrics, QueueMetrics...) {
			known = known || k == m
		}
		if !known {
			return nil, fmt.Errorf("--percentile-metrics: unknown metric %q (want a comma list of ttft, tpot, itl, e2el, client_queue_time, e2el_including_client_queue)", m)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--percentile-metrics: no metric given (want a comma list of ttft, tpot, itl, e2el)")
	}
	return out, nil
}

// commaList is the items of a comma-separated flag value, trimmed, the empty ones left out.
func commaList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// ParsePercentiles reads --metric-percentiles ("99" or "50,90,99"): each in [0, 100], what
// numpy's percentile takes (0 is the minimum).
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range commaList(s) {
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || !(p >= 0 && p <= 100) {
			return nil, fmt.Errorf("--metric-percentiles: %q is not a percentile in [0, 100]", f)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--metric-percentiles: no percentile given")
	}
	return out, nil
}

// resultTitle and the section headers are vllm bench serve's, centred in 50 columns.
const tableWidth = 50

var metricHeaders = map[string][2]string{
	"ttft": {"TTFT", "Time to First Token"},
	"tpot": {"TPOT", "Time per Output Token (excl. 1st token)"},
	"itl":  {"ITL", "Inter-token Latency"},
	"e2el": {"E2EL", "End-to-end Latency"},
	// Reported with --max-concurrency only, as vLLM reports them.
	MetricClientQueue:   {"Client Queue Time", "Client-side Queueing"},
	MetricE2ELInclQueue: {"E2EL incl. Client Queue", "Queue-inclusive End-to-end Latency"},
}

func (s *Summary) dist(metric string) Dist {
	switch metric {
	case "ttft":
		return s.TTFT
	case "tpot":
		return s.TPOT
	case "itl":
		return s.ITL
	case MetricClientQueue:
		return s.Queue
	case MetricE2ELInclQueue:
		return s.E2ELInclQueue
	}
	return s.E2EL
}

// PrintResult writes vllm bench serve's result table for s, line for line as vLLM prints it
// (labels padded to 40 columns, values to 10, trailing spaces included), so scripts that read
// vLLM's output read this one. One addition: when requests failed, indented rows under
// "Failed requests:" count them by class.
func PrintResult(w io.Writer, s Summary, info RunInfo) error {
	if PoolingBackend(info.Backend) {
		return printPoolingResult(w, s, info)
	}
	var b bytes.Buffer
	b.WriteString(center(" Serving Benchmark Result ", '=', tableWidth) + "\n")
	row := func(label, value string) { fmt.Fprintf(&b, "%-40s %-10s\n", label, value) }
	row("Successful requests:", strconv.Itoa(s.Completed))
	row("Failed requests:", strconv.Itoa(s.Failed))
	for _, c := range failureClasses(s.FailuresByClass) {
		row("  "+string(c.class)+":", strconv.Itoa(c.n))
	}
	if info.MaxConcurrency > 0 {
		row("Maximum request concurrency:", strconv.Itoa(info.MaxConcurrency))
	}
	if !math.IsInf(info.RequestRate, 1) {
		row("Request rate configured (RPS):", fixed2(info.RequestRate))
	}
	row("Benchmark duration (s):", fixed2(s.Duration.Seconds()))
	row("Total input tokens:", strconv.Itoa(s.TotalInputTokens))
	row("Total generated tokens:", strconv.Itoa(s.TotalOutputTokens))
	row("Request throughput (req/s):", fixed2(s.RequestThroughput))
	if info.Goodput.Set() {
		row("Request goodput (req/s):", fixed2(s.RequestGoodput))
	}
	row("Output token throughput (tok/s):", fixed2(s.OutputThroughput))
	row("Peak output token throughput (tok/s):", fixed2(s.MaxOutputTokensPerS))
	row("Peak concurrent requests:", fixed2(float64(s.MaxConcurrent)))
	row("Total token throughput (tok/s):", fixed2(s.TotalTokenThroughput))
	printProbes(&b, s.Probes)
	for _, m := range info.reported() {
		name, header := metricHeaders[m][0], metricHeaders[m][1]
		d := s.dist(m)
		b.WriteString(center(header, '-', tableWidth) + "\n")
		row("Mean "+name+" (ms):", fixed2(d.Mean))
		row("Median "+name+" (ms):", fixed2(d.Median))
		for _, p := range info.Percentiles {
			row("P"+percentileWord(p)+" "+name+" (ms):", fixed2(d.Percentiles[p]))
		}
	}
	printSpecDecode(&b, s.SpecDecode)
	return endTable(w, &b, tableWidth)
}

// endTable closes a table with a rule n columns wide and writes it to w.
func endTable(w io.Writer, b *bytes.Buffer, n int) error {
	b.WriteString(strings.Repeat("=", n) + "\n")
	_, err := w.Write(b.Bytes())
	return err
}

type classCount struct {
	class ErrorClass
	n     int
}

// failureClasses orders failure counts, most frequent first.
func failureClasses(m map[ErrorClass]int) []classCount {
	var out []classCount
	for c, n := range m {
		if n > 0 {
			out = append(out, classCount{c, n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].class < out[j].class
	})
	return out
}

// FailureSummary is a one-line account of failures by class, e.g. "reset 3, connect 17".
func FailureSummary(m map[ErrorClass]int) string {
	var parts []string
	for _, c := range failureClasses(m) {
		parts = append(parts, fmt.Sprintf("%s %d", c.class, c.n))
	}
	return strings.Join(parts, ", ")
}

// center centres s in n columns as Python's "{:c^n}" does (the odd column goes right).
func center(s string, c byte, n int) string {
	pad := n - len(s)
	if pad <= 0 {
		return s
	}
	left := pad / 2
	return strings.Repeat(string(c), left) + s + strings.Repeat(string(c), pad-left)
}

// nonFinite spells NaN and the infinities as Python does.
func nonFinite(x float64) (string, bool) {
	switch {
	case math.IsNaN(x):
		return "nan", true
	case math.IsInf(x, 1):
		return "inf", true
	case math.IsInf(x, -1):
		return "-inf", true
	}
	return "", false
}

// fixed2 formats as Python's "{:.2f}" (inf and nan as Python spells them).
func fixed2(x float64) string {
	if s, ok := nonFinite(x); ok {
		return s
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// pyRepr formats a float as Python's str(float) does: 1.0, 0.5, inf, 1e-05.
func pyRepr(x float64) string {
	if s, ok := nonFinite(x); ok {
		return s
	}
	if a := math.Abs(x); a != 0 && (a < 1e-4 || a >= 1e16) {
		s := strconv.FormatFloat(x, 'e', -1, 64)
		// Go writes e-5 or e+16; Python writes e-05 and e+16.
		if i := strings.IndexAny(s, "e"); i >= 0 && len(s)-i == 3 {
			s = s[:i+2] + "0" + s[i+2:]
		}
		return s
	}
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// percentileWord is vLLM's p_word: 99 for 99.0, 99.9 otherwise.
func percentileWord(p float64) string {
	if p == math.Trunc(p) {
		return strconv.FormatFloat(p, 'f', 0, 64)
	}
	return pyRepr(p)
}

// PrintTraffic says how a run sends its requests in vllm bench serve's lines: the rate (or the
// ramp-up), the burstiness and the concurrency cap, each value as Python prints it.
func PrintTraffic(w io.Writer, info RunInfo) {
	if r := info.Ramp; r.On() {
		fmt.Fprintf(w, "Traffic ramp-up strategy: %s.\n", r.Strategy)
		fmt.Fprintf(w, "Will increase RPS from %d to %d RPS over the duration of the benchmark.\n", r.StartRPS, r.EndRPS)
	} else {
		fmt.Fprintf(w, "Traffic request rate: %s\n", pyRepr(info.RequestRate))
	}
	dist := "Gamma distribution"
	if info.Burstiness == 1 {
		dist = "Poisson process"
	}
	fmt.Fprintf(w, "Burstiness factor: %s (%s)\n", pyRepr(info.Burstiness), dist)
	conc := "None"
	if info.MaxConcurrency > 0 {
		conc = strconv.Itoa(info.MaxConcurrency)
	}
	fmt.Fprintf(w, "Maximum request concurrency: %s\n", conc)
}

// SweepRow is one run of a sweep: the value swept (a concurrency or a request rate) and the
// run's summary.
type SweepRow struct {
	Value   float64
	Summary Summary
}

// PrintSweep writes one line per run of a sweep, in the given order: the swept value (param
// names it, e.g. "concurrency"), then for each of info's percentile metrics (ttft, tpot, itl,
// e2el, as --percentile-metrics selects them) its median and its --metric-percentiles in
// milliseconds, then output tokens per second, requests per second and failed requests.
func PrintSweep(w io.Writer, param string, rows []SweepRow, info RunInfo) error {
	header := []string{param}
	type column struct {
		metric string
		median bool // else the percentile p
		p      float64
	}
	var cols []column
	for _, m := range PercentileMetrics {
		if !info.selected(m) {
			continue
		}
		name := metricHeaders[m][0]
		header, cols = append(header, name+" p50"), append(cols, column{metric: m, median: true})
		for _, p := range info.Percentiles {
			if p != 50 {
				header, cols = append(header, name+" p"+percentileWord(p)), append(cols, column{metric: m, p: p})
			}
		}
	}
	header = append(header, "output tok/s", "req/s", "failed")
	cells := [][]string{header}
	for _, r := range rows {
		s := r.Summary
		v := strconv.FormatFloat(r.Value, 'f', -1, 64)
		if math.IsInf(r.Value, 1) {
			v = "inf"
		}
		line := []string{v}
		for _, c := range cols {
			d := s.dist(c.metric)
			x, ok := d.Median, true
			if !c.median {
				x, ok = d.Percentiles[c.p]
			}
			if !ok {
				line = append(line, "-")
				continue
			}
			line = append(line, fixed2(x))
		}
		cells = append(cells, append(line, fixed2(s.OutputThroughput), fixed2(s.RequestThroughput), strconv.Itoa(s.Failed)))
	}
	widths := make([]int, len(header))
	for _, line := range cells {
		for i, c := range line {
			widths[i] = max(widths[i], len(c))
		}
	}
	const gap = "  "
	total := (len(widths) - 1) * len(gap)
	for _, n := range widths {
		total += n
	}
	var b bytes.Buffer
	b.WriteString(center(" Sweep Summary (times in ms) ", '=', total) + "\n")
	for _, line := range cells {
		for i, c := range line {
			if i > 0 {
				b.WriteString(gap)
			}
			fmt.Fprintf(&b, "%*s", widths[i], c)
		}
		b.WriteByte('\n')
	}
	return endTable(w, &b, total)
}

// Field is one key and value of a result document.
type Field struct {
	Key   string
	Value any
}

// ResultDoc is a JSON object whose keys keep their order (vLLM's order when built by
// ResultJSON).
type ResultDoc []Field

// Get returns the value of key.
func (d ResultDoc) Get(key string) (any, bool) {
	for _, f := range d {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

// MarshalJSON writes the fields in order; a later field with the same key replaces an
// earlier one in place, as a Python dict update does.
func (d ResultDoc) MarshalJSON() ([]byte, error) {
	last := map[string]int{}
	for i, f := range d {
		last[f.Key] = i
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	seen := map[string]bool{}
	for _, f := range d {
		if seen[f.Key] {
			continue
		}
		seen[f.Key] = true
		k, _ := json.Marshal(f.Key)
		v, err := json.Marshal(d[last[f.Key]].Value)
		if err != nil {
			return nil, fmt.Errorf("result field %s: %w", f.Key, err)
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonWriter is a value that writes its own JSON, so that a large one (a --save-detailed
// array) goes to the file without being held in memory.
type jsonWriter interface{ WriteJSON(w io.Writer) error }

// WriteIndented writes the document as json.MarshalIndent(d, prefix, indent) would, except
// that values that write their own JSON (jsonWriter) are written as they come, compact.
func (d ResultDoc) WriteIndented(w io.Writer, prefix, indent string) error {
	return d.write(w, prefix, indent, false)
}

// WriteLine writes the document on one line as Python's json.dump does (", " and ": " between
// the fields), values that write their own JSON as they come, and no newline.
func (d ResultDoc) WriteLine(w io.Writer) error { return d.write(w, "", "", true) }

func (d ResultDoc) write(w io.Writer, prefix, indent string, line bool) error {
	last := map[string]int{}
	for i, f := range d {
		last[f.Key] = i
	}
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriter(w)
	}
	bw.WriteByte('{')
	seen := map[string]bool{}
	for _, f := range d {
		if seen[f.Key] {
			continue
		}
		switch {
		case len(seen) > 0 && line:
			bw.WriteString(", ")
		case len(seen) > 0:
			bw.WriteByte(',')
		}
		seen[f.Key] = true
		k, _ := json.Marshal(f.Key)
		if !line {
			bw.WriteString("\n" + prefix + indent)
		}
		bw.Write(k)
		bw.WriteString(": ")
		v := d[last[f.Key]].Value
		if jw, ok := v.(jsonWriter); ok {
			if err := jw.WriteJSON(bw); err != nil {
				return fmt.Errorf("result field %s: %w", f.Key, err)
			}
			continue
		}
		var b []byte
		var err error
		if line {
			b, err = json.Marshal(v)
		} else {
			b, err = json.MarshalIndent(v, prefix+indent, indent)
		}
		if err != nil {
			return fmt.Errorf("result field %s: %w", f.Key, err)
		}
		bw.Write(b)
	}
	if len(seen) > 0 && !line {
		bw.WriteString("\n" + prefix)
	}
	bw.WriteByte('}')
	return bw.Flush()
}

// writeDocs writes one document, or a list of them, indented by two spaces, and a newline.
func writeDocs(w io.Writer, docs []ResultDoc, list bool) error {
	bw := bufio.NewWriter(w)
	if !list {
		if err := docs[0].WriteIndented(bw, "", "  "); err != nil {
			return err
		}
		bw.WriteByte('\n')
		return bw.Flush()
	}
	bw.WriteByte('[')
	for i, d := range docs {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n  ")
		if err := d.WriteIndented(bw, "  ", "  "); err != nil {
			return err
		}
	}
	if len(docs) > 0 {
		bw.WriteByte('\n')
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// PyFloat is a float that JSON-encodes as Python writes one (1.0, not 1), so saved results
// read back with the same types vLLM's do. NaN and infinities encode as null.
type PyFloat float64

// MarshalJSON implements json.Marshaler.
func (f PyFloat) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return []byte(pyRepr(x)), nil
}

// ResultDateFormat is the layout of the "date" key and of the file name's time stamp
// (Python's %Y%m%d-%H%M%S).
const ResultDateFormat = "20060102-150405"

// ResultJSON builds the document vllm bench serve saves with --save-result (docs/vllm-behaviour.md#benchmark-client):
// the run's setup, then the statistics, then mean/median/std/percentiles of each selected
// metric in milliseconds. detailed (a Tally's DetailFields) adds the per-request arrays of
// --save-detailed. Keys vLLM does not write: failures_by_class, and percentiles_estimated
// (true) when the run passed the bound of exact statistics (Summary.Estimated).
func ResultJSON(s Summary, info RunInfo, detailed []Field) ResultDoc {
	var label any
	if info.Label != "" {
		label = info.Label
	}
	tokenizer := info.TokenizerID
	if tokenizer == "" {
		tokenizer = info.ModelID
	}
	d := ResultDoc{
		{"date", info.Date.Format(ResultDateFormat)},
		{"endpoint_type", info.Backend},
		{"backend", info.Backend},
		{"label", label},
		{"model_id", info.ModelID},
		{"tokenizer_id", tokenizer},
		{"num_prompts", info.NumPrompts},
	}
	d = append(d, info.Metadata...)
	var rate any = PyFloat(info.RequestRate)
	if math.IsInf(info.RequestRate, 1) {
		rate = "inf"
	}
	var maxConc any
	if info.MaxConcurrency > 0 {
		maxConc = info.MaxConcurrency
	}
	var goodput any
	if info.Goodput.Set() {
		goodput = PyFloat(s.RequestGoodput)
	}
	failures := map[string]int{}
	for c, n := range s.FailuresByClass {
		failures[string(c)] = n
	}
	d = append(d,
		Field{"request_rate", rate},
		Field{"burstiness", PyFloat(info.Burstiness)},
		Field{"max_concurrency", maxConc},
	)
	if info.Ramp.On() {
		d = append(d, Field{"ramp_up_strategy", info.Ramp.Strategy}, Field{"ramp_up_start_rps", info.Ramp.StartRPS}, Field{"ramp_up_end_rps", info.Ramp.EndRPS})
	}
	if PoolingBackend(info.Backend) {
		return append(d, poolingResultFields(s, info, detailed)...)
	}
	d = append(d,
		Field{"duration", PyFloat(s.Duration.Seconds())},
		Field{"completed", s.Completed},
		Field{"failed", s.Failed},
		Field{"total_input_tokens", s.TotalInputTokens},
		Field{"total_output_tokens", s.TotalOutputTokens},
		Field{"request_throughput", PyFloat(s.RequestThroughput)},
		Field{"request_goodput", goodput},
		Field{"output_throughput", PyFloat(s.OutputThroughput)},
		Field{"total_token_throughput", PyFloat(s.TotalTokenThroughput)},
		Field{"latencies", pyFloats(s.Latencies)},
		Field{"queue_times", pyFloats(s.QueueTimes)},
		Field{"max_output_tokens_per_s", PyFloat(s.MaxOutputTokensPerS)},
		Field{"max_concurrent_requests", s.MaxConcurrent},
		Field{"rtfx", PyFloat(0)},
	)
	d = append(d, s.sidelineFields()...)
	for _, m := range info.reported() {
		dist := s.dist(m)
		d = append(d,
			Field{"mean_" + m + "_ms", PyFloat(dist.Mean)},
			Field{"median_" + m + "_ms", PyFloat(dist.Median)},
			Field{"std_" + m + "_ms", PyFloat(dist.Std)},
		)
		for _, p := range info.Percentiles {
			d = append(d, Field{"p" + percentileWord(p) + "_" + m + "_ms", PyFloat(dist.Percentiles[p])})
		}
	}
	d = append(d, Field{"failures_by_class", failures})
	if s.Estimated {
		d = append(d, Field{"percentiles_estimated", true})
	}
	return append(d, detailed...)
}

// ResultFilename is vllm bench serve's default file name for a saved result:
// {label}-{rate}qps[-concurrency{N}]-{model basename}-{date}.json, the label defaulting to
// the backend and the rate written as Python writes a float ("inf", "4.0").
func ResultFilename(info RunInfo) string {
	label := info.Label
	if label == "" {
		label = info.Backend
	}
	label = SanitizeFilename(label) // one name in the directory, whatever the label holds
	conc := ""
	if info.MaxConcurrency > 0 {
		conc = "-concurrency" + strconv.Itoa(info.MaxConcurrency)
	}
	rate := pyRepr(info.RequestRate) + "qps"
	if r := info.Ramp; r.On() {
		rate = fmt.Sprintf("ramp-up-%s-%dqps-%dqps", r.Strategy, r.StartRPS, r.EndRPS)
	}
	return fmt.Sprintf("%s-%s%s-%s-%s.json", label, rate, conc, modelBase(info.ModelID), info.Date.Format(ResultDateFormat))
}

// modelBase is the part of a model id after its last slash, as vLLM names result files, made
// a safe file name (the id came from the server).
func modelBase(id string) string { return sanitize.FileName(id[strings.LastIndex(id, "/")+1:]) }

// Report prints and saves a headless benchmark's runs as vllm bench serve does: each run's
// result table (or, with JSON, the result documents at Close), its result file, one line for
// each problem (failed requests, a run with no success, an interruption), and a sweep's summary
// table at Close. Add is a Sweep's done function.
type Report struct {
	Out  io.Writer    // the tables, or the JSON
	Warn func(string) // the problem lines
	JSON bool
	Save *SaveOptions // where each run's result is saved; nil: not saved
	// Saved is the path the last run's result was saved at ("" none): its own name, or the
	// next free "-N" one (see SaveResult), which the run's figures are named after.
	Saved string

	docs     []ResultDoc
	rows     []SweepRow
	info     RunInfo // the last run's: its percentile metrics and percentiles head the summary
	param    string
	failed   bool
	releases []func()
}

// Add reports one finished run.
func (r *Report) Add(run SweepRun) {
	r.docs, r.rows, r.info = append(r.docs, run.Doc), append(r.rows, SweepRow{Value: run.Value, Summary: run.Summary}), run.Info
	if r.JSON {
		r.releases = append(r.releases, run.Release) // the document is written at Close
	} else {
		defer run.Release()
	}
	if run.Of > 1 {
		r.param = run.Param
	}
	if !r.JSON {
		if run.Index > 0 {
			fmt.Fprintln(r.Out)
		}
		_ = PrintResult(r.Out, run.Summary, run.Info)
		if run.Turns != nil {
			_ = PrintTurns(r.Out, *run.Turns)
		}
	}
	if r.Save != nil {
		opts := *r.Save
		opts.Sweep = r.param
		name, err := SaveResult(run.Doc, run.Info, opts)
		r.Saved = name
		switch {
		case err != nil:
			r.problem("cannot save the result: " + textfmt.OneLine(err.Error(), 0))
		case opts.Filename == "" && filepath.Base(name) != ResultFilename(run.Info):
			r.Warn("the result's usual name was taken; it is saved as " + textfmt.OneLine(name, 0))
		}
	}
	s := run.Summary
	if s.Estimated {
		r.Warn(fmt.Sprintf("the percentiles are HDR estimates (3 significant digits): the run's timings passed the %d MiB kept for exact ones", DefaultExactBytes>>20))
	}
	switch {
	case run.Interrupted:
		r.problem("interrupted; the last result covers the requests that finished")
		return
	case run.Stopped != "":
		msg := run.Stopped
		if run.Index < run.Of-1 {
			msg += "; the sweep stops here"
		}
		r.problem(msg)
		return
	}
	if s.Failed > 0 {
		r.Warn(fmt.Sprintf("%d of %d requests failed: %s", s.Failed, s.Failed+s.Completed, FailureSummary(s.FailuresByClass)))
	}
	if s.Completed == 0 {
		msg := "no request succeeded"
		if s.LastFailure != "" {
			msg += " (last: " + s.LastFailure + ")"
		}
		if run.Index < run.Of-1 {
			msg += "; the sweep stops here"
		}
		r.problem(msg)
	}
}

func (r *Report) problem(msg string) {
	r.failed = true
	r.Warn(msg)
}

// Close prints what follows the runs: the JSON (a list for a sweep), or a sweep's summary.
func (r *Report) Close() error {
	defer func() {
		for _, release := range r.releases {
			release()
		}
		r.releases = nil
	}()
	switch {
	case r.JSON && len(r.docs) > 0:
		return writeDocs(r.Out, r.docs, r.param != "")
	case !r.JSON && r.param != "":
		fmt.Fprintln(r.Out)
		return PrintSweep(r.Out, r.param, r.rows, r.info)
	}
	return nil
}

// Failed reports whether a run could not be saved, was interrupted or had no success.
func (r *Report) Failed() bool { return r.failed }

// SaveOptions says where SaveResult writes.
type SaveOptions struct {
	Dir      string // --result-dir; "" is the current directory (created when missing)
	Filename string // --result-filename; "" is vLLM's pattern (ResultFilename); kept inside Dir when Dir is given
	// Sweep is the swept parameter of a sweep (SweepConcurrency or SweepRequestRate), "" for one
	// run. In a sweep a given Filename gets the run's value before its extension, so the runs
	// do not overwrite each other.
	Sweep string
	// Overwrite replaces an existing result file (--overwrite); Append adds the result to it
	// as one JSON line (vLLM's --append-result). Without either an existing file is kept.
	Overwrite, Append bool
}

// File is how SaveResult opens the result file.
func (o SaveOptions) File() outfile.Options {
	f := outfile.Options{Hint: "give --overwrite to replace it, --append-result to add to it, or another --result-filename"}
	switch {
	case o.Append:
		f.Mode = outfile.Append
	case o.Overwrite:
		f.Mode = outfile.Overwrite
	}
	return f
}

// ResultPath is where SaveResult writes a run's result. A --result-filename that leads out
// of --result-dir ("../f") is refused.
func ResultPath(info RunInfo, opts SaveOptions) (string, error) {
	name := ResultFilename(info)
	if opts.Filename != "" {
		name = opts.Filename
		if opts.Sweep != "" {
			ext := filepath.Ext(name)
			tag := "-concurrency" + strconv.Itoa(info.MaxConcurrency)
			if opts.Sweep == SweepRequestRate {
				tag = "-" + strconv.FormatFloat(info.RequestRate, 'f', -1, 64) + "qps"
			}
			name = strings.TrimSuffix(name, ext) + tag + ext
		}
		if opts.Dir == "" {
			return name, nil // a path of the user's own choosing
		}
	}
	path, err := outfile.Within(cmp.Or(opts.Dir, "."), name)
	if err != nil {
		return "", fmt.Errorf("--result-filename: %w", err)
	}
	if opts.Dir == "" {
		path = name
	}
	return path, nil
}

// SaveResult writes one run's document where vllm bench serve would, on one line (with Append,
// after what the file holds), and returns the file's path.
func SaveResult(doc ResultDoc, info RunInfo, opts SaveOptions) (string, error) {
	name, err := ResultPath(info, opts)
	if err != nil {
		return "", err
	}
	f, err := outfile.Create(name, opts.File())
	// vLLM's pattern names the second of the run: runs that end in the same second (short
	// virtual-clock runs in a loop) take the next free "-N" name rather than lose the result.
	generated := opts.Filename == "" && !opts.Overwrite && !opts.Append
	base, ext := name, filepath.Ext(name)
	for n := 2; generated && errors.Is(err, outfile.ErrExists) && n <= 1000; n++ {
		name = strings.TrimSuffix(base, ext) + "-" + strconv.Itoa(n) + ext
		f, err = outfile.Create(name, opts.File())
	}
	if err != nil {
		return "", err
	}
	// One line, as vLLM's json.dump writes it, so that appended results make JSON lines.
	err = appendDoc(f, doc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return name, err
}

// appendDoc writes doc as one JSON line at the end of f, after a newline when the file ends
// without one (vLLM writes each appended result after a newline, and none after it).
func appendDoc(f *os.File, doc ResultDoc) error {
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		// A new file: the line streams, however long its --save-detailed arrays.
		bw := bufio.NewWriter(f)
		if err := doc.WriteLine(bw); err != nil {
			return err
		}
		bw.WriteByte('\n')
		return bw.Flush()
	}
	// Results already there are kept whole: the line is written only once it is complete.
	var b bytes.Buffer
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, info.Size()-1); err == nil && last[0] != '\n' {
		b.WriteByte('\n')
	}
	if err := doc.WriteLine(&b); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err = f.Write(b.Bytes())
	return err
}
