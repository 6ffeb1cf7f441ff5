package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// api_key_env names only variables that look like a key's, or those allow_key_env lists; a
// key pasted into it is refused without being repeated.
func TestAPIKeyEnvNames(t *testing.T) {
	const pasted = "sk-proj-Abc123DEF456ghi789"
	for _, c := range []struct {
		name, toml, want string // want "" : accepted
	}{
		{"a vLLM key", `api_key_env = "VLLM_API_KEY"`, ""},
		{"a token", `api_key_env = "PROM_TOKEN"`, ""},
		{"lower case", `api_key_env = "my_key"`, ""},
		{"AWS secret", `api_key_env = "AWS_SECRET_ACCESS_KEY"`, `api_key_env "AWS_SECRET_ACCESS_KEY" names another service's credential`},
		{"GitHub token", `api_key_env = "GITHUB_TOKEN"`, "another service's credential"},
		{"not a key's name", `api_key_env = "HOME_DIR"`, `api_key_env "HOME_DIR" does not look like a key's variable`},
		{"an ID, not a key", `api_key_env = "AWS_ACCESS_KEY_ID"`, "another service's credential"},
		{"a pasted key", `api_key_env = "` + pasted + `"`, "this is not a name (a key pasted in?"},
		{"a pasted upper-case key", `api_key_env = "AKIAIOSFODNN7EXAMPLE"`, "this api_key_env does not look like a key's variable"},
		{"listed", "allow_key_env = [\"CORP_CREDENTIAL\"]\n[prometheus]\nurl = \"p:9090\"\napi_key_env = \"CORP_CREDENTIAL\"", ""},
		{"listed foreign", "allow_key_env = [\"GITHUB_TOKEN\"]\n[prometheus]\nurl = \"p:9090\"\napi_key_env = \"GITHUB_TOKEN\"", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := c.toml
			if text[0] == 'a' && text[1] == 'p' {
				text = "[prometheus]\nurl = \"p:9090\"\n" + text + "\n[[endpoint]]\nname = \"e\"\nurl = \"h:1\"\n" + text + "\n"
			}
			_, err := Parse("c.toml", []byte(text))
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, 2, "one line each")
			assert.True(t, strings.HasPrefix(lines[0], "c.toml:3: prometheus: "), lines[0])
			assert.True(t, strings.HasPrefix(lines[1], `c.toml:7: endpoint "e": `), lines[1])
			assert.Contains(t, lines[0], c.want)
			assert.Contains(t, lines[1], c.want)
			assert.NotContains(t, err.Error(), pasted)
			assert.NotContains(t, err.Error(), "AKIAIOSFODNN7EXAMPLE")
		})
	}
	_, err := APIKey(pasted, env(map[string]string{}))
	assert.ErrorContains(t, err, "not a name")
	assert.NotContains(t, err.Error(), pasted)
}
