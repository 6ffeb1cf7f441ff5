package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
)

// Probes are vllm bench serve's --probe-request-rate requests: one-token "Hi" prompts sent one
// after another at the rate beside the load, outside --max-concurrency, to show how the load
// stalls an unrelated request. Only those that succeeded are measured.
type Probes struct {
	Completed, Failed int
	// Median, P99 and Max end-to-end latency of the successful probes, in ms.
	Median, P99, Max float64
}

// probeLoop sends probes at rate until stop is called, which returns what they measured (nil
// when none succeeded).
func probeLoop(ctx context.Context, c *Client, rate float64) (stop func() *Probes) {
	// A probe under way when the run ends is let finish (within its request deadline), so
	// the first one, sent at the start, is always measured however short the run.
	done := make(chan struct{})
	var (
		wg      sync.WaitGroup
		results []Result
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		interval := time.Duration(float64(time.Second) / rate)
		for ctx.Err() == nil {
			r := c.Do(ctx, Prompt{Text: "Hi", InputTokens: 1, OutputTokens: 1}, nil)
			if r.Error != ErrCanceled {
				results = append(results, r)
			}
			t := time.NewTimer(interval)
			select {
			case <-ctx.Done():
			case <-done:
			case <-t.C:
			}
			t.Stop()
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	return func() *Probes {
		close(done)
		wg.Wait()
		return probeStats(results)
	}
}

// probeStats measures the probes.
func probeStats(results []Result) *Probes {
	p := &Probes{}
	var lat []float64
	for i := range results {
		if !results[i].OK() {
			p.Failed++
			continue
		}
		p.Completed++
		lat = append(lat, ms(results[i].E2EL))
		p.Max = math.Max(p.Max, ms(results[i].E2EL))
	}
	if p.Completed == 0 {
		return nil
	}
	d := dist(lat, []float64{99})
	p.Median, p.P99 = d.Median, d.Percentiles[99]
	return p
}

// fields are the probe_* keys of a result.
func (p *Probes) fields() []Field {
	if p == nil {
		return nil
	}
	return []Field{{"probe_completed", p.Completed}, {"probe_failed", p.Failed}, {"probe_median_e2el_ms", PyFloat(p.Median)},
		{"probe_p99_e2el_ms", PyFloat(p.P99)}, {"probe_max_e2el_ms", PyFloat(p.Max)}}
}

// printProbes writes the table's "Probe Requests" section.
func printProbes(b io.Writer, p *Probes) {
	if p == nil {
		return
	}
	row := func(label, value string) { fmt.Fprintf(b, "%-40s %-10s\n", label, value) }
	fmt.Fprintln(b, center("Probe Requests", '-', tableWidth))
	row("Probe requests completed:", strconv.Itoa(p.Completed))
	row("Probe requests failed:", strconv.Itoa(p.Failed))
	row("Median probe E2EL (ms):", fixed2(p.Median))
	row("P99 probe E2EL (ms):", fixed2(p.P99))
	row("Max probe E2EL (ms):", fixed2(p.Max))
}
