// Package tui is the dashboard: a Bubble Tea program that renders the server's state, the
// load, charts over time, streaming requests, the server's log, a table of runs and a capacity
// what-if. It owns no I/O: everything reaches it as messages from small interfaces it defines
// (Supervisor, Load, Scraper), so tests drive it with fakes.
//
// The root Model owns the layout, the global keys, the phase of a restart or a quit, and the
// state every panel reads (common); each view is a panel in a file of its own, listed once in
// tabs (panel.go), from which the view keys, the tab line and the help are made; the root
// sends a panel its messages by its name, never by its place in the tabs. The header and
// the footer are panels too, without a tab. Scrapes are parsed and compared in commands, off
// the UI goroutine; Update and View never block.
package tui

import (
	"context"
	"time"

	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/scrape"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/scrape/fleet"
	"github.com/vllmtop/vllmtop/server"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

// Mode is how the dashboard reached its server.
type Mode int

const (
	ModeSimulator Mode = iota // the built-in simulator, supervised
	ModeSupervise             // a command given after --, supervised
	ModeAttach                // a running server, read-only until the user starts load
)

func (m Mode) String() string {
	switch m {
	case ModeSimulator:
		return "sim"
	case ModeSupervise:
		return "supervised"
	case ModeAttach:
		return "attached"
	}
	return "?"
}

// Supervisor is what the dashboard needs of server.Supervisor.
type Supervisor interface {
	Events() <-chan server.Event
	Status() server.Status
	Restart(ctx context.Context, edits ...server.ArgEdit) error
	Stop(ctx context.Context) error
	Kill() error
}

// Load is what the dashboard needs of the load (a *loadgen.Session): its controls, each change
// of which starts an epoch and returns its number, and its statistics.
type Load interface {
	SetConcurrency(n int) int
	SetRate(rps float64) int
	Mark(label string) int
	// UseLongPrompts switches between the short and the long workload; it returns the
	// workload's name and the new epoch.
	UseLongPrompts(on bool) (workload string, epoch int)
	// SharedPrefix puts a system prompt shared by every request before the workload's
	// prompts (on), or as many tokens of each request's own (off); it returns the workload's
	// name, ending in "prefix on" or "prefix off", and the new epoch.
	SharedPrefix(on bool) (workload string, epoch int)
	Pause()
	Resume()
	// CancelInFlight ends the requests in flight as cancelled: neither failures nor results.
	CancelInFlight()
	Watch() *loadgen.Watched
	Stats() loadgen.LoaderStats
	// Tick closes a second of the live window; Window is the window's percentiles.
	Tick(now time.Time) loadgen.Point
	Window() loadgen.WindowStats
	Epochs() []loadgen.EpochStats
}

// Scraper reads the server's /metrics.
type Scraper interface {
	Scrape(ctx context.Context) (scrape.Snapshot, error)
}

// Deps are the dashboard's collaborators.
type Deps struct {
	Mode       Mode
	Target     string // the command line or the URL, for the header
	Supervisor Supervisor
	Load       Load
	Scraper    Scraper
	// Capacity is the simulator's model of the server, for the what-ifs of the Capacity view;
	// nil when the server is not one it models (the view then works from the server's log
	// and vllm:cache_config_info).
	Capacity       *capacity.Model
	ScrapeInterval time.Duration
	Theme          string
	Now            func() time.Time
	InitialUtil    float64 // the --gpu-memory-utilization the server started with
	// PrefixLen is the prefix demo's tokens before each prompt (--prefix-len), for the Runs
	// view's workload of an epoch no request of which finished yet.
	PrefixLen int
	// Burstiness is the open loop\'s gamma shape (--burstiness; 0 is 1, Poisson), for how
	// much a rate probe\'s count of started requests varies by chance.
	Burstiness      float64
	InitialConc     int
	InitialRate     float64 // above 0: the load starts in rate mode at this many requests/s (--request-rate)
	RateCap         int     // above 0: the open loop's cap on requests in flight (--max-concurrency with a rate)
	StartPaused     bool    // attach mode: no load until space
	RestartDisabled bool    // attach mode: the dashboard did not start the server

	// Workload names the load's first (short-prompt) workload, for the Runs view; the long
	// one is named by Load.UseLongPrompts.
	Workload string
	// LiveWindow is the span of the load's live percentiles (loadgen.DefaultLiveWindow when
	// zero): the legends say it, and the server's quantiles are taken over the same span.
	LiveWindow time.Duration
	// Goodput are the service-level objectives of the Runs view's goodput column (none: no
	// column).
	Goodput loadgen.Goodput
	// NoColor draws without colour (NO_COLOR): attributes and glyphs tell things apart.
	NoColor bool

	// SLO is the objective of the SLO search and the utilisation sweep (--sla); none: the
	// search key asks for one and the sweep runs a fixed concurrency ladder.
	SLO loadgen.SLO
	// SweepUtils are the --gpu-memory-utilization values the sweep key restarts the server
	// with (--sweep-utils); none: three around the current value.
	SweepUtils []float64
	// Tune is how long the probes of a search run.
	Tune TuneConfig
	// ExportDir is where the export key writes its files ("": the current directory).
	ExportDir string
	// Workloads are the short and the long workload's requests, in tokens.
	Workloads [2]capacity.Workload
	// FleetDeps are the fleet view's, the verdicts', the canary's and the recorder's.
	FleetDeps
}

// TuneConfig is how a probe of an SLO search runs on the live load: it waits for the
// warm-up's requests to finish (those started before the probe's setting are not counted),
// then measures until enough requests completed or the time is up.
type TuneConfig struct {
	ProbeRequests  int           // completed requests a probe measures, at least two a slot (0: 48)
	WarmupRequests int           // completed requests of the warm-up, at least one a slot (0: 16)
	ProbeTimeout   time.Duration // the longest a probe's measurement runs (0: 3 minutes)
	Max            int           // the highest concurrency or rate tried (0: 1024)
	// Tolerance ends the bisection once the knee is known within this fraction (0: 5%): near
	// the knee a live p99 moves more than one step's difference.
	Tolerance float64
}

func (t TuneConfig) withDefaults() TuneConfig {
	if t.ProbeRequests <= 0 {
		t.ProbeRequests = 48
	}
	if t.WarmupRequests <= 0 {
		t.WarmupRequests = 16
	}
	if t.ProbeTimeout <= 0 {
		t.ProbeTimeout = 3 * time.Minute
	}
	if t.Max <= 0 {
		t.Max = 1024
	}
	if t.Tolerance <= 0 {
		t.Tolerance = 0.05
	}
	return t
}

// FleetSource is what the Fleet view reads: fleet.Direct and fleet.Prometheus are one. The
// dashboard runs it (its Run) in a goroutine of its own; the view takes its rows in a command
// each time Updated fires, never in Update.
type FleetSource interface {
	Fleet(facts diagnose.Facts) fleet.Fleet
	History() *fleet.History
	Updated() <-chan struct{}
}

// Recorder writes a flight-recorder bundle of the last minutes and returns its path; the
// dashboard calls it from a command, off the UI goroutine.
type Recorder interface {
	Record(verdicts []diagnose.Verdict) (path string, err error)
}

// Canary is the attach mode's probe: one small fixed request an interval, never two in
// flight, its latencies shown apart from the load's.
type Canary interface {
	// SetOn starts or stops the probe.
	SetOn(on bool)
	On() bool
	Interval() time.Duration
	Last() (loadgen.CanarySample, bool)
	Counts() loadgen.CanaryCounts
}

// FleetDeps are the fleet mode's collaborators and the verdicts' settings, added to Deps.
type FleetDeps struct {
	// Fleet, when set, is the fleet watched: the Fleet view comes first.
	Fleet FleetSource
	// DrillScraper scrapes one fleet row's endpoint for its drill-down (nil: no drill-down).
	DrillScraper func(r fleet.Row) (Scraper, error)
	// Thresholds are the verdicts' (nil: diagnose.DefaultThresholds).
	Thresholds *diagnose.Thresholds
	// MaxNumSeqs is the server's --max-num-seqs when known from its command line.
	MaxNumSeqs int
	// MaxNumBatchedTokens is its --max-num-batched-tokens, likewise (0: unknown).
	MaxNumBatchedTokens int
	Recorder            Recorder
	Canary              Canary
}
