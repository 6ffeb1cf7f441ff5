// Package server owns the vLLM server process: it spawns and supervises it (or watches one it did
// not start), reads its logs, knows when it is ready, restarts it with edited flags, and makes sure
// nothing it started outlives it. It works the same for `vllm serve ...`,
// `python -m vllm.entrypoints.openai.api_server ...` and `vllmtop sim ...`: it never special-cases
// the simulator.
//
// # Processes
//
// A Supervisor (New) runs its command in a process group of its own. vLLM starts more
// processes (an engine core, tensor-parallel workers), so every signal goes to the whole
// group: Stop sends SIGTERM, waits the grace period (DefaultGrace, 10 s, time for vLLM to
// release the GPU) and then sends SIGKILL. When the main process exits on its own, whatever is
// left of its group gets the same treatment, so a crashed API server cannot leave an engine
// core holding the GPU.
//
// Nothing the supervisor starts may outlive this process, even when it dies by SIGKILL or its
// terminal closes. A program that calls MaybeRunKeeper first thing in main gets that for the
// whole process tree: each server is started through a keeper, this program run again in a
// small role of its own (keeper.go), which watches a pipe from this process, is the child
// subreaper of the server's tree (Linux), and ends the tree (SIGTERM, grace, SIGKILL) when the
// pipe reports this process gone. Stops, exit statuses (a server killed by a signal reads as
// such) and log capture are the same with or without it. Without MaybeRunKeeper the server is
// started directly and only it gets a parent-death signal (Linux, SIGKILL by default).
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
// State never block. MaybeRunKeeper must run before any Supervisor starts. Restart blocks through stop, start and readiness.
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
