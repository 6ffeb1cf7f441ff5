package loadgen

import (
	"context"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/outfile"
)

// DefaultMaxInFlight caps a session's requests in flight in rate mode: a rate above what the
// server sustains would pile requests up without end; the cap bounds goroutines and sockets
// (the lag and the queueing show the shortfall).
const DefaultMaxInFlight = 4096

// SessionConfig is a live load against one server: what the dashboard drives.
type SessionConfig struct {
	Client      ClientConfig
	Concurrency int     // closed-loop slots at the start
	Rate        float64 // > 0: start in the open loop at this many requests per second
	Burstiness  float64 // the open loop's gamma shape (1 = Poisson; 0 means 1)
	Seed        int64
	MaxInFlight int // the open loop's cap; 0 is DefaultMaxInFlight
	// Short and Long are the two random workloads the user switches between (the prompt-length
	// demo). Their seeds are set from Seed; both always set ignore_eos.
	Short, Long RandomConfig
	// Record is a JSONL file that receives every result as it finishes; "" for none. A file
	// there is refused unless RecordOverwrite.
	Record          string
	RecordOverwrite bool
	// Sinks receive each result as it finishes, from the request goroutines.
	Sinks []func(Result)
	// MaxEpochs is how many epochs keep their statistics (0: 100).
	MaxEpochs int
	Now       func() time.Time // nil: time.Now

	// LiveWindow is the span of the live window's percentiles (0: DefaultLiveWindow); Tick
	// is expected once a second.
	LiveWindow time.Duration
	// Goodput are service-level objectives: each epoch then counts the requests that met
	// them all (EpochStats.Good).
	Goodput Goodput
	// PrefixLen is the shared system prompt SharedPrefix adds, in tokens (0:
	// DefaultSharedPrefixLen).
	PrefixLen int
	// Dataset, when it is a trace or conversations (OpenDataset's), is replayed instead of
	// the short and long workloads: the trace looped, the conversations without end unless
	// counted.
	Dataset *Dataset
}

// Session is a live load: the client, the runner that holds its concurrency or rate, the live
// window, the epochs, the optional JSONL journal and the short and long workloads, built in one
// place. Every change of the load starts an epoch and returns its number, by which the caller
// may keep notes of its own. It is safe for concurrent use.
type Session struct {
	cfg     SessionConfig
	client  *Client
	runner  *Runner
	live    *Live
	epochs  *Epochs
	journal *JSONL

	mu          sync.Mutex
	short, long Workload
	longOn      bool
	vocab       *Vocab
	// prefix is the prefix demo's state: 0 before SharedPrefix was called, then on or off.
	prefix prefixState
}

type prefixState int

const (
	prefixUnset prefixState = iota
	prefixOn
	prefixOff
)

// NewSession checks cfg and builds the session; nothing is sent until Run. Its workloads
// start with estimated prompt lengths, fitted to the server's tokenizer by Run.
func NewSession(cfg SessionConfig) (*Session, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.MaxEpochs == 0 {
		cfg.MaxEpochs = 100
	}
	if cfg.PrefixLen == 0 {
		cfg.PrefixLen = DefaultSharedPrefixLen
	}
	cfg.Short.IgnoreEOS, cfg.Short.Seed = true, cfg.Seed
	cfg.Long.IgnoreEOS, cfg.Long.Seed = true, cfg.Seed+1
	client, err := NewClient(cfg.Client)
	if err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, client: client, live: NewLive(LiveSlots(cfg.LiveWindow), 600, cfg.Now()), epochs: NewEpochs(cfg.MaxEpochs)}
	s.epochs.SetGoodput(cfg.Goodput)
	if err := s.fit(EstimatedVocab()); err != nil {
		return nil, err
	}
	sinks := append([]func(Result){s.live.Add, s.epochs.Add}, cfg.Sinks...)
	// Inter-token latencies go to the live window and the epochs as they arrive, so a stream's
	// memory does not grow with its output; the journal needs them in each result.
	itl := func(epoch int, d time.Duration) { s.live.AddITL(d); s.epochs.AddITL(epoch, d) }
	if cfg.Record != "" {
		itl = nil
		if s.journal, err = CreateJSONL(cfg.Record, RecordFile(cfg.RecordOverwrite)); err != nil {
			return nil, err
		}
		sinks = append(sinks, s.journal.Add)
	}
	s.runner = NewRunner(client, RunnerConfig{Workload: s.short, Concurrency: cfg.Concurrency, Rate: max(cfg.Rate, 0),
		Burstiness: cfg.Burstiness, Seed: cfg.Seed, Sinks: sinks, MaxConcurrency: cfg.MaxInFlight, ITL: itl})
	if d := cfg.Dataset; d != nil && d.Replays() {
		s.runner.replay = replayKind(!d.cfg.MultiTurn.On, d.cfg.MultiTurn.On)
	}
	s.begin(0, "")
	return s, nil
}

// fit builds both workloads from v.
func (s *Session) fit(v *Vocab) error {
	short, err := NewRandom(s.cfg.Short, v)
	if err != nil {
		return err
	}
	long, err := NewRandom(s.cfg.Long, v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.short, s.long, s.vocab = short, long, v
	s.mu.Unlock()
	return nil
}

// Client is the session's client.
func (s *Session) Client() *Client { return s.client }

// Run waits for ready (the server's readiness; nil to start at once), fits the prompts to the
// server's tokenizer (estimates stay when it has none), then drives the load until ctx ends. It
// returns ready's error or ctx's.
func (s *Session) Run(ctx context.Context, ready func(context.Context) error) error {
	if ready != nil {
		if err := ready(ctx); err != nil {
			return err
		}
	}
	if _, err := s.replayFrom(ctx); err != nil {
		return err
	}
	if v, err := CalibrateVocab(ctx, s.client); err == nil && s.fit(v) == nil {
		s.runner.SetWorkload(s.workload())
	}
	return s.runner.Run(ctx)
}

// Close closes the journal, if any.
func (s *Session) Close() error {
	if s.journal == nil {
		return nil
	}
	return s.journal.Close()
}

// begin records epoch n, which the runner has just started, with the load it runs and why. It
// is the one place an epoch starts.
func (s *Session) begin(n int, label string) int {
	s.epochs.Begin(n, s.runner.Stats().Settings(), label, s.cfg.Now())
	return n
}

// SetConcurrency holds n requests in flight (the closed loop) and returns the new epoch.
func (s *Session) SetConcurrency(n int) int { return s.begin(s.runner.SetConcurrency(n), "") }

// SetRate sends rps requests per second (the open loop) and returns the new epoch.
func (s *Session) SetRate(rps float64) int { return s.begin(s.runner.SetRate(rps), "") }

// Mark starts an epoch with the same load for a reason of the caller's (label, e.g. "restart")
// and returns its number.
func (s *Session) Mark(label string) int { return s.begin(s.runner.NextEpoch(), label) }

// UseLongPrompts switches between the short and the long workload, and returns the workload's
// name and the new epoch.
func (s *Session) UseLongPrompts(on bool) (string, int) {
	s.mu.Lock()
	s.longOn = on
	s.mu.Unlock()
	w := s.workload()
	return w.Name(), s.begin(s.runner.SwitchWorkload(w), "")
}

// WorkloadName names the workload new requests use, or the dataset a session replays.
func (s *Session) WorkloadName() string {
	if d := s.cfg.Dataset; d != nil && d.Replays() {
		return d.Name()
	}
	return s.workload().Name()
}

func (s *Session) workload() Workload {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.short
	if s.longOn {
		w = s.long
	}
	if s.prefix != prefixUnset {
		w = newPrefixed(w, s.vocab, s.cfg.PrefixLen, s.prefix == prefixOn, s.cfg.Seed)
	}
	return w
}

// SharedPrefix puts a system prompt of PrefixLen tokens, the same for every request, before
// the current workload's prompts (on), or as many tokens of each request's own (off: the same
// lengths, nothing for the prefix cache to share), the prefix-caching demo; it returns the
// workload's name, which ends in "prefix on" or "prefix off", and the new epoch.
func (s *Session) SharedPrefix(on bool) (string, int) {
	s.mu.Lock()
	s.prefix = prefixOff
	if on {
		s.prefix = prefixOn
	}
	s.mu.Unlock()
	w := s.workload()
	return w.Name(), s.begin(s.runner.SwitchWorkload(w), "")
}

// Pause stops starting requests; those in flight finish.
func (s *Session) Pause() { s.runner.Pause() }

// CancelInFlight ends the requests in flight as cancelled, not failed (see Runner).
func (s *Session) CancelInFlight() { s.runner.CancelInFlight() }

// Resume starts requests again, whatever paused them (Pause, PauseFor, the back-off), and
// forgets the failures the back-off counted.
func (s *Session) Resume() { s.runner.Resume() }

// PauseFor pauses the load for a reason outside it, e.g. PauseFor("the server exited: exit
// status 1"): Stats().PausedBy and Stats().Status() say it until Resume, or until the ready of
// a ResumeAfter returns.
func (s *Session) PauseFor(reason string) { s.runner.PauseFor(reason) }

// ResumeAfter lifts PauseFor's pause once ready returns nil (the supervisor's WaitReady after a
// restart, say), unless the load was paused again meanwhile; it returns at once.
func (s *Session) ResumeAfter(ctx context.Context, ready func(context.Context) error) {
	s.runner.ResumeAfter(ctx, ready)
}

// Watch follows the next request that starts, token by token.
func (s *Session) Watch() *Watched { return s.runner.Watch() }

// Stats is the runner's state now; its Status() is the line to show when the load is held
// back (paused by the back-off or PauseFor, or backing off).
func (s *Session) Stats() LoaderStats { return s.runner.Stats() }

// Tick closes the live window's current point at now and returns it (see Live.Tick).
func (s *Session) Tick(now time.Time) Point { return s.live.Tick(now) }

// WindowCounts is the live window's counts and rates, without latency quantiles.
func (s *Session) WindowCounts() WindowStats { return s.live.WindowCounts() }

// Window is the live window's counts, rates and latency percentiles.
func (s *Session) Window() WindowStats { return s.live.Window() }

// Epochs returns the kept epochs, oldest first, with their statistics.
func (s *Session) Epochs() []EpochStats { return s.epochs.All() }

// RecordFile is how --record's file is opened: one that exists is kept unless overwrite.
func RecordFile(overwrite bool) outfile.Options {
	o := outfile.Options{Hint: "give --overwrite to replace it, or another --record"}
	if overwrite {
		o.Mode = outfile.Overwrite
	}
	return o
}
