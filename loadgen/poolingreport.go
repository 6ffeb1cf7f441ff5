package loadgen

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
)

// printPoolingResult is vllm bench serve's table for a pooling backend: requests, input
// tokens and end-to-end latency, no output tokens, TTFT, TPOT or ITL. Each request embeds one
// input, so the inputs per second are the requests per second.
func printPoolingResult(w io.Writer, s Summary, info RunInfo) error {
	var b bytes.Buffer
	b.WriteString(center(" Serving Benchmark Result ", '=', tableWidth) + "\n")
	row := func(label, value string) { fmt.Fprintf(&b, "%-40s %-10s\n", label, value) }
	row("Successful requests:", strconv.Itoa(s.Completed))
	row("Failed requests:", strconv.Itoa(s.Failed))
	for _, c := range failureClasses(s.FailuresByClass) {
		row("  "+string(c.class)+":", strconv.Itoa(c.n))
	}
	if info.MaxConcurrency > 0 {
		row("Maximum request concurrency:", strconv.Itoa(info.MaxConcurrency))
	}
	if !math.IsInf(info.RequestRate, 1) {
		row("Request rate configured (RPS):", fixed2(info.RequestRate))
	}
	row("Benchmark duration (s):", fixed2(s.Duration.Seconds()))
	row("Total input tokens:", strconv.Itoa(s.TotalInputTokens))
	row("Request throughput (req/s):", fixed2(s.RequestThroughput))
	row("Input throughput (inputs/s):", fixed2(s.RequestThroughput))
	row("Total token throughput (tok/s):", fixed2(s.TotalTokenThroughput))
	printProbes(&b, s.Probes)
	for _, m := range info.reported() {
		if m == "ttft" || m == "tpot" || m == "itl" {
			continue // vLLM reports them for generation only
		}
		name, header := metricHeaders[m][0], metricHeaders[m][1]
		d := s.dist(m)
		b.WriteString(center(header, '-', tableWidth) + "\n")
		row("Mean "+name+" (ms):", fixed2(d.Mean))
		row("Median "+name+" (ms):", fixed2(d.Median))
		for _, p := range info.Percentiles {
			row("P"+percentileWord(p)+" "+name+" (ms):", fixed2(d.Percentiles[p]))
		}
	}
	return endTable(w, &b, tableWidth)
}

// poolingResultFields are the statistics of vLLM's pooling result, after the run's setup:
// no failed count, no output tokens and no peaks, as vLLM writes it.
func poolingResultFields(s Summary, info RunInfo, detailed []Field) []Field {
	d := []Field{
		{"duration", PyFloat(s.Duration.Seconds())},
		{"completed", s.Completed},
		{"total_input_tokens", s.TotalInputTokens},
		{"total_input_sequences", s.Completed},
		{"request_throughput", PyFloat(s.RequestThroughput)},
		{"input_sequence_throughput", PyFloat(s.RequestThroughput)},
		{"total_token_throughput", PyFloat(s.TotalTokenThroughput)},
		{"latencies", pyFloats(s.Latencies)},
		{"queue_times", pyFloats(s.QueueTimes)},
	}
	d = append(d, s.Probes.fields()...)
	for _, m := range info.reported() {
		if m == "ttft" || m == "tpot" || m == "itl" {
			continue
		}
		dist := s.dist(m)
		d = append(d,
			Field{"mean_" + m + "_ms", PyFloat(dist.Mean)},
			Field{"median_" + m + "_ms", PyFloat(dist.Median)},
			Field{"std_" + m + "_ms", PyFloat(dist.Std)},
		)
		for _, p := range info.Percentiles {
			d = append(d, Field{"p" + percentileWord(p) + "_" + m + "_ms", PyFloat(dist.Percentiles[p])})
		}
	}
	failures := map[string]int{}
	for c, n := range s.FailuresByClass {
		failures[string(c)] = n
	}
	d = append(d, Field{"failures_by_class", failures})
	if s.Estimated {
		d = append(d, Field{"percentiles_estimated", true})
	}
	// --save-detailed keeps, of the per-request lists, the ones a pooling result has.
	for _, f := range detailed {
		if f.Key == "input_lens" || f.Key == "errors" {
			d = append(d, f)
		}
	}
	return d
}
