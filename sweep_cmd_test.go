package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sweepFiles writes a vLLM-style serve_params.json of two utilisations and a bench_params.json
// of two concurrencies, and returns their paths and an output directory.
func sweepFiles(t *testing.T) (serveParams, benchParams, out string) {
	t.Helper()
	dir := t.TempDir()
	serveParams, benchParams = filepath.Join(dir, "serve_params.json"), filepath.Join(dir, "bench_params.json")
	require.NoError(t, os.WriteFile(serveParams, []byte(`[{"gpu_memory_utilization": 0.5}, {"gpu_memory_utilization": 0.9}]`), 0o644))
	require.NoError(t, os.WriteFile(benchParams, []byte(`[{"max_concurrency": 1}, {"max_concurrency": 4}]`), 0o644))
	return serveParams, benchParams, filepath.Join(dir, "results")
}

// readCSV reads summary.csv as header-keyed rows.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// checkSweep reads what a two-utilisation sweep left: two capacity rows, two curves, a plot.
func checkSweep(t *testing.T, out, exp, stdout string, runs int) {
	t.Helper()
	rows := readCSV(t, filepath.Join(out, exp, "summary.csv"))
	require.Len(t, rows, 2*2*runs, "two server settings x two benchmarks x runs")
	kv := map[string]string{}
	for _, r := range rows {
		assert.NotEmpty(t, r["p99_ttft_ms"])
		assert.NotEmpty(t, r["output_throughput"])
		assert.Contains(t, []string{"1", "4"}, r["max_concurrency"], "the bench override is a column, as vLLM's")
		if prev, ok := kv[r["gpu_memory_utilization"]]; ok {
			assert.Equal(t, prev, r["server_kv_cache_tokens"], "one capacity per server setting")
		}
		kv[r["gpu_memory_utilization"]] = r["server_kv_cache_tokens"]
		assert.NotEmpty(t, r["server_weights_gib"])
		assert.NotEmpty(t, r["server_max_concurrency"])
	}
	require.Len(t, kv, 2, "two capacity rows: %v", kv)
	small, _ := strconv.Atoi(kv["0.5"])
	big, _ := strconv.Atoi(kv["0.9"])
	assert.Positive(t, small)
	assert.Greater(t, big, small, "more memory, more KV cache")
	for _, dir := range []string{"SERVE--gpu_memory_utilization=0.5-BENCH--max_concurrency=1", "SERVE--gpu_memory_utilization=0.9-BENCH--max_concurrency=4"} {
		_, err := os.Stat(filepath.Join(out, exp, dir, "run=0.json"))
		assert.NoError(t, err, "vLLM's layout: %s", dir)
		_, err = os.Stat(filepath.Join(out, exp, dir, "summary.json"))
		assert.NoError(t, err)
	}
	svg, err := os.ReadFile(filepath.Join(out, "curves.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "gpu_memory_utilization=0.5", "one curve per setting")
	assert.Contains(t, string(svg), "gpu_memory_utilization=0.9")
	assert.Regexp(t, `(?m)^\* gpu_memory_utilization=0\.5   \+ gpu_memory_utilization=0\.9`, stdout, "the text plot's legend")
	assert.Equal(t, 2, strings.Count(stdout, "Server capacity: KV cache"), "the capacity of each setting")
}

// vllmtop sweep with vllmtop sim as the server command: a child per setting, under the
// supervisor, on the wall clock (sped up).
func TestSweepStartsASimulatorPerSetting(t *testing.T) {
	benchNoKeys(t)
	serveParams, benchParams, out := sweepFiles(t)
	code, stdout, errOut := runVllmtop("sweep", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4 --sim-speed 20 --sim-startup-seconds 0",
		"--serve-params", serveParams, "--bench-params", benchParams, "--num-runs", "1", "-o", out, "-e", "wall",
		"--plot", filepath.Join(out, "curves.svg"), "--num-prompts", "6", "--random-input-len", "64", "--random-output-len", "8")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	checkSweep(t, out, "wall", stdout, 1)
	assert.Contains(t, stdout, "Experiment has been saved at: "+filepath.Join(out, "wall"))

	// --resume finds every result and starts no server.
	code, again, errOut := runVllmtop("sweep", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4 --sim-speed 20 --sim-startup-seconds 0",
		"--serve-params", serveParams, "--bench-params", benchParams, "--num-runs", "1", "-o", out, "--resume",
		"--num-prompts", "6", "--random-input-len", "64", "--random-output-len", "8")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 2, strings.Count(again, "Found existing results"))
	assert.NotContains(t, again, "Server capacity:")
	assert.Len(t, readCSV(t, filepath.Join(out, "wall", "summary.csv")), 4, "the summary is rebuilt from the saved runs")
	assert.Contains(t, again, "Resuming the experiment in "+filepath.Join(out, "wall"), "said before anything runs")

	// Another sweep's --resume does not finish this one: it would rewrite its summary.csv.
	other := filepath.Join(t.TempDir(), "serve.json")
	require.NoError(t, os.WriteFile(other, []byte(`[{"max_num_seqs": 4}]`), 0o644))
	code, _, errOut = runVllmtop("sweep", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4",
		"--serve-params", other, "--bench-params", benchParams, "-o", out, "--resume")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "holds another sweep's results")
	assert.Len(t, readCSV(t, filepath.Join(out, "wall", "summary.csv")), 4, "untouched")

	// A new run must not overwrite it.
	code, _, errOut = runVllmtop("sweep", "--serve-cmd", "vllmtop sim", "-o", out, "-e", "wall")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "exists: give another --experiment-name, or --resume")
}

// The same sweep on the virtual clock: the simulator in-process, no child, no waiting.
func TestSweepOnTheVirtualClock(t *testing.T) {
	benchNoKeys(t)
	serveParams, benchParams, out := sweepFiles(t)
	code, stdout, errOut := runVllmtop("sweep", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4", "--sim-clock", "virtual",
		"--serve-params", serveParams, "--bench-params", benchParams, "--num-runs", "2", "-o", out, "-e", "virtual",
		"--plot", filepath.Join(out, "curves.svg"), "--bench-cmd", "vllm bench serve --num-prompts 20 --random-input-len 128 --random-output-len 16")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	checkSweep(t, out, "virtual", stdout, 2)
	assert.Contains(t, stdout, "in-process on the virtual clock")
}

// An SLA search per setting, serve_sla's layout, a knee per curve.
func TestSweepSLASearch(t *testing.T) {
	benchNoKeys(t)
	serveParams, _, out := sweepFiles(t)
	code, stdout, errOut := runVllmtop("sweep", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4", "--sim-clock", "virtual",
		"--serve-params", serveParams, "--num-runs", "1", "-o", out, "-e", "sla", "--sla-params", `[{"p99_ttft_ms": "<=100"}]`,
		"--sla-variable", "max_concurrency", "--num-prompts", "24", "--sla-min-requests", "16", "--random-input-len", "256", "--random-output-len", "16",
		"--plot", filepath.Join(out, "sla.png"))
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	knees := regexp.MustCompile(`(?m)^Maximum max_concurrency for SLA: (\d+)$`).FindAllStringSubmatch(stdout, -1)
	require.Len(t, knees, 2, "a search per server setting")
	assert.Regexp(t, `(?m)^Utilisation is not the limit here: at each knee the requests in flight hold (at most \d+%|under 1%) of the KV cache; `+
		`the knee is set by the SLO's latency \(p99_ttft_ms<=100\.00\), which more KV memory does not lower\.$`, stdout,
		"a 0.5B model's short requests fill a sliver of an L4's cache at either setting")
	_, err := os.Stat(filepath.Join(out, "sla", "SERVE--gpu_memory_utilization=0.5", "SLA--p99_ttft_ms<=100.00.json"))
	assert.NoError(t, err, "serve_sla's layout")
	_, err = os.Stat(filepath.Join(out, "sla", "SERVE--gpu_memory_utilization=0.9", "max_concurrency="+knees[1][1], "run=0.json"))
	assert.NoError(t, err)
	rows := readCSV(t, filepath.Join(out, "sla", "summary.csv"))
	assert.Greater(t, len(rows), 4, "every probe of both searches")
	png, err := os.ReadFile(filepath.Join(out, "sla.png"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(png), "\x89PNG"))
}

// A setting whose runs the server refuses (prompts over its --max-model-len) stops at its first
// run with the back-off's one line; that run is not saved, so --resume makes it again.
func TestSweepStopsOnRefusals(t *testing.T) {
	benchNoKeys(t)
	serveParams, benchParams, out := sweepFiles(t)
	code, stdout, errOut := runVllmtop("sweep", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4 --max-model-len 128", "--sim-clock", "virtual",
		"--serve-params", serveParams, "--bench-params", benchParams, "--num-runs", "1", "-o", out, "-e", "refused",
		"--bench-cmd", "vllm bench serve --num-prompts 100 --random-input-len 256 --random-output-len 16")
	assert.Equal(t, 1, code, "%s\n%s", stdout, errOut)
	assert.Regexp(t, `(?m)^vllmtop sweep: gpu_memory_utilization=0\.5 max_concurrency=1: run=0: stopped early: \d+ requests in a row failed before any output \(http_400 \d+; last: HTTP 400 Bad Request: .*\)$`, errOut)
	assert.Equal(t, 1, strings.Count(errOut, "stopped early"), "the sweep ends at the first setting")
	_, err := os.Stat(filepath.Join(out, "refused", "SERVE--gpu_memory_utilization=0.5-BENCH--max_concurrency=1", "run=0.json"))
	assert.True(t, os.IsNotExist(err), "the stopped run is not saved")
	assert.Contains(t, stdout, "--resume -e refused finishes it")
}

func TestSweepDryRunAndBadInput(t *testing.T) {
	benchNoKeys(t)
	serveParams, benchParams, out := sweepFiles(t)
	code, stdout, errOut := runVllmtop("sweep", "--serve-cmd", "vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8001", "--serve-params", serveParams,
		"--bench-params", benchParams, "-o", out, "--dry-run")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdout, "Server command: vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8001 --gpu-memory-utilization 0.9")
	assert.Contains(t, stdout, "Benchmark command: vllmtop bench --max-concurrency 4")
	assert.Contains(t, stdout, "Experiment will be saved at: "+out)
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "a dry run writes nothing")

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{}, "--serve-cmd is required"},
		{[]string{"--serve-cmd", "vllmtop sim", "--serve-params", filepath.Join(out, "none.json")}, "--serve-params"},
		{[]string{"--serve-cmd", "vllmtop sim", "--bench-cmd", "python x.py"}, "want vllm bench serve"},
		{[]string{"--serve-cmd", "vllmtop sim", "--bench-cmd", "vllm bench serve", "--num-prompts", "3"}, "not both"},
		{[]string{"--serve-cmd", "vllmtop sim", "--bench-cmd", "vllm bench serve --max-concurrency 1,2", "-o", out}, "list the values in --bench-params"},
		{[]string{"--serve-cmd", "vllmtop sim", "--sla-params", `{"p99_ttft_ms": "<=1"}`, "--sla-variable", "max_concurrency", "--bench-params", benchParams}, "the SLA search sets itself"},
		{[]string{"--serve-cmd", "'unclosed"}, "--serve-cmd"},
		{[]string{"--serve-cmd", "vllm serve m", "--sim-clock", "virtual", "-o", out}, "--serve-cmd must be a vllmtop sim command"},
		{[]string{"--serve-cmd", "vllm serve m", "--sim-clock", "virtual", "--serve-params", serveParams, "-o", out}, "--serve-cmd must be a vllmtop sim command"},
		// Read before any server starts, in a dry run too.
		{[]string{"--serve-cmd", "vllmtop sim", "--bench-params", writeFile(t, t.TempDir(), "bp.json", `[{"max_concurency": 4}]`), "--dry-run"}, "--bench-params max_concurency=4: unknown flag: --max-concurency"},
		{[]string{"--serve-cmd", "vllmtop sim", "--bench-params", writeFile(t, t.TempDir(), "bp.json", `[{"max_concurrency": -4}]`), "--dry-run"}, "--bench-params max_concurrency=-4: --max-concurrency"},
	} {
		code, _, errOut := runVllmtop(append([]string{"sweep"}, c.args...)...)
		assert.NotEqual(t, 0, code, "%v", c.args)
		assert.Contains(t, errOut, c.msg, "%v", c.args)
	}
}

// Every run on one server gets fresh prompts: the same benchmark twice measures the same, not
// the second from the prefix cache the first filled.
func TestSweepRunsDoNotShareThePrefixCache(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	bench := filepath.Join(dir, "bench.json")
	require.NoError(t, os.WriteFile(bench, []byte(`{"first": {"max_concurrency": 4}, "again": {"max_concurrency": 4}}`), 0o644))
	code, stdout, errOut := runVllmtop("sweep", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4", "--sim-clock", "virtual",
		"--bench-params", bench, "--num-runs", "2", "-o", dir, "-e", "x", "--num-prompts", "16", "--random-input-len", "1024", "--random-output-len", "4")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	rows := readCSV(t, filepath.Join(dir, "x", "summary.csv"))
	require.Len(t, rows, 4)
	first, _ := strconv.ParseFloat(rows[0]["mean_ttft_ms"], 64)
	for _, r := range rows[1:] {
		ttft, _ := strconv.ParseFloat(r["mean_ttft_ms"], 64)
		assert.InEpsilon(t, first, ttft, 0.05, "a cached 1024-token prompt would start in a fraction of the time")
	}
}

// A utilisation the server cannot start with (Llama-3.1-8B's weights do not fit 30% of an L4)
// is skipped with its reason, on screen and in summary.csv, and the sweep goes on to the next.
func TestSweepSkipsASettingTheServerCannotStartWith(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	serveParams := filepath.Join(dir, "serve_params.json")
	require.NoError(t, os.WriteFile(serveParams, []byte(`[{"gpu_memory_utilization": 0.3}, {"gpu_memory_utilization": 0.9}]`), 0o644))
	out := filepath.Join(dir, "results")
	code, stdout, errOut := runVllmtop("sweep", "--serve-cmd", "vllmtop sim meta-llama/Llama-3.1-8B-Instruct --sim-gpu L4 --max-model-len 8192", "--sim-clock", "virtual",
		"--serve-params", serveParams, "--num-runs", "1", "-o", out, "-e", "skip",
		"--bench-cmd", "vllm bench serve --num-prompts 20 --random-input-len 128 --random-output-len 16")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	assert.Regexp(t, "(?m)^vllmtop sweep: gpu_memory_utilization=0\\.3: skipped, the server did not start: .*No available memory for the cache blocks", errOut)
	assert.Regexp(t, `(?m)^  gpu_memory_utilization=0\.3 +skipped: the server did not start: `, stdout)
	assert.Regexp(t, `(?m)^  gpu_memory_utilization=0\.9 +KV cache `, stdout)
	assert.Contains(t, stdout, "Experiment has been saved at: ")
	rows := readCSV(t, filepath.Join(out, "skip", "summary.csv"))
	require.Len(t, rows, 2, "the 0.9 run and the skipped 0.3")
	assert.Equal(t, "0.9", rows[0]["gpu_memory_utilization"])
	assert.Empty(t, rows[0]["skipped"])
	assert.Equal(t, "0.3", rows[1]["gpu_memory_utilization"])
	assert.Contains(t, rows[1]["skipped"], "the server did not start: ")
	// vLLM's record of a server combination that failed (--continue-on-error's).
	failure := filepath.Join(out, "skip", "SERVE-gpu_memory_utilization=0.3-failure.json")
	assert.Contains(t, stdout, "[FAILED SERVER COMBINATION] gpu_memory_utilization=0.3: ")
	assert.Contains(t, stdout, "Failure details: "+failure+"\n")
	var f map[string]any
	readJSON(t, failure, &f)
	assert.Contains(t, f["error"], "No available memory for the cache blocks")
	assert.Equal(t, map[string]any{"gpu_memory_utilization": 0.3}, f["serve_overrides"])

	// None starts: nothing measured, exit 1.
	require.NoError(t, os.WriteFile(serveParams, []byte(`[{"gpu_memory_utilization": 0.2}, {"gpu_memory_utilization": 0.3}]`), 0o644))
	code, _, errOut = runVllmtop("sweep", "--serve-cmd", "vllmtop sim meta-llama/Llama-3.1-8B-Instruct --sim-gpu L4 --max-model-len 8192", "--sim-clock", "virtual",
		"--serve-params", serveParams, "--num-runs", "1", "-o", out, "-e", "none")
	assert.Equal(t, 1, code)
	assert.Equal(t, 2, strings.Count(errOut, "skipped, the server did not start"))
	assert.Contains(t, errOut, "the server started with none of the settings: nothing was measured")
}

// vLLM's spelling, vllm bench sweep serve, runs as vllmtop bench sweep serve.
func TestBenchSweepIsVLLMsSpellingOfSweep(t *testing.T) {
	benchNoKeys(t)
	out := t.TempDir()
	code, stdout, errOut := runVllmtop("bench", "sweep", "serve", "--serve-cmd", "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4",
		"--sim-clock", "virtual", "--num-runs", "1", "-o", out, "-e", "p",
		"--bench-cmd", "vllm bench serve --num-prompts 4 --random-input-len 32 --random-output-len 4")
	require.Equal(t, 0, code, errOut)
	assert.FileExists(t, filepath.Join(out, "p", "summary.json"), stdout)
	code, stdout, _ = runVllmtop("bench", "sweep", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "usage: vllmtop sweep")
}
