package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllmtop/vllmtop/internal/base/defaults"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/internal/base/untrusted"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// Defaults of a Prometheus source.
const (
	DefaultPromInterval     = 5 * time.Second
	DefaultPromTimeout      = 10 * time.Second
	DefaultPromRestartHold  = 2 * time.Minute
	DefaultLookback         = time.Hour
	DefaultMaxResponseBytes = 32 << 20
	// MaxSeries bounds the series of one answer: more rows than a fleet table can show, and
	// far fewer than an answer under the byte cap could hold (300,000 took 1.5 GB).
	MaxSeries = 2000
	// maxInstantBytes caps an instant query's answer: MaxSeries series of a few labels each
	// fit many times over; only a range query's answer may use MaxResponseBytes.
	maxInstantBytes = 4 << 20
	// maxErrorText bounds the error shown for a failed round.
	maxErrorText             = 400
	defaultPromConcurrency   = 4
	minPromInterval          = 100 * time.Millisecond // a floor: "1ns" read Prometheus in a busy loop
	defaultPromScrapeSeconds = 15                     // Prometheus's own default, when it cannot be estimated
)

// PrometheusConfig configures a Prometheus source. Zero values take the defaults.
type PrometheusConfig struct {
	// URL is the Prometheus server's base URL (http://prometheus:9090).
	URL string
	// Selector picks the fleet's targets, e.g. {job="vllm",namespace="prod"}
	// (DefaultSelector when empty).
	Selector string
	// APIKey, if set, is sent as a Bearer token; it is never shown.
	APIKey string
	// Interval is how often the rows are read.
	Interval time.Duration
	// Window is the range of rate() and histogram_quantile: at least two of Prometheus's
	// scrape intervals (DefaultWindow).
	Window time.Duration
	// Timeout bounds one query.
	Timeout time.Duration
	// StaleAfter is how many of a target's scrape intervals without a scrape make it STALE
	// (DefaultStaleAfter), and how many Intervals without an answer from Prometheus make
	// every row STALE.
	StaleAfter int
	// RestartHold is how far back a restart is looked for and shown (RESTARTED).
	RestartHold time.Duration
	// Lookback is how much history Backfill reads (at most what History holds).
	Lookback time.Duration
	History  *History
	// MaxConcurrentQueries bounds the queries in flight.
	MaxConcurrentQueries int
	// MaxResponseBytes caps one answer of Prometheus.
	MaxResponseBytes int64
	// RoundTripper carries the queries (nil: client_golang's default).
	RoundTripper http.RoundTripper
	Thresholds   *diagnose.Thresholds
	Now          func() time.Time
}

// Prometheus reads a fleet from a Prometheus server's HTTP API.
type Prometheus struct {
	cfg     PrometheusConfig
	th      diagnose.Thresholds
	api     promv1.API
	url     string
	rq      []rowQuery
	iq      instanceQueries
	hq      map[Metric]string
	history *History
	sem     chan struct{}
	updated chan struct{}

	backfilled atomic.Bool // Backfill was called: Run does not read the history again

	mu      sync.Mutex
	rows    []Row
	lastOK  time.Time
	lastErr error
}

// NewPrometheus checks the configuration; nothing is queried until Refresh, Backfill or Run.
func NewPrometheus(cfg PrometheusConfig) (*Prometheus, error) {
	if strings.TrimSpace(cfg.URL) == "" {
		return nil, errors.New("no Prometheus URL given")
	}
	if !strings.Contains(cfg.URL, "://") {
		cfg.URL = "http://" + cfg.URL
	}
	if cfg.Selector == "" {
		cfg.Selector = DefaultSelector
	}
	sel, err := parseSelector(cfg.Selector)
	if err != nil {
		return nil, err
	}
	cfg.Interval = max(defaults.Positive(cfg.Interval, DefaultPromInterval), minPromInterval)
	cfg.Window = defaults.Positive(cfg.Window, DefaultWindow)
	cfg.Timeout = defaults.Positive(cfg.Timeout, DefaultPromTimeout)
	cfg.RestartHold = defaults.Positive(cfg.RestartHold, DefaultPromRestartHold)
	cfg.Lookback = defaults.Positive(cfg.Lookback, DefaultLookback)
	cfg.StaleAfter = defaults.Positive(cfg.StaleAfter, DefaultStaleAfter)
	cfg.MaxConcurrentQueries = defaults.Positive(cfg.MaxConcurrentQueries, defaultPromConcurrency)
	cfg.MaxResponseBytes = defaults.Positive(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	rt := cfg.RoundTripper
	if rt == nil {
		rt = api.DefaultRoundTripper
	}
	rt = cappedTransport{rt: rt, max: cfg.MaxResponseBytes}
	origin, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("prometheus URL %q: %s", untrusted.URL(cfg.URL), oneLineError(err))
	}
	rt = originTransport{rt: rt, origin: origin, key: cfg.APIKey}
	client, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus URL %q: %w", untrusted.URL(cfg.URL), err)
	}
	p := &Prometheus{cfg: cfg, api: promv1.NewAPI(client), url: untrusted.URL(cfg.URL), history: cfg.History,
		sem: make(chan struct{}, cfg.MaxConcurrentQueries), updated: make(chan struct{}, 1)}
	if p.history == nil {
		p.history = NewHistory(0, 0)
	}
	p.th = diagnose.DefaultThresholds()
	if cfg.Thresholds != nil {
		p.th = *cfg.Thresholds
	}
	p.rq = rowQueries(sel, cfg.Window)
	p.iq = newInstanceQueries(sel, cfg.Window, cfg.RestartHold)
	p.hq = historyQueries(p.rq)
	return p, nil
}

// History is the source's history of every row (Backfill fills it from Prometheus).
func (p *Prometheus) History() *History { return p.history }

// Updated receives a value (coalesced) after each refresh.
func (p *Prometheus) Updated() <-chan struct{} { return p.updated }

// Run backfills the history (unless Backfill was called already: it is read once at start),
// then refreshes the rows every Interval until ctx ends. A failed round is kept in Err and
// retried at the next interval.
func (p *Prometheus) Run(ctx context.Context) error {
	if !p.backfilled.Load() {
		if err := p.Backfill(ctx); err != nil && ctx.Err() == nil {
			// Shown until the first refresh says more.
			_ = p.failed(err)
			p.notify()
		}
	}
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		_ = p.Refresh(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Err is the last refresh's error (nil after a good one).
func (p *Prometheus) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// query runs one instant query within the concurrency bound and the timeout.
func (p *Prometheus) query(ctx context.Context, q string, at time.Time) (model.Vector, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.sem }()
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, q, at)
	if err != nil {
		return nil, err
	}
	return checkVector(v)
}

// checkVector type-checks an instant query's answer: a vector of at most MaxSeries samples
// (null entries dropped), never nil.
func checkVector(v model.Value) (model.Vector, error) {
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("answer of type %s, want a vector", typeOf(v))
	}
	if len(vec) > MaxSeries {
		return nil, fmt.Errorf("answer of %d series, over the %d a fleet view shows: narrow the selector", len(vec), MaxSeries)
	}
	out := vec[:0:0]
	for _, s := range vec {
		if s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// checkMatrix is checkVector for a range query's answer.
func checkMatrix(v model.Value) (model.Matrix, error) {
	mat, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("answer of type %s, want a matrix", typeOf(v))
	}
	if len(mat) > MaxSeries {
		return nil, fmt.Errorf("answer of %d series, over the %d a fleet view shows: narrow the selector", len(mat), MaxSeries)
	}
	out := mat[:0:0]
	for _, s := range mat {
		if s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// typeOf names an answer's type; an answer without data ("data": null) has none.
func typeOf(v model.Value) string {
	if v == nil {
		return "none (no data)"
	}
	return v.Type().String()
}

// recovered turns a panic of a goroutine reading an answer into its error, so that no
// answer can take the dashboard down.
func recovered(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("unreadable answer (%v)", r)
	}
}

// answers are the results of one round of queries.
type answers struct {
	rows     [][]*model.Sample // by rowQuery
	instance map[string]*[]*model.Sample
	resets   [][]*model.Sample
	targets  map[string]promv1.ActiveTarget
	// cacheConfig is vllm:cache_config_info's series: a row's utilisation is a label.
	cacheConfig []*model.Sample
}

func (p *Prometheus) ask(ctx context.Context, at time.Time) (*answers, error) {
	a := &answers{rows: make([][]*model.Sample, len(p.rq)), resets: make([][]*model.Sample, len(p.iq.counterResets)), instance: map[string]*[]*model.Sample{}}
	var up, last, scrapes, start, changes, cacheCfg []*model.Sample
	type job struct {
		name, q string
		dst     *[]*model.Sample
	}
	jobs := []job{{"up", p.iq.up, &up}, {"last scrape", p.iq.lastScrape, &last}, {"scrapes", p.iq.scrapes, &scrapes},
		{"process start", p.iq.processStart, &start}, {"process restarts", p.iq.processChanges, &changes},
		{"cache config", p.iq.cacheConfig, &cacheCfg}}
	for i, q := range p.iq.counterResets {
		jobs = append(jobs, job{"counter resets", q, &a.resets[i]})
	}
	for i, q := range p.rq {
		jobs = append(jobs, job{string(q.field), q.query, &a.rows[i]})
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fails := roundErrors{cancel: cancel}
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			defer func() {
				recovered(&err)
				if err != nil {
					fails.add(fmt.Errorf("%s query: %w", j.name, err))
				}
			}()
			*j.dst, err = p.query(ctx, j.q, at)
		}()
	}
	var targets promv1.TargetsResult
	var targetsErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer recovered(&targetsErr)
		tctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
		defer cancel()
		targets, targetsErr = p.api.Targets(tctx)
	}()
	wg.Wait()
	if err := fails.err(); err != nil {
		return nil, err
	}
	a.instance["up"], a.instance["last"], a.instance["scrapes"], a.instance["start"], a.instance["changes"] = &up, &last, &scrapes, &start, &changes
	a.cacheConfig = cacheCfg
	a.targets = map[string]promv1.ActiveTarget{}
	if targetsErr == nil { // the targets page adds the last error; without it rows still stand
		for i, t := range targets.Active {
			if i == MaxSeries {
				break
			}
			a.targets[string(t.Labels[model.InstanceLabel])] = t
		}
	}
	return a, nil
}

// Refresh reads every row now. On failure the previous rows are kept (and turn STALE as
// they age); the error names Prometheus and the query that failed.
func (p *Prometheus) Refresh(ctx context.Context) error {
	now := p.cfg.Now()
	a, err := p.ask(ctx, now)
	if err == nil {
		var rows []Row
		rows, err = p.safeBuild(now, a)
		if err == nil {
			p.history.Record(now, rows)
			p.mu.Lock()
			p.rows, p.lastOK, p.lastErr = rows, now, nil
			p.mu.Unlock()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err = p.failed(err)
	}
	p.notify()
	return err
}

// selectorError is a failure of the selector, not of Prometheus, which answered: the selector
// matches no target, or Prometheus found it bad PromQL.
type selectorError struct{ msg string }

func (e *selectorError) Error() string { return e.msg }

// failed keeps err as the source's error, worded for the status line, and returns it.
func (p *Prometheus) failed(err error) error {
	var apiErr *promv1.Error
	sel := untrusted.Text(p.cfg.Selector)
	switch {
	case errors.Is(err, errNoTargets):
		err = &selectorError{fmt.Sprintf("prometheus %s answers, but no target's up series matches the selector %s", p.url, sel)}
	case errors.As(err, &apiErr) && apiErr.Type == promv1.ErrBadData:
		err = &selectorError{fmt.Sprintf("prometheus %s refused the query of the selector %s: %s", p.url, sel,
			textfmt.OneLine(sanitize.Message(apiErr.Msg), maxErrorText))}
	default:
		err = fmt.Errorf("prometheus %s: %s", p.url, oneLineError(err))
	}
	p.mu.Lock()
	p.lastErr = err
	p.mu.Unlock()
	return err
}

func (p *Prometheus) notify() {
	select {
	case p.updated <- struct{}{}:
	default:
	}
}

func (p *Prometheus) safeBuild(now time.Time, a *answers) (rows []Row, err error) {
	defer recovered(&err)
	return p.build(now, a)
}

// oneLineError is an error from outside made fit for one line of the status line: no
// escape, no secret in a URL, folded and cut.
func oneLineError(err error) string {
	return textfmt.OneLine(sanitize.Message(err.Error()), maxErrorText)
}

// roundErrors keeps the first error of a round of queries and ends the round: a Prometheus
// that hangs costs one timeout a round, not one per query. Those ended by it are not counted.
type roundErrors struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	first  error
	more   int
}

func (r *roundErrors) add(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.first == nil:
		r.first = err
		r.cancel()
	case !errors.Is(err, context.Canceled):
		r.more++
	}
}

// err is the first error, with how many others failed by themselves.
func (r *roundErrors) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.more > 0 {
		return fmt.Errorf("%w (and %d more)", r.first, r.more)
	}
	return r.first
}

// instanceInfo is what one target is, from the instance queries and the targets page.
type instanceInfo struct {
	up         bool
	lastScrape time.Time
	interval   time.Duration
	restarted  string
	start      float64 // process start, Unix seconds (0: unknown)
	target     promv1.ActiveTarget
}

func value(s *model.Sample, hi float64) (float64, bool) {
	v := float64(s.Value)
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > hi {
		return 0, false
	}
	return v, true
}

func label(s *model.Sample, name model.LabelName) string {
	return untrusted.Text(string(s.Metric[name]))
}

func (p *Prometheus) instances(a *answers) map[string]*instanceInfo {
	out := map[string]*instanceInfo{}
	get := func(s *model.Sample) *instanceInfo {
		return out[label(s, model.InstanceLabel)]
	}
	for _, s := range *a.instance["up"] {
		inst := label(s, model.InstanceLabel)
		info := &instanceInfo{up: float64(s.Value) == 1, interval: defaultPromScrapeSeconds * time.Second}
		info.target = a.targets[string(s.Metric[model.InstanceLabel])]
		out[inst] = info
	}
	for _, s := range *a.instance["last"] {
		if info := get(s); info != nil {
			if v, ok := value(s, maxUnix); ok {
				info.lastScrape = time.Unix(0, int64(v*1e9))
			}
		}
	}
	for _, s := range *a.instance["scrapes"] {
		if info := get(s); info != nil {
			if n, ok := value(s, 1e7); ok && n >= 2 {
				info.interval = time.Duration(float64(p.cfg.Window) / n)
			}
		}
	}
	for _, s := range *a.instance["start"] {
		if info := get(s); info != nil {
			if v, ok := value(s, maxUnix); ok {
				info.start = v
			}
		}
	}
	for _, s := range *a.instance["changes"] {
		if info := get(s); info != nil {
			if v, ok := value(s, 1e7); ok && v > 0 {
				info.restarted = "process start time moved"
			}
		}
	}
	for _, vec := range a.resets {
		for _, s := range vec {
			if info := get(s); info != nil && info.restarted == "" {
				if v, ok := value(s, 1e7); ok && v > 0 {
					info.restarted = "counters went back"
				}
			}
		}
	}
	return out
}

func (p *Prometheus) build(now time.Time, a *answers) ([]Row, error) {
	insts := p.instances(a)
	if len(insts) == 0 {
		return nil, errNoTargets
	}
	byKey := map[Key]*Row{}
	for qi, vec := range a.rows {
		q := p.rq[qi]
		for _, s := range vec {
			inst := label(s, model.InstanceLabel)
			if insts[inst] == nil {
				continue
			}
			k := Key{Endpoint: inst, Model: label(s, "model_name"), Engine: label(s, "engine")}
			if k.Engine == "" {
				k.Engine = "0"
			}
			r := byKey[k]
			if r == nil {
				r = &Row{Key: k}
				r.Model, r.Engine, r.Backend = k.Model, k.Engine, backendNamed(string(s.Metric[backendLabel]))
				r.WindowSeconds = p.cfg.Window.Seconds()
				byKey[k] = r
			}
			if v, ok := value(s, q.max); ok {
				q.set(&r.Signals, v)
			}
		}
	}
	engines := map[[2]string]int{}
	for k := range byKey {
		engines[[2]string{k.Endpoint, k.Model}]++
	}
	var rows []Row
	seen := map[string]bool{}
	utils := map[[2]string]float64{} // by instance and engine
	for _, s := range a.cacheConfig {
		if u, err := strconv.ParseFloat(label(s, "gpu_memory_utilization"), 64); err == nil && u > 0 && u <= 1 {
			e := label(s, "engine")
			if e == "" {
				e = "0"
			}
			utils[[2]string{label(s, model.InstanceLabel), e}] = u
		}
	}
	for k, r := range byKey {
		r.Engines = engines[[2]string{k.Endpoint, k.Model}]
		if u, ok := utils[[2]string{k.Endpoint, k.Engine}]; ok {
			r.Util = scrape.Some(u)
		}
		r.Name = rowName(k.Endpoint, k.Engine, r.Engines)
		r.NotExported = NotExported(r.Backend)
		rows = append(rows, *r)
		seen[k.Endpoint] = true
	}
	for inst := range insts {
		if !seen[inst] {
			rows = append(rows, Row{Key: Key{Endpoint: inst}, Name: inst})
		}
	}
	good := p.lastGood()
	for i := range rows {
		p.judgeState(now, &rows[i], insts[rows[i].Key.Endpoint])
		if rows[i].State == StateDown {
			rows[i].LastGood, rows[i].Age = good[rows[i].Key.Endpoint], 0
			if g := rows[i].LastGood; !g.IsZero() {
				rows[i].Age = max(0, now.Sub(g))
			}
		}
	}
	return rows, nil
}

// lastGood is when the previous refreshes last saw each endpoint up. It is known only from
// them: up and its timestamp say when Prometheus last tried a target, not when it last
// succeeded. By endpoint, since a DOWN target's model rows are gone.
func (p *Prometheus) lastGood() map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	good := map[string]time.Time{}
	for _, r := range p.rows {
		if r.LastGood.After(good[r.Key.Endpoint]) {
			good[r.Key.Endpoint] = r.LastGood
		}
	}
	return good
}

// judgeState sets a row's state from its target: up=0 is DOWN, a last scrape older than
// StaleAfter scrape intervals is STALE, a restart within the hold is RESTARTED.
func (p *Prometheus) judgeState(now time.Time, r *Row, info *instanceInfo) {
	r.URL = untrusted.URL(info.target.ScrapeURL)
	r.LastError = untrusted.Text(info.target.LastError)
	r.LastGood = info.lastScrape
	if info.start > 0 {
		r.ProcessStart = scrape.Some(info.start)
	}
	if !info.lastScrape.IsZero() {
		r.Age = max(0, now.Sub(info.lastScrape))
	}
	staleAfter := time.Duration(p.cfg.StaleAfter) * info.interval
	switch {
	case !info.up:
		r.State, r.Frozen = StateDown, true
		r.StateDetail = r.LastError
		if r.StateDetail == "" {
			r.StateDetail = "Prometheus reports up=0"
		}
	case r.Age > staleAfter:
		r.State, r.Frozen = StateStale, true
		r.StateDetail = "Prometheus last scraped it " + r.Age.Round(time.Second).String() + " ago"
	case info.restarted != "":
		r.State, r.StateDetail = StateRestarted, info.restarted
	default:
		r.State = StateUp
	}
	if r.State != StateDown && r.State != StateStale {
		r.LastGood = now
	}
}

func backendNamed(s string) scrape.Backend {
	for _, b := range []scrape.Backend{scrape.BackendVLLM, scrape.BackendSGLang, scrape.BackendTGI} {
		if b.String() == s {
			return b
		}
	}
	return scrape.BackendUnknown
}

// Fleet is every row as of the last good refresh, judged. When Prometheus has not answered
// for StaleAfter intervals every row is STALE, its numbers frozen.
func (p *Prometheus) Fleet(facts diagnose.Facts) Fleet {
	now := p.cfg.Now()
	p.mu.Lock()
	rows := append([]Row(nil), p.rows...)
	lastOK, lastErr := p.lastOK, p.lastErr
	p.mu.Unlock()
	down := lastErr != nil && (lastOK.IsZero() || now.Sub(lastOK) > time.Duration(p.cfg.StaleAfter)*p.cfg.Interval)
	if down {
		for i := range rows {
			rows[i].State, rows[i].Frozen = StateStale, true
			rows[i].Age = now.Sub(lastOK)
			rows[i].StateDetail = "no answer from Prometheus: " + lastErr.Error()
		}
	}
	f := assemble("prometheus", now, rows, facts, p.th)
	if lastErr != nil {
		f.Verdicts = append([]diagnose.Verdict{sourceVerdict(p.url, down, lastErr)}, f.Verdicts...)
	}
	return f
}

// sourceVerdict says that Prometheus itself fails: DOWN (critical) when it has not answered
// for StaleAfter intervals or never has, else a warning that the last read failed. A selector
// that names no fleet is critical too, in its own words: Prometheus is up.
func sourceVerdict(url string, down bool, err error) diagnose.Verdict {
	if se, ok := err.(*selectorError); ok {
		return diagnose.Verdict{Rule: diagnose.RuleDown, Severity: diagnose.Critical, Subject: "Prometheus " + url,
			Text: "P" + strings.TrimPrefix(se.msg, "p")}
	}
	cause := strings.TrimPrefix(err.Error(), "prometheus "+url+": ")
	v := diagnose.Verdict{Rule: diagnose.RuleDown, Severity: diagnose.Critical, Subject: "Prometheus " + url,
		Text: "Prometheus " + url + " is DOWN: " + cause}
	if !down {
		v.Severity, v.Text = diagnose.Warning, "the last read of Prometheus "+url+" failed: "+cause
	}
	return v
}

// Backfill reads the last Lookback (at most what History holds) of every charted metric
// with query_range, so a dashboard opened now shows the last hour at once. Run calls it
// unless it was called already.
func (p *Prometheus) Backfill(ctx context.Context) error {
	p.backfilled.Store(true)
	now := p.cfg.Now()
	lookback := min(p.cfg.Lookback, p.history.Span())
	r := promv1.Range{Start: now.Add(-lookback), End: now, Step: p.history.Step()}
	var wg sync.WaitGroup
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fails := roundErrors{cancel: cancel}
	for m, q := range p.hq {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.backfillOne(rctx, m, q, r); err != nil {
				fails.add(fmt.Errorf("%s history: %w", m, err))
			}
		}()
	}
	wg.Wait()
	if err := fails.err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("prometheus %s: %s", p.url, oneLineError(err))
	}
	return ctx.Err()
}

func (p *Prometheus) backfillOne(ctx context.Context, m Metric, q string, r promv1.Range) (err error) {
	defer recovered(&err)
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	defer func() { <-p.sem }()
	qctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	v, _, _, err := p.api.QueryRange(qctx, q, r)
	if err != nil {
		return err
	}
	return p.fill(m, v)
}

func (p *Prometheus) fill(m Metric, v model.Value) error {
	mat, err := checkMatrix(v)
	if err != nil {
		return err
	}
	hi := map[Metric]float64{MetricRunning: maxCount, MetricWaiting: maxCount, MetricKVCacheUsage: 1, MetricGenTokens: maxRate, MetricTTFTP99: maxSeconds}[m]
	for _, ss := range mat {
		k := Key{Endpoint: untrusted.Text(string(ss.Metric[model.InstanceLabel])), Model: untrusted.Text(string(ss.Metric["model_name"])),
			Engine: untrusted.Text(string(ss.Metric["engine"]))}
		if k.Engine == "" {
			k.Engine = "0"
		}
		pts := make([]Point, 0, len(ss.Values))
		for _, sp := range ss.Values {
			x := float64(sp.Value)
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > hi {
				continue
			}
			pts = append(pts, Point{T: sp.Timestamp.Time(), V: x})
		}
		p.history.Backfill(k, m, pts)
	}
	return nil
}

// originTransport sends the API key as a Bearer token to the configured origin only: a
// redirect to another host or port goes there without it, and one from https to http is
// refused, key or not. (prometheus/common/config has a bearer transport, but it brings OAuth2,
// JWT and YAML modules along, and it sends the key wherever a redirect points.)
type originTransport struct {
	rt     http.RoundTripper
	origin *url.URL
	key    string
}

func (o originTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.EqualFold(o.origin.Scheme, "https") && !strings.EqualFold(r.URL.Scheme, "https") {
		return nil, fmt.Errorf("refused: a redirect from https to %s (%s)", untrusted.Text(r.URL.Scheme), untrusted.URL(r.URL.Redacted()))
	}
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")
	if o.key != "" && sameOrigin(o.origin, r.URL) {
		r.Header.Set("Authorization", "Bearer "+o.key)
	}
	return o.rt.RoundTrip(r)
}

// sameOrigin compares scheme, host and port (a missing port is the scheme's default).
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// cappedTransport refuses answers larger than max bytes.
type cappedTransport struct {
	rt  http.RoundTripper
	max int64
}

func (c cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	limit := c.max
	if !strings.HasSuffix(r.URL.Path, "/query_range") {
		limit = min(limit, maxInstantBytes)
	}
	resp, err := c.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > limit {
		resp.Body.Close()
		return nil, fmt.Errorf("answer of %d bytes, over the %d-byte limit", resp.ContentLength, limit)
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: limit}
	return resp, nil
}

type cappedBody struct {
	io.ReadCloser
	left  int64
	shape jsonShape
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errors.New("answer over the size limit")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errors.New("answer over the size limit")
	}
	if serr := b.shape.scan(p[:n]); serr != nil {
		return n, serr
	}
	return n, err
}

// Bounds of an answer's shape, checked on the bytes as they arrive, before any decoding: a
// series costs a few hundred bytes decoded, for some 80 in the answer, so 300,000 of them
// under the byte cap took 1.5 GB. Each series is two objects (itself, its labels), and a
// series has a few dozen labels at most.
const (
	maxAnswerObjects = 2*MaxSeries + 16
	maxAnswerMembers = 64 * MaxSeries
)

// jsonShape counts the objects and members of a JSON text as it streams by (a colon outside
// a string is a member); it does not check the syntax, the decoder does.
type jsonShape struct {
	inString, escaped bool
	objects, members  int
}

func (s *jsonShape) scan(p []byte) error {
	for _, c := range p {
		switch {
		case s.escaped:
			s.escaped = false
		case s.inString:
			s.escaped = c == '\\'
			s.inString = c != '"'
		case c == '"':
			s.inString = true
		case c == '{':
			s.objects++
		case c == ':':
			s.members++
		}
	}
	switch {
	case s.objects > maxAnswerObjects:
		return fmt.Errorf("answer of over %d series, more than a fleet view shows: narrow the selector", MaxSeries)
	case s.members > maxAnswerMembers:
		return fmt.Errorf("answer with over %d labels, more than %d series have", maxAnswerMembers, MaxSeries)
	}
	return nil
}
