// Command vllmtop benchmarks and monitors vLLM servers from a terminal.
//
// Modes: the dashboard (default), `sim` (a simulated vLLM server), `bench`
// (headless benchmark), `metrics` (one parsed scrape) and `version`.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is the release version; builds may override it with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a mode and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version", "--version":
			fmt.Fprintf(stdout, "vllmtop %s\n", version)
			return 0
		case "help", "-h", "--help":
			usage(stdout)
			return 0
		case "sim":
			return runSim(args[1:], stdout, stderr)
		case "bench":
			return runBench(args[1:], stdout, stderr)
		case "metrics":
			return runMetrics(args[1:], stdout, stderr)
		}
	}
	return runDashboard(args, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `vllmtop: benchmark and monitor vLLM servers from a terminal

Usage:
  vllmtop                                 dashboard on the built-in simulator
  vllmtop -- vllm serve MODEL [flags]     supervise that server and drive load against it
  vllmtop --attach http://host:8000       monitor a running server
  vllmtop sim [MODEL] [vllm serve flags]  the simulated vLLM server on its own
  vllmtop bench [flags]                   headless benchmark (vllm bench serve's flags)
  vllmtop metrics URL                     one /metrics scrape, parsed
  vllmtop version                         print the version

Dashboard flags:
  --max-concurrency N       requests in flight (default 4); --request-rate R starts in rate mode
  --random-input-len N      prompt tokens (default 256); --long-input-len N for the p key (4096)
  --random-output-len N     output tokens (default 128)
  --endpoint PATH           /v1/completions (default) or /v1/chat/completions
  --model NAME              model for requests (default: the server's first)
  --sim-args "FLAGS"        flags for the built-in simulator, e.g. "--sim-gpu l4 Qwen/Qwen2.5-0.5B-Instruct"
  --record FILE.jsonl       keep every result
  --theme NAME              dark, colorblind, high-contrast, light (NO_COLOR is honoured)
  --metrics-interval D      /metrics scrape interval (default 1s)
  --api-key KEY             default: OPENAI_API_KEY or VLLM_API_KEY

Run 'vllmtop sim --help', 'vllmtop bench --help' or 'vllmtop metrics --help' for their flags;
press ? in the dashboard for its keys.
`)
}
