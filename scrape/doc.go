// Package scrape reads an inference server's Prometheus /metrics and turns it into typed
// numbers. It owns four things:
//
//   - fetching: Client.Scrape does one HTTP GET with a context and a timeout, asks for the
//     classic text format, sends an optional Bearer key, speaks TLS (custom CA or no
//     verification), caps the body size, and reports every failure as a one-line *Error that
//     names the URL and the cause;
//   - parsing: Parse reads the text exposition with prometheus/common's expfmt;
//     ParseSelected parses only a Selection of families (a fleet's few), every line it
//     leaves out checked so it refuses what Parse refuses; RawFamilies gives prom2json's
//     JSON form of every family;
//   - mapping: FromFamilies fills a Snapshot for vLLM (V0 and V1 names, old and new names of
//     a renamed metric as one field), SGLang and TGI, per model and per data-parallel engine,
//     and keeps every family it did not map in Snapshot.Unmapped;
//   - window math, pure functions over two snapshots: Rate (counter rates that refuse to
//     cross a reset), Sub and Quantile (PromQL's histogram_quantile over bucket deltas),
//     PrefixCacheHitRate, and Compare for all of them at once.
//
// A metric the server does not expose is absent, never zero: scalar fields are Values whose
// OK is false, histograms are nil pointers, maps are nil.
//
// Concurrency: Client is safe for concurrent use and every other function is pure or works on
// its own arguments; Snapshots are plain values and may be passed between goroutines once
// built. The package owns no goroutine and no ticker: the caller decides when to scrape, so
// two scrapes overlap only if the caller starts them together.
package scrape
