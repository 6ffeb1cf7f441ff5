package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The parameters a sweep varies, as the summary table names them.
const (
	SweepConcurrency = "concurrency"
	SweepRequestRate = "request rate"
)

// SweepConfig is a headless benchmark of one run or of a sweep: one run per value of
// Concurrency, or of Rates when that has several values.
type SweepConfig struct {
	// Info is what each run's report says; its Date, MaxConcurrency, RequestRate and (for a
	// run bounded by time) NumPrompts are filled in per run.
	Info     RunInfo
	Workload Workload
	// NumPrompts, Duration, ReadyCheck, Warmups, Burstiness and Seed are BenchConfig's, for
	// every run.
	NumPrompts int
	Duration   time.Duration
	ReadyCheck time.Duration
	Warmups    int
	// BeforeMeasured is BenchConfig's, called for the first run only.
	BeforeMeasured func()
	// Note is BenchConfig's, for every run.
	Note       func(string)
	Burstiness float64
	Seed       int64
	// Concurrency is --max-concurrency: the cap of each run (empty: none), swept when it has
	// several values.
	Concurrency []int
	// Rates is --request-rate in requests per second (+Inf: all at once), swept when it has
	// several values. It must not be empty.
	Rates []float64
	// FreshPrompts gives each run of a sweep new prompts of the same shape, so the server's
	// prefix cache does not carry over from one run to the next (random prompts).
	FreshPrompts bool
	// Detailed adds the per-request arrays to each run's document (--save-detailed), spilled
	// to a file in DetailDir ("" for the system's temporary one) while the run lasts.
	Detailed  bool
	DetailDir string
	// Backoff is each run's back-off from failing requests (zero: the defaults); a run that
	// reaches its threshold stops early (SweepRun.Stopped) and the sweep with it.
	Backoff BackoffConfig
	// Transport and Clock are BenchConfig's, for every run: when set, they send and time the
	// requests instead of the client (which may then be nil), as the simulator on its virtual
	// clock does (package predict).
	Transport Transport
	Clock     Clock
	// Trace and Conversations are BenchConfig's, for every run: each run replays the trace
	// from its start (Rates then unused), or plays the conversations.
	Trace         func() (ArrivalSource, error)
	Conversations *ConversationLoad
	// RequestIDPrefix, Ramp and ProbeRate are BenchConfig's, for every run.
	RequestIDPrefix string
	LoRA            LoRA
	Ramp            Ramp
	// WholeFile is --num-prompts -1: every prompt of a file dataset, NumPrompts EveryPrompt.
	WholeFile bool
	ProbeRate float64
	// OnStart, when set, is called before each run; the sinks it returns receive that run's
	// results and done is called when the run has ended (a progress line, say).
	OnStart func(info RunInfo) (sinks []func(Result), done func())
}

// Check refuses what vllm bench serve refuses, naming its flags: a run with no end, negative
// counts, two lists at once, a burstiness that is not positive, a run bounded by time that
// would send everything at once.
func (cfg SweepConfig) Check() error {
	switch {
	case cfg.Duration < 0:
		return errors.New("--duration must not be negative")
	case cfg.Duration == 0 && cfg.NumPrompts < 1 && cfg.Trace == nil && (cfg.Conversations == nil || cfg.Conversations.Count < 1):
		return fmt.Errorf("--num-prompts must be at least 1, got %d", cfg.NumPrompts)
	case cfg.Warmups < 0:
		return errors.New("--num-warmups must not be negative")
	case len(cfg.Rates) == 0:
		return errors.New("--request-rate: no rate given")
	case len(cfg.Concurrency) > 1 && len(cfg.Rates) > 1:
		return errors.New("--max-concurrency and --request-rate are both lists: sweep one of them at a time")
	case !(cfg.Burstiness > 0):
		return fmt.Errorf("--burstiness must be greater than 0, got %g", cfg.Burstiness)
	case cfg.NumPrompts > MaxAtOnce && !cfg.WholeFile && cfg.sendsAllAtOnce():
		return fmt.Errorf("--num-prompts %d with --request-rate inf and no --max-concurrency sends every prompt at once, more than the %d a run holds in flight: give --max-concurrency or a --request-rate", cfg.NumPrompts, MaxAtOnce)
	case cfg.Duration > 0 && cfg.NumPrompts == 0 && len(cfg.Concurrency) == 0 && len(cfg.Rates) == 1 && math.IsInf(cfg.Rates[0], 1) && cfg.Trace == nil && cfg.Conversations == nil:
		return errors.New("--duration with --request-rate inf needs --max-concurrency (or --num-prompts)")
	}
	return nil
}

// EveryPrompt is NumPrompts for every prompt of a file dataset (vLLM's --num-prompts -1, with
// WholeFile set): as many as the file holds, which its size bounds.
const EveryPrompt = math.MaxInt32

// MaxAtOnce is the most prompts a run sends at once (rate inf, no concurrency cap): each one
// sent is held, with its stream, until it ends.
const MaxAtOnce = 1 << 20

// sendsAllAtOnce reports whether one of the runs has rate inf and no concurrency cap.
func (cfg SweepConfig) sendsAllAtOnce() bool {
	if cfg.Trace != nil || cfg.Conversations != nil || cfg.Ramp.On() || !slices.ContainsFunc(cfg.Rates, func(r float64) bool { return math.IsInf(r, 1) || r <= 0 }) {
		return false
	}
	return len(cfg.Concurrency) == 0 || slices.Contains(cfg.Concurrency, 0)
}

// Param is the parameter the sweep varies: SweepRequestRate when Rates has several values,
// else SweepConcurrency.
func (cfg SweepConfig) Param() string {
	if len(cfg.Rates) > 1 {
		return SweepRequestRate
	}
	return SweepConcurrency
}

// Values are the values of Param, one per run (a single 0 for one run with no cap).
func (cfg SweepConfig) Values() []float64 {
	if cfg.Param() == SweepRequestRate {
		return cfg.Rates
	}
	if len(cfg.Concurrency) == 0 {
		return []float64{0}
	}
	out := make([]float64, len(cfg.Concurrency))
	for i, c := range cfg.Concurrency {
		out[i] = float64(c)
	}
	return out
}

// SweepRun is one finished run.
type SweepRun struct {
	Index, Of   int     // the run's place (0 for the first) among the sweep's planned runs
	Param       string  // the swept parameter (Param)
	Value       float64 // its value in this run
	Interrupted bool    // the context ended during the run: it covers what finished
	// Stopped is why the run ended early, in one line, when its requests kept failing before
	// any output (see FailingError); "" otherwise.
	Stopped string
	Info    RunInfo
	Summary Summary // with the 99th percentile among its percentiles, for the summary table
	// Doc is the run's result document; with Detailed its arrays are read from a file that
	// lives until Release.
	Doc ResultDoc
	// Turns compares first and later turns of a multi-turn run (nil for other runs).
	Turns   *TurnGroups
	release func()
}

// Release frees what the run's document needs until it is written (the spill file of
// --save-detailed); the document cannot be written after it.
func (r SweepRun) Release() {
	if r.release != nil {
		r.release()
	}
}

// Sweep makes the runs in order and calls done after each. It stops after a run in which no
// request succeeded, and when ctx ends (the run under way then reports what finished). Its
// error is a config it cannot run (see Check; then no run is made), or ctx's.
func Sweep(ctx context.Context, c *Client, cfg SweepConfig, done func(SweepRun)) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	values := cfg.Values()
	ps := withPercentile(cfg.Info.Percentiles, 99)
	for k, v := range values {
		info := cfg.Info
		info.Date, info.MaxConcurrency, info.RequestRate = time.Now(), 0, cfg.Rates[0]
		if len(cfg.Concurrency) > 0 {
			info.MaxConcurrency = cfg.Concurrency[0]
		}
		if cfg.Param() == SweepConcurrency {
			info.MaxConcurrency = int(v)
		} else {
			info.RequestRate = v
		}
		bc := BenchConfig{Workload: cfg.Workload, NumPrompts: cfg.NumPrompts, Duration: cfg.Duration,
			RequestRate: info.RequestRate, Burstiness: cfg.Burstiness, MaxConcurrency: info.MaxConcurrency,
			ReadyCheck: cfg.ReadyCheck, Note: cfg.Note, Warmups: cfg.Warmups, Seed: cfg.Seed, Goodput: cfg.Info.Goodput, Detailed: cfg.Detailed, DetailDir: cfg.DetailDir, Backoff: cfg.Backoff,
			Trace: cfg.Trace, Conversations: cfg.Conversations, Transport: cfg.Transport, Clock: cfg.Clock,
			RequestIDPrefix: cfg.RequestIDPrefix, LoRA: cfg.LoRA, Ramp: cfg.Ramp, ProbeRate: cfg.ProbeRate}
		if cfg.FreshPrompts && len(values) > 1 {
			stride := cfg.NumPrompts + cfg.Warmups
			if stride == 0 {
				stride = 1 << 20 // a run bounded by time: far enough apart
			}
			bc.Workload = Offset(cfg.Workload, k*stride)
		}
		if k == 0 {
			bc.BeforeMeasured = cfg.BeforeMeasured
		}
		var finish func()
		if cfg.OnStart != nil {
			bc.Sinks, finish = cfg.OnStart(info)
		}
		var turns *turnTally
		if cfg.Conversations != nil {
			turns = newTurnTally()
			bc.Sinks = append(bc.Sinks, turns.Add)
		}
		run, err := Bench(ctx, c, bc)
		if finish != nil {
			finish()
		}
		if run.Tally == nil || err != nil && ctx.Err() == nil {
			if run.Tally != nil {
				_ = run.Tally.Close()
			}
			return err
		}
		if info.NumPrompts == 0 {
			info.NumPrompts = run.Tally.Count() // a run bound by time: what it sent
		}
		s := run.Tally.Summary(run.Duration, ps)
		s.SpecDecode, s.Probes, s.RampEvents = run.SpecDecode, run.Probes, run.RampEvents
		sr := SweepRun{Index: k, Of: len(values), Param: cfg.Param(), Value: v, Interrupted: ctx.Err() != nil,
			Info: info, Summary: s, Doc: ResultJSON(s, info, run.Tally.DetailFields()), release: func() { _ = run.Tally.Close() }}
		if run.Stopped != nil {
			sr.Stopped = run.Stopped.Error()
		}
		if turns != nil {
			sr.Turns = turns.groups()
			sr.Doc = append(sr.Doc, turnFields(*sr.Turns)...)
		}
		done(sr)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if s.Completed == 0 || run.Stopped != nil {
			break
		}
	}
	return nil
}

// withPercentile returns ps with p added if missing.
func withPercentile(ps []float64, p float64) []float64 {
	for _, q := range ps {
		if q == p {
			return ps
		}
	}
	return append(append([]float64(nil), ps...), p)
}
