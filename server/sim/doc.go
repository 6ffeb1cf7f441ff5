// Package sim is a simulated vLLM V1 engine: GPU, model and host profiles (data, extendable
// from a JSON file), KV-cache sizing as vLLM computes it, a continuous-batching scheduler over
// a paged KV cache with chunked prefill, prefix caching and preemption by recompute, and a
// roofline model of each engine step's duration.
//
// The engine is a plain state machine with no goroutines and no locks: one owner calls Add,
// Abort and Step, passing the current time. Step returns how long the step takes on the
// simulated GPU; the owner decides how time passes (a VirtualClock in tests, the wall clock
// when serving). Engine is not safe for concurrent use.
package sim
