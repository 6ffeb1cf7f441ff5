package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseTheExample(t *testing.T) {
	c, err := Load("testdata/config.toml", env(nil))
	require.NoError(t, err)
	assert.Equal(t, "testdata/config.toml", c.Path)
	assert.Equal(t, "colorblind", c.Theme)
	assert.Equal(t, 2*time.Second, c.Interval.Duration)
	assert.Equal(t, 500*time.Millisecond, c.SLO.TTFTP99.Duration)
	assert.Equal(t, 50*time.Millisecond, c.SLO.ITLP99.Duration)
	require.NotNil(t, c.Prometheus)
	assert.Equal(t, `{job="vllm", env="prod"}`, c.Prometheus.Selector)
	assert.Equal(t, "PROM_TOKEN", c.Prometheus.APIKeyEnv)
	require.Len(t, c.Endpoints, 2)
	assert.Equal(t, Endpoint{Name: "a100-1", URL: "http://10.0.0.5:8000", APIKeyEnv: "VLLM_API_KEY", MaxNumSeqs: 256}, c.Endpoints[0])
	assert.Equal(t, 3*time.Second, c.Endpoints[1].Timeout.Duration)
	lab, ok := c.Fleet("lab")
	require.True(t, ok)
	assert.Equal(t, []string{"a100-1", "a100-2"}, []string{c.FleetEndpoints(lab)[0].Name, c.FleetEndpoints(lab)[1].Name})
	th := c.Thresholds()
	assert.Equal(t, 500*time.Millisecond, th.TTFTP99)
	assert.Equal(t, 0.9, th.KVBound, "the rest are the defaults")
	prod, _ := c.Fleet("prod")
	assert.Equal(t, `{job="vllm", env="prod"}`, prod.Selector)

	key, err := APIKey(c.Endpoints[0].APIKeyEnv, env(map[string]string{"VLLM_API_KEY": "sk-1"}))
	require.NoError(t, err)
	assert.Equal(t, "sk-1", key)
	_, err = APIKey("VLLM_API_KEY", env(nil))
	assert.EqualError(t, err, "environment variable VLLM_API_KEY (api_key_env) is not set")
	key, err = APIKey("", env(nil))
	assert.NoError(t, err)
	assert.Empty(t, key)
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"syntax", "theme = \"dark\"\ninterval = 1s\n", "c.toml:2:"},
		{"bad duration", "interval = \"soon\"\n", `c.toml:1:13: interval: `},
		{"unclosed table on its own line", "[slo\n\n\nx = 1\n", "c.toml:1:5: expected '.' or ']' to end table name"},
		{"unclosed table after a key", "theme = \"dark\"\n[slo\n\nx = 1\n", "c.toml:2:5: expected '.' or ']'"},
		{"a byte-order mark is not a column", "\xEF\xBB\xBFtheme = \"dark\"\n= 3\n", "c.toml:2:1:"},
		{"a table left open at the end", "theme = \"dark\"\n[slo", "got the end of the file"},
		{"value missing at the line's end", "theme = \n", "c.toml:1:9: theme: expected value"},
		{"bad duration says why", "interval = \"soon\"\n", `"soon" is not a duration`},
		{"wrong type", "[[endpoint]]\nname = \"a\"\nurl = \"h:1\"\nmax_num_seqs = \"many\"\n", "c.toml:4: endpoint.max_num_seqs: incompatible types"},
		{"unknown key", "theme = \"dark\"\nintervall = \"1s\"\n", `c.toml:2: unknown key "intervall"`},
		{"unknown key in a table", "[[endpoint]]\nname = \"a\"\nurl = \"h:1\"\n\n[[endpoint]]\nname = \"b\"\nurll = \"h:2\"\n", `c.toml:7: unknown key "endpoint.urll"`},
		{"literal key", "[[endpoint]]\nname = \"a\"\nurl = \"h:1\"\napi_key = \"sk-secret\"\n", "c.toml:4: api_key holds a secret in the file; keep it in an environment variable and name that, e.g. api_key_env = \"VLLM_API_KEY\""},
		{"literal token", "[prometheus]\nurl = \"p:9090\"\nbearer_token = \"x\"\n", "c.toml:3: bearer_token holds a secret"},
		{"user info", "[[endpoint]]\nname = \"a\"\nurl = \"http://u:pw@h:1\"\n", "c.toml:3: endpoint \"a\" url: user info in the URL is a secret in the file"},
		{"theme", "theme = \"neon\"\n", `c.toml:1: theme "neon" is not one of dark, colorblind, high-contrast, light`},
		{"no name", "[[endpoint]]\nurl = \"h:1\"\n", "c.toml:1: endpoint 1 has no name"},
		{"duplicate", "[[endpoint]]\nname = \"a\"\nurl = \"h:1\"\n[[endpoint]]\nname = \"a\"\nurl = \"h:2\"\n", `c.toml:5: endpoint "a" is named twice`},
		{"bad url", "[[endpoint]]\nname = \"a\"\nurl = \"ftp://h\"\n", `c.toml:3: endpoint "a" url: scheme "ftp": want http or https`},
		{"fleet of nothing", "[[fleet]]\nname = \"f\"\n", `c.toml:1: fleet "f" names no endpoints and no selector`},
		{"fleet of strangers", "[[fleet]]\nname = \"f\"\nendpoints = [\"x\"]\n", `c.toml:3: fleet "f" names endpoint "x", which no [[endpoint]] defines`},
		{"selector without prometheus", "[[fleet]]\nname = \"f\"\nselector = '{job=\"v\"}'\n", "has a selector but the file has no [prometheus] url"},
		{"bad selector", "[prometheus]\nurl = \"p:9090\"\nselector = 'job=\"v\"'\n", `c.toml:3: selector "job=\"v\""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("c.toml", []byte(c.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "sk-secret", "a secret is never repeated")
		})
	}
}

func TestManyErrorsAtOnce(t *testing.T) {
	_, err := Parse("c.toml", []byte("theme = \"neon\"\nfoo = 1\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `c.toml:2: unknown key "foo"`)
	assert.Contains(t, err.Error(), `c.toml:1: theme "neon"`)
}

func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	assert.Equal(t, filepath.Join(dir, "vllmtop", "config.toml"), DefaultPath(env(map[string]string{"XDG_CONFIG_HOME": dir, "HOME": "/home/x"})))
	assert.Equal(t, "/home/x/.config/vllmtop/config.toml", DefaultPath(env(map[string]string{"HOME": "/home/x"})))
	assert.Equal(t, "/home/x/.config/vllmtop/config.toml", DefaultPath(env(map[string]string{"XDG_CONFIG_HOME": "relative", "HOME": "/home/x"})), "XDG paths must be absolute")

	c, err := Load("", env(map[string]string{"XDG_CONFIG_HOME": dir}))
	require.NoError(t, err, "no default file: no configuration")
	assert.Empty(t, c.Path)
	_, err = Load(filepath.Join(dir, "nope.toml"), env(nil))
	assert.ErrorContains(t, err, "no such file", "an explicit path must exist")

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "vllmtop"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vllmtop", "config.toml"), []byte("theme = \"light\"\n"), 0o600))
	c, err = Load("", env(map[string]string{"XDG_CONFIG_HOME": dir}))
	require.NoError(t, err)
	assert.Equal(t, "light", c.Theme)
}

func FuzzParse(f *testing.F) {
	b, _ := os.ReadFile("testdata/config.toml")
	f.Add(b)
	f.Add([]byte("[[endpoint]]\napi_key = 'x'\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Parse("f.toml", data) // never panics
	})
}
