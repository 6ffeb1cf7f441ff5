package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// envNameRE is the form of an environment variable's name as shells write them.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// keyLike are the endings of the names of variables that hold an API key: a name that
// ends otherwise (HOME, AWS_ACCESS_KEY_ID) is not read for one unless allow_key_env lists it.
var keyLike = []string{"_KEY", "_TOKEN", "_APIKEY", "_API_KEY", "_BEARER", "_AUTH"}

// foreignCredential are the prefixes of other services' credentials, which end like keys
// (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN) but must never be sent to a server as its token.
var foreignCredential = []string{"AWS_", "AZURE_", "GOOGLE_", "GCP_", "GCLOUD_", "GITHUB_", "GH_", "GITLAB_", "NPM_",
	"DOCKER_", "KUBE", "VAULT_", "SSH_", "HF_", "HUGGING", "CI_", "ACTIONS_", "SLACK_", "STRIPE_"}

// errNotAName is api_key_env set to something that is no variable's name: most likely the key
// itself, pasted in the wrong place. The value is never repeated.
var errNotAName = errors.New("api_key_env must name an environment variable, and this is not a name (a key pasted in? keep the key in a variable and name that, e.g. api_key_env = \"VLLM_API_KEY\")")

// keyEnvError says why api_key_env may not name env ("" is no key, and fine). allowed are the
// file's allow_key_env names, accepted whatever they look like.
func keyEnvError(env string, allowed []string) error {
	switch {
	case env == "" || slices.Contains(allowed, env):
		return nil
	case !envNameRE.MatchString(env) || len(env) > 128:
		return errNotAName
	}
	up := strings.ToUpper(env)
	shown := fmt.Sprintf("api_key_env %q", env)
	if !strings.Contains(env, "_") {
		shown = "this api_key_env" // an underscore-less word may be a key itself: not repeated
	}
	for _, p := range foreignCredential {
		if strings.HasPrefix(up, p) {
			return fmt.Errorf("%s names another service's credential, which is not sent to a server; list it in allow_key_env to send it anyway", shown)
		}
	}
	for _, s := range keyLike {
		if strings.HasSuffix(up, s) || up == s[1:] {
			return nil
		}
	}
	return fmt.Errorf("%s does not look like a key's variable (…_KEY, …_TOKEN, …_API_KEY); list it in allow_key_env to use it", shown)
}
