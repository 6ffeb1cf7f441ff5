package vlog

import (
	"fmt"

	"github.com/vllmtop/vllmtop/server/sim"
)

// naming is how a vLLM release names its processes: the title each process sets, and whether
// the API server's and engine core's lines carry it as a "(name pid=N) " prefix
// (docs/vllm-behaviour.md#log-prefixes).
type naming int

const (
	// namesNewest (0.18 on): "EngineCore", or "EngineCore_DP<r>" with data parallelism;
	// multiproc workers "Worker_TP<t>".
	namesNewest naming = iota
	// namesDP (0.10.2 to 0.17): "EngineCore_DP<r>" with or without data parallelism.
	namesDP
	// namesIndexed (0.10.1): "EngineCore_<r>", multiproc workers "VllmWorker TP<t>".
	namesIndexed
	// namesBareV1 (0.8 to 0.10.0): the API server's and engine core's lines have no prefix;
	// the engine core process is still named "EngineCore_<r>", and multiproc workers prefix
	// their own lines "(VllmWorker rank=<n> pid=N) ".
	namesBareV1
	// namesBareV0 (before 0.8): no prefix; the driver worker runs in the engine's process.
	namesBareV0
)

// namingOf is the naming release v uses.
func namingOf(v sim.Version) naming {
	switch {
	case v.AtLeast("0.18.0"):
		return namesNewest
	case v.AtLeast("0.10.2"):
		return namesDP
	case v.AtLeast("0.10.1"):
		return namesIndexed
	case v.V1Engine():
		return namesBareV1
	}
	return namesBareV0
}

// UseRelease names the processes in l's lines (and in the Loggers DPRank makes from it
// afterwards) as release v does. A new Logger names them as the newest release.
func (l *Logger) UseRelease(v sim.Version) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names = namingOf(v)
	l.release = &v
}

// atLeast reports whether the release l imitates is r or later; a Logger without one
// imitates the newest.
func (l *Logger) atLeast(r string) bool { return l.release == nil || l.release.AtLeast(r) }

// bare reports whether the API server's and engine core's lines go without a prefix.
func (n naming) bare() bool { return n == namesBareV1 || n == namesBareV0 }

// engineTitle is the engine core's process name, as the start-up failure reports it.
func (l *Logger) engineTitle() string {
	switch l.names {
	case namesDP:
		return fmt.Sprintf("EngineCore_DP%d", l.dpRank)
	case namesIndexed, namesBareV1, namesBareV0:
		return fmt.Sprintf("EngineCore_%d", l.dpRank)
	}
	return "EngineCore" + l.dp
}

func (l *Logger) api() proc {
	if l.names.bare() {
		return proc{pid: l.apiPID}
	}
	return proc{"APIServer", l.apiPID}
}

func (l *Logger) engine() proc {
	if l.names.bare() {
		return proc{pid: l.enginePID}
	}
	return proc{l.engineTitle(), l.enginePID}
}

// worker is the process of the model runner's lines: the engine core itself with one GPU
// (vLLM's "uni" executor), the first multiproc worker with tensor parallelism.
func (l *Logger) worker(tp int) proc {
	if tp <= 1 {
		return l.engine()
	}
	pid := l.enginePID + 1
	switch l.names {
	case namesBareV0:
		return proc{pid: l.enginePID} // the driver worker is the engine's own process
	case namesBareV1:
		return proc{"VllmWorker rank=0", pid}
	case namesIndexed:
		return proc{"VllmWorker TP0", pid}
	}
	return proc{"Worker" + l.dp + "_TP0", pid}
}

// stageWorker is the first tensor-parallel worker of pipeline stage rank: from 0.10.2 vLLM
// names its multiproc workers "Worker[_DP<d>]_PP<p>[_TP<t>]", 0.10.1 "VllmWorker PP<p>[_TP<t>]",
// earlier releases by their global rank.
func (l *Logger) stageWorker(tp, rank int) proc {
	pid := l.enginePID + 1 + rank*tp
	switch l.names {
	case namesBareV0:
		if rank == 0 {
			return proc{pid: l.enginePID}
		}
		return proc{"VllmWorkerProcess", pid}
	case namesBareV1:
		return proc{fmt.Sprintf("VllmWorker rank=%d", rank*tp), pid}
	case namesIndexed:
		name := fmt.Sprintf("VllmWorker PP%d", rank)
		if tp > 1 {
			name += "_TP0"
		}
		return proc{name, pid}
	}
	name := fmt.Sprintf("Worker%s_PP%d", l.dp, rank)
	if tp > 1 {
		name += "_TP0"
	}
	return proc{name, pid}
}

// engineStartupFailed is the API server's RuntimeError message when the engine core dies
// during start-up (vllm/v1/engine/utils.py), naming the core by its process name.
func (l *Logger) engineStartupFailed() string {
	return fmt.Sprintf("Engine core initialization failed. See root cause above. Failed core proc(s): {'%s': 1}", l.engineTitle())
}
