package server

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/server/sim"
)

func TestGPUMemoryUtilization(t *testing.T) {
	assert.Equal(t, sim.DefaultGPUMemoryUtilization, DefaultGPUMemoryUtilization, "the simulator follows vLLM's default")
	for _, c := range []struct {
		args []string
		want float64
	}{
		{[]string{"vllm", "serve", "m"}, 0}, // the release's default, which the server reports
		{[]string{"vllm", "serve", "m", "--gpu-memory-utilization", "0.8"}, 0.8},
		{[]string{"vllm", "serve", "m", "--gpu_memory_utilization=0.75"}, 0.75},
		{[]string{"vllm", "serve", "m", "--gpu-memory-utilization", "lots"}, 0},
	} {
		assert.Equal(t, c.want, GPUMemoryUtilization(c.args), "%v", c.args)
	}
	assert.Equal(t, Set("--gpu-memory-utilization", "0.85"), SetGPUMemoryUtilization(0.85))
	assert.Equal(t, []string{"vllm", "serve", "m", "--gpu-memory-utilization", "0.90"},
		EditArgs([]string{"vllm", "serve", "m", "--gpu-memory-utilization=0.92"}, SetGPUMemoryUtilization(0.9)))
}

func TestBaseURLRedactKeysModelArg(t *testing.T) {
	assert.Equal(t, "http://127.0.0.1:9000", BaseURL([]string{"vllm", "serve", "m", "--host", "0.0.0.0", "--port", "9000"}))
	assert.Equal(t, "http://127.0.0.1:8000", BaseURL([]string{"vllm", "serve", "m"}))
	assert.Equal(t, "http://10.0.0.7:8001", BaseURL([]string{"vllm", "serve", "m", "--host", "10.0.0.7", "--port=8001"}))

	got := RedactKeys([]string{"vllm", "serve", "m", "--api-key", "sk-secret", "--api-key=sk-other", "--port", "8000"})
	assert.Equal(t, []string{"vllm", "serve", "m", "--api-key", "***", "--api-key=***", "--port", "8000"}, got)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"vllm", "serve", "Qwen/Qwen3-0.6B", "--port", "8000"}, "Qwen/Qwen3-0.6B"},
		{[]string{"vllmtop", "sim", "--port", "8000", "--model", "m1"}, "m1"},
		{[]string{"vllmtop", "sim", "--port", "8000", "m2"}, "m2"},
		{[]string{"vllm", "serve"}, ""},
		{[]string{"python", "server.py"}, ""},
		{[]string{"vllm", "serve", "--port", "8000"}, ""},
		{[]string{"/opt/venv/bin/vllm", "serve", "--dtype", "half", "Qwen/Qwen3-0.6B"}, "Qwen/Qwen3-0.6B"},
		{[]string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m3", "--port", "1"}, "m3"},
		{[]string{"python3.12", "-u", "-m", "vllm.entrypoints.openai.api_server", "--port", "1"}, "" /* vLLM's default */},
		// Not a server vllmtop knows: no guess at its model.
		{[]string{"sleep", "1000"}, ""},
		{[]string{"python", "-m", "http.server", "9000"}, ""},
		{[]string{"./serve.sh", "serve", "m"}, ""},
	} {
		assert.Equal(t, c.want, ModelArg(c.args), "%v", c.args)
	}
}

func TestKnownCommand(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, args := range [][]string{
		{"vllm", "serve", "m"},
		{"/usr/local/bin/vllm", "serve"},
		{"python", "-m", "vllm.entrypoints.openai.api_server"},
		{"/usr/bin/python3.11", "-O", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"},
		{"python3", "-mvllm.entrypoints.openai.api_server"},
		{"vllmtop", "sim", "m"},
		{exe, "sim"},
	} {
		assert.True(t, KnownCommand(args), "%v", args)
	}
	for _, args := range [][]string{
		{"sleep", "1000"}, {"vllm"}, {"vllm", "bench", "serve"}, {"python", "server.py", "-m", "vllm.entrypoints.openai.api_server"},
		{"pythonista", "-m", "vllm.entrypoints.openai.api_server"}, {"python", "-m", "vllm.entrypoints.api_server"}, {"other", "sim"}, {},
	} {
		assert.False(t, KnownCommand(args), "%v", args)
	}
}

func TestOnLoopbackAndAPIKey(t *testing.T) {
	got, err := OnLoopback([]string{"vllm", "serve", "m"})
	require.NoError(t, err)
	require.Len(t, got, 7)
	assert.Equal(t, []string{"vllm", "serve", "m", "--port"}, got[:4])
	assert.Equal(t, []string{"--host", "127.0.0.1"}, got[5:])
	assert.NotEqual(t, "0", got[4])
	mine := []string{"vllm", "serve", "m", "--port", "9000", "--host=0.0.0.0"}
	got, err = OnLoopback(mine)
	require.NoError(t, err)
	assert.Equal(t, mine, got, "what the command says stands")
	other := []string{"sleep", "1000"}
	got, err = OnLoopback(other)
	require.NoError(t, err)
	assert.Equal(t, other, got, "a command vllmtop does not know gets no flags it may refuse")
	assert.Equal(t, "http://127.0.0.1:8000", BaseURL(got), "and is looked for on vLLM's port")

	o := defaultOptions()
	assert.Nil(t, o.environ(), "by default the child inherits our environment")
	WithEnv([]string{"A=1", "VLLM_API_KEY=old"})(&o)
	WithAPIKey("new")(&o)
	assert.Equal(t, []string{"A=1", "VLLM_API_KEY=new"}, o.environ())
	WithAPIKey("")(&o)
	assert.Equal(t, []string{"A=1"}, o.environ(), "no key: the child asks for none")
}

// Classify on command lines as people write them: the kind, where the program is and where
// its own arguments begin.
func TestClassify(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, c := range []struct {
		args       []string
		kind       Kind
		prog, rest int
	}{
		{[]string{"vllmtop", "sim", "Qwen/Qwen2.5-0.5B-Instruct", "--sim-gpu", "L4"}, KindSim, 0, 2},
		{[]string{"/path/to/vllmtop", "sim"}, KindSim, 0, 2},
		{[]string{"./vllmtop", "sim", "--port", "8001"}, KindSim, 0, 2},
		{[]string{exe, "sim", "m"}, KindSim, 0, 2},
		{[]string{"vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-num-seqs", "64"}, KindVLLMServe, 0, 2},
		{[]string{"/opt/venv/bin/vllm", "serve"}, KindVLLMServe, 0, 2},
		{[]string{"python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"}, KindAPIServer, 0, 3},
		{[]string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, KindAPIServer, 0, 3},
		{[]string{"/usr/bin/python3.12", "-u", "-O", "-m", "vllm.entrypoints.openai.api_server", "--port", "1"}, KindAPIServer, 0, 5},
		{[]string{"python3", "-mvllm.entrypoints.openai.api_server", "--model", "m"}, KindAPIServer, 0, 2},
		{[]string{"env", "CUDA_VISIBLE_DEVICES=0", "vllm", "serve", "m"}, KindVLLMServe, 2, 4},
		{[]string{"/usr/bin/env", "-i", "FOO=1", "BAR=2", "vllmtop", "sim"}, KindSim, 4, 6},
		{[]string{"env", "-u", "HTTP_PROXY", "--unset=NO_PROXY", "python3", "-m", "vllm.entrypoints.openai.api_server"}, KindAPIServer, 4, 7},
		{[]string{"env", "--", "vllm", "serve"}, KindVLLMServe, 2, 4},
		// Not a server vllmtop knows.
		{[]string{"vllmtop"}, KindOther, 0, 0},
		{[]string{"vllmtop", "bench", "--sim"}, KindOther, 0, 0},
		{[]string{"vllm", "bench", "serve"}, KindOther, 0, 0},
		{[]string{"vllm"}, KindOther, 0, 0},
		{[]string{"other", "sim"}, KindOther, 0, 0},
		{[]string{"python", "server.py", "-m", "vllm.entrypoints.openai.api_server"}, KindOther, 0, 0},
		{[]string{"python", "-m", "vllm.entrypoints.api_server"}, KindOther, 0, 0},
		{[]string{"pythonista", "-m", "vllm.entrypoints.openai.api_server"}, KindOther, 0, 0},
		{[]string{"./serve.sh", "serve", "m"}, KindOther, 0, 0},
		{[]string{"sleep", "1000"}, KindOther, 0, 0},
		{[]string{"env", "-S", "vllm serve m"}, KindOther, 0, 0}, // env splits the string itself
		{[]string{"env", "FOO=1"}, KindOther, 0, 0},
		{[]string{"env", "FOO=1", "sleep", "1"}, KindOther, 0, 0},
		{nil, KindOther, 0, 0},
	} {
		got := Classify(c.args)
		assert.Equal(t, Command{Kind: c.kind, Prog: c.prog, Args: c.rest}, got, "%q", c.args)
		assert.Equal(t, c.kind != KindOther, KnownCommand(c.args), "%q", c.args)
		assert.Equal(t, c.kind == KindVLLMServe || c.kind == KindAPIServer, got.VLLM(), "%q", c.args)
	}
	assert.Equal(t, "m", ModelArg([]string{"env", "A=1", "vllm", "serve", "m", "--port", "1"}), "the model after an env wrapper")
	got, err := OnLoopback([]string{"env", "A=1", "vllm", "serve", "m"})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", must(ArgValue(got, "--host")), "a wrapped server binds loopback too")
}

func must(v string, ok bool) string {
	if !ok {
		return "<none>"
	}
	return v
}

// TakeAPIKey moves one key off a known server's command line; anything else stays as given.
func TestTakeAPIKey(t *testing.T) {
	rest, key, ok := TakeAPIKey([]string{"vllmtop", "sim", "--api-key", "s3cret", "--port", "1"})
	assert.True(t, ok)
	assert.Equal(t, "s3cret", key)
	assert.Equal(t, []string{"vllmtop", "sim", "--port", "1"}, rest)
	rest, key, ok = TakeAPIKey([]string{"vllm", "serve", "m", "--api-key=k2"})
	assert.True(t, ok)
	assert.Equal(t, "k2", key)
	assert.Equal(t, []string{"vllm", "serve", "m"}, rest)
	for _, args := range [][]string{
		{"vllm", "serve", "m"},
		{"vllm", "serve", "m", "--api-key", "a", "--api-key", "b"},
		{"vllmtop", "sim", "--api-key", "a,b"},
		{"vllm", "serve", "m", "--api-key"},
		{"./serve.sh", "--api-key", "k"}, // not a command vllmtop edits
	} {
		rest, key, ok := TakeAPIKey(args)
		assert.False(t, ok, "%q", args)
		assert.Empty(t, key)
		assert.Equal(t, args, rest)
	}
}
