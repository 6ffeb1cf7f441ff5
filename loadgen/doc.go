// Package loadgen is the client side of a benchmark: workloads (random, fixed, ShareGPT), a
// streaming OpenAI-compatible client that timestamps chunks as their bytes arrive, a Runner
// that holds a concurrency (or a request rate) the caller can change while it runs and backs
// off from a server that fails every request, and the statistics vLLM's benchmark reports,
// exact over a run (in bounded memory: a Tally turns to streaming estimates past its bound) and
// windowed for live views.
//
// Two ways to drive it: a Session is a live load (the dashboard's: a Runner, its live window,
// its epochs, an optional journal and two workloads, every load change an epoch with a number);
// Sweep makes headless runs as vllm bench serve does (one per swept concurrency or rate) and a
// Report prints and saves them.
//
// One scheduler: the Runner decides what is sent and when (closed loop, open loop, trace
// replay, conversations, warm-ups, back-off) on one goroutine that waits on a Clock, and hands
// each request to a Transport that streams it back. The Client over HTTP on the wall clock is
// one pair; a simulated engine on a VirtualClock (the wiring layer's) is another, so every
// benchmark flag works the same on both.
//
// Concurrency: Runner's setters (SetConcurrency, SetRate, Pause, PauseFor, Resume, Watch) are
// safe from any goroutine. Results go to the Runner's sinks (a JSONL file, a Tally, a Live window) from
// the request goroutines (on a VirtualClock, from Run's); those sinks are safe for concurrent use.
// Nothing here imports the UI; nothing emits a message per token.
package loadgen
