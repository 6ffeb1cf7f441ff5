package fleet

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// States of a row (see diagnose.State).
const (
	StateInit      = diagnose.StateInit
	StateUp        = diagnose.StateUp
	StateRestarted = diagnose.StateRestarted
	StateStale     = diagnose.StateStale
	StateDown      = diagnose.StateDown
)

// Key identifies a row: an endpoint (a direct endpoint's name, or a Prometheus instance),
// one model it serves and one data-parallel engine of that model.
type Key struct {
	Endpoint string `json:"endpoint"`
	Model    string `json:"model"`
	Engine   string `json:"engine"`
}

// Row is one endpoint, or one data-parallel engine of one, as the fleet table shows it.
type Row struct {
	Key Key `json:"key"`
	// Name is the row's label: the endpoint, with " e1" for engine 1 of several.
	Name string `json:"name"`
	// URL is where it is scraped (user info and query values removed).
	URL string `json:"url,omitempty"`
	// Engines is how many data-parallel engines the endpoint has for this model.
	Engines int `json:"engines"`

	// Signals are the row's numbers and state; Signals.Subject equals Name.
	diagnose.Signals

	// ProcessStart is the server's process_start_time_seconds (Unix seconds), for its
	// uptime; absent in vLLM's multiprocess mode (data parallel).
	ProcessStart scrape.Value `json:"process_start"`
	// Util is the configured --gpu-memory-utilization (cache_config_info), 0..1.
	Util scrape.Value `json:"util"`
	// LastGood is when the numbers were read (zero: never).
	LastGood time.Time `json:"last_good,omitzero"`
	// Frozen marks numbers kept from the last good read of a DOWN or STALE endpoint: shown,
	// flagged, and left out of totals.
	Frozen bool `json:"frozen,omitempty"`
	// LastError is the last failed attempt's reason, even while the row is still up.
	LastError string `json:"last_error,omitempty"`
	// NotExported lists the fields the backend has no metric for (SGLang, TGI): their
	// absence is the server's, not a failure.
	NotExported []Field `json:"not_exported,omitempty"`
	// Verdicts are this row's, worst first, imbalance across its group included.
	Verdicts []diagnose.Verdict `json:"verdicts,omitempty"`
	// MaxNumSeqs is the endpoint's configured --max-num-seqs (0: not known).
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
}

// Top is the row's worst verdict.
func (r *Row) Top() (diagnose.Verdict, bool) {
	if len(r.Verdicts) == 0 {
		return diagnose.Verdict{}, false
	}
	return r.Verdicts[0], true
}

// Imbalanced reports whether the row is flagged against its group (waiting or KV skew).
func (r *Row) Imbalanced() bool {
	for _, v := range r.Verdicts {
		if v.Rule == diagnose.RuleImbalance || v.Rule == diagnose.RuleKVSkew {
			return true
		}
	}
	return false
}

// EstimateLabel says how the row's latencies were estimated, for a column title or a
// tooltip: "~60s est", or "" without a window.
func (r *Row) EstimateLabel() string {
	if r.WindowSeconds <= 0 {
		return ""
	}
	return "~" + (time.Duration(r.WindowSeconds+0.5) * time.Second).String() + " est"
}

// Field names a row's number, for NotExported and for sorting.
type Field string

// The fields of a row.
const (
	FieldRunning      Field = "running"
	FieldWaiting      Field = "waiting"
	FieldKVCacheUsage Field = "kv_cache_usage"
	FieldGenTokens    Field = "generation_tokens_per_sec"
	FieldPromptTokens Field = "prompt_tokens_per_sec"
	FieldTTFTP99      Field = "ttft_p99"
	FieldITLP99       Field = "itl_p99"
	FieldPreemptions  Field = "preemptions_per_sec"
	FieldErrors       Field = "errors_per_sec"
	FieldPrefixHits   Field = "prefix_cache_hit_rate"
	FieldQueueMean    Field = "queue_time_mean"
	FieldPrefillMean  Field = "prefill_time_mean"
)

// Fields lists every field in the fleet table's column order.
var Fields = []Field{FieldRunning, FieldWaiting, FieldKVCacheUsage, FieldGenTokens, FieldPromptTokens, FieldTTFTP99,
	FieldITLP99, FieldPreemptions, FieldErrors, FieldPrefixHits, FieldQueueMean, FieldPrefillMean}

// Value is the row's number for a field (absent when unknown).
func (r *Row) Value(f Field) scrape.Value {
	s := &r.Signals
	switch f {
	case FieldRunning:
		return s.Running
	case FieldWaiting:
		return s.Waiting
	case FieldKVCacheUsage:
		return s.KVCacheUsage
	case FieldGenTokens:
		return s.GenerationTokensPerSec
	case FieldPromptTokens:
		return s.PromptTokensPerSec
	case FieldTTFTP99:
		return s.TTFTP99.V
	case FieldITLP99:
		return s.ITLP99.V
	case FieldPreemptions:
		return s.PreemptionsPerSec
	case FieldErrors:
		return s.ErrorsPerSec
	case FieldPrefixHits:
		return s.PrefixCacheHitRate
	case FieldQueueMean:
		return s.QueueMean
	case FieldPrefillMean:
		return s.PrefillMean
	}
	return scrape.Value{}
}

// notExported lists, per backend, the fields it has no metric for: the metrics scrape maps
// (scrape/names.go) and the PromQL of prometheus.go read the same ones.
var notExported = map[scrape.Backend][]Field{
	scrape.BackendSGLang: {FieldPreemptions, FieldErrors, FieldPrefixHits, FieldPrefillMean},
	scrape.BackendTGI: {FieldKVCacheUsage, FieldGenTokens, FieldPromptTokens, FieldTTFTP99, FieldITLP99,
		FieldPreemptions, FieldPrefixHits, FieldPrefillMean},
	scrape.BackendUnknown: Fields,
}

// NotExported lists the fields a backend has no metric for.
func NotExported(b scrape.Backend) []Field { return notExported[b] }

// Source is what a fleet view reads: Direct and Prometheus both are one.
type Source interface {
	// Run polls until ctx ends.
	Run(ctx context.Context) error
	// Refresh reads every row once now.
	Refresh(ctx context.Context) error
	// Fleet is the rows now, judged with the client's facts.
	Fleet(facts diagnose.Facts) Fleet
	// History is the rows' series for charts.
	History() *History
	// Updated receives a value (coalesced) when new data arrived.
	Updated() <-chan struct{}
}

var (
	_ Source = (*Direct)(nil)
	_ Source = (*Prometheus)(nil)
)

// Fleet is every row at one moment, with the verdicts over all of them.
type Fleet struct {
	Time time.Time `json:"time"`
	// Source is "direct" or "prometheus".
	Source string `json:"source"`
	Rows   []Row  `json:"rows"`
	// Verdicts are every row's verdicts and the client's, worst first.
	Verdicts []diagnose.Verdict `json:"verdicts,omitempty"`
	// Up counts the endpoints with fresh data; Endpoints all of them.
	Up, Endpoints int
}

// Summary is the header line: the overall state and the worst verdict.
func (f *Fleet) Summary() (diagnose.Overall, string) { return diagnose.Summary(f.Verdicts) }

// Row finds a row by key.
func (f *Fleet) Row(k Key) (*Row, bool) {
	for i := range f.Rows {
		if f.Rows[i].Key == k {
			return &f.Rows[i], true
		}
	}
	return nil, false
}

// SortBy orders rows by a field, largest first, absent values last; ties by name. The
// empty field sorts by state (worst first), then name.
func SortBy(rows []Row, f Field) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if f == "" {
			if a.State != b.State {
				return a.State > b.State
			}
			return a.Name < b.Name
		}
		va, vb := a.Value(f), b.Value(f)
		switch {
		case va.OK && vb.OK && va.V != vb.V:
			return va.V > vb.V
		case va.OK != vb.OK:
			return va.OK
		}
		return a.Name < b.Name
	})
}

// Filter keeps the rows whose name, model, URL, state or top verdict's rule contains s
// (case-insensitive).
func Filter(rows []Row, s string) []Row {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return rows
	}
	var out []Row
	for _, r := range rows {
		hay := strings.ToLower(r.Name + " " + r.Model + " " + r.URL + " " + r.State.String())
		if v, ok := r.Top(); ok {
			hay += " " + v.Rule
		}
		if strings.Contains(hay, s) {
			out = append(out, r)
		}
	}
	return out
}
