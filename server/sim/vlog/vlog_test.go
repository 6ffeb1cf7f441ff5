package vlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
)

const (
	testdataDir = "../../../testdata/"
	apiPID      = 4127
	enginePID   = 4310
)

var (
	// A line of vLLM's logger, and a uvicorn line, each with the process prefix.
	prefixRE  = regexp.MustCompile(`^\((APIServer|EngineCore) pid=\d+\) (INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d \[[\w.]+:\d+\] `)
	uvicornRE = regexp.MustCompile(`^\(APIServer pid=\d+\) (INFO|WARNING|ERROR):\s+\S`)

	// docs/vllm-behaviour.md#startup-log-lines
	kvSizeRE  = regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`)
	concRE    = regexp.MustCompile(`Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x`)
	loadingRE = regexp.MustCompile(`Model loading took ([\d.]+) GiB(?: memory)? and ([\d.]+) seconds`)
	availRE   = regexp.MustCompile(`Available KV cache memory: ([\d.]+) GiB`)
	weightsRE = regexp.MustCompile(`Loading weights took ([\d.]+) seconds`)
	maxLenRE  = regexp.MustCompile(`Using max model len (\d+)`)
	graphRE   = regexp.MustCompile(`Graph capturing finished in (\d+) secs, took ([\d.]+) GiB`)
	initRE    = regexp.MustCompile(`init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s`)
	readyRE   = regexp.MustCompile(`Starting vLLM server on (\S+)`)

	// docs/vllm-behaviour.md#periodic-stats-line, applied after stripping the logger prefix.
	statsRE     = regexp.MustCompile(`^(?:Engine (\d{3})|(\d+) Engines Aggregated): Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs, Waiting: (\d+) reqs(?:, Deferred: (\d+) reqs)?(?:, Preemptions: (\d+))?, GPU KV cache usage: ([\d.]+)%, Prefix cache hit rate: ([\d.]+)%`)
	anyPrefixRE = regexp.MustCompile(`^\([\w]+ pid=\d+\) [A-Z]+ \d\d-\d\d \d\d:\d\d:\d\d \[[\w./]+:\d+\] `)

	commasRE = regexp.MustCompile(`^\d{1,3}(,\d{3})*$`)
)

// The routes of the reference startup.
var fixtureRoutes = []Route{
	{"/openapi.json", "HEAD, GET"},
	{"/health", "GET"},
	{"/metrics", "GET"},
	{"/tokenize", "POST"},
	{"/detokenize", "POST"},
	{"/v1/models", "GET"},
	{"/version", "GET"},
	{"/v1/chat/completions", "POST"},
	{"/v1/completions", "POST"},
}

var qwenArgs = []KV{{"model_tag", "Qwen/Qwen3-0.6B"}, {"model", "Qwen/Qwen3-0.6B"}}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 7, 24, 10, 15, 1, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// lines splits output on "\n" (dropping the empty string after the last one) and trims the
// "\r" vLLM's multi-line records put before each inner newline.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	out := strings.Split(s, "\n")
	for i := range out {
		out[i] = strings.TrimSuffix(out[i], "\r")
	}
	return out
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(testdataDir + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// only returns the one line matching re, with its submatches.
func only(t *testing.T, ls []string, re *regexp.Regexp) []string {
	t.Helper()
	var found []string
	n := 0
	for _, l := range ls {
		if m := re.FindStringSubmatch(l); m != nil {
			found = m
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d lines match %s, want 1", n, re)
	}
	return found
}

func qwenSetup(t *testing.T) *sim.Setup {
	t.Helper()
	// The release of the reference startup (testdata/vllm-log-synthetic-startup.txt), a first
	// boot: it compiles its graphs.
	s, err := sim.Resolve(sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: "0.26.0", CompileCache: sim.CompileCold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStartupLinesAndCapacity(t *testing.T) {
	s := qwenSetup(t)
	var stdout, stderr bytes.Buffer
	l := New(&stdout, &stderr, newClock().now, apiPID, enginePID)
	l.Startup(s, qwenArgs, 1.873204)
	l.Serving("http://0.0.0.0:8000", fixtureRoutes)

	out, errLines := lines(stdout.String()), lines(stderr.String())
	for _, line := range out {
		if !prefixRE.MatchString(line) {
			t.Errorf("stdout line without vLLM's prefix: %q", line)
		}
	}
	want := []string{
		"(APIServer pid=4127) INFO:     Started server process [4127]",
		"(APIServer pid=4127) INFO:     Waiting for application startup.",
		"(APIServer pid=4127) INFO:     Application startup complete.",
	}
	if strings.Join(errLines, "\n") != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), strings.Join(want, "\n"))
	}
	for _, line := range errLines {
		if !uvicornRE.MatchString(line) {
			t.Errorf("stderr line not in uvicorn's form: %q", line)
		}
	}

	c := s.Capacity
	m := only(t, out, kvSizeRE)
	if !commasRE.MatchString(m[1]) || m[1] != commas(c.KVCacheTokens) {
		t.Errorf("GPU KV cache size %q, want %d with thousands commas", m[1], c.KVCacheTokens)
	}
	if n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", "")); n != c.KVCacheTokens {
		t.Errorf("GPU KV cache size parses as %d, want %d", n, c.KVCacheTokens)
	}
	m = only(t, out, concRE)
	if m[1] != commas(s.MaxModelLen) || m[1] != "40,960" {
		t.Errorf("concurrency line max model len %q, want 40,960", m[1])
	}
	if m[2] != strconv.FormatFloat(c.MaxConcurrency, 'f', 2, 64) {
		t.Errorf("maximum concurrency %q, want %.2f", m[2], c.MaxConcurrency)
	}
	m = only(t, out, loadingRE)
	if want := fmt.Sprintf("%.6f", StartupTimings(s, 1.873204).ModelLoad); m[1] != sim.FormatGiB(c.WeightsBytes) || m[2] != want {
		t.Errorf("model loading %q GiB and %q s, want %s and %s", m[1], m[2], sim.FormatGiB(c.WeightsBytes), want)
	}
	if m = only(t, out, availRE); m[1] != sim.FormatGiB(c.AvailableKVBytes) {
		t.Errorf("available KV cache memory %q GiB, want %s", m[1], sim.FormatGiB(c.AvailableKVBytes))
	}
	if m = only(t, out, maxLenRE); m[1] != strconv.Itoa(s.MaxModelLen) {
		t.Errorf("max model len %q, want %d", m[1], s.MaxModelLen)
	}
	tm := StartupTimings(s, 1.873204)
	if m = only(t, out, weightsRE); m[1] != fmt.Sprintf("%.2f", tm.WeightsLoad) {
		t.Errorf("loading weights %q s, want %.2f", m[1], tm.WeightsLoad)
	}
	only(t, out, graphRE)
	if m = only(t, out, initRE); m[1] != fmt.Sprintf("%.2f", tm.InitEngine) {
		t.Errorf("init engine %q s, want %.2f", m[1], tm.InitEngine)
	}
	if m = only(t, out, readyRE); m[1] != "http://0.0.0.0:8000" {
		t.Errorf("listen address %q", m[1])
	}
	for _, frag := range []string{
		"with config: model='Qwen/Qwen3-0.6B', ",
		"dtype=torch.bfloat16, max_seq_len=40960, ",
		"tensor_parallel_size=1, ",
		"kv_cache_dtype=auto, ",
		"enable_prefix_caching=True, enable_chunked_prefill=True, ",
		"[scheduler.py:242] Chunked prefill is enabled with max_num_batched_tokens=" + strconv.Itoa(s.MaxNumBatchedTokens) + ".\n",
		"[api_utils.py:286] non-default args: {'model_tag': 'Qwen/Qwen3-0.6B', 'model': 'Qwen/Qwen3-0.6B'}\n",
		"[gpu_worker.py:373] Using V2 Model Runner\n",
		"[api_server.py:673] Supported tasks: ['generate']\n",
	} {
		if !strings.Contains(stdout.String(), frag) {
			t.Errorf("stdout lacks %q", frag)
		}
	}
}

// numRE is any number; normalizing numbers (pids, dates, sizes, times) away leaves the shape.
var numRE = regexp.MustCompile(`\d+(?:[.,]\d+)*`)

// TestStartupMatchesReference compares the simulator's startup and readiness output, stdout
// and stderr interleaved, with the reference startup line by line, numbers aside. The
// reference's "Resolved architecture" line has no counterpart (the profiles do not name the
// architecture).
func TestStartupMatchesReference(t *testing.T) {
	ref := strings.Split(readTestdata(t, "vllm-log-synthetic-startup.txt"), "\n")
	if !strings.HasPrefix(ref[0], "# SYNTHETIC") {
		t.Fatalf("first line of the reference is not its provenance comment: %q", ref[0])
	}
	var want []string
	for _, line := range ref[1:] {
		if strings.Contains(line, "Resolved architecture") {
			continue
		}
		want = append(want, numRE.ReplaceAllString(line, "#"))
		if strings.HasSuffix(line, "Application startup complete.") {
			break
		}
	}

	var both bytes.Buffer
	l := New(&both, &both, newClock().now, apiPID, enginePID)
	l.Startup(qwenSetup(t), qwenArgs, 1.873204)
	l.Serving("http://0.0.0.0:8000", fixtureRoutes)
	got := strings.Split(strings.TrimSuffix(both.String(), "\n"), "\n")
	for i := range got {
		got[i] = numRE.ReplaceAllString(got[i], "#")
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, g, w)
		}
	}
}

// TestReferenceParsesLikeOurs applies the same regexes to the reference startup.
func TestReferenceParsesLikeOurs(t *testing.T) {
	ls := lines(readTestdata(t, "vllm-log-synthetic-startup.txt"))[1:]
	for _, line := range ls {
		if !prefixRE.MatchString(line) && !uvicornRE.MatchString(line) {
			t.Errorf("reference line matches neither form: %q", line)
		}
	}
	if m := only(t, ls, kvSizeRE); m[1] != "1,221,776" {
		t.Errorf("reference KV size %q", m[1])
	}
	if m := only(t, ls, concRE); m[1] != "40,960" || m[2] != "29.83" {
		t.Errorf("reference concurrency %q", m[1:])
	}
	if m := only(t, ls, loadingRE); m[1] != "1.12" || m[2] != "1.873204" {
		t.Errorf("reference model loading %q", m[1:])
	}
	if m := only(t, ls, availRE); m[1] != "130.5" {
		t.Errorf("reference available KV memory %q", m[1])
	}
	only(t, ls, maxLenRE)
	only(t, ls, weightsRE)
	only(t, ls, graphRE)
	only(t, ls, initRE)
	only(t, ls, readyRE)
	n := 0
	for _, line := range ls {
		if strings.Contains(line, "[loggers.py:310]") {
			n++
			if !statsRE.MatchString(prefixRE.ReplaceAllString(line, "")) {
				t.Errorf("reference stats line does not parse: %q", line)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d stats lines in the reference, want 2", n)
	}
}

// step builds a StepResult by hand.
func step(prefill, generated, preempted, running, waiting, used, total int) *sim.StepResult {
	return &sim.StepResult{
		PrefillTokens: prefill,
		Outputs:       make([]sim.Output, generated),
		Preempted:     preempted,
		Running:       running,
		Waiting:       waiting,
		BlocksUsed:    used,
		BlocksTotal:   total,
	}
}

func TestStatsLine(t *testing.T) {
	clk := newClock()
	t0 := time.Date(2026, 7, 24, 10, 15, 53, 0, time.UTC)
	clk.set(t0)
	var stdout bytes.Buffer
	l := New(&stdout, nil, clk.now, apiPID, enginePID)
	st := NewStats(l, 0) // the default, 10 s
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tick := func(d time.Duration) string {
		t.Helper()
		clk.set(at(d))
		before := stdout.Len()
		st.Tick(at(d))
		return stdout.String()[before:]
	}

	// Interval 1: 612 prompt tokens and 12,034 generated over 10 s, in several steps.
	first := step(500, 5000, 0, 16, 2, 5, 1000)
	first.PrefixQueries, first.PrefixHits = 800, 200
	st.Observe(first)
	st.Observe(step(112, 7034, 0, 16, 0, 13, 1000))
	if got := tick(5 * time.Second); got != "" {
		t.Fatalf("logged before the interval ended: %q", got)
	}
	want := "(APIServer pid=4127) INFO 07-24 10:16:03 [loggers.py:310] Engine 000: Avg prompt throughput: 61.2 tokens/s, Avg generation throughput: 1203.4 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.3%, Prefix cache hit rate: 25.0%\n"
	if got := tick(10 * time.Second); got != want {
		t.Fatalf("interval 1:\n got %q\nwant %q", got, want)
	}

	// Interval 2: decode only, with preemptions.
	st.Observe(step(0, 2000, 2, 3, 1, 40, 1000))
	st.Observe(step(0, 2128, 1, 0, 0, 0, 1000))
	want = "(APIServer pid=4127) INFO 07-24 10:16:13 [loggers.py:310] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 412.8 tokens/s, Running: 0 reqs, Waiting: 0 reqs, Preemptions: 3, GPU KV cache usage: 0.0%, Prefix cache hit rate: 25.0%\n"
	got2 := tick(20 * time.Second)
	if got2 != want {
		t.Fatalf("interval 2:\n got %q\nwant %q", got2, want)
	}

	// Interval 3: nothing happened, but the previous interval had throughput: still logged,
	// and without Preemptions.
	want = "(APIServer pid=4127) INFO 07-24 10:16:23 [loggers.py:310] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 25.0%\n"
	got3 := tick(30 * time.Second)
	if got3 != want {
		t.Fatalf("interval 3:\n got %q\nwant %q", got3, want)
	}

	// Intervals 4 and 5: idle twice in a row, so vLLM logs at DEBUG: nothing.
	if got := tick(40 * time.Second); got != "" {
		t.Fatalf("interval 4 logged while idle: %q", got)
	}
	if got := tick(50 * time.Second); got != "" {
		t.Fatalf("interval 5 logged while idle: %q", got)
	}

	// Work again, ticked late: the throughput is over the 15 s that actually passed.
	st.Observe(step(300, 150, 0, 1, 0, 2, 1000))
	want = "(APIServer pid=4127) INFO 07-24 10:16:58 [loggers.py:310] Engine 000: Avg prompt throughput: 20.0 tokens/s, Avg generation throughput: 10.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.2%, Prefix cache hit rate: 25.0%\n"
	got6 := tick(65 * time.Second)
	if got6 != want {
		t.Fatalf("after idle:\n got %q\nwant %q", got6, want)
	}

	// Every line parses with the tolerant regex of docs/vllm-behaviour.md#periodic-stats-line, Preemptions captured when present.
	for i, line := range lines(stdout.String()) {
		if !prefixRE.MatchString(line) {
			t.Errorf("stats line %d without prefix: %q", i, line)
		}
		m := statsRE.FindStringSubmatch(prefixRE.ReplaceAllString(line, ""))
		if m == nil {
			t.Fatalf("stats line %d does not parse: %q", i, line)
		}
		if wantPre := map[int]string{1: "3"}[i]; m[1] != "000" || m[8] != wantPre {
			t.Errorf("line %d: engine %q, preemptions %q (want %q)", i, m[1], m[8], wantPre)
		}
	}
}

// A sped-up simulator (--sim-speed 4) passes Tick its simulated time: the interval is ten
// wall-clock seconds, 40 simulated, and the throughputs are per wall-clock second, the rate a
// scraper of its counters sees.
func TestStatsLineAtSpeed(t *testing.T) {
	clk := newClock()
	t0 := time.Date(2026, 7, 24, 10, 15, 53, 0, time.UTC)
	clk.set(t0)
	var stdout bytes.Buffer
	st := NewStats(New(&stdout, nil, clk.now, apiPID, enginePID), 0)
	st.SetSpeed(4)
	st.Observe(step(612, 12034, 0, 16, 2, 5, 1000))
	st.Tick(t0.Add(20 * time.Second)) // five wall-clock seconds
	if got := stdout.String(); got != "" {
		t.Fatalf("logged before ten wall-clock seconds: %q", got)
	}
	clk.set(t0.Add(10 * time.Second))
	st.Tick(t0.Add(40 * time.Second))
	if want := "Avg prompt throughput: 61.2 tokens/s, Avg generation throughput: 1203.4 tokens/s"; !strings.Contains(stdout.String(), want) {
		t.Fatalf("got %q, want it to contain %q", stdout.String(), want)
	}
}

func TestStatsPrefixWindow(t *testing.T) {
	clk := newClock()
	var stdout bytes.Buffer
	st := NewStats(New(&stdout, nil, clk.now, apiPID, enginePID), time.Second)
	lookups := func(requests, hitPct int) {
		r := step(requests*100, 0, 0, 0, 0, 0, 10)
		r.PromptsCompleted, r.PromptTokens = requests, requests*100
		r.PrefixQueries, r.PrefixHits = requests*100, requests*hitPct
		st.Observe(r)
	}
	rate := func() float64 {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.hitRate()
	}
	lookups(600, 100) // 600 requests of 100 tokens, all hits
	if r := rate(); r != 1 {
		t.Fatalf("hit rate %v, want 1", r)
	}
	lookups(300, 0) // 900 requests in the window
	if r := rate(); r != 600.0/900 {
		t.Fatalf("hit rate %v, want 2/3", r)
	}
	lookups(300, 0) // 1200: the first 600 fall out
	if r := rate(); r != 0 {
		t.Fatalf("hit rate %v, want 0 once the all-hit requests left the window", r)
	}
	lookups(2000, 50) // one observation larger than the window is kept alone
	if r := rate(); r != 0.5 {
		t.Fatalf("hit rate %v, want 0.5", r)
	}
}

func TestPeriodicStatsFixtureParses(t *testing.T) {
	src := readTestdata(t, "vllm-0.10.1.1-periodic-stats-lines-qwen2-7b.log.source.txt")
	if !strings.HasPrefix(src, "# source: ") {
		t.Fatalf("sidecar lacks the provenance line: %q", src)
	}
	ls := lines(readTestdata(t, "vllm-0.10.1.1-periodic-stats-lines-qwen2-7b.log"))
	if len(ls) != 7 {
		t.Fatalf("%d lines, want 7", len(ls))
	}
	for _, line := range ls {
		if !prefixRE.MatchString(line) {
			t.Errorf("no prefix: %q", line)
		}
		if !statsRE.MatchString(prefixRE.ReplaceAllString(line, "")) {
			t.Errorf("does not parse: %q", line)
		}
	}
	m := statsRE.FindStringSubmatch(prefixRE.ReplaceAllString(ls[1], ""))
	if m[1] != "000" || m[4] != "5749.3" || m[5] != "233" || m[6] != "261" || m[8] != "" || m[9] != "99.8" || m[10] != "46.1" {
		t.Errorf("second line parsed as %q", m[1:])
	}
}

func TestStartupFailureNoKVMemory(t *testing.T) {
	_, err := sim.Resolve(sim.Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.5}, nil)
	var se *sim.StartupError
	if !errors.As(err, &se) || se.Kind != sim.NoKVMemory {
		t.Fatalf("Resolve returned %v, want a NoKVMemory StartupError", err)
	}

	var stdout, stderr, both bytes.Buffer
	New(&stdout, &stderr, newClock().now, apiPID, enginePID).StartupFailure(se)
	New(&both, &both, newClock().now, apiPID, enginePID).StartupFailure(se)

	out := lines(stdout.String())
	for _, line := range out {
		if !prefixRE.MatchString(line) {
			t.Errorf("stdout line without vLLM's prefix: %q", line)
		}
	}
	const errPrefix = "(EngineCore pid=4310) ERROR 07-24 10:15:01 [core.py:1231] "
	failed, valueErr := -1, -1
	for i, line := range out {
		switch line {
		case errPrefix + "EngineCore failed to start.":
			failed = i
		case errPrefix + "ValueError: " + se.Message:
			valueErr = i
		}
	}
	if failed < 0 || valueErr < 0 || failed > valueErr || valueErr != len(out)-1 {
		t.Errorf("stdout: \"EngineCore failed to start.\" at %d, the ValueError at %d of %d lines:\n%s", failed, valueErr, len(out), stdout.String())
	}
	if !strings.HasPrefix(se.Message, "No available memory for the cache blocks.") {
		t.Errorf("message %q", se.Message)
	}
	if m := only(t, out, regexp.MustCompile(`Available KV cache memory: (-?[\d.]+) GiB`)); m[1] != sim.FormatGiB(se.Capacity.AvailableKVBytes) {
		t.Errorf("available KV memory %q", m[1])
	}

	errLines := lines(stderr.String())
	for _, line := range errLines {
		if !strings.HasPrefix(line, "(EngineCore pid=4310) ") && !strings.HasPrefix(line, "(APIServer pid=4127) ") {
			t.Errorf("stderr line without a process prefix: %q", line)
		}
	}
	const runtimeErr = "(APIServer pid=4127) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore': 1}"
	all := lines(both.String())
	if all[len(all)-1] != runtimeErr || errLines[len(errLines)-1] != runtimeErr {
		t.Errorf("last line %q, want %q", all[len(all)-1], runtimeErr)
	}
	if !strings.HasPrefix(all[0], "(EngineCore pid=4310) INFO ") || all[len(out)] != "(EngineCore pid=4310) Process EngineCore:" {
		t.Errorf("order: first line %q, first stderr line %q", all[0], all[len(out)])
	}
}

// TestFailureTracebacksMatchReal compares the tracebacks with a real vLLM 0.25.1 crash of the
// same kind, after mapping that installation's paths to the ones used here: the frames, the
// caret lines and the exception lines agree.
func TestFailureTracebacksMatchReal(t *testing.T) {
	if !strings.HasPrefix(readTestdata(t, "vllm-0.25.1-cpu-serve-crash-no-kv-cache-memory.log.source.txt"), "# source: ") {
		t.Fatal("sidecar lacks the provenance line")
	}
	paths := strings.NewReplacer(
		"/opt/venv/lib/python3.12/site-packages/", sitePackages,
		"/opt/uv/python/cpython-3.12.13-linux-aarch64-gnu/lib/python3.12/", pyStdlib,
		"/opt/venv/bin/vllm", "/usr/local/bin/vllm",
		"Failed core proc(s): {}", "Failed core proc(s): {'EngineCore': 1}",
	)
	// block collects the message parts of the lines with the given prefix, from the line
	// equal to first through the line starting with last.
	block := func(ls []string, prefix *regexp.Regexp, first, last string) []string {
		var out []string
		for _, line := range ls {
			loc := prefix.FindStringIndex(line)
			if loc == nil {
				continue
			}
			msg := paths.Replace(line[loc[1]:])
			if out == nil && msg != first {
				continue
			}
			out = append(out, msg)
			if strings.HasPrefix(msg, last) {
				break
			}
		}
		return out
	}
	compare := func(name string, got, want []string) {
		t.Helper()
		if len(want) < 5 {
			t.Fatalf("%s: reference block not found", name)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	real := lines(readTestdata(t, "vllm-0.25.1-cpu-serve-crash-no-kv-cache-memory.log"))
	_, err := sim.Resolve(sim.Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", GPUMemoryUtilization: 0.5}, nil)
	var se *sim.StartupError
	if !errors.As(err, &se) {
		t.Fatal(err)
	}
	var both bytes.Buffer
	New(&both, &both, newClock().now, 1, 25).StartupFailure(se)
	ours := lines(both.String())

	logged := regexp.MustCompile(`^\(EngineCore pid=\d+\) ERROR [\d-]+ [\d:]+ \[core\.py:\d+\] `)
	compare("logged traceback",
		block(ours, logged, "EngineCore failed to start.", "ValueError: "),
		block(real, logged, "EngineCore failed to start.", "ValueError: "))
	engine := regexp.MustCompile(`^\(EngineCore pid=\d+\) `)
	compare("engine core process traceback",
		block(ours, engine, "Process EngineCore:", "ValueError: "),
		block(real, engine, "Process EngineCore:", "ValueError: "))
	api := regexp.MustCompile(`^\(APIServer pid=\d+\) `)
	compare("API server traceback",
		block(ours, api, "Traceback (most recent call last):", "RuntimeError: "),
		block(real, api, "Traceback (most recent call last):", "RuntimeError: "))
}

func TestStartupFailureKinds(t *testing.T) {
	for _, tc := range []struct {
		cfg  sim.Config
		kind sim.StartupKind
	}{
		{sim.Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", GPUUsedGiB: 20}, sim.FreeMemoryTooLow},
		{sim.Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", DType: "float32"}, sim.LoadOOM},
	} {
		_, err := sim.Resolve(tc.cfg, nil)
		var se *sim.StartupError
		if !errors.As(err, &se) || se.Kind != tc.kind {
			t.Fatalf("%+v: got %v, want a %v StartupError", tc.cfg, err, tc.kind)
		}
		var stdout bytes.Buffer
		New(&stdout, nil, newClock().now, apiPID, enginePID).StartupFailure(se)
		out := lines(stdout.String())
		if last := out[len(out)-1]; !strings.HasSuffix(last, "] "+se.Exception+": "+se.Message) {
			t.Errorf("%v: last logged line %q", tc.kind, last)
		}
		if strings.Contains(stdout.String(), "Available KV cache memory") {
			t.Errorf("%v: reports a KV budget it never reached", tc.kind)
		}
	}
}

func TestTensorParallelWorkerLines(t *testing.T) {
	s, err := sim.Resolve(sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", TensorParallelSize: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	New(&stdout, nil, newClock().now, apiPID, enginePID).Startup(s, qwenArgs, 2)
	out := stdout.String()
	for _, want := range []string{
		"(Worker_TP0 pid=4311) INFO 07-24 10:15:01 [gpu_worker.py:547] Available KV cache memory: " + sim.FormatGiB(s.Capacity.AvailableKVBytes) + " GiB\n",
		"(EngineCore pid=4310) INFO 07-24 10:15:01 [kv_cache_utils.py:2464] GPU KV cache size: " + commas(s.Capacity.KVCacheTokens) +
			" tokens, Maximum concurrency for 40,960 tokens per request: " + fmt.Sprintf("%.2fx", s.Capacity.MaxConcurrency) + "\n",
		"tensor_parallel_size=2, ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, line := range lines(out) {
		if !anyPrefixRE.MatchString(line) {
			t.Errorf("line without prefix: %q", line)
		}
	}
}

func TestNumGPUBlocksOverride(t *testing.T) {
	s, err := sim.Resolve(sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", NumGPUBlocksOverride: 5000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	New(&stdout, nil, newClock().now, apiPID, enginePID).Startup(s, qwenArgs, 2)
	out := lines(stdout.String())
	m := only(t, out, regexp.MustCompile(`Overriding num_gpu_blocks=(-?\d+) with num_gpu_blocks_override=(\d+)`))
	if n, _ := strconv.Atoi(m[1]); n <= 5000 || m[2] != "5000" {
		t.Errorf("override line %q", m[0])
	}
	if m := only(t, out, kvSizeRE); m[1] != commas(s.Capacity.KVCacheTokens) {
		t.Errorf("KV size %q, want %s", m[1], commas(s.Capacity.KVCacheTokens))
	}
}

func TestAccessAndShutdown(t *testing.T) {
	var stdout, stderr bytes.Buffer
	l := New(&stdout, &stderr, newClock().now, apiPID, enginePID)
	l.Access("127.0.0.1:51240", "POST", "/v1/completions", 200)
	l.Access("[::1]:40000", "GET", "/v1/models?x=1", 404)
	l.Shutdown()
	wantOut := "(APIServer pid=4127) INFO:     127.0.0.1:51240 - \"POST /v1/completions HTTP/1.1\" 200 OK\n" +
		"(APIServer pid=4127) INFO:     ::1:40000 - \"GET /v1/models?x=1 HTTP/1.1\" 404 Not Found\n"
	if stdout.String() != wantOut {
		t.Errorf("access lines:\n%s\nwant:\n%s", stdout.String(), wantOut)
	}
	wantErr := "(APIServer pid=4127) INFO:     Shutting down\n" +
		"(APIServer pid=4127) INFO:     Waiting for application shutdown.\n" +
		"(APIServer pid=4127) INFO:     Application shutdown complete.\n" +
		"(APIServer pid=4127) INFO:     Finished server process [4127]\n"
	if stderr.String() != wantErr {
		t.Errorf("shutdown lines:\n%s\nwant:\n%s", stderr.String(), wantErr)
	}
}

func TestPyDict(t *testing.T) {
	got := PyDict([]KV{
		{"model_tag", "Qwen/Qwen3-0.6B"},
		{"max_model_len", 4096},
		{"gpu_memory_utilization", 0.5},
		{"swap_space", 4.0},
		{"tiny", 1e-05},
		{"enable_prefix_caching", false},
		{"enforce_eager", true},
		{"quantization", nil},
		{"chat_template", "it's"},
		{"quote", `a'b"c\`},
		{"tab", "a\tb"},
		{"served_model_name", []string{"a", "b"}},
	})
	want := `{'model_tag': 'Qwen/Qwen3-0.6B', 'max_model_len': 4096, 'gpu_memory_utilization': 0.5, 'swap_space': 4.0, 'tiny': 1e-05, 'enable_prefix_caching': False, 'enforce_eager': True, 'quantization': None, 'chat_template': "it's", 'quote': 'a\'b"c\\', 'tab': 'a\tb', 'served_model_name': ['a', 'b']}`
	if got != want {
		t.Errorf("PyDict:\n got %s\nwant %s", got, want)
	}
	if PyDict(nil) != "{}" {
		t.Errorf("empty dict %q", PyDict(nil))
	}
	for in, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1221776: "1,221,776", -40960: "-40,960"} {
		if got := commas(in); got != want {
			t.Errorf("commas(%d) = %q, want %q", in, got, want)
		}
	}
}

// lineWriter records each Write call; the Logger's mutex is what makes it safe to share.
type lineWriter struct {
	writes []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func TestConcurrentWholeLines(t *testing.T) {
	s := qwenSetup(t)
	w := &lineWriter{}
	clk := newClock()
	l := New(w, w, clk.now, apiPID, enginePID)
	st := NewStats(l, time.Second)
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				switch g % 4 {
				case 0:
					l.Access(fmt.Sprintf("10.0.0.%d:%d", g, 40000+i), "POST", "/v1/completions", 200)
				case 1:
					l.API(Warning, "serving.py:123", fmt.Sprintf("line %d of goroutine %d\nsecond part", i, g))
				case 2:
					st.Observe(step(10, 10, 0, 1, 0, 1, 10))
					st.Tick(clk.now().Add(time.Duration(i) * time.Second))
				case 3:
					if i%50 == 0 {
						l.Startup(s, qwenArgs, 1)
						l.Serving("http://0.0.0.0:8000", fixtureRoutes[:2])
					} else {
						l.Engine(Info, "core.py:1", "engine line")
					}
				}
			}
		}()
	}
	wg.Wait()
	access := 0
	for _, wr := range w.writes {
		if !strings.HasSuffix(wr, "\n") {
			t.Fatalf("a write that does not end a line: %q", wr)
		}
		for _, line := range lines(wr) {
			if !prefixRE.MatchString(line) && !uvicornRE.MatchString(line) {
				t.Fatalf("mangled line: %q", line)
			}
			if strings.Contains(line, `"POST /v1/completions HTTP/1.1" 200 OK`) {
				access++
			}
		}
	}
	if want := goroutines / 4 * each; access != want {
		t.Errorf("%d access lines, want %d", access, want)
	}
}

// The V2 model runner's loading line says "GiB memory and" from 0.31, as vLLM's source has it;
// 0.30 and before say "GiB and". The supervisor reads both (server/parse_test.go).
func TestV2RunnerLoadingLineByRelease(t *testing.T) {
	for version, want := range map[string]string{
		"0.30.0": `\] Model loading took [\d.]+ GiB and [\d.]+ seconds`,
		"0.31.0": `\] Model loading took [\d.]+ GiB memory and [\d.]+ seconds`,
		"0.33.0": `\] Model loading took [\d.]+ GiB memory and [\d.]+ seconds`,
	} {
		s, err := sim.Resolve(sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: version}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !s.V2ModelRunner() {
			t.Fatalf("%s: not the V2 runner", version)
		}
		var out bytes.Buffer
		l := New(&out, &out, newClock().now, apiPID, enginePID)
		l.UseRelease(s.Version)
		l.Startup(s, qwenArgs, 1)
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("%s: no line matching %s", version, want)
		}
	}
}

// The engine config line names the KV-cache dtype a ModelOpt checkpoint's kv_cache_quant_algo
// set as the config was built; compressed-tensors' is set later, as the layers are built, and
// the line still says auto.
func TestEngineConfigNamesTheCheckpointsKVDType(t *testing.T) {
	base := `"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 16,
		"num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"`
	p := sim.BuiltinProfiles()
	for name, want := range map[string]string{
		`{"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}`:                                                                                          "kv_cache_dtype=fp8_e4m3, ",
		`{"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}, "kv_cache_scheme": {"num_bits": 8, "type": "float"}}`: "kv_cache_dtype=auto, ",
	} {
		m, err := sim.ModelFromHFConfig("acme/m", []byte(`{`+base+`, "quantization_config": `+name+`}`))
		if err != nil {
			t.Fatal(err)
		}
		p.Prefer(m)
		s, err := sim.Resolve(sim.Config{Model: "acme/m", GPU: "H100-SXM-80GB", MaxModelLen: 8192}, p)
		if err != nil {
			t.Fatal(err)
		}
		if line := engineConfig(s, 1); !strings.Contains(line, want) {
			t.Errorf("%s: engine config lacks %q: %s", name, want, line)
		}
	}
}
