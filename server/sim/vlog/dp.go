package vlog

import (
	"fmt"
	"time"

	"github.com/vllmtop/vllmtop/server/sim"
)

// DPRank is the Logger of data-parallel engine rank: its engine core and workers are named
// "EngineCore_DP<rank>" and "Worker_DP<rank>_TP0" as vLLM names them with
// --data-parallel-size above 1, each with a pid of its own. It shares l's writers and lock.
func (l *Logger) DPRank(rank int) *Logger {
	return &Logger{mu: l.mu, stdout: l.stdout, stderr: l.stderr, now: l.now, apiPID: l.apiPID,
		enginePID: l.enginePID + 1 + rank*(1+maxWorkers), dp: fmt.Sprintf("_DP%d", rank), dpRank: rank, names: l.names}
}

// maxWorkers leaves room in the made-up pids for a rank's tensor-parallel workers.
const maxWorkers = 64

// StartupEngines is Startup for a data-parallel server of engines engine cores: the API
// server's lines once, then each rank's engine lines under its own process names. With one
// engine it is Startup.
func (l *Logger) StartupEngines(s *sim.Setup, nonDefaultArgs []KV, loadSeconds float64, engines int) {
	if engines <= 1 {
		l.Startup(s, nonDefaultArgs, loadSeconds)
		return
	}
	t := StartupTimings(s, loadSeconds)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.startupAPI(s, nonDefaultArgs)
	for r := range engines {
		e := l.DPRank(r)
		e.dpSize = engines
		e.startupEngine(s, t)
	}
}

// NewEngineStats is NewStats for data-parallel engine index: its lines start "Engine 001:"
// and so on, logged by the API server as vLLM logs each engine's stats.
func NewEngineStats(l *Logger, interval time.Duration, engine int) *Stats {
	s := NewStats(l, interval)
	s.engine = engine
	return s
}
