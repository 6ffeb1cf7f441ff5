package main

import "io"

// runMetrics scrapes a server's /metrics once (or twice, for rates) and prints the snapshot.
func runMetrics(args []string, stdout, stderr io.Writer) int {
	return notYet(stderr, "metrics")
}
