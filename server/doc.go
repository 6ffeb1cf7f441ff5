// Package server owns the vLLM server process: it spawns and supervises it (or watches one it did
// not start), reads its logs, knows when it is ready, restarts it with edited flags, and makes sure
// nothing it started outlives it. It works the same for `vllm serve ...`,
// `python -m vllm.entrypoints.openai.api_server ...` and `vllmtop sim ...`: it never special-cases
// the simulator.
//
// # Processes
//
// A Supervisor (New) runs its command in a process group of its own; on Linux the child also
// gets a parent-death signal (SIGKILL by default), so it dies even if this process is killed
// with SIGKILL. vLLM starts more processes (an engine core, tensor-parallel workers), so every
// signal goes to the whole group: Stop sends SIGTERM, waits the grace period (DefaultGrace, 10 s,
// time for vLLM to release the GPU) and then sends SIGKILL. When the main process exits on its
// own, whatever is left of its group gets the same treatment, so a crashed API server cannot
// leave an engine core holding the GPU. The parent-death signal reaches only the main process;
// the rest of its group relies on vLLM's own shutdown.
//
// # Logs
//
// Standard output and error are read through separate pipes, split into lines on '\n' and '\r'
// (tqdm progress bars), capped in length, time-stamped and merged into one sequence kept in a
// bounded ring (Logs, LogsSince). The pipes are always drained, whatever the consumer does: a
// full pipe would block vLLM and look like a hang. Line.Raw keeps the bytes as written; Line.Text
// is the line made safe for a terminal (sanitize.Text: no escape sequence, control or bidi
// character), and is what is parsed and what a display shows. Every line goes through ParseLogLine, which turns the lines that
// matter (model loading, KV-cache sizing, CUDA graphs, the listen address, startup, the periodic
// stats line, failure messages) into typed events.
//
// # States
//
// Idle -> Starting -> Loading -> Ready <-> Unhealthy -> Stopping -> Exited. Readiness is decided
// by GET /health (200), polled with backoff on the address taken from --host/--port (or --uds),
// not by reading logs; Loading comes from the logs (the model is loading) or from /health
// answering something other than 200. Exited carries the exit code and the cause: vLLM's
// root-cause line, not the tracebacks printed after it.
//
// # Concurrency contract
//
// All methods of Supervisor are safe for concurrent use. Start returns once the process runs;
// WaitReady blocks until Ready, exit or the context's end; Stop and Close block until the
// process group is gone (at most the grace period plus a few seconds); Kill, Status, Logs and
// State never block. Restart blocks through stop, start and readiness.
//
// Events returns one channel for the Supervisor's whole life. The Supervisor's own goroutine is
// its only sender and closes it after Close, once every queued event has been received. The
// consumer must keep receiving until it is closed. Producers never wait for the consumer:
// StateChanged events are queued without limit (a handful per run) and always delivered; events
// parsed from the logs are queued up to a limit and then dropped; log lines travel in LogBatch
// events that hold what arrived since the previous batch, dropping the oldest pending lines
// when the consumer falls behind. Drop counts are in LogBatch.Dropped and Status.
//
// ParseLogLine, Message, StripANSI and EditArgs are pure functions.
package server
