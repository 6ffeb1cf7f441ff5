package main

// sweepSubs are vllm bench sweep's subcommands; `vllmtop sweep` without one is `sweep serve`.
var sweepSubs = []command{
	{name: "serve", usage: "--serve-cmd CMD [--bench-cmd CMD] [--serve-params FILE] [--bench-params FILE] [flags]",
		summary: "run the benchmark under each server setting (vllm bench sweep serve)", about: sweepAbout, footer: sweepFooter,
		define: defineSweepMode("serve"), gather: []string{"--goodput", "--metadata"}},
	{name: "serve_workload", usage: "--serve-cmd CMD [--bench-cmd CMD] [--workload-var VAR] [--workload-iters N] [flags]",
		summary: "scan latency against throughput from serial to batch load (vllm bench sweep serve_workload)", about: sweepWorkloadAbout,
		define: defineSweepMode("serve_workload"), gather: []string{"--goodput", "--metadata"}},
	{name: "serve_sla", usage: "--serve-cmd CMD [--sla-variable VAR] [--sla-iters N | --sla SLO] [flags]",
		summary: "serve_workload under its earlier name and flags, or vllmtop's SLO search with --sla", about: sweepSLAAbout,
		define: defineSweepMode("serve_sla"), gather: []string{"--goodput", "--metadata"}},
	{name: "startup", usage: "[--startup-cmd CMD] [--serve-params FILE] [--startup-params FILE] [flags]",
		summary: "the simulated server's start-up time per setting (vllm bench sweep startup)", about: sweepStartupAbout, define: defineSweepStartup},
	{name: "plot", usage: "OUTPUT_DIR [--var-x KEY] [--var-y KEY] [--fig-by,--row-by,--col-by,--curve-by KEYS] [flags]",
		summary: "plot the curves of a sweep's results (vllm bench sweep plot)", about: sweepPlotAbout, define: defineSweepPlot},
	{name: "plot_pareto", usage: "OUTPUT_DIR [--user-count-var KEY] [--gpu-count-var KEY] [--label-by KEYS] [flags]",
		summary: "plot tokens/s/user against tokens/s/GPU and their Pareto frontier (vllm bench sweep plot_pareto)", about: sweepParetoAbout,
		define: defineSweepPareto},
}

const sweepWorkloadAbout = `Explore the latency-throughput tradeoff for different workload levels, as vllm bench sweep
serve_workload does: per server and benchmark combination, a serial run (max_concurrency 1), a
batch run (every prompt at once), then the remaining --workload-iters levels of --workload-var
spread uniformly between the two runs' estimates. Layout: NAME/SERVE--...-BENCH--...-WL--VAR=N/.
`

const sweepSLAAbout = `vllm bench sweep serve_sla as vLLM PR #35306 left it: serve_workload's scan under the names
--sla-variable and --sla-iters (directories BENCH--...-VAR=N). With --sla or --sla-params it is
vllmtop's own SLO search instead (the search vLLM removed), a knee per combination.
`

const sweepStartupAbout = `Benchmark start-up time over parameter combinations, as vllm bench sweep startup does with vllm
bench startup. vllmtop has no engine to load: --startup-cmd "vllm bench startup FLAGS" starts
vllmtop sim FLAGS --num-iters-cold + --num-iters-warmup + --num-iters-warm times: on the virtual
clock (the default) its time is the start-up the simulator imitates (--sim-startup-seconds);
with --sim-clock wall each server is started and timed until /health answers.
Layout: NAME/SERVE--...-STARTUP--.../run=N.json (vllm bench startup's --output-json keys),
summary.json, and NAME/summary.csv.
`

const sweepPlotAbout = `Plot performance curves from parameter sweep results, as vllm bench sweep plot does: every
summary.json under OUTPUT_DIR, one figure per --fig-by group (FIG_DIR/FIG_NAME-k=v.png), a grid
of --row-by rows and --col-by columns, a curve per --curve-by group, --var-y against --var-x (the
mean where runs share an x). --format svg (vllmtop's) writes SVG instead of PNG.
`

const sweepParetoAbout = `Plot the Pareto frontier between tokens/s/user (output_throughput / --user-count-var, else
request_rate, else max_concurrent_requests) and tokens/s/GPU (output_throughput / --gpu-count-var,
else tensor x pipeline x data parallel size), as vllm bench sweep plot_pareto does:
OUTPUT_DIR/pareto/PARETO.png.
`
