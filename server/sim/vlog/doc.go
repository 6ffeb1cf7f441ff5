// Package vlog writes the simulator's logs in vLLM's own format, so that a tool that parses a
// real `vllm serve` log (for the KV-cache size, the readiness line, the periodic stats line, a
// startup failure) parses the simulator's the same way.
//
// The shape is vLLM's (docs/vllm-behaviour.md#log-line-format): vLLM's logger writes
//
//	(APIServer pid=4127) INFO 07-24 10:15:43 [api_server.py:677] Starting vLLM server on http://0.0.0.0:8000
//
// to stdout, with no year and no milliseconds in the date, the basename and line of the logging
// call in brackets, and a "(<process> pid=<pid>) " prefix on every line. A message of several
// lines (the startup logo, a logged traceback) repeats the whole prefix on each line and ends
// every line but the last with "\r\n", as vLLM's NewLineFormatter does. uvicorn's own lines
// ("INFO:     Application startup complete.") carry only the process prefix; its startup and
// shutdown lines go to stderr and its access lines to stdout. A traceback Python prints itself
// (an uncaught exception) goes to stderr with the process prefix alone.
//
// The simulated processes are the API server and the engine core. With tensor parallelism the
// model runner's lines come from the first worker, "Worker_TP0", whose pid is the engine core's
// plus one.
//
// Logger serializes writes, so it may be shared by goroutines; Stats computes vLLM's periodic
// "Engine 000: Avg prompt throughput ..." line from the engine's steps.
package vlog
