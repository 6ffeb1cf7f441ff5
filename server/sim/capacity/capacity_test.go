package capacity

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFitWorkload(t *testing.T) {
	w := Workload{PromptTokens: 384, OutputTokens: 128} // 512 tokens: 32 blocks of 16
	cases := []struct {
		name        string
		limits      Limits
		w           Workload
		byKV, conc  int
		limiter     string
		blocks, tok int
	}{
		{"KV-bound: Llama-3.1-8B on an L4", Limits{BlockSize: 16, NumBlocks: 2193, MaxNumSeqs: 256, MaxNumBatchedTokens: 2048, MaxModelLen: 8192}, w,
			68, 68, LimitKV, 32, 512},
		{"max-num-seqs-bound: room in KV for more", Limits{BlockSize: 16, NumBlocks: 103024, MaxNumSeqs: 256, MaxNumBatchedTokens: 2048, MaxModelLen: 32768}, w,
			3219, 256, LimitSeqs, 32, 512},
		{"fits easily: a tenth of the KV for all it may run", Limits{BlockSize: 16, NumBlocks: 400000, MaxNumSeqs: 1024, MaxNumBatchedTokens: 8192, MaxModelLen: 32768},
			Workload{PromptTokens: 100, OutputTokens: 20}, 50000, 1024, LimitSeqs, 8, 128},
		{"rounded up to whole blocks", Limits{BlockSize: 16, NumBlocks: 99, MaxNumSeqs: 256}, Workload{PromptTokens: 17, OutputTokens: 1},
			49, 49, LimitKV, 2, 32},
		{"budget binds when max-num-seqs is unknown", Limits{BlockSize: 16, NumBlocks: 1 << 20, MaxNumBatchedTokens: 2048}, w,
			32768, 2048, LimitBatched, 32, 512},
		{"too long for max-model-len", Limits{BlockSize: 16, NumBlocks: 1000, MaxNumSeqs: 256, MaxModelLen: 500}, w,
			0, 0, LimitLength, 32, 512},
	}
	for _, c := range cases {
		f := FitWorkload(c.limits, c.w)
		assert.Equal(t, c.byKV, f.ByKV, c.name)
		assert.Equal(t, c.conc, f.Concurrency, c.name)
		assert.Equal(t, c.limiter, f.Limiter, c.name)
		assert.Equal(t, c.blocks, f.BlocksPerRequest, c.name)
		assert.Equal(t, c.tok, f.TokensPerRequest, c.name)
		assert.False(t, f.Estimate)
	}
	hybrid := FitWorkload(Limits{BlockSize: 16, NumBlocks: 100, BlocksFor: func(n int) int { return 2 * ((n + 15) / 16) }}, w)
	assert.Equal(t, 64, hybrid.BlocksPerRequest, "a hybrid model's groups each hold blocks")
	assert.Equal(t, 1, hybrid.ByKV)
}

func TestFromCacheInfo(t *testing.T) {
	w := Workload{PromptTokens: 384, OutputTokens: 128}
	f, ok := FromCacheInfo(CacheInfo{BlockSize: 16, NumGPUBlocks: 2194}, Limits{}, w)
	assert.True(t, ok)
	assert.True(t, f.Estimate, "labelled an estimate")
	assert.Equal(t, 68, f.ByKV)
	assert.Equal(t, LimitKV, f.Limiter)
	f, ok = FromCacheInfo(CacheInfo{BlockSize: 16, KVCacheTokens: 35104}, Limits{MaxNumSeqs: 32}, w)
	assert.True(t, ok, "from the token capacity when num_gpu_blocks is absent")
	assert.Equal(t, 68, f.ByKV)
	assert.Equal(t, 32, f.Concurrency)
	assert.Equal(t, LimitSeqs, f.Limiter)
	_, ok = FromCacheInfo(CacheInfo{BlockSize: 16}, Limits{}, w)
	assert.False(t, ok, "nothing to scale from")
	_, ok = FromCacheInfo(CacheInfo{NumGPUBlocks: 10}, Limits{}, w)
	assert.False(t, ok, "no block size")
}

func TestBarAndRender(t *testing.T) {
	m := Memory{TotalGiB: 20, RequestedGiB: 18, WeightsGiB: 10, ActivationGiB: 1, NonTorchGiB: 0.5, CUDAGraphGiB: 0.5, KVGiB: 6}
	bar := Bar(m, 40)
	assert.Len(t, bar, 40)
	assert.Equal(t, 20, strings.Count(bar, "W"))
	assert.Equal(t, 12, strings.Count(bar, "K"))
	assert.True(t, strings.HasSuffix(bar, "...."), "the unused 2 GiB")

	// Memory other processes hold is neither this server's nor free.
	shared := Memory{TotalGiB: 80, RequestedGiB: 40, WeightsGiB: 16, KVGiB: 24, OtherGiB: 20}
	bar = Bar(shared, 40)
	assert.Equal(t, 10, strings.Count(bar, "O"))
	assert.True(t, strings.HasSuffix(bar, strings.Repeat(".", 10)), "%s: 20 GiB left free", bar)
	assert.Contains(t, legend(shared, 100), "O other processes 20.00  . free 20.00")
	// Refused before it took any memory: the rest of the card is free.
	refused := Memory{TotalGiB: 80, RequestedGiB: 72, OtherGiB: 20}
	assert.Contains(t, legend(refused, 100), ". free 60.00")
	r := Report{Model: "m", GPU: "g", Util: 0.9, Workload: Workload{384, 128}, Columns: []Column{
		{Name: "as given", Memory: m, KVTokens: 35104, Limits: Limits{BlockSize: 16, NumBlocks: 2193, MaxNumSeqs: 256}, Fit: Fit{ByKV: 68, Concurrency: 68, Limiter: LimitKV}},
		{Name: "fp8 KV", Refused: "ValueError: No available memory for the cache blocks. Try increasing it."},
	}}
	out := r.Render(100)
	assert.Contains(t, out, "KV blocks")
	assert.Contains(t, out, "REFUSED fp8 KV: ValueError: No available memory for the cache blocks.")
	assert.Contains(t, out, "35,104")
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "REFUSED") {
			assert.LessOrEqual(t, len(l), 100, "%q", l)
		}
	}
}

// Settings that do not fit beside the others in the width go to a second table under the same
// row labels: every line within the width, every setting shown.
func TestRenderSplitsAWideTable(t *testing.T) {
	m := Memory{TotalGiB: 80, RequestedGiB: 72, WeightsGiB: 13, ActivationGiB: 4, KVGiB: 51.21}
	var cols []Column
	for _, name := range []string{"as given", "fp8 KV", "awq", "gptq", "fp8 weights", "max-len 2048"} {
		cols = append(cols, Column{Name: name, Memory: m, KVTokens: 3576888, GPUBlocks: 279690,
			Limits: Limits{BlockSize: 16, MaxNumSeqs: 1024, MaxNumBatchedTokens: 16384}, Fit: Fit{ByKV: 1928, Concurrency: 1024, Limiter: LimitSeqs}})
	}
	out := Report{Model: "m", GPU: "g", Util: 0.92, Workload: Workload{1024, 128}, Columns: cols}.Render(100)
	for _, l := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, len(l), 100, "%q", l)
	}
	for _, c := range cols {
		assert.Contains(t, out, c.Name)
	}
	assert.Equal(t, 2, strings.Count(out, "limits first"), "two tables, each with the labels")
}

// The token figure of vLLM's log follows --max-model-len where sliding or linear layers cap a
// request's blocks; the report says so when a what-if shows it.
func TestRenderExplainsTokensThatFollowTheLength(t *testing.T) {
	col := func(name string, tokens, blocks int) Column {
		return Column{Name: name, KVTokens: tokens, GPUBlocks: blocks, Limits: Limits{BlockSize: 16}}
	}
	same := Report{Columns: []Column{col("as given", 16000, 1000), col("fp8 KV", 32000, 2000), col("max-len 2048", 16000, 1000)}}.Render(100)
	assert.NotContains(t, same, "KV cache tokens is vLLM's figure")
	other := Report{Columns: []Column{col("as given", 16000, 1000), col("max-len 2048", 9000, 1000)}}.Render(100)
	assert.Contains(t, other, "KV cache tokens is vLLM's figure")
}

// A request longer than --max-model-len runs nowhere: the table shows no requests fitting or
// prefilling, and a line says vLLM answers it with HTTP 400.
func TestRenderARequestLongerThanTheContext(t *testing.T) {
	l := Limits{BlockSize: 16, NumBlocks: 24913, MaxNumSeqs: 1024, MaxNumBatchedTokens: 16384, MaxModelLen: 40960}
	w := Workload{PromptTokens: 50000, OutputTokens: 128}
	col := Column{Name: "as given", KVTokens: 398608, GPUBlocks: 24913, Limits: l, Fit: FitWorkload(l, w),
		Memory: Memory{TotalGiB: 80, RequestedGiB: 72, WeightsGiB: 15, KVGiB: 54}}
	out := Report{Model: "m", GPU: "g", Util: 0.92, Workload: w, Columns: []Column{col}}.Render(100)
	for _, label := range []string{"requests that fit in KV", "max running requests", "prompts prefilled a step"} {
		assert.Regexp(t, label+` +-\n`, out)
	}
	assert.Contains(t, out, "A request of 50,128 tokens is longer than --max-model-len 40,960")
	assert.Contains(t, out, "HTTP 400")
}

// Weights larger than the card: the legend says by how much, not that memory is free; and a
// long title wraps within the width.
func TestRenderOversubscribedCard(t *testing.T) {
	m := Memory{TotalGiB: 79.19, RequestedGiB: 72.85, WeightsGiB: 131.44, ActivationGiB: 3.38, NonTorchGiB: 0.25}
	out := Report{Model: "RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8", GPU: "H100-SXM-80GB", Util: 0.92,
		Workload: Workload{1024, 128}, Columns: []Column{{Name: "as given", Memory: m, Refused: "torch.OutOfMemoryError: CUDA out of memory."}}}.Render(80)
	assert.Contains(t, out, "over the card by 55.88")
	assert.NotContains(t, out, ". free")
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, len(line), 80, "%q", line)
	}
}

// Weights that fit the card but not the budget: the free memory is what they leave of the card,
// and the legend says by how much the budget is exceeded, which the refusal does not.
func TestRenderSpentBudget(t *testing.T) {
	m := Memory{TotalGiB: 22.03, RequestedGiB: 11.02, WeightsGiB: 14.99, ActivationGiB: 0.44, NonTorchGiB: 0.25, CUDAGraphGiB: 0.43}
	out := Report{Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "L4", Util: 0.5, Workload: Workload{1024, 128},
		Columns: []Column{{Name: "as given", Memory: m, Refused: "ValueError: No available memory for the cache blocks."}}}.Render(80)
	assert.Contains(t, out, ". free 5.92")
	assert.Contains(t, out, "over the budget by 5.09")
	assert.NotContains(t, out, "over the card")

	// A cache pinned past the budget (blocks or bytes) is no budget spent before it.
	m = Memory{TotalGiB: 22.03, RequestedGiB: 20.27, WeightsGiB: 14.99, ActivationGiB: 0.44, NonTorchGiB: 0.25, CUDAGraphGiB: 0.43, KVGiB: 4.88}
	out = Report{Model: "m", GPU: "L4", Util: 0.92, Workload: Workload{1024, 128}, Columns: []Column{{Name: "as given", Memory: m}}}.Render(80)
	assert.NotContains(t, out, "over the budget")
	assert.Contains(t, out, ". free 1.04")
}

// One reason given for several settings is written once, with the flag vLLM says to re-run
// with kept beside its first sentence; different reasons stay apart, in column order.
func TestRefusalsGroupedByReason(t *testing.T) {
	triton := "ValueError: FP8 KV cache is not supported by the Triton attention backend on Tesla T4 (compute capability 7.5); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype float16."
	r := Report{Model: "m", GPU: "g", Util: 0.9, Workload: Workload{384, 128}, Columns: []Column{
		{Name: "as given", Refused: triton},
		{Name: "fp8 weights", Refused: "The quantization method fp8 is not supported for the current GPU. Minimum capability: 80."},
		{Name: "awq", Refused: triton},
	}}
	out := r.Render(300)
	assert.Contains(t, out, "REFUSED as given, awq: "+triton+"\n")
	assert.Contains(t, out, "REFUSED fp8 weights: The quantization method fp8 is not supported for the current GPU.\n")
	assert.Less(t, strings.Index(out, "REFUSED as given"), strings.Index(out, "REFUSED fp8 weights"))
	assert.Equal(t, 2, strings.Count(out, "\nREFUSED "), "one line a reason")
}

// The legend under the table names the what-ifs the table shows and no other: a model built
// with AWQ has no awq column, a server already on fp8 KV no fp8 KV column.
func TestWhatIfLegendNamesOnlyTheColumnsShown(t *testing.T) {
	col := func(name string) Column { return Column{Name: name, Limits: Limits{BlockSize: 16}} }
	all := Report{Columns: []Column{col("as given"), col("fp8 KV"), col("awq"), col("gptq"), col("fp8 weights"), col("max-len 2048")}}.Render(200)
	assert.Contains(t, all, "What-ifs: fp8 KV is --kv-cache-dtype fp8; awq, gptq and fp8 weights are builds of the model quantized that way")
	assert.Contains(t, all, "max-len 2048 is --max-model-len 2048.")
	some := Report{Columns: []Column{col("as given"), col("gptq"), col("max-len 4096")}}.Render(200)
	assert.Contains(t, some, "What-ifs: gptq is a build of the model quantized that way (--sim-checkpoint-quantization); max-len 4096 is --max-model-len 4096.")
	assert.NotContains(t, some, "fp8 KV")
	assert.NotContains(t, some, "awq")
	alone := Report{Columns: []Column{col("as given")}}.Render(200)
	assert.NotContains(t, alone, "What-ifs")
	assert.Contains(t, alone, "Requests are counted at their largest")
}
