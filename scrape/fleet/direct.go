package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/defaults"
	"github.com/vllmtop/vllmtop/internal/base/untrusted"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
)

// Endpoint is one server the Direct source scrapes.
type Endpoint struct {
	// Name labels its rows; empty means the URL's host:port.
	Name string
	// URL is the server's base URL or its /metrics URL.
	URL string
	// APIKey is sent as a Bearer token; it is never shown.
	APIKey string
	// Interval and Timeout override the source's for this endpoint.
	Interval time.Duration
	Timeout  time.Duration
	// MaxNumSeqs is the server's --max-num-seqs (0: not known), which /metrics does not say:
	// its rows' verdicts tell a server at its sequence cap from one that admits slowly.
	MaxNumSeqs int
}

// Defaults of a Direct source (docs/monitoring.md#freshness-and-restarts).
const (
	DefaultInterval      = time.Second
	DefaultWindow        = 60 * time.Second
	DefaultStaleAfter    = 3 // intervals
	DefaultRestartHold   = 30 * time.Second
	DefaultMaxConcurrent = 32
)

// DirectConfig configures a Direct source. Zero values take the defaults.
type DirectConfig struct {
	Endpoints []Endpoint
	Interval  time.Duration // between two scrapes of one endpoint
	Timeout   time.Duration // one scrape (scrape.DefaultTimeout)
	// Window is the span of rates and latency quantiles.
	Window time.Duration
	// StaleAfter is how many intervals without a good scrape make an endpoint STALE (or
	// DOWN when it answers with errors).
	StaleAfter int
	// RestartHold is how long a row shows RESTARTED after a restart was seen.
	RestartHold time.Duration
	// MaxConcurrent bounds the scrapes in flight over all endpoints.
	MaxConcurrent int
	Thresholds    *diagnose.Thresholds // nil: diagnose.DefaultThresholds
	History       *History             // nil: NewHistory(0, 0)
	// Tap, if set, receives every body fetched (for a flight recorder), before it is
	// parsed. The body is not reused afterwards and must not be modified.
	Tap func(endpoint string, at time.Time, body []byte)
	// HTTPClient is shared by every endpoint (nil: one with pooled connections that refuses
	// redirects, so a key is never sent elsewhere).
	HTTPClient *http.Client
	// Now is the clock (nil: time.Now); tests set it.
	Now func() time.Time
}

// Direct scrapes a list of endpoints itself.
type Direct struct {
	cfg      DirectConfig
	th       diagnose.Thresholds
	history  *History
	trackers []*tracker
	sem      chan struct{}
	updated  chan struct{}
}

// NewDirect checks the endpoints and builds the source; nothing is scraped until Run or
// Refresh.
func NewDirect(cfg DirectConfig) (*Direct, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("no endpoint to watch")
	}
	cfg.Interval = defaults.Positive(cfg.Interval, DefaultInterval)
	cfg.Timeout = defaults.Positive(cfg.Timeout, scrape.DefaultTimeout)
	cfg.Window = defaults.Positive(cfg.Window, DefaultWindow)
	cfg.RestartHold = defaults.Positive(cfg.RestartHold, DefaultRestartHold)
	cfg.StaleAfter = defaults.Positive(cfg.StaleAfter, DefaultStaleAfter)
	cfg.MaxConcurrent = defaults.Positive(cfg.MaxConcurrent, DefaultMaxConcurrent)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = pooledClient()
	}
	d := &Direct{cfg: cfg, history: cfg.History, sem: make(chan struct{}, cfg.MaxConcurrent), updated: make(chan struct{}, 1)}
	if d.history == nil {
		d.history = NewHistory(0, 0)
	}
	d.th = diagnose.DefaultThresholds()
	if cfg.Thresholds != nil {
		d.th = *cfg.Thresholds
	}
	names := map[string]bool{}
	for i, ep := range cfg.Endpoints {
		opts := []scrape.Option{scrape.WithHTTPClient(cfg.HTTPClient), scrape.WithTimeout(defaults.Positive(ep.Timeout, cfg.Timeout)), scrape.WithAPIKey(ep.APIKey)}
		c, err := scrape.NewClient(ep.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("endpoint %d: %w", i+1, err)
		}
		if ep.Name == "" {
			u, _ := url.Parse(c.URL())
			ep.Name = u.Host
		}
		ep.Name = untrusted.Text(ep.Name)
		if names[ep.Name] {
			return nil, fmt.Errorf("endpoint %q is named twice", ep.Name)
		}
		names[ep.Name] = true
		ep.Interval = defaults.Positive(ep.Interval, cfg.Interval)
		d.trackers = append(d.trackers, &tracker{ep: ep, client: c, url: untrusted.URL(c.URL()), window: cfg.Window})
	}
	return d, nil
}

// IntervalFor is a default interval for a fleet of n endpoints when the user gave none: 1 s
// up to 12 endpoints, then 80 ms more per endpoint, at most 15 s (Prometheus's own default).
// One scrape of a vLLM server costs about 0.8 ms of CPU here (BenchmarkFleetRefresh: fetch,
// parse of the families rows read, window), so this keeps a large fleet near a second of
// CPU per minute instead of a quarter of a core; a fleet that needs more than this is
// better read through Prometheus.
func IntervalFor(n int) time.Duration {
	return min(max(DefaultInterval, time.Duration(n)*80*time.Millisecond), 15*time.Second)
}

// pooledClient keeps two idle connections per endpoint however many endpoints there are
// (Go's default keeps 100 in all, so a large fleet would reconnect on every scrape) and
// follows no redirect.
func pooledClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 2
	tr.Proxy = nil
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// History is the source's history of every row.
func (d *Direct) History() *History { return d.history }

// Updated receives a value (coalesced) after each scrape, for a UI to redraw.
func (d *Direct) Updated() <-chan struct{} { return d.updated }

// Run scrapes every endpoint on its own interval until ctx ends, staggered a second apart
// so a fleet's scrapes do not all start at once. One endpoint's scrapes never overlap; an interval
// missed by a slow scrape is skipped, not caught up.
func (d *Direct) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i, t := range d.trackers {
		wg.Add(1)
		// Phases a second apart: a second's endpoints are scraped together, which costs
		// less CPU than one scrape every few milliseconds (warm caches, fewer wake-ups).
		slots := max(1, int(t.ep.Interval/time.Second))
		phase := t.ep.Interval * time.Duration(i%slots) / time.Duration(slots)
		go func() {
			defer wg.Done()
			d.poll(ctx, t, phase)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func (d *Direct) poll(ctx context.Context, t *tracker, phase time.Duration) {
	wait := time.NewTimer(phase)
	defer wait.Stop()
	select {
	case <-ctx.Done():
		return
	case <-wait.C:
	}
	tick := time.NewTicker(t.ep.Interval)
	defer tick.Stop()
	d.pollTicks(ctx, t, tick.C)
}

// pollTicks scrapes once now and then on ticks, skipping ticks while the endpoint keeps
// failing (scrape.Backoff): a refused request and a body that does not parse alike.
func (d *Direct) pollTicks(ctx context.Context, t *tracker, ticks <-chan time.Time) {
	b := scrape.Backoff{Interval: t.ep.Interval}
	for {
		b.Next(d.scrape(ctx, t))
		for skip := b.Ticks(); skip > 0; skip-- {
			select {
			case <-ctx.Done():
				return
			case <-ticks:
			}
		}
	}
}

// Refresh scrapes every endpoint once now, concurrently within the bound, and returns when
// all are done (a "refresh now" key, tests, benchmarks). A failed endpoint is a row's state,
// not an error; the error is ctx's.
func (d *Direct) Refresh(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, t := range d.trackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.scrape(ctx, t)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// scrape reads one endpoint once and returns its failure, if any.
func (d *Direct) scrape(ctx context.Context, t *tracker) error {
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	body, _, err := t.client.Fetch(ctx)
	<-d.sem
	now := d.cfg.Now()
	if err == nil {
		if d.cfg.Tap != nil {
			d.cfg.Tap(t.ep.Name, now, body)
		}
		t.keepBody(body)
		var snap scrape.Snapshot
		// A body with nothing a row reads (another exporter) is parsed whole: up, unmapped.
		snap, err = scrape.ParseSelected(body, rowSelection)
		if err == nil {
			snap.Time = now
			rows := t.observe(now, &snap)
			d.history.Record(now, rows)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return err // stopped, not failed
		}
		t.fail(now, err)
	}
	select {
	case d.updated <- struct{}{}:
	default:
	}
	return err
}

// LastBody is the last exposition an endpoint sent, whole, for a drill-down view that wants
// every family (the rows are computed from a few of them); nil before the first.
func (d *Direct) LastBody(endpoint string) []byte {
	for _, t := range d.trackers {
		if t.ep.Name == endpoint {
			t.mu.Lock()
			defer t.mu.Unlock()
			return t.body
		}
	}
	return nil
}

// Endpoints lists the endpoints' names, in the order given.
func (d *Direct) Endpoints() []string {
	out := make([]string, len(d.trackers))
	for i, t := range d.trackers {
		out[i] = t.ep.Name
	}
	return out
}

// Fleet is every endpoint's rows now, judged.
func (d *Direct) Fleet(facts diagnose.Facts) Fleet {
	now := d.cfg.Now()
	var rows []Row
	for _, t := range d.trackers {
		rows = append(rows, t.rows(now, time.Duration(d.cfg.StaleAfter)*t.ep.Interval, d.cfg.RestartHold)...)
	}
	return assemble("direct", now, rows, facts, d.th)
}
