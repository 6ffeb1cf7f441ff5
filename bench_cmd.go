package main

import "io"

// runBench runs a headless benchmark with vllm bench serve's flags.
func runBench(args []string, stdout, stderr io.Writer) int {
	return notYet(stderr, "bench")
}
