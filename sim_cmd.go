package main

import "io"

// runSim runs the simulated vLLM server; its flags mirror `vllm serve`.
func runSim(args []string, stdout, stderr io.Writer) int {
	return notYet(stderr, "sim")
}
