package serve

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestConfigFileFlagsAndPrecedence(t *testing.T) {
	path := writeConfig(t, `
model: Qwen/Qwen3-0.6B
max_num_seqs: 7
max-model-len: 8k
served_model_name: [first, second]
enable_prefix_caching: false
enforce-eager: true
port: 9001
speculative_config:
  method: ngram
  num_speculative_tokens: 3
`)
	o, err := ParseArgs([]string{"--config", path, "--max-num-seqs", "9"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, 9, o.Engine.MaxNumSeqs, "the command line wins")
	assert.Equal(t, 8000, o.Engine.MaxModelLen, "dashes or underscores")
	assert.Equal(t, []string{"first", "second"}, o.ServedModelNames, "a list repeats the flag")
	assert.Equal(t, 9001, o.Port)
	require.NotNil(t, o.Engine.Speculative, "a mapping becomes the flag's JSON")
	assert.Equal(t, "ngram", o.Engine.Speculative.Method)
	assert.Equal(t, 3, o.Engine.Speculative.NumSpeculativeTokens)

	o, err = ParseArgs([]string{"--config=" + path, "--served-model-name", "cli"}, noEnv)
	require.NoError(t, err)
	assert.Equal(t, []string{"cli"}, o.ServedModelNames, "a list flag on the command line replaces the file's")
	assert.Equal(t, 7, o.Engine.MaxNumSeqs)

	_, err = ParseArgs([]string{"--config", writeConfig(t, "max_num_seqs: 4\nbogus_flag: 1\n")}, noEnv)
	assert.EqualError(t, err, "unrecognized arguments: --bogus-flag=1", "a key that is no flag is an unknown argument, as in vLLM")
}

func TestHostileConfigFilesAreBounded(t *testing.T) {
	deep := "a: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n"
	var bomb strings.Builder
	bomb.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		bomb.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				bomb.WriteString(", ")
			}
			bomb.WriteString("*a" + string(rune('0'+i-1)))
		}
		bomb.WriteString("]\n")
	}
	cases := map[string]string{
		"deep":      deep,
		"aliases":   bomb.String(),
		"too large": "a: " + strings.Repeat("x", 1<<20+10) + "\n",
		"not YAML":  "a: [unclosed\n",
		"no map":    "- a\n- b\n",
		"nested":    "served_model_name: [[a]]\n",
	}
	for name, text := range cases {
		path := writeConfig(t, text)
		start := time.Now()
		_, err := ParseArgs([]string{"--config", path}, noEnv)
		require.Error(t, err, name)
		assert.ErrorAs(t, err, new(*UsageError), name)
		assert.Contains(t, err.Error(), "argument --config: "+path+": ", name)
		assert.NotContains(t, err.Error(), "\n", "%s: one line", name)
		assert.Less(t, time.Since(start), 5*time.Second, name)
	}
	_, err := ParseArgs([]string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, noEnv)
	assert.ErrorContains(t, err, "none.yaml: no such file or directory")
	_, err = ParseArgs([]string{"--config"}, noEnv)
	assert.EqualError(t, err, "argument --config: expected one argument")
}

type modelList struct {
	Data []struct {
		ID          string  `json:"id"`
		Root        string  `json:"root"`
		Parent      *string `json:"parent"`
		MaxModelLen *int    `json:"max_model_len"`
	} `json:"data"`
}

func TestLoRAAdaptersServedAndCounted(t *testing.T) {
	s := startServer(t, "--enable-lora", "--max-loras", "2", "--max-lora-rank", "64",
		"--lora-modules", "sql=/adapters/sql", `{"name": "chat", "path": "/adapters/chat", "base_model_name": "Qwen/Qwen3-0.6B"}`)
	_, body := do(t, "GET", s.URL+"/v1/models", "")
	var ml modelList
	require.NoError(t, json.Unmarshal([]byte(body), &ml))
	require.Len(t, ml.Data, 3)
	assert.Equal(t, "Qwen/Qwen3-0.6B", ml.Data[0].ID)
	assert.NotNil(t, ml.Data[0].MaxModelLen)
	for i, want := range [][2]string{{"sql", "/adapters/sql"}, {"chat", "/adapters/chat"}} {
		d := ml.Data[i+1]
		assert.Equal(t, want[0], d.ID)
		assert.Equal(t, want[1], d.Root)
		require.NotNil(t, d.Parent)
		assert.Equal(t, "Qwen/Qwen3-0.6B", *d.Parent)
		assert.Nil(t, d.MaxModelLen)
	}

	_, body = do(t, "GET", s.URL+"/metrics", "")
	assert.Contains(t, body, "# TYPE vllm:lora_requests_info gauge")
	assert.Contains(t, body, `vllm:lora_requests_info{max_lora="2",running_lora_adapters="",waiting_lora_adapters=""} `)

	code, body := do(t, "POST", s.URL+"/v1/completions", `{"model":"sql","prompt":"select","max_tokens":3}`)
	require.Equal(t, 200, code, body)
	assert.Contains(t, body, `"model":"sql"`)
	_, body = do(t, "GET", s.URL+"/metrics", "")
	assert.Contains(t, body, `vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql",waiting_lora_adapters=""} `,
		"the adapter was in the running batch")
	assert.Contains(t, body, `vllm:request_success_total{engine="0",finished_reason="length",model_name="Qwen/Qwen3-0.6B"} 1.0`,
		"engine metrics keep the base model's name")

	code, _ = do(t, "POST", s.URL+"/v1/completions", `{"model":"nope","prompt":"x"}`)
	assert.Equal(t, 404, code)
	_, body = do(t, "GET", startServer(t).URL+"/metrics", "")
	assert.NotContains(t, body, "lora_requests_info", "only with --enable-lora")
	_, err := ParseArgs([]string{"--lora-modules", "a=/b"}, noEnv)
	assert.EqualError(t, err, "argument --lora-modules: needs --enable-lora")
	_, err = ParseArgs([]string{"--enable-lora", "--lora-modules", "nopath"}, noEnv)
	assert.ErrorContains(t, err, "argument --lora-modules: invalid format")
}

func TestSchedulingPolicyFlag(t *testing.T) {
	s := startServer(t, "--scheduling-policy", "priority")
	code, body := do(t, "POST", s.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"priority":-5}`)
	assert.Equal(t, 200, code, body)
	assert.Equal(t, "priority", s.setup.SchedulingPolicy, "the engine orders by priority")
	_, err := ParseArgs([]string{"--scheduling-policy", "lifo"}, noEnv)
	assert.EqualError(t, err, "argument --scheduling-policy: invalid choice: 'lifo' (choose from 'fcfs', 'priority')")
}

func TestPromptTokensDetails(t *testing.T) {
	s := startServer(t, "--enable-prompt-tokens-details")
	prompt := strings.TrimSpace(strings.Repeat("one two three four ", 20))
	var cached []int
	for range 2 {
		code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"`+prompt+`","max_tokens":2}`)
		require.Equal(t, 200, code, body)
		var r struct {
			Usage struct {
				Details *struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &r))
		require.NotNil(t, r.Usage.Details, body)
		cached = append(cached, r.Usage.Details.Cached)
	}
	assert.Zero(t, cached[0])
	assert.Equal(t, 64, cached[1], "the second request finds the first's full blocks (80 tokens: 5 blocks, the last one held back)")
	_, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"x","max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`)
	assert.Contains(t, body, `"prompt_tokens_details":{"cached_tokens":0}`, "streamed usage too")
	_, body = do(t, "POST", startServer(t).URL+"/v1/completions", `{"prompt":"x","max_tokens":2}`)
	assert.NotContains(t, body, "prompt_tokens_details")
}

func TestObservabilityFlags(t *testing.T) {
	s := startServer(t, "--kv-cache-metrics", "--kv-cache-metrics-sample", "0.5", "--enable-mfu-metrics",
		"--custom-histogram-buckets", `{"request_latency": [0.01, 0.05, 0.1], "iteration_tokens": [4, 64]}`)
	code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"a b c","max_tokens":4,"ignore_eos":true}`)
	require.Equal(t, 200, code, body)
	_, body = do(t, "GET", s.URL+"/metrics", "")
	for _, fam := range []string{"vllm:kv_block_lifetime_seconds", "vllm:kv_block_idle_before_evict_seconds", "vllm:kv_block_reuse_gap_seconds"} {
		assert.Contains(t, body, "# TYPE "+fam+" histogram")
		assert.Contains(t, body, fam+`_bucket{engine="0",le="1800.0",model_name="Qwen/Qwen3-0.6B"} 0.0`)
	}
	assert.Contains(t, body, `vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.05",model_name="Qwen/Qwen3-0.6B"}`)
	assert.NotContains(t, body, `vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",`)
	assert.Contains(t, body, `vllm:iteration_tokens_total_bucket{engine="0",le="4.0",model_name="Qwen/Qwen3-0.6B"}`)
	for _, c := range []string{"flops", "read_bytes", "write_bytes"} {
		assert.Positive(t, metricValue(t, s.URL, "vllm:estimated_"+c+"_per_gpu_total{"), c)
	}

	plain := startServer(t)
	do(t, "POST", plain.URL+"/v1/completions", `{"prompt":"a b c","max_tokens":4}`)
	_, body = do(t, "GET", plain.URL+"/metrics", "")
	assert.NotContains(t, body, "kv_block_lifetime")
	assert.Zero(t, metricValue(t, plain.URL, "vllm:estimated_flops_per_gpu_total{"), "only with --enable-mfu-metrics")

	for _, bad := range []string{`{"latency": [1]}`, `{"request_latency": [1, 0.5]}`, `{"request_latency": [-1]}`, `[1]`} {
		_, err := ParseArgs([]string{"--custom-histogram-buckets", bad}, noEnv)
		assert.ErrorContains(t, err, "argument --custom-histogram-buckets: ", bad)
	}
}

func TestShowHiddenMetricsForVersion(t *testing.T) {
	has := func(args ...string) bool {
		_, body := do(t, "GET", startServer(t, args...).URL+"/metrics", "")
		return strings.Contains(body, "# TYPE vllm:gpu_cache_usage_perc gauge")
	}
	assert.True(t, has("--sim-vllm-version", "0.10.1"), "deprecated, still shown")
	assert.False(t, has("--sim-vllm-version", "0.11.0"), "hidden in 0.11")
	assert.True(t, has("--sim-vllm-version", "0.11.0", "--show-hidden-metrics-for-version", "0.10"), "brought back")
	assert.False(t, has("--sim-vllm-version", "0.11.0", "--show-hidden-metrics-for-version", "0.9"), "only the previous minor release")
	assert.False(t, has("--sim-vllm-version", "0.12.0", "--show-hidden-metrics-for-version", "0.11"), "removed in 0.12")
	_, body := do(t, "GET", startServer(t, "--sim-vllm-version", "0.12.0", "--show-hidden-metrics-for-version", "0.11").URL+"/metrics", "")
	assert.Contains(t, body, "# TYPE vllm:time_per_output_token_seconds histogram", "0.12 hid TPOT, deprecated in 0.11")
}

func TestNotSimulatedFlagsListedAndLoggedOnce(t *testing.T) {
	help := Help()
	assert.Contains(t, help, "Accepted but not simulated")
	for _, name := range []string{"seed", "trust-remote-code", "max-lora-rank"} {
		assert.Contains(t, help, "--"+name)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var logs syncBuffer
	inst, err := Start(context.Background(), []string{"--sim-startup-seconds", "0", "--seed", "4", "--trust-remote-code"}, noEnv,
		WithListener(ln), WithLogs(&logs, &logs), WithGrace(time.Millisecond))
	require.NoError(t, err)
	require.Eventually(t, inst.Ready, 5*time.Second, time.Millisecond)
	require.NoError(t, inst.Stop())
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "accepts but does not simulate"), out)
	assert.Contains(t, out, "WARNING")
	assert.Contains(t, out, "vllmtop sim accepts but does not simulate: --seed, --trust-remote-code\n")
}

func TestKVResidencyOfEvictedBlocks(t *testing.T) {
	// A cache of a few blocks: distinct prompts evict each other's cached blocks.
	s := startServer(t, "--kv-cache-metrics", "--kv-cache-metrics-sample", "1", "--num-gpu-blocks-override", "40", "--max-model-len", "256")
	for i := range 12 {
		prompt := strings.TrimSpace(strings.Repeat("w"+string(rune('a'+i))+" ", 64))
		code, body := do(t, "POST", s.URL+"/v1/completions", `{"prompt":"`+prompt+`","max_tokens":4,"ignore_eos":true}`)
		require.Equal(t, 200, code, body)
	}
	lifetimes := metricValue(t, s.URL, "vllm:kv_block_lifetime_seconds_count{")
	assert.Positive(t, lifetimes, "sampled blocks were evicted")
	assert.Equal(t, lifetimes, metricValue(t, s.URL, "vllm:kv_block_idle_before_evict_seconds_count{"), "one idle time per eviction")
	assert.Positive(t, metricValue(t, s.URL, "vllm:kv_block_lifetime_seconds_sum{"), "on simulated time")

	none := startServer(t, "--kv-cache-metrics", "--kv-cache-metrics-sample", "0.000001", "--num-gpu-blocks-override", "40", "--max-model-len", "256")
	for i := range 12 {
		prompt := strings.TrimSpace(strings.Repeat("w"+string(rune('a'+i))+" ", 64))
		do(t, "POST", none.URL+"/v1/completions", `{"prompt":"`+prompt+`","max_tokens":4,"ignore_eos":true}`)
	}
	assert.Less(t, metricValue(t, none.URL, "vllm:kv_block_lifetime_seconds_count{"), lifetimes, "a smaller sample records fewer")
	_, err := ParseArgs([]string{"--kv-cache-metrics-sample", "0"}, noEnv)
	assert.EqualError(t, err, "argument --kv-cache-metrics-sample: must be in (0, 1], got 0")
}
