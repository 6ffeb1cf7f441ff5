package sim

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A long prefill is GEMM-bound, so where vLLM multiplies FP8 weights in FP8 (compute
// capability 8.9 on) it takes about half the 16-bit time; where Marlin widens them to 16 bits
// (Ampere), or the weights are a 4-bit weight-only format, it does not
// (docs/calibration.md#fp8-gemms).
func TestFP8GEMMsRunAtTheFP8PeakOnFP8Cards(t *testing.T) {
	prefill := func(model, gpu, quantization string) float64 {
		t.Helper()
		s, err := Resolve(Config{Model: model, GPU: gpu, Quantization: quantization, MaxModelLen: 16384}, nil)
		require.NoError(t, err)
		return NewStepModel(s).GPUSeconds([]Work{{Q: 8192}})
	}
	for _, tc := range []struct {
		name, model, gpu, quantization string
		fast                           bool
	}{
		{"FP8 checkpoint on H100", "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "H100", "", true},
		{"online FP8 on L4", "meta-llama/Llama-3.1-8B-Instruct", "L4", "fp8", true},
		{"FP8 checkpoint on A100 (Marlin)", "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "A100-SXM-80GB", "", false},
		{"AWQ on H100 (weight-only)", "Qwen/Qwen2.5-7B-Instruct-AWQ", "H100", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := "meta-llama/Llama-3.1-8B-Instruct"
			if tc.model == "Qwen/Qwen2.5-7B-Instruct-AWQ" {
				base = "Qwen/Qwen2.5-7B-Instruct"
			}
			ratio := prefill(tc.model, tc.gpu, tc.quantization) / prefill(base, tc.gpu, "")
			t.Logf("8,192-token prefill, quantized / 16-bit: %.2f", ratio)
			if tc.fast {
				// Half the GEMMs' time; the 16-bit attention and LM head keep it above 0.5.
				assert.InDelta(t, 0.55, ratio, 0.1, "the GEMMs run at the FP8 peak")
			} else {
				assert.InDelta(t, 1, ratio, 0.08, "the GEMMs run at the 16-bit peak")
			}
		})
	}
}

// Block-scaled FP8 checkpoints (DeepSeek-V3's [128, 128] scales) are multiplied by vLLM's CUTLASS
// or Triton block kernels, which measure at about the 16-bit rate, until DeepGEMM takes them on
// Hopper and Blackwell from 0.11.0; per-channel FP8 keeps the 8-bit rate in every release
// (docs/calibration.md#fp8-gemms).
func TestBlockScaledFP8GEMMRateByKernel(t *testing.T) {
	for _, tc := range []struct {
		name, model, gpu, version string
		fp8                       bool
	}{
		{"block FP8 before DeepGEMM", "deepseek-ai/DeepSeek-R1", "H200", "0.8.4", false},
		{"block FP8 with DeepGEMM", "deepseek-ai/DeepSeek-R1", "H200", "0.11.0", true},
		{"block FP8 on Blackwell", "Qwen/Qwen3-235B-A22B-FP8", "B200", "0.33.0", true},
		{"block FP8 on Ada (no DeepGEMM)", "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", "L40S", "0.33.0", false},
		{"per-channel FP8 in an old release", "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "H200", "0.8.4", true},
		{"block FP8 without DeepGEMM installed", "deepseek-ai/DeepSeek-R1", "H200", "0.33.0 absent", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := 1
			if tc.model == "deepseek-ai/DeepSeek-R1" {
				tp = 8
			} else if tc.model == "Qwen/Qwen3-235B-A22B-FP8" {
				tp = 2
			}
			version, deepGEMM, _ := strings.Cut(tc.version, " ")
			s, err := Resolve(Config{Model: tc.model, GPU: tc.gpu, VLLMVersion: version, DeepGEMM: deepGEMM, TensorParallelSize: tp, MaxModelLen: 8192}, nil)
			require.NoError(t, err)
			g := s.GPUProfile
			peak := g.BF16TFLOPS
			if tc.fp8 {
				peak = g.FP8TFLOPS
			}
			assert.InDelta(t, g.EtaGEMM*peak*1e12, NewStepModel(s).gemmRate, 1e6)
		})
	}
}

// The routed experts of a mixture-of-experts model run at the fused-MoE kernel's rate for
// their width, below the 16-bit dense rate, so a long prefill's GEMM time is the dense layers'
// FLOPs at the dense rate plus the experts' at the fused-MoE rate
// (docs/calibration.md#fused-moe-kernel).
func TestFusedMoEExpertsRunBelowTheDenseRate(t *testing.T) {
	s, err := Resolve(Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H100", MaxModelLen: 16384}, nil)
	require.NoError(t, err)
	m, g := s.ModelProfile, s.GPUProfile
	sm := NewStepModel(s)
	experts := 2 * float64(m.ExpertsPerToken) * m.ExpertParams()
	assert.InDelta(t, experts, sm.expertFLOPs, 1)
	assert.Greater(t, sm.layerFLOPs, sm.expertFLOPs, "attention and router weights stay dense")
	assert.Less(t, sm.expertRate, sm.gemmRate, "the fused-MoE kernel is slower than a dense GEMM")
	s2, err := Resolve(Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H100", TensorParallelSize: 2, MaxModelLen: 16384}, nil)
	require.NoError(t, err)
	assert.InDelta(t, experts/2, NewStepModel(s2).expertFLOPs, 1, "a rank computes its share of every expert")
	width := float64(m.IntermediateSize) // one rank holds whole experts at TP 1
	assert.InDelta(t, fusedMoEWidthCoef*math.Pow(width, fusedMoEWidthExp)*g.EtaGEMM*g.BF16TFLOPS*1e12, sm.expertRate, 1e6)
	assert.Less(t, NewStepModel(s2).expertRate, sm.expertRate, "half as wide a slice a rank, a slower kernel")
	gptOSS, err := Resolve(Config{Model: "openai/gpt-oss-20b", GPU: "H100"}, nil)
	require.NoError(t, err)
	assert.InDelta(t, fusedMoEEfficiency*g.EtaGEMM*g.BF16TFLOPS*1e12, NewStepModel(gptOSS).expertRate, 1e6,
		"MXFP4 experts run other kernels, with no timings: the flat median")

	// Against the same step with the experts at the dense rate: an 8,192-token prefill is
	// GEMM-bound, so the difference is the experts' FLOPs at the two rates.
	const tokens = 8192
	dense := *sm
	dense.expertRate = dense.gemmRate
	got := sm.GPUSeconds([]Work{{Q: tokens}}) - dense.GPUSeconds([]Work{{Q: tokens}})
	weights := sm.denseBytes + sm.expertBytes*(1-math.Pow(1-sm.expertFrac, tokens))/fusedMoEBandwidth
	tw := weights / sm.bandwidth
	tg := (sm.layerFLOPs-experts)*tokens/sm.gemmRate + sm.headFLOPs/sm.headRate
	want := math.Hypot(tw, tg+experts*tokens/sm.expertRate) - math.Hypot(tw, tg+experts*tokens/sm.gemmRate)
	assert.InEpsilon(t, want, got, 1e-6)
	t.Logf("Qwen3-30B-A3B, 8,192-token prefill on an H100: %.1f ms, of which %.1f ms for the fused-MoE kernel's efficiency",
		1e3*sm.GPUSeconds([]Work{{Q: tokens}}), 1e3*got)
}

// The fused-MoE rate by width is fitted on vLLM's published fused-MoE kernel timings at
// prefill sizes (benchmarks/kernels/benchmark_moe.py, one layer's experts): against the rate
// the model gives each at its width on the same card, none is more than 1.6 times off (1.85 at
// the flat fusedMoEEfficiency, their median) and their geometric mean is 1.
func TestFusedMoEEfficiencyMatchesPublishedKernelTimings(t *testing.T) {
	h100, h200 := hopperProfiles(t)
	var ratios, flat []float64
	logSum := 0.0
	for _, tc := range []struct {
		source         string
		gpu            GPU
		tokens, topK   float64
		hidden, interm float64 // K and the intermediate size a rank holds (N)
		micros         float64
	}{
		{"vllm#24700 Mixtral-8x7B bf16 TP2, tuned", h100, 1024, 2, 4096, 7168, 833.72},
		{"vllm#24700 Mixtral-8x7B bf16 TP2, tuned", h100, 1536, 2, 4096, 7168, 1122.93},
		{"vllm#24700 Qwen3-30B-A3B fp8_w8a8", h100, 1024, 8, 2048, 768, 536.33},
		{"vllm#24700 Qwen3-30B-A3B fp8_w8a8", h100, 2048, 8, 2048, 768, 911.64},
		{"vllm#24700 Qwen3-30B-A3B fp8_w8a8", h100, 4096, 8, 2048, 768, 1647.57},
		{"vllm#44818 Gemma 4 26B-A4B bf16, default", h200, 2048, 8, 2816, 704, 742.9},
		{"vllm#44818 Gemma 4 26B-A4B bf16, default", h200, 4096, 8, 2816, 704, 1249.5},
	} {
		flops := tc.tokens * tc.topK * 3 * tc.hidden * tc.interm * 2 // gate, up and down
		eff := fusedMoEWidthCoef * math.Pow(tc.interm, fusedMoEWidthExp)
		modelled := flops / (eff * tc.gpu.EtaGEMM * tc.gpu.BF16TFLOPS * 1e12)
		ratio := modelled / (tc.micros * 1e-6)
		t.Logf("%s, %.0f tokens: published %.0f us, modelled %.0f us (%.2fx)", tc.source, tc.tokens, tc.micros, modelled*1e6, ratio)
		assert.True(t, ratio > 1/1.6 && ratio < 1.6, "%s: %.2fx", tc.source, ratio)
		ratios = append(ratios, ratio)
		logSum += math.Log(ratio)
		flat = append(flat, flops/(fusedMoEEfficiency*tc.gpu.EtaGEMM*tc.gpu.BF16TFLOPS*1e12)/(tc.micros*1e-6))
	}
	assert.InDelta(t, 0, logSum/float64(len(ratios)), 0.01, "least squares in logarithms: the geometric mean is 1")
	sort.Float64s(flat)
	assert.InDelta(t, 1, flat[len(flat)/2], 0.02, "the flat constant is the timings' median")
}

// decodeMoETimings are published timings of vLLM's fused-MoE kernel (benchmark_moe.py, one
// layer's experts) at decode sizes, microseconds by tokens.
type decodeMoETimings struct {
	source                string
	gpu                   GPU
	experts, topK         float64
	hidden, interm, bytes float64 // K, the intermediate size a rank holds (N), bytes a weight
	micros                map[float64]float64
}

// touchedBytes is what the kernel reads at tokens: the experts the batch touches,
// 1 - (1 - k/E)^tokens of them.
func (d decodeMoETimings) touchedBytes(tokens float64) float64 {
	return d.experts * (1 - math.Pow(1-d.topK/d.experts, tokens)) * 3 * d.hidden * d.interm * d.bytes
}

// untouched is the share of experts the batch leaves alone, which scales the latency.
func (d decodeMoETimings) untouched(tokens float64) float64 {
	return math.Pow(1-d.topK/d.experts, tokens)
}

func publishedDecodeMoETimings(t *testing.T) []decodeMoETimings {
	t.Helper()
	h100, h200 := hopperProfiles(t)
	a100, err := BuiltinProfiles().GPU("A100-PCIe-40GB")
	require.NoError(t, err)
	return []decodeMoETimings{
		{"vllm#24700 Mixtral-8x7B bf16 TP2, tuned", h100, 8, 2, 4096, 7168, 2,
			map[float64]float64{1: 144.03, 2: 229.28, 4: 351.10, 16: 471.49, 32: 487.35, 64: 483.14, 128: 491.39}},
		{"vllm#24700 Qwen3-30B-A3B fp8_w8a8", h100, 128, 8, 2048, 768, 1,
			map[float64]float64{1: 44.54, 2: 59.94, 4: 90.46, 16: 185.40, 32: 238.37, 64: 262.73, 128: 273.72}},
		{"vllm#44818 Gemma 4 26B-A4B bf16, default", h200, 128, 8, 2816, 704, 2,
			map[float64]float64{1: 189.2, 2: 187.0, 4: 185.4, 16: 257.8, 32: 341.1, 64: 391.8, 128: 409.1}},
		{"vllm#19049 Qwen3-30B-A3B bf16, default", a100, 128, 8, 2048, 768, 2,
			map[float64]float64{1: 109.21, 2: 159.81, 4: 268.89, 16: 611.19, 32: 808.53, 64: 917.45}},
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// The fused-MoE kernel at decode sizes is a latency per layer while few experts are touched,
// fading as (1 - k/E)^tokens, plus the touched experts streamed at a share of the card's
// effective bandwidth. Both constants are medians of the published timings, each taken with the
// other: the bandwidth over 16 to 128 tokens, the latency over 1 to 4, where it shows.
func TestFusedMoEDecodeMatchesPublishedKernelTimings(t *testing.T) {
	var shares, latencies []float64
	for _, d := range publishedDecodeMoETimings(t) {
		effective := d.gpu.EtaBandwidth * d.gpu.BandwidthTBps * 1e12
		for tokens, micros := range d.micros {
			streaming := micros*1e-6 - fusedMoELatency*d.untouched(tokens)
			if tokens >= 16 {
				share := d.touchedBytes(tokens) / streaming / effective
				assert.True(t, share > 0.7 && share < 1.1, "%s, %.0f tokens: %.2f", d.source, tokens, share)
				shares = append(shares, share)
				continue
			}
			latency := (micros*1e-6 - d.touchedBytes(tokens)/(fusedMoEBandwidth*effective)) / d.untouched(tokens)
			latencies = append(latencies, latency)
			t.Logf("%s, %.0f tokens: %.0f us, of which %.0f us latency", d.source, tokens, micros, latency*1e6)
		}
	}
	require.Len(t, shares, 15)
	require.Len(t, latencies, 12)
	assert.InDelta(t, median(shares), fusedMoEBandwidth, 0.005, "the bandwidth share is the timings' median")
	assert.InDelta(t, median(latencies), fusedMoELatency, 1e-6, "the latency is the timings' median")

	// In the step model: one routed token of Qwen3-30B-A3B pays nearly the whole latency on
	// each of its 48 layers, a batch of 256 almost none of it.
	s, err := Resolve(Config{Model: "Qwen/Qwen3-30B-A3B", GPU: "H100", MaxModelLen: 16384}, nil)
	require.NoError(t, err)
	sm := NewStepModel(s)
	without := *sm
	without.moeLatency = 0
	one := []Work{{Q: 1, C: 128}}
	assert.InDelta(t, 48*fusedMoELatency*(1-8.0/128), sm.GPUSeconds(one)-without.GPUSeconds(one), 1e-9)
	batch := make([]Work, 256)
	for i := range batch {
		batch[i] = Work{Q: 1, C: 128}
	}
	assert.Less(t, sm.GPUSeconds(batch)-without.GPUSeconds(batch), 1e-6)
}

// Only routed layers pay the fused-MoE latency: DeepSeek-V3 routes on 58 of its 61 layers,
// as its config's first_k_dense_replace says, and a dense model pays none.
func TestFusedMoELatencyCountsRoutedLayers(t *testing.T) {
	for _, tc := range []struct {
		model  string
		routed int
	}{
		{"deepseek-ai/DeepSeek-V3", 58},
		{"meta-llama/Llama-4-Maverick-17B-128E-Instruct", 24},
		{"Qwen/Qwen3-30B-A3B", 48},
		{"meta-llama/Llama-3.1-8B-Instruct", 0},
	} {
		m, err := BuiltinProfiles().Model(tc.model)
		require.NoError(t, err)
		assert.Equal(t, tc.routed, m.RoutedLayers(), tc.model)
	}
}

// With async scheduling (vLLM's default from 0.14, not with pipeline stages) the scheduler's
// work for the next step runs while the GPU runs this one, so a step takes the longer of the
// two; before it, and on a host without a core to spare, their sum
// (docs/calibration.md#async-scheduling).
func TestAsyncSchedulingHidesTheHostBehindTheGPU(t *testing.T) {
	batch := make([]Work, 64)
	for i := range batch {
		batch[i] = Work{Q: 1, C: 1024}
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		overlap bool
	}{
		{"0.13: no async scheduling", Config{VLLMVersion: "0.13.0"}, false},
		{"0.14: on by default", Config{VLLMVersion: "0.14.0"}, true},
		{"0.33 with --no-async-scheduling", Config{AsyncScheduling: Off}, false},
		{"0.11 with --async-scheduling", Config{VLLMVersion: "0.11.0", AsyncScheduling: On}, true},
		{"pipeline stages", Config{PipelineParallelSize: 2}, false},
		{"EAGLE drafts", Config{Speculative: &SpeculativeConfig{Method: "eagle", Model: "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", NumSpeculativeTokens: 3}}, true},
		{"a draft model", Config{Speculative: &SpeculativeConfig{Method: "draft_model", Model: "meta-llama/Llama-3.2-1B-Instruct", NumSpeculativeTokens: 3}}, false},
		{"n-gram drafts", Config{Speculative: &SpeculativeConfig{Method: "ngram", NumSpeculativeTokens: 3}}, false},
		{"a 4-vCPU host", Config{Host: "v1-4vcpu"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Model, cfg.GPU, cfg.MaxModelLen = "meta-llama/Llama-3.1-8B-Instruct", "H100", 8192
			s, err := Resolve(cfg, nil)
			require.NoError(t, err)
			sm := NewStepModel(s)
			host, gpu := sm.HostSeconds(len(batch)), sm.GPUSeconds(batch)
			want := host + gpu
			if tc.overlap {
				want = max(host, gpu)
			}
			assert.InDelta(t, want, sm.StepDuration(batch).Seconds(), 1e-9)
		})
	}
}

// hopperProfiles are the two cards the published fused-MoE timings ran on.
func hopperProfiles(t *testing.T) (h100, h200 GPU) {
	t.Helper()
	h100, err := BuiltinProfiles().GPU("H100")
	require.NoError(t, err)
	h200, err = BuiltinProfiles().GPU("H200")
	require.NoError(t, err)
	return h100, h200
}

// A --sim-profiles model whose moe_layers is negative or more than its layers is refused.
func TestProfilesRefuseImpossibleMoELayers(t *testing.T) {
	m, err := BuiltinProfiles().Model("deepseek-ai/DeepSeek-V3")
	require.NoError(t, err)
	for _, n := range []int{-1, m.NumLayers + 1} {
		bad := m
		bad.Name, bad.Aliases, bad.MoELayers = "lab/moe", nil, n
		assert.ErrorContains(t, (&Profiles{Models: []Model{bad}}).validate(), "moe_layers", "moe_layers %d", n)
	}
	m.Name, m.Aliases = "lab/moe", nil
	assert.NoError(t, (&Profiles{Models: []Model{m}}).validate())
}
