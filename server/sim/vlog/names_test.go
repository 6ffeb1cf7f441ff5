package vlog

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/vllmtop/vllmtop/server/sim"
)

// TestProcessNamesByRelease checks each era's prefixes on the engine core's config line, the
// tensor-parallel worker's KV line and the API server's first line, and the names a failed
// start-up gives the engine core, against the releases' real logs
// (docs/vllm-behaviour.md#log-prefixes).
func TestProcessNamesByRelease(t *testing.T) {
	cases := []struct {
		version, engine, worker, api, title string
	}{
		{"0.7.3", "INFO 07-24 10:15:01 core.py:116] ", "INFO 07-24 10:15:01 gpu_worker.py:547] ", "INFO 07-24 10:15:01 api_server.py:1755] ", "EngineCore_0"},
		{"0.9.2", "INFO 07-24 10:15:01 [core.py:116] ", "(VllmWorker rank=0 pid=4311) INFO ", "INFO 07-24 10:15:01 [api_server.py:1755] ", "EngineCore_0"},
		{"0.10.1.1", "(EngineCore_0 pid=4310) INFO ", "(VllmWorker TP0 pid=4311) INFO ", "(APIServer pid=4127) INFO ", "EngineCore_0"},
		{"0.10.2", "(EngineCore_DP0 pid=4310) INFO ", "(Worker_TP0 pid=4311) INFO ", "(APIServer pid=4127) INFO ", "EngineCore_DP0"},
		{"0.17.0", "(EngineCore_DP0 pid=4310) INFO ", "(Worker_TP0 pid=4311) INFO ", "(APIServer pid=4127) INFO ", "EngineCore_DP0"},
		{"0.18.0", "(EngineCore pid=4310) INFO ", "(Worker_TP0 pid=4311) INFO ", "(APIServer pid=4127) INFO ", "EngineCore"},
		{sim.DefaultVersion, "(EngineCore pid=4310) INFO ", "(Worker_TP0 pid=4311) INFO ", "(APIServer pid=4127) INFO ", "EngineCore"},
	}
	for _, tc := range cases {
		t.Run(tc.version, func(t *testing.T) {
			s, stdout := startupIn(t, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", TensorParallelSize: 2, VLLMVersion: tc.version})
			out := lines(stdout)
			if first := out[0]; !strings.HasPrefix(first, tc.api) {
				t.Errorf("API server's first line %q, want the prefix %q", first, tc.api)
			}
			if line := lineWith(out, "Initializing a V1 LLM engine"); !strings.HasPrefix(line, tc.engine) {
				t.Errorf("engine config line %q, want the prefix %q", line, tc.engine)
			}
			if line := lineWith(out, "Available KV cache memory"); !strings.HasPrefix(line, tc.worker) {
				t.Errorf("worker KV line %q, want the prefix %q", line, tc.worker)
			}

			var fout, ferr bytes.Buffer
			f := New(&fout, &ferr, newClock().now, apiPID, enginePID)
			f.UseRelease(s.Version)
			f.StartupFailure(&sim.StartupError{Kind: sim.NoKVMemory, Exception: "ValueError", Message: "No available memory for the cache blocks."})
			errLines := lines(ferr.String())
			want := "Failed core proc(s): {'" + tc.title + "': 1}"
			if last := errLines[len(errLines)-1]; !strings.HasSuffix(last, want) {
				t.Errorf("last stderr line %q, want it to end %q", last, want)
			}
			if lineWith(errLines, "Process "+tc.title+":") == "" {
				t.Errorf("stderr lacks %q:\n%s", "Process "+tc.title+":", ferr.String())
			}
		})
	}
}

// TestStageWorkerNamesByRelease: with pipeline stages, each stage's first worker reports its
// KV memory under the release's name for it.
func TestStageWorkerNamesByRelease(t *testing.T) {
	for version, want := range map[string][2]string{
		"0.9.2":    {"(VllmWorker rank=0 pid=", "(VllmWorker rank=2 pid="},
		"0.10.1.1": {"(VllmWorker PP0_TP0 pid=", "(VllmWorker PP1_TP0 pid="},
		"0.17.0":   {"(Worker_PP0_TP0 pid=", "(Worker_PP1_TP0 pid="},
	} {
		_, log := startupIn(t, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", TensorParallelSize: 2, PipelineParallelSize: 2, VLLMVersion: version})
		var got []string
		for _, l := range lines(log) {
			if strings.Contains(l, "Available KV cache memory") {
				got = append(got, l[:strings.Index(l, "pid=")+4])
			}
		}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: the stages' KV lines start %q, want %q", version, got, want)
		}
	}
}

// TestReleaseNamesMatchFixture compares the process names of the simulator's 0.10.1.1
// start-up with the real 0.10.1.1 log in testdata: the same set of names.
func TestReleaseNamesMatchFixture(t *testing.T) {
	real := readTestdata(t, "vllm-0.10.1.1-serve-qwen2-7b-A100-gmu0.25-linewrapped.log")
	_, log := startupIn(t, sim.Config{Model: "Qwen/Qwen2-7B-Instruct", GPU: "A100", VLLMVersion: "0.10.1.1"})
	names := regexp.MustCompile(`(?m)^\(([A-Za-z_0-9 =]+) pid=\d+\)`)
	set := func(text string) map[string]bool {
		m := map[string]bool{}
		for _, sub := range names.FindAllStringSubmatch(text, -1) {
			m[sub[1]] = true
		}
		return m
	}
	ours, theirs := set(log), set(real)
	for n := range ours {
		if !theirs[n] {
			t.Errorf("the simulator names a process %q the real log does not (%v)", n, theirs)
		}
	}
	for _, n := range []string{"APIServer", "EngineCore_0"} {
		if !ours[n] || !theirs[n] {
			t.Errorf("%q: ours %v, real %v", n, ours[n], theirs[n])
		}
	}
}

// startupIn resolves cfg and writes its start-up under the names of its release.
func startupIn(t *testing.T, cfg sim.Config) (*sim.Setup, string) {
	t.Helper()
	s, err := sim.Resolve(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	l := New(&stdout, nil, newClock().now, apiPID, enginePID)
	l.UseRelease(s.Version)
	l.Startup(s, qwenArgs, 2)
	return s, stdout.String()
}

// lineWith is the first of lines containing sub, or "".
func lineWith(lines []string, sub string) string {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestStartupWordingByRelease checks three lines whose wording changed, against real logs of
// each era (docs/vllm-behaviour.md#startup-log-lines): the 0.10.1.1 fixture, 0.16-0.17 and
// 0.19.2 logs, and the newest.
func TestStartupWordingByRelease(t *testing.T) {
	for _, tc := range []struct{ version, tasks, listen, init string }{
		{"0.10.1.1", "Supported_tasks: ['generate']", "Starting vLLM API server 0 on http://0.0.0.0:8000", "warmup model) took 1.40 seconds"},
		{"0.17.0", "Supported tasks: ['generate']", "Starting vLLM API server 0 on http://0.0.0.0:8000", "warmup model) took 1.40 seconds"},
		{"0.19.0", "Supported tasks: ['generate']", "Starting vLLM server on http://0.0.0.0:8000", "warmup model) took 1.40 seconds"},
		{sim.DefaultVersion, "Supported tasks: ['generate']", "Starting vLLM server on http://0.0.0.0:8000", "warmup model) took 1.40 s (compilation: 0.70 s)"},
	} {
		s, err := sim.Resolve(sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: tc.version}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		l := New(&stdout, io.Discard, newClock().now, apiPID, enginePID)
		l.UseRelease(s.Version)
		l.Startup(s, qwenArgs, 2)
		l.Serving("http://0.0.0.0:8000", nil)
		out := lines(stdout.String())
		for _, want := range []string{tc.tasks, tc.listen, tc.init} {
			if line := lineWith(out, want); !strings.HasSuffix(line, want) {
				t.Errorf("%s: no line ends %q", tc.version, want)
			}
		}
	}
}

// The first two lines follow the release: "vLLM API server version" up to 0.14, the banner
// from 0.15, each at the file and line public logs of that release show (the 0.10.1.1 pair is
// the repository's own capture, testdata/vllm-0.10.1.1-serve-qwen2-7b-A100-gmu0.25-linewrapped.log).
func TestOpeningLinesByRelease(t *testing.T) {
	for _, tc := range []struct{ version, first, args string }{
		{"0.10.1.1", "[api_server.py:1805] vLLM API server version 0.10.1.1", "[utils.py:326] non-default args: {"},
		{"0.11.0", "[api_server.py:1839] vLLM API server version 0.11.0", "[utils.py:233] non-default args: {"},
		{"0.14.1", "[api_server.py:1272] vLLM API server version 0.14.1", "[utils.py:263] non-default args: {"},
		{"0.15.1", "[utils.py:325] ", "[utils.py:261] non-default args: {"},
		{"0.30.0", "[api_utils.py:345] ", "[api_utils.py:286] non-default args: {"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			_, stdout := startupIn(t, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: tc.version})
			out := lines(stdout)
			if !strings.Contains(out[0], tc.first) {
				t.Errorf("first line %q, want %q", out[0], tc.first)
			}
			banner := strings.Contains(stdout, "▀▄▀ █  version "+tc.version)
			if want := !strings.Contains(tc.first, "vLLM API server version"); banner != want {
				t.Errorf("banner printed: %v, want %v", banner, want)
			}
			if line := lineWith(out, "non-default args"); !strings.Contains(line, tc.args) {
				t.Errorf("non-default args line %q, want %q", line, tc.args)
			}
		})
	}
}
