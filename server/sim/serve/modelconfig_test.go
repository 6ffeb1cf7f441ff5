package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim/capacity"
)

const v2LiteConfig = "../../../testdata/hf-configs/deepseek-v2-lite/config.json"

// TestSimModelConfig: --sim-model-config sizes a model the catalogue lacks, named by the
// command line or by the config's directory.
func TestSimModelConfig(t *testing.T) {
	w := capacity.Workload{PromptTokens: 1024, OutputTokens: 128}
	r, err := CapacityReport([]string{"--sim-model-config", v2LiteConfig, "--sim-gpu", "NVIDIA H100 80GB HBM3", "--max-model-len", "8192"}, noEnv, w)
	require.NoError(t, err)
	assert.Equal(t, "deepseek-v2-lite", r.Model)
	require.Empty(t, r.Columns[0].Refused)
	assert.Positive(t, r.Columns[0].KVTokens)

	r, err = CapacityReport([]string{"acme/Lite-Clone", "--sim-model-config", v2LiteConfig, "--sim-gpu", "A100-80GB", "--max-model-len", "8192"}, noEnv, w)
	require.NoError(t, err)
	assert.Equal(t, "acme/Lite-Clone", r.Model)

	bad := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"num_hidden_layers": "many"}`), 0o600))
	_, err = Prepare([]string{"--sim-model-config", bad}, noEnv)
	var cfgErr *ConfigError
	require.True(t, errors.As(err, &cfgErr), "%v", err)
	assert.Contains(t, err.Error(), "--sim-model-config "+bad)
	assert.NotContains(t, err.Error(), "\n")
	assert.Equal(t, 2, ExitCode(err))

	// A model's name where a config file goes (bench's --sim-model, read as an abbreviation
	// as vLLM's benchmark parser reads one) says so.
	_, err = Prepare([]string{"--sim-model-config", "acme/Not-A-File"}, noEnv)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a model's name goes in --model")
}

// TestModelFromHFCache: a model the catalogue lacks is sized from the local Hugging Face
// cache when it is there, and is unknown when it is not.
func TestModelFromHFCache(t *testing.T) {
	data, err := os.ReadFile("../../../testdata/hf-configs/qwen3-235b-a22b-fp8/config.json")
	require.NoError(t, err)
	home := t.TempDir()
	snap := filepath.Join(home, "hub", "models--acme--Qwen3-Big", "snapshots", strings.Repeat("0", 40))
	require.NoError(t, os.MkdirAll(snap, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(snap, "config.json"), data, 0o600))
	env := func(k string) string {
		if k == "HF_HOME" {
			return home
		}
		return ""
	}
	args := []string{"acme/Qwen3-Big", "--sim-gpu", "H200", "--tensor-parallel-size", "4", "--max-model-len", "32768"}
	p, err := Prepare(args, env)
	require.NoError(t, err)
	assert.Equal(t, "acme/Qwen3-Big", p.Model())
	assert.Positive(t, p.Capacity().KVCacheTokens)

	_, err = Prepare(args, noEnv)
	require.ErrorContains(t, err, `unknown model "acme/Qwen3-Big"`)
}

// TestUnknownGPUSaysHowToAddOne: the error lists the known GPUs and the file format.
func TestUnknownGPUSaysHowToAddOne(t *testing.T) {
	_, err := Prepare([]string{"--sim-gpu", "Z9000"}, noEnv)
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{`unknown GPU "Z9000"`, "known GPUs: ", "T4", "MI300X", "RTX-5090", "--sim-profiles FILE",
		`"memory_gib"`, "docs/catalogue.md#adding-a-gpu"} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "\n")
	assert.Equal(t, 2, ExitCode(err))
}

// A config without --model is named after its Hugging Face cache entry, else its directory
// (also when the path is a bare config.json in the working directory), and a file of another
// name after itself.
func TestConfigModelName(t *testing.T) {
	assert.Equal(t, "Qwen/Qwen3-8B", configModelName("/hf/hub/models--Qwen--Qwen3-8B/snapshots/abc/config.json"))
	assert.Equal(t, "my-model", configModelName("/tmp/my-model/config.json"))
	assert.Equal(t, "llama", configModelName("cfg/llama.json"))
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Base(wd), configModelName("config.json"))
}

// --sim-model-config takes a model's directory, as vLLM does, and reads its config.json.
func TestModelConfigDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny-llama")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures": ["LlamaForCausalLM"],
		"hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22, "num_attention_heads": 32,
		"num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}`), 0o644))
	p, err := Prepare([]string{"--sim-model-config", dir, "--sim-gpu", "L4"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, "tiny-llama", p.Model())
	assert.Positive(t, p.Capacity().KVCacheTokens)
}

// A catalogue name sized from a config file says so under the plan.
func TestCapacityReportNamesTheConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llama.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 2048,
		"intermediate_size": 5632, "num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4,
		"vocab_size": 32000, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}`), 0o644))
	r, err := CapacityReport([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-model-config", path, "--sim-gpu", "L4"}, noEnv, capacity.Workload{PromptTokens: 512, OutputTokens: 128})
	require.NoError(t, err)
	assert.Equal(t, "meta-llama/Llama-3.1-8B-Instruct", r.Model)
	assert.Contains(t, r.Notes, "The model is sized from "+path+", not from the catalogue.")
	r, err = CapacityReport([]string{"meta-llama/Llama-3.1-8B-Instruct", "--sim-gpu", "L4"}, noEnv, capacity.Workload{PromptTokens: 512, OutputTokens: 128})
	require.NoError(t, err)
	for _, n := range r.Notes {
		assert.NotContains(t, n, "sized from")
	}
}
