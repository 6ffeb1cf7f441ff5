package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The variables an SLO search tunes, as vllm bench sweep serve_sla's --sla-variable names them.
const (
	SLOConcurrency = "max_concurrency"
	SLORate        = "request_rate"
)

// SLOMaxValue is the value that stands for "everything at once" in a search, as vLLM's: a
// request rate of 65536 is sent as inf.
const SLOMaxValue = 65536

// sloEpsilon makes a strict bound fail at equality, as vLLM's SLA_EPS does.
const sloEpsilon = 1e-8

// Criterion is one service-level constraint on a metric of a run's result document, in vLLM's
// form {"p99_ttft_ms": "<=500"}.
type Criterion struct {
	Metric string  // a key of the result document, e.g. p99_ttft_ms or output_throughput
	Op     string  // <=, >=, < or >
	Target float64 // in the metric's unit
}

// Margin is how far actual is from meeting the criterion: <= 0 when met, the distance to the
// target otherwise (vLLM's compute_margin).
func (c Criterion) Margin(actual float64) float64 {
	switch c.Op {
	case "<":
		return actual + sloEpsilon - c.Target
	case ">=":
		return c.Target - actual
	case ">":
		return c.Target + sloEpsilon - actual
	}
	return actual - c.Target
}

// String writes the criterion as vLLM's format_cond does: p99_ttft_ms<=500.00.
func (c Criterion) String() string {
	return c.Metric + c.Op + strconv.FormatFloat(c.Target, 'f', 2, 64)
}

// SLO is a set of criteria a run must meet together.
type SLO []Criterion

// Text joins the criteria with sep, as vLLM's as_text does (", " to print, "-" in file names).
func (s SLO) Text(sep string) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.String()
	}
	return strings.Join(parts, sep)
}

// Percentiles are the percentiles the criteria read (99 for p99_ttft_ms), so the runs report them.
func (s SLO) Percentiles() []float64 {
	var ps []float64
	for _, c := range s {
		if m := percentileKey.FindStringSubmatch(c.Metric); m != nil {
			p, _ := strconv.ParseFloat(strings.ReplaceAll(m[1], "_", "."), 64)
			ps = append(ps, p)
		}
	}
	return ps
}

var percentileKey = regexp.MustCompile(`^p([0-9]+(?:[._][0-9]+)?)_(?:ttft|tpot|itl|e2el)_ms$`)

// sloOps in the order they are matched: longer first, as vLLM matches them.
var sloOps = []string{"<=", ">=", "<", ">"}

// parseCriterion reads one constraint: the metric and "<=500".
func parseCriterion(metric, cond string) (Criterion, error) {
	metric, cond = strings.TrimSpace(metric), strings.TrimSpace(cond)
	if !sloMetric.MatchString(metric) {
		return Criterion{}, fmt.Errorf("SLA constraint %q: want a result key such as p99_ttft_ms", metric)
	}
	for _, op := range sloOps {
		if rest, ok := strings.CutPrefix(cond, op); ok {
			x, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return Criterion{}, fmt.Errorf("SLA constraint '%s=%s': %q is not a number", metric, cond, rest)
			}
			if x < 0 && op[0] == '<' {
				// Latencies, rates and throughputs are never negative: nothing could meet it.
				return Criterion{}, fmt.Errorf("SLA constraint '%s=%s': a target below 0 can never be met", metric, cond)
			}
			return Criterion{Metric: metric, Op: op, Target: x}, nil
		}
	}
	return Criterion{}, fmt.Errorf("invalid operator for SLA constraint '%s=%s'; valid operators are <, <=, >, >=", metric, cond)
}

var sloMetric = regexp.MustCompile(`^[a-z][a-z0-9_.]*$`)

// ParseSLO reads the inline form --sla "p99_ttft_ms<=500,p99_tpot_ms<=50".
func ParseSLO(s string) (SLO, error) {
	var out SLO
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := strings.IndexAny(part, "<>")
		if i <= 0 {
			return nil, fmt.Errorf("--sla %q: want metric<=value, e.g. p99_ttft_ms<=500", part)
		}
		c, err := parseCriterion(part[:i], part[i:])
		if err != nil {
			return nil, fmt.Errorf("--sla: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New(`--sla: no constraint given (want e.g. "p99_ttft_ms<=500,p99_tpot_ms<=50")`)
	}
	return out, nil
}

// ParseSLOParams reads --sla-params as vLLM does: a JSON list of constraint objects, each a set
// of {"<KEY>": "<OP><VALUE>"} searched for separately ({"p99_ttft_ms": "<=500"}), given as a
// file or, when it starts with [ or {, as the JSON itself (one object is a list of one). Keys of
// one object keep their order.
func ParseSLOParams(s string) ([]SLO, error) {
	data := []byte(strings.TrimSpace(s))
	if len(data) == 0 || (data[0] != '[' && data[0] != '{') {
		b, err := os.ReadFile(s)
		if err != nil {
			return nil, fmt.Errorf("--sla-params: %w", err)
		}
		data = b
	}
	var whole any
	if err := json.Unmarshal(data, &whole); err != nil {
		// Truncated, or followed by something else: the decoders below read only the start.
		return nil, fmt.Errorf("--sla-params: not valid JSON: %v", err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		raw = []json.RawMessage{data}
	}
	var out []SLO
	for _, r := range raw {
		fields, err := orderedStrings(r)
		if err != nil {
			return nil, fmt.Errorf("--sla-params: each constraint set must be an object of strings such as {\"p99_ttft_ms\": \"<=500\"}: %v", err)
		}
		var slo SLO
		for _, f := range fields {
			c, err := parseCriterion(f[0], f[1])
			if err != nil {
				return nil, fmt.Errorf("--sla-params: %w", err)
			}
			slo = append(slo, c)
		}
		if len(slo) == 0 {
			return nil, errors.New("--sla-params: an empty constraint set")
		}
		out = append(out, slo)
	}
	if len(out) == 0 {
		return nil, errors.New("--sla-params: no constraint set given")
	}
	return out, nil
}

// orderedStrings reads a JSON object of strings as key, value pairs in their order.
func orderedStrings(data []byte) ([][2]string, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out [][2]string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%v: want a string such as \"<=500\"", k)
		}
		out = append(out, [2]string{k.(string), v})
	}
	return out, nil
}

// numberOf reads a numeric field of a result document.
func numberOf(d ResultDoc, key string) (float64, bool) {
	v, ok := d.Get(key)
	if !ok {
		return 0, false
	}
	switch x := v.(type) {
	case PyFloat:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// SLOSearch is one SLO search: the variable to tune and the constraints to meet.
type SLOSearch struct {
	Variable string // SLOConcurrency or SLORate
	SLO      SLO
	// Max is the highest value tried, "everything at once" (SLOMaxValue when 0).
	Max int
	// Start, when above 0, replaces the everything-at-once probe and its guess: the bracket
	// doubles from Start (a live load searching from where it runs, where a probe at Max
	// would flood the server the user is watching).
	Start int
	// Tolerance, when above 0, ends the bisection once the bracket is within this fraction of
	// its lower end (0.05: 5%) rather than one step: a live probe's p99 moves by more than a
	// step's difference near the knee.
	Tolerance float64
	// Retries is how many times a discarded probe (DiscardError) is made again before the
	// value is given up as not measurable (0: DefaultSLORetries; below 0: none).
	Retries int
	// OnDiscard, when set, hears each discarded probe.
	OnDiscard func(SLODiscard)
}

// SLOProbe is one value tried: its runs, the criteria's metrics averaged over them, and the
// margin (<= 0: the constraints were met).
type SLOProbe struct {
	Value  int
	Phase  string // "max" (everything at once), "bracket" (doubling) or "bisect"
	Docs   []ResultDoc
	Means  map[string]float64
	Margin float64
	// Unsustained says why the probe failed whatever its metrics: the server fell behind the
	// load asked of it, so its queue, and its latencies with it, grow without bound ("" when
	// it kept up).
	Unsustained string
}

// Passed reports whether the probe met every constraint.
func (p SLOProbe) Passed() bool { return p.Margin <= 0 }

// SLOResult is a finished (or interrupted) search.
type SLOResult struct {
	Probes []SLOProbe // in the order they ran
	// Knee is the largest value that met the constraints (0: none did).
	Knee int
	// Discarded are the probes thrown away, never scored, in the order they ran.
	Discarded []SLODiscard
}

// ByValue returns the probes ordered by value: the curve.
func (r SLOResult) ByValue() []SLOProbe {
	out := append([]SLOProbe(nil), r.Probes...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// ProbeFunc makes the runs of one value (one run per --num-runs) and returns their documents.
type ProbeFunc func(ctx context.Context, value int, phase string) ([]ResultDoc, error)

// SearchSLO finds the largest value of s.Variable whose runs meet s.SLO, as vllm bench sweep
// serve_sla does: one probe with everything at once (s.Max), whose throughput gives a first
// guess by Little's law (the request rate it sustained, or the concurrency it reached:
// throughput x mean E2E latency); doubling from the guess until a probe fails; then bisection
// between the last pass and the first failure down to one step. A value is probed once. It
// assumes that load only worsens the metrics. onProbe, when set, hears each probe as it ends.
// The error is ctx's (the probes so far are returned) or a probe's.
func SearchSLO(ctx context.Context, s SLOSearch, probe ProbeFunc, onProbe func(SLOProbe)) (SLOResult, error) {
	if s.Max <= 0 {
		s.Max = SLOMaxValue
	}
	sr := &searcher{s: s, probe: probe, onProbe: onProbe, seen: map[int]*SLOProbe{}}
	res := &sr.res
	v := min(s.Start, s.Max)
	if s.Start <= 0 {
		first, err := sr.try(ctx, s.Max, "max")
		if err != nil {
			return res.finish(), err
		}
		if first.Passed() {
			return res.finish(), nil
		}
		guess := 0.0
		for _, d := range first.Docs {
			guess += littleEstimate(d, s.Variable)
		}
		v = min(max(1, int(math.Ceil(guess/float64(len(first.Docs))))), s.Max)
	}
	for v < s.Max || (s.Start > 0 && v == s.Max) {
		p, err := sr.try(ctx, v, "bracket")
		if err != nil {
			return res.finish(), err
		}
		if !p.Passed() || v == s.Max {
			break
		}
		v *= 2
		if s.Start > 0 {
			v = min(v, s.Max) // the top is probed, not assumed to fail
		}
	}
	lo, hi := res.bounds(s.Max)
	for hi-lo > max(1, int(s.Tolerance*float64(lo))) {
		mid := (lo + hi) / 2
		p, err := sr.try(ctx, mid, "bisect")
		if err != nil {
			return res.finish(), err
		}
		if p.Passed() {
			lo = mid
		} else {
			hi = mid
		}
	}
	return res.finish(), nil
}

// DefaultSLORetries is how many times a discarded probe of one value is made again.
const DefaultSLORetries = 2

// DiscardError is a probe whose runs cannot be scored: the server was unreachable or
// restarting, too many requests failed, or the client fell behind its schedule. SearchSLO
// makes the probe again rather than count it as a pass or a failure.
type DiscardError struct{ Reason string }

func (e *DiscardError) Error() string { return "probe discarded: " + e.Reason }

// Discard is a DiscardError for the reason given.
func Discard(format string, a ...any) error {
	return &DiscardError{Reason: fmt.Sprintf(format, a...)}
}

// UnsustainedError is a probe whose server did not keep up with the load: requests came in
// faster than they finished. Its documents are kept, and the probe fails whatever its
// latencies, which a short window measures before the queue has grown.
type UnsustainedError struct{ Reason string }

func (e *UnsustainedError) Error() string { return "the server did not keep up: " + e.Reason }

// UnmeasuredError ends a search at a value whose every probe was discarded.
type UnmeasuredError struct {
	Variable string
	Value    int
	Tries    int
	Reason   string // the last probe's
}

func (e *UnmeasuredError) Error() string {
	return fmt.Sprintf("%s=%d could not be measured: %d probes discarded, the last as %s", e.Variable, e.Value, e.Tries, e.Reason)
}

// SLODiscard is a probe thrown away: its value, phase, try (1 for the first) and why.
type SLODiscard struct {
	Value  int
	Phase  string
	Try    int
	Reason string
}

// searcher is one search under way: the probes made, each value's at most once.
type searcher struct {
	s       SLOSearch
	probe   ProbeFunc
	onProbe func(SLOProbe)
	res     SLOResult
	seen    map[int]*SLOProbe
}

// try is the probe of v, made again while it is discarded (s.Retries times at most).
func (sr *searcher) try(ctx context.Context, v int, phase string) (*SLOProbe, error) {
	if p, ok := sr.seen[v]; ok {
		return p, nil
	}
	s := sr.s
	retries := s.Retries
	if retries == 0 {
		retries = DefaultSLORetries
	}
	for k := 1; ; k++ {
		docs, err := sr.probe(ctx, v, phase)
		var un *UnsustainedError
		unsustained := errors.As(err, &un)
		if unsustained {
			err = nil
		}
		var d *DiscardError
		if errors.As(err, &d) && ctx.Err() == nil {
			sr.res.Discarded = append(sr.res.Discarded, SLODiscard{Value: v, Phase: phase, Try: k, Reason: d.Reason})
			if s.OnDiscard != nil {
				s.OnDiscard(sr.res.Discarded[len(sr.res.Discarded)-1])
			}
			if k > max(retries, 0) {
				return nil, &UnmeasuredError{Variable: s.Variable, Value: v, Tries: k, Reason: d.Reason}
			}
			continue
		}
		if len(docs) == 0 {
			if err == nil {
				err = fmt.Errorf("%s=%d: no run was made", s.Variable, v)
			}
			return nil, err
		}
		p, perr := s.judge(v, phase, docs)
		if perr != nil {
			return nil, perr
		}
		if unsustained {
			p.Margin, p.Unsustained = math.Inf(1), un.Reason
		}
		sr.res.Probes = append(sr.res.Probes, p)
		last := &sr.res.Probes[len(sr.res.Probes)-1]
		sr.seen[v] = last
		if sr.onProbe != nil {
			sr.onProbe(p)
		}
		return last, err
	}
}

// judge is the probe of value v from its runs' documents: the criteria's metrics averaged
// over them, and the margin.
func (s SLOSearch) judge(v int, phase string, docs []ResultDoc) (SLOProbe, error) {
	p := SLOProbe{Value: v, Phase: phase, Docs: docs, Means: map[string]float64{}, Margin: math.Inf(-1)}
	for _, c := range s.SLO {
		sum := 0.0
		for _, d := range docs {
			x, ok := numberOf(d, c.Metric)
			if !ok {
				return p, fmt.Errorf("SLA metric %q is not in the results (keys are as in the saved JSON, e.g. p99_ttft_ms)", c.Metric)
			}
			sum += x
		}
		p.Means[c.Metric] = sum / float64(len(docs))
		p.Margin = math.Max(p.Margin, c.Margin(p.Means[c.Metric]))
	}
	return p, nil
}

// littleEstimate is the value a run at full load suggests: the request rate it sustained, or
// the concurrency it reached by Little's law.
func littleEstimate(d ResultDoc, variable string) float64 {
	rps, _ := numberOf(d, "request_throughput")
	if variable == SLORate {
		return rps
	}
	e2el, _ := numberOf(d, "mean_e2el_ms")
	return rps * e2el / 1000
}

// bounds are the largest passing value (0 if none) and the smallest failing one above it.
func (r SLOResult) bounds(maxValue int) (lo, hi int) {
	hi = maxValue
	for _, p := range r.Probes {
		if p.Passed() {
			lo = max(lo, p.Value)
		}
	}
	for _, p := range r.Probes {
		if !p.Passed() && p.Value > lo {
			hi = min(hi, p.Value)
		}
	}
	return lo, hi
}

func (r SLOResult) finish() SLOResult {
	r.Knee, _ = r.bounds(SLOMaxValue)
	return r
}

// KneeLine is the search's last line, as vLLM prints it: "Maximum max_concurrency for SLA: 48"
// (a rate in req/s).
func KneeLine(variable string, knee int) string {
	if variable == SLORate {
		return fmt.Sprintf("Maximum %s for SLA: %d req/s.", variable, knee)
	}
	return fmt.Sprintf("Maximum %s for SLA: %d", variable, knee)
}

// ResultKeys are the numeric keys of the result document a run with info writes, as
// ResultJSON writes them, and extra (a search's variable, a sweep's settings): the names a
// criterion may read. They follow from the run's settings alone, so a search checks its
// criteria before it sends anything.
func ResultKeys(info RunInfo, extra ...string) []string {
	out := append([]string(nil), extra...)
	for _, f := range ResultJSON(Summary{}, info, nil) {
		switch f.Value.(type) {
		case PyFloat, float64, int:
			if !slices.Contains(out, f.Key) {
				out = append(out, f.Key)
			}
		}
	}
	return out
}

// CheckKeys refuses a criterion on a metric the results will not have, naming those they will.
func (s SLO) CheckKeys(keys []string) error {
	for _, c := range s {
		if !slices.Contains(keys, c.Metric) {
			return fmt.Errorf("SLA metric %q is not a result key; valid names: %s", c.Metric, strings.Join(keys, ", "))
		}
	}
	return nil
}
