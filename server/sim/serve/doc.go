// Package serve puts the simulated engine behind vLLM's command line and OpenAI-compatible
// HTTP API: `vllmtop sim` takes `vllm serve`'s flags, writes vLLM's log lines, and serves
// /health, /v1/models, /tokenize, /detokenize, /metrics, /v1/completions and
// /v1/chat/completions (streamed as vLLM streams them) on the wall clock.
//
// The rest of vllmtop goes through the facade in start.go: Prepare checks a command line and
// answers questions of it (model, GPU, CapacityAt), Start runs a server, WithDefaults and Flags
// let another command take the simulator's flags.
//
// One goroutine drives the engine, one timer per step; the tokens of every stream in a step
// are handed over at the step's end. HTTP handlers only queue requests and write what they
// are handed.
package serve
