package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// readJSON reads a JSON file into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), path)
}

const simCmd = "vllmtop sim Qwen/Qwen2.5-0.5B-Instruct --sim-gpu L4"

// sweep serve's newer flags: --link-vars keeps the matching combinations, --warmup-num-prompts
// makes warmup.json (run_number -1, out of summary.json), --after-bench-cmd runs after each run.
func TestSweepServeLinkVarsWarmupAfterBench(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	sp := writeFile(t, dir, "sp.json", `[{"max_num_seqs": 4}, {"max_num_seqs": 16}]`)
	bp := writeFile(t, dir, "bp.json", `[{"max_concurrency": 4}, {"max_concurrency": 16}]`)
	marks := filepath.Join(dir, "after.log")
	code, stdout, errOut := runVllmtop("sweep", "serve", "--serve-cmd", simCmd, "--sim-clock", "virtual",
		"--bench-cmd", "vllm bench serve --num-prompts 12 --random-input-len 64 --random-output-len 8",
		"--serve-params", sp, "--bench-params", bp, "--link-vars", "max_num_seqs=max_concurrency", "--num-runs", "2",
		"--warmup-num-prompts", "3", "--after-bench-cmd", "sh -c 'echo x >> "+marks+"'", "-o", dir, "-e", "linked")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	entries, err := os.ReadDir(filepath.Join(dir, "linked"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"SERVE--max_num_seqs=4-BENCH--max_concurrency=4", "SERVE--max_num_seqs=16-BENCH--max_concurrency=16", "summary.csv"}, names,
		"only the linked combinations run")
	base := filepath.Join(dir, "linked", "SERVE--max_num_seqs=4-BENCH--max_concurrency=4")
	var warm map[string]any
	readJSON(t, filepath.Join(base, "warmup.json"), &warm)
	assert.EqualValues(t, -1, warm["run_number"])
	assert.EqualValues(t, 3, warm["completed"], "the warm-up sends --warmup-num-prompts")
	var summary []map[string]any
	readJSON(t, filepath.Join(base, "summary.json"), &summary)
	require.Len(t, summary, 2, "the warm-up is not summarised")
	assert.EqualValues(t, 12, summary[0]["completed"])
	assert.Len(t, readCSV(t, filepath.Join(dir, "linked", "summary.csv")), 4)
	b, err := os.ReadFile(marks)
	require.NoError(t, err)
	assert.Equal(t, 6, strings.Count(string(b), "x"), "after each run: 2 combinations x (warm-up + 2 runs)")
}

// serve_workload: the serial and batch levels, then uniform ones between, vLLM's WL layout.
func TestSweepServeWorkload(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	sp := writeFile(t, dir, "sp.json", `[{"max_num_seqs": 8}]`)
	code, stdout, errOut := runVllmtop("sweep", "serve_workload", "--serve-cmd", simCmd, "--sim-clock", "virtual",
		"--bench-cmd", "vllm bench serve --num-prompts 30 --random-input-len 64 --random-output-len 16",
		"--serve-params", sp, "--workload-var", "max_concurrency", "--workload-iters", "4", "--num-runs", "1", "-o", dir, "-e", "wl")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	m := regexp.MustCompile(`(?m)^Serial inference: max_concurrency=(\d+)\nBatch inference: max_concurrency=(\d+)$`).FindStringSubmatch(stdout)
	require.NotNil(t, m, stdout)
	explored := regexp.MustCompile(`(?m)^Exploring: max_concurrency=(\d+)$`).FindAllStringSubmatch(stdout, -1)
	assert.NotEmpty(t, explored)
	assert.LessOrEqual(t, len(explored), 2, "--workload-iters 4: two levels between serial and batch")
	levels := []string{"1", "30"}
	for _, e := range explored {
		levels = append(levels, e[1])
	}
	for _, l := range levels {
		run := filepath.Join(dir, "wl", "SERVE--max_num_seqs=8-WL--max_concurrency="+l, "run=0.json")
		var doc map[string]any
		readJSON(t, run, &doc)
		assert.Equal(t, l, fmt.Sprint(doc["max_concurrency"]), "the level is in the run's data")
	}
	assert.Len(t, readCSV(t, filepath.Join(dir, "wl", "summary.csv")), len(levels))
	// --resume finishes its own scan: the levels' directories are this sweep's.
	code, stdout, errOut = runVllmtop("sweep", "serve_workload", "--serve-cmd", simCmd, "--sim-clock", "virtual",
		"--bench-cmd", "vllm bench serve --num-prompts 30 --random-input-len 64 --random-output-len 16",
		"--serve-params", sp, "--workload-var", "max_concurrency", "--workload-iters", "4", "--num-runs", "1", "-o", dir, "-e", "wl", "--resume")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	assert.Contains(t, stdout, "Resuming the experiment in "+filepath.Join(dir, "wl"))

	// --dry-run: the commands of the two first levels, nothing written.
	code, stdout, errOut = runVllmtop("sweep", "serve_workload", "--serve-cmd", simCmd, "--bench-cmd", "vllm bench serve --num-prompts 30",
		"--dry-run", "-o", filepath.Join(dir, "dry"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdout, "Benchmark command: vllmtop bench --num-prompts 30 --max-concurrency 1 --request-rate 1")
	assert.Contains(t, stdout, "Benchmark command: vllmtop bench --num-prompts 30 --max-concurrency 30 --request-rate 30")
	assert.Contains(t, stdout, "Omitting intermediate Workload iterations.")
	_, err := os.Stat(filepath.Join(dir, "dry"))
	assert.True(t, os.IsNotExist(err), "a dry run writes nothing")

	code, _, errOut = runVllmtop("sweep", "serve_workload", "--serve-cmd", simCmd, "--bench-params", writeFile(t, dir, "bp.json", `[{"request_rate": 4}]`), "-o", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "sets request_rate, which the workload scan sets itself")
}

// serve_sla as vLLM PR #35306 left it: the scan under --sla-variable/--sla-iters, serve_sla's
// directories; with the removed --sla-params, vllmtop's search and a one-line notice.
func TestSweepServeSLAScanAndTheSLAParamsNotice(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	code, stdout, errOut := runVllmtop("sweep", "serve_sla", "--serve-cmd", simCmd, "--sim-clock", "virtual",
		"--bench-cmd", "vllm bench serve --num-prompts 20 --random-input-len 64 --random-output-len 8",
		"--sla-variable", "max_concurrency", "--sla-iters", "3", "--num-runs", "1", "-o", dir, "-e", "scan")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	for _, d := range []string{"BENCH--max_concurrency=1", "BENCH--max_concurrency=20"} {
		_, err := os.Stat(filepath.Join(dir, "scan", d, "summary.json"))
		assert.NoError(t, err, "serve_sla's layout: %s", d)
	}
	assert.NotContains(t, errOut, "--sla-params")
	code, stdout, errOut = runVllmtop("sweep", "serve_sla", "--serve-cmd", simCmd, "--sim-clock", "virtual",
		"--bench-cmd", "vllm bench serve --num-prompts 20 --random-input-len 64 --random-output-len 8",
		"--sla-variable", "max_concurrency", "--sla-iters", "3", "--num-runs", "1", "-o", dir, "-e", "scan", "--resume")
	require.Equal(t, 0, code, "--resume finishes its own scan: %s\n%s", stdout, errOut)

	code, stdout, errOut = runVllmtop("sweep", "serve", "--serve-cmd", simCmd, "--sim-clock", "virtual", "--num-runs", "1",
		"--bench-cmd", "vllm bench serve --num-prompts 16 --random-input-len 64 --random-output-len 8", "-o", dir, "-e", "search",
		"--sla-params", `{"p99_ttft_ms": "<=200"}`, "--sla-variable", "max_concurrency", "--sla-min-requests", "8")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	notice := regexp.MustCompile(`(?m)^vllmtop sweep serve: --sla-params: vLLM removed it from vllm bench sweep \(PR #35306\); vllmtop still runs its SLO search .*--workload-iters$`)
	assert.Len(t, notice.FindAllString(errOut, -1), 1, "one line: %s", errOut)
	assert.Regexp(t, `(?m)^Maximum max_concurrency for SLA: \d+$`, stdout, "the search still runs")
}

// sweep startup: vllm bench startup's keys per run, its layout, unsupported keys left out.
func TestSweepStartup(t *testing.T) {
	dir := t.TempDir()
	sp := writeFile(t, dir, "sp.json", `[{"_benchmark_name": "short", "sim_startup_seconds": 2, "port": 8001}, {"_benchmark_name": "long", "sim_startup_seconds": 30}]`)
	up := writeFile(t, dir, "up.json", `[{"num_iters_cold": 2, "num_iters_warmup": 1, "num_iters_warm": 3}]`)
	code, stdout, errOut := runVllmtop("sweep", "startup", "--startup-cmd", "vllm bench startup --model Qwen/Qwen3-0.6B --sim-gpu L4",
		"--serve-params", sp, "--startup-params", up, "-o", dir, "-e", "st")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	assert.Contains(t, errOut, "Ignoring unsupported startup params for short: port")
	var doc map[string]any
	readJSON(t, filepath.Join(dir, "st", "SERVE--long-STARTUP--num_iters_cold=2-num_iters_warmup=1-num_iters_warm=3", "run=0.json"), &doc)
	assert.EqualValues(t, 30, doc["avg_cold_startup_time"], "the start-up the simulator imitates")
	assert.Len(t, doc["cold_startup_times"], 2)
	assert.Len(t, doc["warm_startup_times"], 3)
	assert.Contains(t, doc, "warm_compilation_percentiles")
	assert.EqualValues(t, 0, doc["run_number"])
	rows := readCSV(t, filepath.Join(dir, "st", "summary.csv"))
	require.Len(t, rows, 2)
	assert.Equal(t, "2.0", rows[0]["avg_cold_startup_time"])

	code, _, errOut = runVllmtop("sweep", "startup", "--serve-params", sp, "--strict-params", "-o", dir, "-e", "strict")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Ignoring unsupported startup params for short: port")
}

// sweep plot and plot_pareto draw a sweep's results: a figure per --fig-by group, PNG or SVG.
func TestSweepPlotAndPareto(t *testing.T) {
	benchNoKeys(t)
	serveParams, benchParams, out := sweepFiles(t)
	code, stdout, errOut := runVllmtop("sweep", "serve", "--serve-cmd", simCmd, "--sim-clock", "virtual", "--serve-params", serveParams,
		"--bench-params", benchParams, "--num-runs", "1", "-o", out, "-e", "p", "--bench-cmd", "vllm bench serve --num-prompts 12 --random-input-len 64 --random-output-len 8")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	exp := filepath.Join(out, "p")
	code, stdout, errOut = runVllmtop("sweep", "plot", exp, "--fig-by", "gpu_memory_utilization", "--curve-by", "max_concurrency", "--dry-run")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdout, "Output file: "+filepath.Join(exp, "FIGURE-gpu_memory_utilization=0.5.png"))
	assert.Contains(t, stdout, "Group: {'gpu_memory_utilization': '0.9'}\nGrid: 1 rows x 1 cols")
	_, err := os.Stat(filepath.Join(exp, "FIGURE-gpu_memory_utilization=0.5.png"))
	assert.True(t, os.IsNotExist(err), "a dry run draws nothing")

	code, _, errOut = runVllmtop("sweep", "plot", exp, "--fig-by", "gpu_memory_utilization", "--col-by", "max_concurrency", "--fig-dir", "figs")
	require.Equal(t, 0, code, errOut)
	for _, u := range []string{"0.5", "0.9"} {
		png, err := os.ReadFile(filepath.Join(exp, "figs", "FIGURE-gpu_memory_utilization="+u+".png"))
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(png), "\x89PNG"), "a PNG")
		assert.Greater(t, len(png), 5000)
	}
	code, _, errOut = runVllmtop("sweep", "plot", exp, "--format", "svg", "--scale-y", "log", "--filter-by", "max_concurrency>1")
	require.Equal(t, 0, code, errOut)
	svg, err := os.ReadFile(filepath.Join(exp, "FIGURE.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	assert.Contains(t, string(svg), "p99_e2el_ms", "vLLM's default y")

	code, stdout, errOut = runVllmtop("sweep", "plot_pareto", exp)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `Plotted 4 points; Pareto frontier size: [1-4]\.`, stdout)
	png, err := os.ReadFile(filepath.Join(exp, "pareto", "PARETO.png"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(png), "\x89PNG"))

	code, _, errOut = runVllmtop("sweep", "plot", exp, "--var-y", "no_such_key")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `cannot find "no_such_key" in parameter sweep results`)
	// A log axis over values that are all 0 (no run failed) has nothing to draw: one line,
	// no panic; a concurrency sweep's request_rate is inf in every run.
	code, _, errOut = runVllmtop("sweep", "plot", exp, "--var-y", "failed", "--scale-y", "log")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "nothing to plot in {}: no run has request_throughput and failed as finite numbers (above 0 on a log axis)")
	assert.NotContains(t, errOut, "goroutine")
	code, _, errOut = runVllmtop("sweep", "plot", exp, "--var-x", "request_rate")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no run has request_rate and p99_e2el_ms as finite numbers")
	code, _, errOut = runVllmtop("sweep", "plot_pareto", filepath.Join(out, "none"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no parameter sweep results under")
}

// `vllm serve ...` in --serve-cmd runs unchanged: here a `vllm` on PATH that is the simulator.
func TestSweepServeWithVLLMServeOnPath(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	writeFile(t, dir, "vllm", "#!/bin/sh\n[ \"$1\" = serve ] && shift\nexec '"+exe+"' sim --sim-gpu L4 --sim-speed 20 --sim-startup-seconds 0 \"$@\"\n")
	require.NoError(t, os.Chmod(filepath.Join(dir, "vllm"), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	sp := writeFile(t, dir, "sp.json", `[{"max_num_seqs": 8}]`)
	code, stdout, errOut := runVllmtop("sweep", "serve", "--serve-cmd", "vllm serve Qwen/Qwen2.5-0.5B-Instruct", "--serve-params", sp,
		"--bench-cmd", "vllm bench serve --model Qwen/Qwen2.5-0.5B-Instruct --num-prompts 6 --random-input-len 64 --random-output-len 8",
		"--num-runs", "1", "-o", dir, "-e", "real")
	require.Equal(t, 0, code, "%s\n%s", stdout, errOut)
	assert.Contains(t, stdout, "Server command: vllm serve Qwen/Qwen2.5-0.5B-Instruct --max-num-seqs 8")
	assert.Contains(t, stdout, "Server capacity: KV cache", "the capacity vLLM's log lines give")
	_, err = os.Stat(filepath.Join(dir, "real", "SERVE--max_num_seqs=8", "run=0.json"))
	assert.NoError(t, err)
}

// --continue-on-error records each failed run as vLLM does (run=N.failure.json) and goes on;
// a combination without a measured run gets no summary.json, so --resume makes it again.
func TestSweepContinueOnErrorRecordsFailures(t *testing.T) {
	benchNoKeys(t)
	dir := t.TempDir()
	code, stdout, errOut := runVllmtop("sweep", "serve", "--serve-cmd", simCmd+" --max-model-len 128", "--sim-clock", "virtual",
		"--bench-cmd", "vllm bench serve --num-prompts 20 --random-input-len 256 --random-output-len 8", "--bench-params",
		writeFile(t, dir, "bp.json", `[{"max_concurrency": 2}]`), "--num-runs", "2", "--continue-on-error", "-o", dir, "-e", "fail")
	assert.Equal(t, 1, code, "%s\n%s", stdout, errOut)
	base := filepath.Join(dir, "fail", "BENCH--max_concurrency=2")
	for _, k := range []string{"0", "1"} {
		var f map[string]any
		readJSON(t, filepath.Join(base, "run="+k+".failure.json"), &f)
		assert.EqualValues(t, k, fmt.Sprint(f["run_number"]))
		assert.Contains(t, f["error"], "stopped early")
		assert.Equal(t, map[string]any{"max_concurrency": float64(2)}, f["bench_overrides"])
	}
	assert.Equal(t, 2, strings.Count(stdout, "[FAILED BENCHMARK] run="))
	assert.Contains(t, stdout, "[NO SUCCESSFUL MEASURED RUNS] leaving combination retryable")
	_, err := os.Stat(filepath.Join(base, "summary.json"))
	assert.True(t, os.IsNotExist(err))
}
