package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEditArgs(t *testing.T) {
	serve := []string{"vllm", "serve", "Qwen/Qwen3-0.6B"}
	tests := []struct {
		name  string
		args  []string
		edits []ArgEdit
		want  []string
	}{
		{"set appends when absent", serve, []ArgEdit{Set("--gpu-memory-utilization", "0.8")},
			[]string{"vllm", "serve", "Qwen/Qwen3-0.6B", "--gpu-memory-utilization", "0.8"}},
		{"set replaces --flag value in place",
			[]string{"vllm", "serve", "m", "--gpu-memory-utilization", "0.5", "--port", "8001"},
			[]ArgEdit{Set("--gpu-memory-utilization", "0.9")},
			[]string{"vllm", "serve", "m", "--gpu-memory-utilization", "0.9", "--port", "8001"}},
		{"set replaces --flag=value",
			[]string{"vllm", "serve", "m", "--gpu-memory-utilization=0.5", "--port=8001"},
			[]ArgEdit{Set("--gpu-memory-utilization", "0.9")},
			[]string{"vllm", "serve", "m", "--gpu-memory-utilization", "0.9", "--port=8001"}},
		{"set replaces the underscore spelling",
			[]string{"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--max_num_seqs", "64"},
			[]ArgEdit{Set("--max-num-seqs", "128")},
			[]string{"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--max-num-seqs", "128"}},
		{"set replaces a short alias",
			[]string{"vllm", "serve", "m", "-tp", "4"},
			[]ArgEdit{Set("--tensor-parallel-size", "2")},
			[]string{"vllm", "serve", "m", "--tensor-parallel-size", "2"}},
		{"set removes duplicates and keeps the first position",
			[]string{"vllm", "serve", "--max-model-len", "4096", "m", "--max-model-len=8192"},
			[]ArgEdit{Set("--max-model-len", "16384")},
			[]string{"vllm", "serve", "--max-model-len", "16384", "m"}},
		{"a value that looks like a flag is attached", serve, []ArgEdit{Set("--chat-template", "-weird")},
			[]string{"vllm", "serve", "Qwen/Qwen3-0.6B", "--chat-template=-weird"}},
		{"a negative value is a value",
			[]string{"vllm", "serve", "m", "--max-model-len", "-1", "--enforce-eager"},
			[]ArgEdit{Set("--max-model-len", "auto")},
			[]string{"vllm", "serve", "m", "--max-model-len", "auto", "--enforce-eager"}},
		{"remove both forms",
			[]string{"vllm", "serve", "m", "--max-num-seqs", "64", "--port", "8001", "--max-num-seqs=32"},
			[]ArgEdit{Remove("--max-num-seqs")},
			[]string{"vllm", "serve", "m", "--port", "8001"}},
		{"remove a flag missing its value",
			[]string{"vllm", "serve", "m", "--max-num-seqs"},
			[]ArgEdit{Remove("--max-num-seqs")},
			[]string{"vllm", "serve", "m"}},
		{"remove a flag followed by another flag keeps it",
			[]string{"vllm", "serve", "m", "--max-num-seqs", "--enforce-eager"},
			[]ArgEdit{Remove("--max-num-seqs")},
			[]string{"vllm", "serve", "m", "--enforce-eager"}},
		{"remove an absent flag", serve, []ArgEdit{Remove("--max-num-seqs")}, serve},
		{"switch on", serve, []ArgEdit{Switch("--enforce-eager", true)},
			[]string{"vllm", "serve", "Qwen/Qwen3-0.6B", "--enforce-eager"}},
		{"switch off keeps the positional after it",
			[]string{"vllm", "serve", "--enforce-eager", "Qwen/Qwen3-0.6B"},
			[]ArgEdit{Switch("--enforce-eager", false)},
			[]string{"vllm", "serve", "Qwen/Qwen3-0.6B"}},
		{"switch to the negation",
			[]string{"vllm", "serve", "m", "--enable-prefix-caching"},
			[]ArgEdit{Switch("--no-enable-prefix-caching", true)},
			[]string{"vllm", "serve", "m", "--no-enable-prefix-caching"}},
		{"switch from the negation",
			[]string{"vllm", "serve", "m", "--no-enable-prefix-caching"},
			[]ArgEdit{Switch("--enable-prefix-caching", true)},
			[]string{"vllm", "serve", "m", "--enable-prefix-caching"}},
		{"tokens after -- are not flags",
			[]string{"wrapper", "--port", "1", "--", "--port", "2"},
			[]ArgEdit{Set("--port", "3")},
			[]string{"wrapper", "--port", "3", "--", "--port", "2"}},
		{"several edits in order", []string{"vllmtop", "sim", "--gpu-memory-utilization", "0.5"},
			[]ArgEdit{Set("--gpu-memory-utilization", "0.8"), Set("--max-num-seqs", "64"), Remove("--gpu-memory-utilization")},
			[]string{"vllmtop", "sim", "--max-num-seqs", "64"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := strings.Join(tc.args, " ")
			assert.Equal(t, tc.want, EditArgs(tc.args, tc.edits...))
			assert.Equal(t, before, strings.Join(tc.args, " "), "the input is not modified")
		})
	}
}

func TestArgValue(t *testing.T) {
	args := []string{"vllm", "serve", "m", "--port", "8001", "--host=::", "--port=9000", "-tp", "2", "--max-model-len", "-1"}
	for _, tc := range []struct {
		flag, want string
		ok         bool
	}{
		{"--port", "9000", true}, // the last one wins, as in argparse
		{"--host", "::", true},
		{"--tensor-parallel-size", "2", true},
		{"--max_model_len", "-1", true},
		{"--uds", "", false},
	} {
		got, ok := ArgValue(args, tc.flag)
		assert.Equal(t, tc.ok, ok, tc.flag)
		assert.Equal(t, tc.want, got, tc.flag)
	}
}

func TestEndpointFromArgs(t *testing.T) {
	tests := []struct {
		args      []string
		base      string
		socket    string
		portKnown bool
		explicit  bool
	}{
		{[]string{"vllm", "serve", "m"}, "http://127.0.0.1:8000", "", true, false},
		{[]string{"vllm", "serve", "m", "--port", "8081"}, "http://127.0.0.1:8081", "", true, true},
		{[]string{"vllm", "serve", "m", "--port=8081", "--host", "0.0.0.0"}, "http://127.0.0.1:8081", "", true, true},
		{[]string{"vllm", "serve", "m", "--host", "10.1.2.3"}, "http://10.1.2.3:8000", "", true, true},
		{[]string{"vllm", "serve", "m", "--host", "::"}, "http://[::1]:8000", "", true, true},
		{[]string{"vllm", "serve", "m", "--host", "localhost"}, "http://localhost:8000", "", true, true},
		{[]string{"vllm", "serve", "m", "--port", "8443", "--ssl-certfile", "c.pem"}, "https://127.0.0.1:8443", "", true, true},
		{[]string{"vllm", "serve", "m", "--uds", "/tmp/v.sock"}, "http://localhost", "/tmp/v.sock", true, true},
		{[]string{"vllmtop", "sim", "--port", "0"}, "http://127.0.0.1:0", "", false, true},
		{[]string{"vllm", "serve", "m", "--port", "nope"}, "http://127.0.0.1:8000", "", true, false},
	}
	for _, tc := range tests {
		ep := endpointFromArgs(tc.args)
		assert.Equal(t, tc.base, ep.base, "%v", tc.args)
		assert.Equal(t, tc.socket, ep.socket, "%v", tc.args)
		assert.Equal(t, tc.portKnown, ep.portKnown, "%v", tc.args)
		assert.Equal(t, tc.explicit, ep.explicitly, "%v", tc.args)
	}

	for in, want := range map[string]string{
		"http://0.0.0.0:8000":  "http://127.0.0.1:8000",
		"http://[::1]:8000":    "http://[::1]:8000",
		"https://10.0.0.5:443": "https://10.0.0.5:443",
	} {
		got, ok := baseFromListenURL(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"unix:/tmp/v.sock", "http://0.0.0.0", "http://0.0.0.0:0", "%zz"} {
		_, ok := baseFromListenURL(in)
		assert.False(t, ok, in)
	}
}

func FuzzEditArgs(f *testing.F) {
	f.Add("vllm serve m --gpu-memory-utilization 0.5 --port=8001", "--gpu-memory-utilization", "0.9")
	f.Add("vllm serve --enforce-eager m -tp 2", "-tp", "")
	f.Add("vllm serve m", "--max-model-len", "-x")
	f.Fuzz(func(t *testing.T, cmdline, flag, value string) {
		args := strings.Fields(cmdline)
		for _, e := range []ArgEdit{Set(flag, value), Remove(flag), Switch(flag, true), Switch(flag, false)} {
			out := EditArgs(args, e)
			if e.op == opSet && strings.HasPrefix(flag, "-") && !strings.Contains(flag, "=") && !isNumber(flag) && flag != "--" && flag != "-" {
				if got, ok := ArgValue(out, flag); !ok || got != value {
					t.Fatalf("Set(%q, %q) on %q gave %q: value %q, %v", flag, value, args, out, got, ok)
				}
			}
		}
		_ = endpointFromArgs(args)
	})
}
