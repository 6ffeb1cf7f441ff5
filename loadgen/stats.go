package loadgen

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vllmtop/vllmtop/internal/base/outfile"
)

// Recorder keeps every result of a headless run, for exact statistics. Safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	results []Result
}

// Add records one result (warm-up results are dropped).
func (rec *Recorder) Add(r Result) {
	if r.Warmup {
		return
	}
	rec.mu.Lock()
	rec.results = append(rec.results, r)
	rec.mu.Unlock()
}

// Results returns a copy of what was recorded.
func (rec *Recorder) Results() []Result {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Result(nil), rec.results...)
}

// Goodput holds service-level objectives: a request is good when it meets every one given.
type Goodput struct {
	TTFT, TPOT, E2EL time.Duration // zero = not an objective
}

// ParseGoodput reads vllm bench serve's --goodput "ttft:MS tpot:MS e2el:MS" (milliseconds).
func ParseGoodput(args []string) (Goodput, error) {
	var g Goodput
	for _, a := range args {
		for _, kv := range strings.Fields(a) {
			k, v, ok := strings.Cut(kv, ":")
			ms, err := strconv.ParseFloat(v, 64)
			if !ok || err != nil || ms < 0 {
				return g, fmt.Errorf("--goodput %q: want key:milliseconds with key ttft, tpot or e2el", kv)
			}
			d := time.Duration(ms * float64(time.Millisecond))
			switch k {
			case "ttft":
				g.TTFT = d
			case "tpot":
				g.TPOT = d
			case "e2el":
				g.E2EL = d
			default:
				return g, fmt.Errorf("--goodput: unknown key %q (want ttft, tpot or e2el)", k)
			}
		}
	}
	return g, nil
}

// Set reports whether any objective is given.
func (g Goodput) Set() bool { return g.TTFT > 0 || g.TPOT > 0 || g.E2EL > 0 }

func (g Goodput) good(r *Result) bool {
	tpot, _ := r.TPOT() // 0 for one-token outputs, as vLLM's goodput does
	return (g.TTFT == 0 || r.TTFT <= g.TTFT) && (g.TPOT == 0 || tpot <= g.TPOT) && (g.E2EL == 0 || r.E2EL <= g.E2EL)
}

// Dist summarises one latency metric in milliseconds, as numpy would: mean, population std,
// median, and percentiles by linear interpolation.
type Dist struct {
	Mean, Median, Std float64
	Percentiles       map[float64]float64
	N                 int
}

// Summary is vllm bench serve's result for one run.
type Summary struct {
	Duration             time.Duration
	Completed, Failed    int
	FailuresByClass      map[ErrorClass]int
	LastFailure          string // the latest failure in words (FailureStreak.Cause), "" with none
	TotalInputTokens     int
	TotalOutputTokens    int
	OutputFromUsage      bool // false if any request's output was counted from chunks
	RequestThroughput    float64
	RequestGoodput       float64 // NaN unless goodput objectives were given
	OutputThroughput     float64
	TotalTokenThroughput float64
	MaxOutputTokensPerS  float64
	MaxConcurrent        int
	TTFT, TPOT, ITL      Dist
	E2EL                 Dist
	// Client-side queueing: intended start to actual send (open loop with a cap).
	Queue Dist
	// E2ELInclQueue is E2EL plus the client-side queueing, per request.
	E2ELInclQueue Dist
	// Latencies and QueueTimes are every measured request's E2EL (0 for a failure) and
	// client-side queueing in seconds, in request order: vLLM's latencies and queue_times.
	Latencies, QueueTimes []float64
	// SpecDecode is the server's drafting during the run; nil when it does not draft.
	SpecDecode *SpecDecode
	// Probes are the --probe-request-rate requests' figures; nil without probes.
	Probes *Probes
	// RampEvents are a ramp-up's rps_change_events; nil without a ramp.
	RampEvents []RampEvent
	// Estimated is true when the run's timings passed the Tally's bound of exact ones: the
	// medians and percentiles are then HDR estimates (3 significant digits), the means and
	// deviations streaming ones, and the peaks counted in seconds from the first start seen
	// when the bound was passed.
	Estimated bool
}

// Summarize computes the run's statistics over the successful requests, with percentiles ps
// (e.g. 50, 90, 99) and the goodput objectives g, through a Tally (so exact up to
// DefaultExactBytes of timings, estimated past it).
func Summarize(results []Result, duration time.Duration, ps []float64, g Goodput) Summary {
	t := NewTally(g)
	for i := range results {
		t.Add(results[i])
	}
	return t.Summary(duration, ps)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func dist(x []float64, ps []float64) Dist {
	d := Dist{N: len(x), Percentiles: map[float64]float64{}}
	if len(x) == 0 {
		for _, p := range ps {
			d.Percentiles[p] = 0
		}
		return d
	}
	sort.Float64s(x)
	var sum float64
	for _, v := range x {
		sum += v
	}
	d.Mean = sum / float64(len(x))
	var sq float64
	for _, v := range x {
		sq += (v - d.Mean) * (v - d.Mean)
	}
	d.Std = math.Sqrt(sq / float64(len(x)))
	d.Median = Percentile(x, 50)
	for _, p := range ps {
		d.Percentiles[p] = Percentile(x, p)
	}
	return d
}

// Percentile of sorted x by linear interpolation between closest ranks (numpy's default).
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (rank-float64(lo))*(sorted[hi]-sorted[lo])
}

// JSONL writes results to a file as they finish, one JSON object a line, each line written
// and synced to the OS at once so a crash loses only requests in flight. Safe for concurrent use.
type JSONL struct {
	mu  sync.Mutex
	f   *os.File
	err error
}

// CreateJSONL creates path as opts say (outfile.Create: an existing file is kept unless opts
// say otherwise, a link is never written through).
func CreateJSONL(path string, opts outfile.Options) (*JSONL, error) {
	f, err := outfile.Create(path, opts)
	if err != nil {
		return nil, fmt.Errorf("results file: %w", err)
	}
	return &JSONL{f: f}, nil
}

// Add writes one result; the first write error is kept and returned by Close.
func (j *JSONL) Add(r Result) {
	line, err := json.Marshal(r)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	if err == nil {
		_, err = j.f.Write(append(line, '\n'))
	}
	j.err = err
}

// Close closes the file.
func (j *JSONL) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.f.Close(); j.err == nil {
		j.err = err
	}
	return j.err
}
