package dashcli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/internal/app/config"
	"github.com/vllmtop/vllmtop/internal/app/recorder"
	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/themes"
	"github.com/vllmtop/vllmtop/tui"
)

// fleetOptions are the on-call flags: the fleet's sources, the config file, the canary and
// the flight recorder.
type fleetOptions struct {
	attachFile string
	prometheus string
	selector   string
	configPath string
	fleetName  string
	canary     time.Duration
	recordDir  string
	recordSpan time.Duration

	cfg       *config.Config
	endpoints []fleet.Endpoint // fleet mode: watched directly
	promURL   string           // fleet mode: read from Prometheus
	promKey   string
	source    fleet.Source
	ring      *recorder.Ring
	results   *recorder.Results // the load's, one-server mode
	canaryRun *canaryToggle
	settings  map[string]string
	secrets   []string
}

func (o *Dashboard) fleetFlags(fs *pflag.FlagSet) {
	f := &o.fl
	fs.StringVar(&f.attachFile, "attach-file", "", "watch the endpoints in this file (one URL per line, # comments) as a fleet")
	fs.StringVar(&f.prometheus, "prometheus", "", "read a fleet from this Prometheus (http://prometheus:9090)")
	fs.StringVar(&f.selector, "selector", "", `the fleet's targets in Prometheus (default {job="vllm"})`)
	fs.StringVar(&f.configPath, "config", "", "config file (default $XDG_CONFIG_HOME/vllmtop/config.toml when present)")
	fs.StringVar(&f.fleetName, "fleet", "", "watch this fleet of the config file")
	fs.DurationVar(&f.canary, "canary", 0, "attach mode: send one small request every interval (e.g. 5s) and show what it measured; C toggles")
	fs.StringVar(&f.recordDir, "record-dir", ".", "where B writes a flight-recorder bundle")
	fs.DurationVar(&f.recordSpan, "record-span", 5*time.Minute, "how many minutes of scrapes a bundle holds")
}

// fleetMode reports whether the dashboard watches a fleet rather than one server.
func (o *Dashboard) fleetMode() bool { return len(o.fl.endpoints) > 0 || o.fl.promURL != "" }

// finishFleet reads the config file and resolves the sources: several --attach URLs, an
// --attach-file, --prometheus or a --fleet of the file. extra are the URLs after --attach's.
func (o *Dashboard) finishFleet(extra []string, getenv func(string) string) error {
	f := &o.fl
	cfg, err := config.Load(f.configPath, getenv)
	if err != nil {
		return cliflag.Usagef("%s", oneLine(err))
	}
	f.cfg = cfg
	if cfg.Theme != "" && o.deps.Theme == themes.Default {
		// The flag's default gives way to the file's theme.
		o.deps.Theme = cfg.Theme
	}
	th := cfg.Thresholds()
	o.deps.Thresholds = &th
	if err := o.attachEndpoints(cfg, extra, getenv); err != nil {
		return err
	}
	if err := o.namedFleet(cfg, getenv); err != nil {
		return err
	}
	if err := o.prometheusSource(cfg, getenv); err != nil {
		return err
	}
	return o.checkSources()
}

// attachEndpoints adds the --attach URLs and those of --attach-file; a bare name is an
// endpoint of the config file.
func (o *Dashboard) attachEndpoints(cfg *config.Config, extra []string, getenv func(string) string) error {
	f := &o.fl
	var urls []string
	if o.attach != "" {
		urls = append([]string{o.attach}, extra...)
	}
	if f.attachFile != "" {
		more, err := readAttachFile(f.attachFile)
		if err != nil {
			return cliflag.Usagef("%s", oneLine(err))
		}
		urls = append(urls, more...)
	}
	for _, u := range urls {
		if !strings.Contains(u, "://") && !strings.Contains(u, ":") {
			if ep, ok := cfg.Endpoint(u); ok {
				fe, err := fromConfig(ep, getenv)
				if err != nil {
					return cliflag.Usagef("%s", oneLine(err))
				}
				f.endpoints = append(f.endpoints, fe)
				continue
			}
		}
		f.endpoints = append(f.endpoints, fleet.Endpoint{URL: strings.TrimRight(u, "/"), APIKey: o.loadCfg.Client.APIKey})
	}
	return nil
}

// namedFleet adds the endpoints of --fleet, or takes its Prometheus selector.
func (o *Dashboard) namedFleet(cfg *config.Config, getenv func(string) string) error {
	f := &o.fl
	if f.fleetName == "" {
		return nil
	}
	fl, ok := cfg.Fleet(f.fleetName)
	if !ok {
		return cliflag.Usagef("--fleet %q: no such fleet in %s", f.fleetName, orNone(cfg.Path))
	}
	if fl.Selector != "" {
		f.selector = fl.Selector
		if f.prometheus == "" && cfg.Prometheus != nil {
			f.prometheus = cfg.Prometheus.URL
		}
	}
	for _, ep := range cfg.FleetEndpoints(fl) {
		fe, err := fromConfig(ep, getenv)
		if err != nil {
			return cliflag.Usagef("%s", oneLine(err))
		}
		f.endpoints = append(f.endpoints, fe)
	}
	return nil
}

// prometheusSource sets up --prometheus, with the config file's selector and key.
func (o *Dashboard) prometheusSource(cfg *config.Config, getenv func(string) string) error {
	f := &o.fl
	if f.prometheus == "" {
		return nil
	}
	f.promURL = f.prometheus
	if cfg.Prometheus != nil && f.selector == "" {
		f.selector = cfg.Prometheus.Selector
	}
	if cfg.Prometheus != nil {
		var err error
		if f.promKey, err = config.APIKey(cfg.Prometheus.APIKeyEnv, getenv); err != nil {
			return cliflag.Usagef("%s", oneLine(err))
		}
	}
	return nil
}

// checkSources refuses sources that cannot be combined; one URL alone is a single-server
// attach.
func (o *Dashboard) checkSources() error {
	f := &o.fl
	switch {
	case f.promURL != "" && len(f.endpoints) > 0:
		return cliflag.Usagef("--prometheus and endpoints to attach to cannot be combined: choose one source")
	case f.canary < 0 || (f.canary > 0 && f.canary < 100*time.Millisecond):
		return cliflag.Usagef("--canary must be at least 100ms")
	case len(f.endpoints) == 1 && f.promURL == "" && f.fleetName == "" && f.attachFile == "":
		// One URL: today's single-server attach.
		o.attach, f.endpoints = f.endpoints[0].URL, nil
	}
	if o.fleetMode() && (o.command != nil || len(o.simArgs) > 0) {
		return cliflag.Usagef("a fleet is watched, not started: no command after -- or simulator flags with it")
	}
	if f.canary > 0 && o.attach == "" {
		return cliflag.Usagef("--canary is for attach mode (--attach URL)")
	}
	// A URL or selector that can never work is a bad command line, said before the dashboard
	// takes the terminal.
	if u := o.attach; u != "" {
		if p, err := url.Parse(strings.TrimRight(u, "/")); err != nil || p.Scheme != "http" && p.Scheme != "https" || p.Host == "" {
			return cliflag.Usagef("--attach %q: want an http(s)://host:port URL", sanitize.URL(u))
		}
	}
	for _, ep := range f.endpoints { // a fleet's endpoint may be host:port (http is added)
		if _, err := scrape.MetricsURL(ep.URL); err != nil {
			return cliflag.Usagef("endpoint %s", oneLine(err))
		}
	}
	if f.promURL != "" {
		if err := fleet.CheckSelector(f.selector); err != nil {
			return cliflag.Usagef("--selector: %s", oneLine(err))
		}
	}
	return nil
}

// warnConfig says, once, why the default config file was not read.
func (d *Dashboard) warnConfig(say Sayer) {
	if cfg := d.fl.cfg; cfg != nil && cfg.Warning != "" && say != nil {
		say("%s", cfg.Warning)
		cfg.Warning = ""
	}
}

func orNone(path string) string {
	if path == "" {
		return "the config (no file found)"
	}
	return path
}

func oneLine(err error) string { return sanitize.Message(strings.ReplaceAll(err.Error(), "\n", "; ")) }

func fromConfig(ep config.Endpoint, getenv func(string) string) (fleet.Endpoint, error) {
	key, err := config.APIKey(ep.APIKeyEnv, getenv)
	if err != nil {
		return fleet.Endpoint{}, fmt.Errorf("endpoint %q: %w", ep.Name, err)
	}
	return fleet.Endpoint{Name: ep.Name, URL: ep.URL, APIKey: key, Interval: ep.Interval.Duration, Timeout: ep.Timeout.Duration,
		MaxNumSeqs: ep.MaxNumSeqs}, nil
}

// readAttachFile reads one URL a line; blank lines and # comments are skipped. A bad line
// is named by its number.
func readAttachFile(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--attach-file: %w", err)
	}
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("--attach-file %s: larger than 1 MiB", path)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		if strings.ContainsAny(line, " \t") {
			return nil, fmt.Errorf("%s:%d: one URL a line, got %q", path, n, sanitize.Message(line))
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no URL in it", path)
	}
	return out, sc.Err()
}

// buildFleet makes the fleet's source and the dashboard's view of it.
func (d *Dashboard) buildFleet() error {
	f := &d.fl
	f.ring = recorder.NewRing(f.recordSpan, 0, 0)
	th := d.deps.Thresholds
	var interval time.Duration
	if f.cfg != nil {
		interval = f.cfg.Interval.Duration
	}
	window := time.Duration(0)
	if f.cfg != nil {
		window = f.cfg.Window.Duration
	}
	d.deps.Mode, d.deps.StartPaused, d.deps.RestartDisabled = tui.ModeAttach, true, true
	if f.promURL != "" {
		if interval == 0 && f.cfg.Prometheus != nil {
			interval = f.cfg.Prometheus.Interval.Duration
		}
		p, err := fleet.NewPrometheus(fleet.PrometheusConfig{URL: f.promURL, Selector: f.selector, APIKey: f.promKey, Interval: interval,
			Window: window, Thresholds: th, Lookback: time.Hour})
		if err != nil {
			return err
		}
		f.source, d.deps.Target = p, sanitize.URL(f.promURL)
		if f.promKey != "" {
			f.secrets = append(f.secrets, f.promKey)
		}
	} else {
		if interval == 0 {
			interval = fleet.IntervalFor(len(f.endpoints))
		}
		dir, err := fleet.NewDirect(fleet.DirectConfig{Endpoints: f.endpoints, Interval: interval, Window: window, Thresholds: th, Tap: f.ring.Add})
		if err != nil {
			return err
		}
		f.source = dir
		for _, ep := range f.endpoints {
			if ep.APIKey != "" {
				f.secrets = append(f.secrets, ep.APIKey)
			}
		}
	}
	d.deps.Fleet = f.source
	d.deps.DrillScraper = func(r fleet.Row) (tui.Scraper, error) {
		if r.URL == "" {
			return nil, errors.New("no URL known for " + r.Name)
		}
		key := ""
		for _, ep := range f.endpoints {
			if ep.Name == r.Key.Endpoint {
				key = ep.APIKey
			}
		}
		return scrape.NewClient(r.URL, scrape.WithAPIKey(key))
	}
	d.deps.Recorder = &bundleWriter{d: d}
	f.settings = map[string]string{"source": d.deps.Target, "endpoints": fmt.Sprint(len(f.endpoints)), "interval": interval.String()}
	return nil
}

// runFleet runs the fleet's source beside the UI until the UI ends.
func (d *Dashboard) runFleet(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.fl.source.Run(ctx) // a Prometheus source backfills the last hour first
	}()
	return func() { cancel(); <-done }
}

// tappedScraper scrapes one server and keeps each body in the flight recorder's ring.
type tappedScraper struct {
	c    *scrape.Client
	ring *recorder.Ring
	name string
}

func (t *tappedScraper) Scrape(ctx context.Context) (scrape.Snapshot, error) {
	body, at, err := t.c.Fetch(ctx)
	if err != nil {
		return scrape.Snapshot{}, err
	}
	t.ring.Add(t.name, at, body)
	s, err := scrape.Parse(bytes.NewReader(body))
	s.Time = at
	return s, err
}

// singleOnCall adds the recorder and, in attach mode, the canary to a one-server dashboard.
func (d *Dashboard) singleOnCall(scr *scrape.Client) error {
	f := &d.fl
	f.ring = recorder.NewRing(f.recordSpan, 0, 0)
	d.deps.Scraper = &tappedScraper{c: scr, ring: f.ring, name: sanitize.URL(scr.URL())}
	d.deps.Recorder = &bundleWriter{d: d}
	if args := d.sup.Args(); len(args) > 0 {
		if v, ok := server.ArgValue(args, "--max-num-seqs"); ok {
			fmt.Sscan(v, &d.deps.MaxNumSeqs)
		}
		if v, ok := server.ArgValue(args, "--max-num-batched-tokens"); ok {
			fmt.Sscan(v, &d.deps.MaxNumBatchedTokens)
		}
	}
	if f.cfg != nil {
		for _, ep := range f.cfg.Endpoints {
			if strings.TrimRight(ep.URL, "/") == strings.TrimRight(d.attach, "/") && ep.MaxNumSeqs > 0 {
				d.deps.MaxNumSeqs = ep.MaxNumSeqs
			}
		}
	}
	f.settings = map[string]string{"target": d.deps.Target, "mode": d.deps.Mode.String()}
	if key := d.loadCfg.Client.APIKey; key != "" {
		f.secrets = append(f.secrets, key)
	}
	if d.attach == "" {
		return nil
	}
	interval := f.canary
	if interval == 0 {
		interval = loadgen.DefaultCanaryInterval // off until C
	}
	cn, err := loadgen.NewCanary(d.load.Client(), loadgen.CanaryConfig{Interval: interval})
	if err != nil {
		return err
	}
	f.canaryRun = &canaryToggle{c: cn}
	d.deps.Canary = f.canaryRun
	return nil
}

// canaryToggle runs a canary while it is on, in a goroutine of its own.
type canaryToggle struct {
	c      *loadgen.Canary
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func (t *canaryToggle) start(ctx context.Context) {
	t.mu.Lock()
	t.ctx = ctx
	t.mu.Unlock()
}

func (t *canaryToggle) SetOn(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case on && t.cancel == nil && t.ctx != nil:
		ctx, cancel := context.WithCancel(t.ctx)
		t.cancel, t.done = cancel, make(chan struct{})
		go func(done chan struct{}) {
			defer close(done)
			_ = t.c.Run(ctx)
		}(t.done)
	case !on && t.cancel != nil:
		t.cancel()
		<-t.done
		t.cancel = nil
	}
}

func (t *canaryToggle) On() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cancel != nil
}

func (t *canaryToggle) Interval() time.Duration            { return t.c.Interval() }
func (t *canaryToggle) Last() (loadgen.CanarySample, bool) { return t.c.Last() }
func (t *canaryToggle) Counts() loadgen.CanaryCounts       { return t.c.Counts() }
func (t *canaryToggle) stop()                              { t.SetOn(false) }
func (t *canaryToggle) samples() []loadgen.CanarySample    { return t.c.Samples() }
func (d *Dashboard) canarySamples() []loadgen.CanarySample {
	if d.fl.canaryRun == nil {
		return nil
	}
	return d.fl.canaryRun.samples()
}

// bundleWriter writes the flight recorder's bundle (called from a UI command).
type bundleWriter struct{ d *Dashboard }

func (b *bundleWriter) Record(verdicts []diagnose.Verdict) (string, error) {
	f := &b.d.fl
	now := time.Now()
	bundle := recorder.Bundle{Created: now, Span: f.recordSpan, Scrapes: f.ring.Snapshot(now, f.recordSpan),
		Results: f.results.Snapshot(), Canary: b.d.canarySamples(), Settings: f.settings, Verdicts: verdicts, Secrets: f.secrets}
	if b.d.sup != nil && b.d.attach == "" {
		for _, l := range b.d.sup.Logs(500) {
			bundle.ServerLog = append(bundle.ServerLog, l.Text)
		}
	}
	dir, err := filepath.Abs(f.recordDir)
	if err != nil {
		return "", err
	}
	return recorder.Write(dir, bundle)
}
