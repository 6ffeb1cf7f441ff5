package dashcli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/internal/app/recorder"
	"github.com/vllmtop/vllmtop/loadgen"
)

func parseWithEnv(env map[string]string, args ...string) (*Dashboard, error) {
	return parseGetenv(func(k string) string { return env[k] }, args...)
}

func TestFleetSources(t *testing.T) {
	noConfig := map[string]string{}
	o, err := parseWithEnv(noConfig, "--attach", "http://a:8000", "http://b:8000", "http://c:8000")
	require.NoError(t, err)
	assert.True(t, o.fleetMode(), "several URLs are a fleet")
	assert.Len(t, o.fl.endpoints, 3)

	o, err = parseWithEnv(noConfig, "--attach", "http://a:8000")
	require.NoError(t, err)
	assert.False(t, o.fleetMode(), "one URL is today's attach")
	assert.Equal(t, "http://a:8000", o.attach)

	dir := t.TempDir()
	list := filepath.Join(dir, "fleet.txt")
	require.NoError(t, os.WriteFile(list, []byte("# the pool\nhttp://a:8000\n\nhttp://b:8000 # the second\n"), 0o600))
	o, err = parseWithEnv(noConfig, "--attach-file", list)
	require.NoError(t, err)
	assert.Len(t, o.fl.endpoints, 2)

	require.NoError(t, os.WriteFile(list, []byte("http://a:8000\nhttp://b:8000 extra\n"), 0o600))
	_, err = parseWithEnv(noConfig, "--attach-file", list)
	require.ErrorContains(t, err, "fleet.txt:2")

	o, err = parseWithEnv(noConfig, "--prometheus", "http://prom:9090", "--selector", `{job="vllm"}`)
	require.NoError(t, err)
	assert.True(t, o.fleetMode())
	_, err = parseWithEnv(noConfig, "--prometheus", "http://prom:9090", "--attach", "http://a", "http://b")
	assert.Error(t, err, "one source")
	_, err = parseWithEnv(noConfig, "--canary", "5s")
	assert.ErrorContains(t, err, "attach mode")

	// A URL or selector that can never work is a usage error (exit 2), before the terminal; a
	// fleet's endpoints may be host:port, as the config's examples are.
	_, err = parseWithEnv(noConfig, "--attach", "ftp://x")
	assert.ErrorContains(t, err, "want an http(s)://host:port URL")
	assert.True(t, errors.As(err, new(*cliflag.UsageError)))
	_, err = parseWithEnv(noConfig, "--attach", "http://a:8000", "gopher://b")
	assert.ErrorContains(t, err, "scheme must be http or https")
	assert.True(t, errors.As(err, new(*cliflag.UsageError)))
	bare := filepath.Join(dir, "bare.txt")
	require.NoError(t, os.WriteFile(bare, []byte("gpu-1:8000\n10.0.0.6:8000\n"), 0o600))
	o, err = parseWithEnv(noConfig, "--attach-file", bare)
	require.NoError(t, err)
	assert.Len(t, o.fl.endpoints, 2)
	_, err = parseWithEnv(noConfig, "--prometheus", "http://prom:9090", "--selector", "garbage{")
	assert.ErrorContains(t, err, "--selector: ")
	assert.True(t, errors.As(err, new(*cliflag.UsageError)))
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vllmtop", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(`theme = "light"
[slo]
ttft_p99 = "500ms"
[[endpoint]]
name = "a"
url = "http://a:8000"
api_key_env = "A_KEY"
[[endpoint]]
name = "b"
url = "http://b:8000"
[[fleet]]
name = "prod"
endpoints = ["a", "b"]
`), 0o600))
	env := map[string]string{"XDG_CONFIG_HOME": dir, "A_KEY": "sekrit"}
	o, err := parseWithEnv(env, "--fleet", "prod")
	require.NoError(t, err, "the default path is read when present")
	require.Len(t, o.fl.endpoints, 2)
	assert.Equal(t, "sekrit", o.fl.endpoints[0].APIKey, "the key comes from the variable the file names")
	assert.Equal(t, "light", o.deps.Theme)
	require.NotNil(t, o.deps.Thresholds)
	assert.Equal(t, "500ms", o.deps.Thresholds.TTFTP99.String())

	_, err = parseWithEnv(map[string]string{"XDG_CONFIG_HOME": dir}, "--fleet", "prod")
	assert.ErrorContains(t, err, "A_KEY", "an unset variable is named, never a value")
	_, err = parseWithEnv(env, "--fleet", "staging")
	assert.ErrorContains(t, err, "staging")

	bad := filepath.Join(dir, "bad.toml")
	require.NoError(t, os.WriteFile(bad, []byte("theme = \"dark\"\n[[endpoint]]\nname = \"x\"\nurl = 5\n"), 0o600))
	_, err = parseWithEnv(env, "--config", bad, "--attach", "http://a")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.toml")
	assert.Contains(t, err.Error(), "4")
	assert.NotContains(t, err.Error(), "\n", "one line")
}

func TestBundleWriterWritesTheRingAndScrubsKeys(t *testing.T) {
	o, err := parseWithEnv(map[string]string{}, "--attach", "http://a:8000", "http://b:8000", "--record-dir", t.TempDir(), "--api-key", "sekrit-key")
	require.NoError(t, err)
	require.NoError(t, o.buildFleet())
	body := []byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3\n")
	now := time.Now()
	o.fl.ring.Add("a:8000", now.Add(-10*time.Second), body)
	o.fl.ring.Add("a:8000", now, body)
	path, err := o.deps.Recorder.Record(nil)
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(path), "the status line shows a path to copy")
	b, err := recorder.Read(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"a:8000"}, b.Endpoints())
	for _, v := range b.Settings {
		assert.NotContains(t, v, "sekrit-key")
	}
}

func TestBundleWriterRecordsTheClientResults(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"hi\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	o, err := parseWithEnv(map[string]string{}, "--attach", srv.URL, "--record-dir", t.TempDir(), "--model", "m",
		"--max-concurrency", "1", "--random-input-len", "4", "--random-output-len", "1")
	require.NoError(t, err)
	seen := make(chan loadgen.Result, 64)
	o.loadCfg.Sinks = []func(loadgen.Result){func(r loadgen.Result) {
		select {
		case seen <- r:
		default:
		}
	}}
	require.NoError(t, o.Build(nil, func(string, ...any) {}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.load.Run(ctx, func(context.Context) error { return nil }) }()
	o.load.Resume()
	// One request at a time: once the second result is seen, the first has reached every sink.
	<-seen
	<-seen
	cancel()
	<-done
	path, err := o.deps.Recorder.Record(nil)
	require.NoError(t, err)
	b, err := recorder.Read(path)
	require.NoError(t, err)
	require.NotEmpty(t, b.Results, "client/results.jsonl holds the load's results")
	assert.Equal(t, 1, b.Results[0].OutputTokens)
}
