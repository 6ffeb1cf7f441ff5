// Package metrics is the simulator's Prometheus /metrics endpoint. It owns the vLLM V1
// engine metric families, with vLLM's exact names, types, HELP text, label names, histogram
// buckets and counter "_total" suffixes, for one engine ("0") serving one model name, and it
// turns the engine's step results and ended requests into those numbers with vLLM's meaning.
//
// As in vLLM, every series exists from startup with value 0 (every finished_reason, waiting
// reason, sleep state and prompt-token source), and vllm:cache_config_info carries the KV-cache
// capacity as labels. With log stats disabled (--disable-log-stats) no vllm: family exists at
// all, but the endpoint still serves the process families.
//
// Concurrency: ObserveStep and ObserveEnded are called from the single goroutine that drives
// the engine; the handler may be scraped concurrently from any number of goroutines. The
// Prometheus client's metrics are safe for that, so Metrics holds no lock of its own. A scrape
// taken between two observations may see one step's counters and not yet the next one's.
package metrics
