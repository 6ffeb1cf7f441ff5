package vlog

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vllmtop/vllmtop/server/sim"
)

var reAdvice = regexp.MustCompile("Actual usage is ([\\d.]+) GiB for consumed memory \\(weights \\+ non-torch\\), ([\\d.]+) GiB for peak activation, and ([\\d.]+) GiB for CUDAGraph memory\\. " +
	"Replace gpu_memory_utilization config with `--kv-cache-memory=(-?\\d+)` \\([\\d.-]+ GiB\\) to fit into requested memory, or `--kv-cache-memory=(-?\\d+)` \\([\\d.-]+ GiB\\) to fully utilize gpu memory\\. " +
	"Current kv cache memory in use is ([\\d.]+) GiB\\.$")

func releaseStartup(t *testing.T, cfg sim.Config) []string {
	t.Helper()
	s, err := sim.Resolve(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	l := New(&out, io.Discard, newClock().now, apiPID, enginePID)
	l.UseRelease(s.Version)
	l.Startup(s, qwenArgs, 2)
	return lines(out.String())
}

// From 0.25 the worker logs its memory account and the two --kv-cache-memory values at INFO;
// the figures add up as vLLM's do: the cache is the budget less weights, non-torch memory and
// the profile's peak, and each suggestion also leaves out the captured graphs and 150 MiB.
func TestMemoryAdviceLine(t *testing.T) {
	if l := lineWith(releaseStartup(t, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100", VLLMVersion: "0.24.0"}), "Free memory on device"); l != "" {
		t.Errorf("0.24 logs the advice at DEBUG, not %q", l)
	}
	for _, eager := range []bool{false, true} {
		cfg := sim.Config{Model: "Qwen/Qwen3-8B", GPU: "H100-SXM-80GB", VLLMVersion: sim.DefaultVersion, EnforceEager: eager}
		s, err := sim.Resolve(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		line := lineWith(releaseStartup(t, cfg), "Free memory on device")
		g := reAdvice.FindStringSubmatch(line)
		if g == nil {
			t.Fatalf("eager %v: no advice line of the expected form: %q", eager, line)
		}
		f := func(i int) float64 { x, _ := strconv.ParseFloat(g[i], 64); return x }
		c := s.Capacity
		const gib = 1 << 30
		requested := float64(c.RequestedBytes) / gib
		if d := requested - f(1) - f(2) - f(6); d > 0.015 || d < -0.015 {
			t.Errorf("eager %v: budget %.2f less consumed %.2f and peak %.2f is not the cache %.2f", eager, requested, f(1), f(2), f(6))
		}
		if eager != (f(3) == 0) {
			t.Errorf("eager %v: CUDA graphs %.2f GiB", eager, f(3))
		}
		toRequested, toGPU := f(4)/gib, f(5)/gib
		if d := requested - f(1) - f(2) - f(3) - 150.0/1024 - toRequested; d > 0.015 || d < -0.015 {
			t.Errorf("eager %v: --kv-cache-memory to fit the budget is %.3f GiB, off by %.3f", eager, toRequested, d)
		}
		if d := toGPU - toRequested - float64(c.FreeBytes-c.RequestedBytes)/gib; d > 1e-6 || d < -1e-6 {
			t.Errorf("eager %v: the two suggestions differ by %.3f GiB more than free less requested", eager, d)
		}
	}
}

// With --kv-cache-memory-bytes the worker reserves the cache without profiling it: its own
// line in place of "Available KV cache memory", no CUDA-graph estimate and no advice.
func TestPinnedKVCacheLines(t *testing.T) {
	out := releaseStartup(t, sim.Config{Model: "Qwen/Qwen3-8B", GPU: "H100-SXM-80GB", VLLMVersion: sim.DefaultVersion, KVCacheMemoryBytes: 20 << 30})
	if l := lineWith(out, "as specified by kv_cache_memory_bytes"); !strings.Contains(l, "Initial free memory 79.19 GiB, reserved 20.00 GiB memory for KV Cache") {
		t.Errorf("no reservation line: %q", l)
	}
	for _, absent := range []string{"Available KV cache memory", "Estimated CUDA graph memory", "CUDA graph memory profiling is enabled", "Free memory on device", "CUDA graph pool memory"} {
		if l := lineWith(out, absent); l != "" {
			t.Errorf("a pinned cache logs no %q line: %q", absent, l)
		}
	}
	if l := lineWith(out, "Graph capturing finished"); l == "" {
		t.Error("the graphs are still captured")
	}
}

func TestAutoFitMaxModelLenLines(t *testing.T) {
	out := releaseStartup(t, sim.Config{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", VLLMVersion: sim.DefaultVersion, AutoFitMaxModelLen: true})
	l := lineWith(out, "Auto-fit max_model_len")
	if !strings.Contains(l, "Auto-fit max_model_len: reduced from 131072 to ") || !strings.Contains(l, "GiB available for KV cache)") {
		t.Fatalf("no auto-fit line: %q", l)
	}
	if c := lineWith(out, "Maximum concurrency for"); !strings.Contains(c, "tokens per request: 1.00x") {
		t.Errorf("the fitted length holds one request: %q", c)
	}
	fits := releaseStartup(t, sim.Config{Model: "Qwen/Qwen3-0.6B", GPU: "H100-SXM-80GB", VLLMVersion: sim.DefaultVersion, AutoFitMaxModelLen: true})
	if l := lineWith(fits, "Auto-fit max_model_len"); l != "" {
		t.Errorf("a context that fits is kept, with no auto-fit line: %q", l)
	}
}
