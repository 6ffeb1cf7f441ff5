package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/vllmtop/vllmtop/server/sim/serve"
)

// runSim runs the simulated vLLM server; its flags mirror `vllm serve`.
func runSim(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve.Main(ctx, args, stdout, stderr, os.Getenv)
}
