package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

// vLLM's spellings of a command's own flags work on vllmtop's command line, and nothing else
// is touched: unknown flags, values, and what follows --.
func TestVLLMArgsOnVllmtopCommands(t *testing.T) {
	root := newRoot(&env{getenv: os.Getenv})
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"--tensor_parallel_size", "2", "--max_concurrency=8"}, []string{"--tensor-parallel-size", "2", "--max-concurrency=8"}},
		{[]string{"--speculative-config.method", "ngram", "--speculative_config.num_speculative_tokens=2", "--enforce_eager"},
			[]string{"--enforce-eager", "--speculative-config", `{"method":"ngram","num_speculative_tokens":2}`}},
		{[]string{"--sim-args", "--tensor_parallel_size 2 --x.y 1", "--no_such_flag"}, []string{"--sim-args", "--tensor_parallel_size 2 --x.y 1", "--no_such_flag"}},
		{[]string{"bench", "--random_input_len", "32", "--num_prompts", "5"}, []string{"bench", "--random-input-len", "32", "--num-prompts", "5"}},
		{[]string{"bench", "--random-range-ratio.input", "0.3", "--random-mm-limit-mm-per-prompt.image", "3"},
			[]string{"bench", "--random-range-ratio", `{"input":0.3}`, "--random-mm-limit-mm-per-prompt", `{"image":3}`}},
		{[]string{"--", "vllm", "serve", "m", "--tensor_parallel_size", "2"}, []string{"--", "vllm", "serve", "m", "--tensor_parallel_size", "2"}},
	} {
		assert.Equal(t, tc.want, vllmArgs(root, tc.in), tc.in)
	}
}
