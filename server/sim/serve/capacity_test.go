package serve

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

func TestCapacityReportFitsTheWorkload(t *testing.T) {
	w := capacity.Workload{PromptTokens: 384, OutputTokens: 128}
	cases := []struct {
		name    string
		args    []string
		w       capacity.Workload
		fit     int // requests of w the KV cache holds
		running int
		limiter string
	}{
		{"KV-bound", []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--gpu-memory-utilization", "0.9", "--max-model-len", "8192"}, w,
			59, 59, capacity.LimitKV},
		{"max-num-seqs-bound", []string{"Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"}, w, 3103, 256, capacity.LimitSeqs},
		{"fits easily", []string{"Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "H100", "--max-num-seqs", "64"}, capacity.Workload{PromptTokens: 100, OutputTokens: 28},
			0, 64, capacity.LimitSeqs},
	}
	for _, c := range cases {
		r, err := CapacityReport(c.args, emptyEnv, c.w)
		require.NoError(t, err, c.name)
		as := r.Columns[0]
		assert.Equal(t, "as given", as.Name)
		assert.Empty(t, as.Refused, c.name)
		if c.fit > 0 {
			assert.Equal(t, c.fit, as.Fit.ByKV, c.name)
		} else {
			assert.Greater(t, as.Fit.ByKV, 100*c.running, "%s: the KV cache holds far more than may run", c.name)
		}
		assert.Equal(t, c.running, as.Fit.Concurrency, c.name)
		assert.Equal(t, c.limiter, as.Fit.Limiter, c.name)
		assert.Equal(t, (c.w.Tokens()+15)/16, as.Fit.BlocksPerRequest, c.name)
		// The blocks and tokens are the ones vLLM logs for this setting.
		p, err := Prepare(c.args, emptyEnv)
		require.NoError(t, err)
		assert.Equal(t, p.Capacity().KVCacheTokens, as.KVTokens, c.name)
		assert.Equal(t, p.Capacity().NumGPUBlocks-1, as.Limits.NumBlocks, "%s: less vLLM's null block", c.name)
		m := as.Memory
		assert.InDelta(t, m.RequestedGiB, m.WeightsGiB+m.ActivationGiB+m.NonTorchGiB+m.CUDAGraphGiB+m.KVGiB, 1e-6, "%s: the bar adds up", c.name)
	}
}

func TestCapacityReportWhatIfs(t *testing.T) {
	w := capacity.Workload{PromptTokens: 384, OutputTokens: 128}
	r, err := CapacityReport([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--gpu-memory-utilization", "0.85"}, emptyEnv, w)
	require.NoError(t, err)
	names := []string{}
	for _, c := range r.Columns {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"as given", "fp8 KV", "awq", "gptq", "fp8 weights", "max-len 512"}, names)
	assert.Contains(t, r.Columns[0].Refused, "To serve at least one request with the model's max seq len (131072)", "the full context does not fit: vLLM refuses")
	last := r.Columns[len(r.Columns)-1]
	assert.Empty(t, last.Refused, "a context that holds the workload starts")
	assert.Equal(t, capacity.LimitKV, last.Fit.Limiter)
	assert.Greater(t, last.Fit.ByKV, 0)

	r, err = CapacityReport([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--gpu-memory-utilization", "0.9", "--max-model-len", "8192"}, emptyEnv, w)
	require.NoError(t, err)
	by := map[string]capacity.Column{}
	for _, c := range r.Columns {
		by[c.Name] = c
	}
	assert.InDelta(t, 2*by["as given"].Fit.ByKV, by["fp8 KV"].Fit.ByKV, 2, "an FP8 KV cache holds twice the tokens (each count floored)")
	assert.Greater(t, by["awq"].Fit.ByKV, 3*by["as given"].Fit.ByKV, "4-bit weights leave room for the KV cache")

	// Requests longer than --max-model-len: none runs as given, and the what-if is a context
	// that holds them.
	r, err = CapacityReport([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--max-model-len", "256"}, emptyEnv, w)
	require.NoError(t, err)
	last = r.Columns[len(r.Columns)-1]
	assert.Equal(t, capacity.LimitLength, r.Columns[0].Fit.Limiter)
	assert.Equal(t, "max-len 512", last.Name)
	assert.Equal(t, capacity.LimitKV, last.Fit.Limiter, "the longer context runs them")

	_, err = CapacityReport([]string{"no/such-model"}, emptyEnv, w)
	assert.Error(t, err, "a model the simulator does not know is a bad command line")
}

func TestPrintCapacityCommand(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--print-capacity", "--random-input-len", "384"}, &out, &errb, emptyEnv)
	assert.Equal(t, 0, code, errb.String())
	assert.Contains(t, out.String(), "a request of 384 prompt + 128 output tokens")
	assert.Contains(t, out.String(), "limits first")
	assert.NotContains(t, out.String(), "does not simulate")
	out.Reset()
	code = Main(context.Background(), []string{"Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--max-cudagraph-capture-size", "64", "--print-capacity"}, &out, &errb, emptyEnv)
	assert.Equal(t, 0, code, errb.String())
	assert.Contains(t, strings.Join(strings.Fields(out.String()), " "), "vllmtop sim accepts but does not simulate: --max-cudagraph-capture-size; the plan above is made without them",
		"a flag that would change the plan is named under it")
	for _, line := range strings.Split(out.String(), "\n") {
		assert.LessOrEqual(t, len(line), 100, "the note wraps at the terminal's width: %q", line)
	}
	out.Reset()
	code = Main(context.Background(), []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4", "--gpu-memory-utilization", "0.85", "--print-capacity"}, &out, &errb, emptyEnv)
	assert.Equal(t, 1, code, "vLLM would refuse the setting as given")
	assert.True(t, strings.Contains(out.String(), "REFUSED as given"))
	errb.Reset()
	code = Main(context.Background(), []string{"--random-input-len", "384"}, &out, &errb, emptyEnv)
	assert.Equal(t, 2, code)
	assert.Contains(t, errb.String(), "only with --print-capacity")
	errb.Reset()
	code = Main(context.Background(), []string{"--print-capacity", "--random-input-len", "9999999999"}, &out, &errb, emptyEnv)
	assert.Equal(t, 2, code, "bench's bound on random lengths")
	assert.Contains(t, errb.String(), "at most 16777216 each")
}

// Piped output takes an exported COLUMNS, else 100 columns.
func TestPrintCapacityWidthWhenPiped(t *testing.T) {
	widest := func(env map[string]string) int {
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4", "--print-capacity"}, &out, &errb, func(k string) string { return env[k] })
		require.Equal(t, 0, code, errb.String())
		w := 0
		for _, l := range strings.Split(out.String(), "\n") {
			w = max(w, len([]rune(l)))
		}
		return w
	}
	assert.Equal(t, 100, widest(nil), "the bar spans the width")
	assert.LessOrEqual(t, widest(map[string]string{"COLUMNS": "72"}), 72)
	assert.Equal(t, 100, widest(map[string]string{"COLUMNS": "250"}), "at most 100")
	assert.Equal(t, 100, widest(map[string]string{"COLUMNS": "nonsense"}))
}

func TestPrintCapacityUsesTheReleaseDefaultUtilization(t *testing.T) {
	for version, util := range map[string]string{"0.17": "0.9", sim.DefaultVersion: "0.92"} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"Qwen/Qwen3-0.6B", "--sim-gpu", "H100", "--sim-vllm-version", version, "--print-capacity"}, &out, &errb, emptyEnv)
		assert.Equal(t, 0, code, errb.String())
		assert.Contains(t, out.String(), "Qwen/Qwen3-0.6B on H100-SXM-80GB, --gpu-memory-utilization "+util+":", version)
	}
}

// A setting vLLM refuses still names its GPU and utilisation as resolved, and the refusal keeps
// the longest max_model_len that would fit; the blocks row is the pool vLLM logs.
func TestPrintCapacityOfARefusedSetting(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "4090", "--print-capacity"}, &out, &errb, emptyEnv)
	assert.Equal(t, 1, code, errb.String())
	text := out.String()
	assert.Contains(t, text, "meta-llama/Llama-3.1-8B-Instruct on RTX-4090, --gpu-memory-utilization 0.92:")
	flat := strings.Join(strings.Fields(text), " ")
	assert.Regexp(t, `REFUSED as given: ValueError: To serve at least one request .* the estimated maximum model length is \d+\.`, flat)
	for _, l := range strings.Split(text[strings.Index(text, "REFUSED as given"):], "\n") {
		assert.LessOrEqual(t, len(l), 100, "%q", l)
	}

	p, err := Prepare([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "H100"}, emptyEnv)
	require.NoError(t, err)
	out.Reset()
	require.Equal(t, 0, Main(context.Background(), []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "H100", "--print-capacity"}, &out, &errb, emptyEnv))
	assert.Regexp(t, `KV blocks +`+thousandsRE(p.Capacity().NumGPUBlocks)+` x 16`, out.String(), "num_gpu_blocks as logged")
}

func thousandsRE(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func TestPrintCapacityNamesDataParallelEngines(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "H100"}
	p, err := Prepare(args, emptyEnv)
	require.NoError(t, err)
	require.Equal(t, 0, Main(context.Background(), append(args, "-dp", "2", "--print-capacity"), &out, &errb, emptyEnv), errb.String())
	assert.Contains(t, out.String(), "Data parallel: 2 engines, each with the plan below and its own KV cache\n  ("+
		thousandsRE(2*p.Capacity().KVCacheTokens)+" tokens in all)")
}

// TestCapacityReportShowsTheGraphsWhereVLLMPutsThem: 0.33 reserves the CUDA-graph estimate in
// the budget (the bar still adds up to it); 0.26's V2 runner reserves none, so the graphs the
// log reports come out of the memory above it; --enforce-eager has none.
func TestCapacityReportShowsTheGraphsWhereVLLMPutsThem(t *testing.T) {
	w := capacity.Workload{PromptTokens: 384, OutputTokens: 128}
	args := []string{"Qwen/Qwen3-8B", "--sim-gpu", "H100-SXM-80GB"}
	now, err := CapacityReport(args, emptyEnv, w)
	require.NoError(t, err)
	m := now.Columns[0].Memory
	assert.InDelta(t, 0.44, m.CUDAGraphGiB, 0.005)
	assert.Zero(t, m.GraphsOutsideGiB)
	assert.Contains(t, now.Render(100), "G graphs 0.44  K KV ")

	old, err := CapacityReport(append(args, "--sim-vllm-version", "0.26"), emptyEnv, w)
	require.NoError(t, err)
	m = old.Columns[0].Memory
	assert.Zero(t, m.CUDAGraphGiB)
	assert.InDelta(t, 0.44, m.GraphsOutsideGiB, 0.005)
	assert.Contains(t, old.Render(160), "G graphs 0.44 above the budget  K KV ")
	for _, line := range strings.Split(old.Render(80), "\n") {
		assert.LessOrEqual(t, len(line), 80, "the plan fits 80 columns: %q", line)
	}
	staged, err := CapacityReport([]string{"Qwen/Qwen2.5-14B-Instruct", "--sim-gpu", "A10G", "-tp", "2", "-pp", "2", "--max-model-len", "4096"}, emptyEnv, w)
	require.NoError(t, err)
	require.NotEmpty(t, staged.Layout)
	out := staged.Render(80)
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, len(line), 80, "the parallel layout fits 80 columns too: %q", line)
	}
	assert.Contains(t, strings.Join(strings.Fields(out), " "), "stage 1: layers 24-47 (24, LM head and sampler)")

	eager, err := CapacityReport(append(args, "--enforce-eager"), emptyEnv, w)
	require.NoError(t, err)
	m = eager.Columns[0].Memory
	assert.Zero(t, m.CUDAGraphGiB+m.GraphsOutsideGiB)
	assert.Greater(t, eager.Columns[0].KVTokens, now.Columns[0].KVTokens)
}

// Where the cache's whole blocks hold less than one request of the full context, which vLLM
// starts with (its check counts bytes), the plan says that request does not fit.
func TestPrintCapacityNotesLessThanOneFullRequest(t *testing.T) {
	w := capacity.Workload{PromptTokens: 1024, OutputTokens: 128}
	r, err := CapacityReport([]string{"google/gemma-3-27b-it", "--sim-gpu", "H100", "--sim-vllm-version", "0.26"}, emptyEnv, w)
	require.NoError(t, err)
	require.Empty(t, r.Columns[0].Refused, "vLLM starts this one")
	require.Less(t, r.Columns[0].MaxConcAtML, 1.0)
	assert.Contains(t, strings.Join(r.Notes, "\n"), "a request that long does not fit")

	r, err = CapacityReport([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "H100"}, emptyEnv, w)
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(r.Notes, "\n"), "does not fit")
}

// A config whose checkpoint declares an FP8 KV cache is planned with it, and the plan says so;
// the fp8 KV what-if, the same setting, is left out.
func TestPrintCapacityNamesTheCheckpointsKVCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
		"intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
		"vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
		"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}},
		"kv_cache_scheme": {"num_bits": 8, "type": "float"}}}`), 0o600))
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"acme/llama-kv", "--sim-model-config", path, "--sim-gpu", "H100", "--max-model-len", "8192", "--print-capacity"}, &out, &errb, emptyEnv)
	require.Equal(t, 0, code, errb.String())
	text := strings.Join(strings.Fields(out.String()), " ")
	assert.Contains(t, text, "The checkpoint declares an FP8 KV cache, which vLLM takes: the cache is fp8 (--kv-cache-dtype bfloat16 keeps it in the model's dtype).")
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "as given") {
			assert.NotContains(t, line, "fp8 KV", "no what-if column repeats the setting as given")
		}
	}

	// Before 0.21 a 16-bit flag did not keep it; where the setting is refused, the note stays.
	out.Reset()
	code = Main(context.Background(), []string{"acme/llama-kv", "--sim-model-config", path, "--sim-gpu", "H100", "--max-model-len", "8192",
		"--sim-vllm-version", "0.20.0", "--kv-cache-dtype", "bfloat16", "--print-capacity"}, &out, &errb, emptyEnv)
	require.Equal(t, 0, code, errb.String())
	assert.Contains(t, strings.Join(strings.Fields(out.String()), " "), "the cache is fp8 (before 0.21 no 16-bit --kv-cache-dtype keeps the model's dtype)")
	out.Reset()
	code = Main(context.Background(), []string{"acme/llama-kv", "--sim-model-config", path, "--sim-gpu", "A10G", "--max-model-len", "8192",
		"--sim-flashinfer", "absent", "--print-capacity"}, &out, &errb, emptyEnv)
	assert.Equal(t, 1, code, "the fp8 cache reaches Triton on an A10G without FlashInfer")
	text = strings.Join(strings.Fields(out.String()), " ")
	assert.Contains(t, text, "REFUSED as given")
	assert.Contains(t, text, "The checkpoint declares an FP8 KV cache, which vLLM takes: the cache is fp8")
}

// A setting vLLM refuses while it builds or loads the model never ran its profile: its plan
// has no activation peak or graphs and its column no KV figure, whichever refusal came first
// (the weights that do not fit, or fp8 KV on a T4's attention backend); a refusal for want of
// KV memory keeps what the KV cache was left.
func TestARefusalBeforeTheProfileHasNoProfileFigures(t *testing.T) {
	w := capacity.Workload{PromptTokens: 1024, OutputTokens: 128}
	for _, extra := range [][]string{nil, {"--kv-cache-dtype", "fp8"}} {
		r, err := CapacityReport(append([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "T4"}, extra...), emptyEnv, w)
		require.NoError(t, err)
		c := r.Columns[0]
		require.NotEmpty(t, c.Refused, "%v", extra)
		assert.True(t, c.RefusedBeforeKV, "%v", extra)
		assert.Zero(t, c.Memory.ActivationGiB, "%v", extra)
		assert.Zero(t, c.Memory.CUDAGraphGiB, "%v", extra)
		assert.Greater(t, c.Memory.WeightsGiB, c.Memory.TotalGiB, "%v: the weights alone are over the card", extra)
	}
	r, err := CapacityReport([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "4090"}, emptyEnv, w)
	require.NoError(t, err)
	c := r.Columns[0]
	require.NotEmpty(t, c.Refused, "max_model_len does not fit")
	assert.False(t, c.RefusedBeforeKV)
	assert.Positive(t, c.Memory.ActivationGiB, "the profile ran")
	assert.Positive(t, c.Memory.KVGiB)
}
