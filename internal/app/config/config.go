// Package config reads vllmtop's configuration file: named endpoints and fleets, the
// Prometheus to read a fleet from, default SLOs and the theme. The file is TOML, at
// $XDG_CONFIG_HOME/vllmtop/config.toml (or ~/.config/vllmtop/config.toml) unless a path is
// given. It holds no secret: a key is named by the environment variable that holds it
// (api_key_env = "VLLM_API_KEY"), and a literal key in the file is refused. Every error names
// the file and the line.
package config

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/vllmtop/vllmtop/internal/base/sanitize"
	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/scrape/diagnose"
	"github.com/vllmtop/vllmtop/themes"
)

// Config is the file's content, checked.
type Config struct {
	// Path is the file it was read from ("" when there was none).
	Path string `toml:"-"`
	// Warning, when set, is why the default file was not read (to be said once).
	Warning string `toml:"-"`

	Theme string `toml:"theme"`
	// Interval between two scrapes of an endpoint; Window of rates and quantiles.
	Interval Duration `toml:"interval"`
	Window   Duration `toml:"window"`
	SLO      SLO      `toml:"slo"`

	// AllowKeyEnv lists variables api_key_env may name although their names do not look
	// like a key's (…_KEY, …_TOKEN).
	AllowKeyEnv []string `toml:"allow_key_env"`

	Prometheus *Prometheus `toml:"prometheus"`
	Endpoints  []Endpoint  `toml:"endpoint"`
	Fleets     []Fleet     `toml:"fleet"`
}

// SLO are the default service-level objectives: a p99 over one is a verdict.
type SLO struct {
	TTFTP99 Duration `toml:"ttft_p99"`
	ITLP99  Duration `toml:"itl_p99"`
}

// Prometheus is where a fleet is read from.
type Prometheus struct {
	URL       string   `toml:"url"`
	Selector  string   `toml:"selector"`
	APIKeyEnv string   `toml:"api_key_env"`
	Interval  Duration `toml:"interval"`
}

// Endpoint is one named server.
type Endpoint struct {
	Name      string   `toml:"name"`
	URL       string   `toml:"url"`
	APIKeyEnv string   `toml:"api_key_env"`
	Interval  Duration `toml:"interval"`
	Timeout   Duration `toml:"timeout"`
	// MaxNumSeqs is the server's --max-num-seqs, which /metrics does not say.
	MaxNumSeqs int `toml:"max_num_seqs"`
}

// Fleet is a named group: endpoints by name, or a Prometheus selector.
type Fleet struct {
	Name      string   `toml:"name"`
	Endpoints []string `toml:"endpoints"`
	Selector  string   `toml:"selector"`
}

// Duration is a TOML string such as "1s" or "250ms".
type Duration struct{ time.Duration }

// UnmarshalText reads a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. \"1s\", \"250ms\")", b)
	}
	if v < 0 {
		return fmt.Errorf("%q is negative", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes it back.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// DefaultPath is where the file is looked for: $XDG_CONFIG_HOME/vllmtop/config.toml, else
// $HOME/.config/vllmtop/config.toml ("" when neither variable is set).
func DefaultPath(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "vllmtop", "config.toml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "vllmtop", "config.toml")
	}
	return ""
}

// Load reads path, or the default path when path is empty. A missing default file is no
// configuration (an empty Config, no error); a missing explicit one is an error. A default
// file that cannot be read is no configuration either, with Warning saying why.
func Load(path string, getenv func(string) string) (*Config, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultPath(getenv)
		if path == "" {
			return &Config{}, nil
		}
	}
	data, err := readCapped(path)
	if err != nil {
		switch {
		case !explicit && errors.Is(err, os.ErrNotExist):
			return &Config{}, nil
		case !explicit:
			return &Config{Warning: "config: " + textfmt.OneLine(sanitize.Text(err.Error()), maxErrorLine) + "; going on without it"}, nil
		}
		return nil, fmt.Errorf("config: %s", textfmt.OneLine(sanitize.Text(err.Error()), maxErrorLine))
	}
	return Parse(path, data)
}

// readCapped reads a file of at most MaxFileBytes (one byte more says it is larger).
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
}

// Parse reads a file's content; name is used in messages. The text is measured first (see
// MaxFileBytes): what passes a bound is one error naming the line.
func Parse(name string, data []byte) (*Config, error) {
	if err := boundsError(name, data); err != nil {
		return nil, err
	}
	var c Config
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return nil, boundErrors([]error{decodeError(name, string(data), err)})
	}
	f := &file{name: name, data: string(data)}
	var errs []error
	seen := map[string]int{}
	for _, k := range md.Undecoded() {
		n := seen[k.String()]
		seen[k.String()]++
		last := k[len(k)-1]
		if secretKey(last) {
			errs = append(errs, f.errorf(k, n, "%s holds a secret in the file; keep it in an environment variable and name that, e.g. %s_env = \"VLLM_API_KEY\"", last, envName(last)))
			continue
		}
		errs = append(errs, f.errorf(k, n, "unknown key %q", k.String()))
	}
	errs = append(errs, c.check(f)...)
	if err := boundErrors(errs); err != nil {
		return nil, err
	}
	c.Path = name
	return &c, nil
}

// secretKey reports whether a key's name says it holds a secret itself.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	if strings.HasSuffix(k, "_env") {
		return false
	}
	for _, s := range []string{"key", "token", "secret", "password", "authorization"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

func envName(k string) string {
	if strings.Contains(strings.ToLower(k), "key") {
		return "api_key"
	}
	return k
}

func decodeError(name, data string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		data = strings.TrimPrefix(data, "\uFEFF") // the parser's offsets leave a byte-order mark out
		line, col := pe.Position.Line, pe.Position.Col
		if st := pe.Position.Start; st > 0 && st <= len(data) {
			// From the byte offset: the parser counts a line's closing newline, often what it
			// did not expect ("[slo" unclosed), as the next line's.
			line = strings.Count(data[:st], "\n") + 1
			col = st - strings.LastIndex(data[:st], "\n")
		}
		msg := strings.ReplaceAll(pe.Message, `'\x00'`, "the end of the file") // how the lexer words EOF
		if pe.LastKey != "" && !strings.Contains(msg, pe.LastKey) {
			msg = pe.LastKey + ": " + msg
		}
		if col > 0 {
			return fmt.Errorf("%s:%d:%d: %s", name, line, col, msg)
		}
		return fmt.Errorf("%s:%d: %s", name, line, msg)
	}
	msg := strings.TrimPrefix(err.Error(), "toml: ")
	if m := lineAndKey.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: %s: %s", name, m[1], m[2], msg[len(m[0]):])
	}
	return fmt.Errorf("%s: %s", name, msg)
}

// lineAndKey is how toml words a type mismatch: `line 4 (last key "a.b"): ...`.
var lineAndKey = regexp.MustCompile(`^line (\d+) \(last key "([^"]*)"\): `)

// MinInterval is the floor of every interval and timeout in the file, as of the dashboard's
// --metrics-interval: "1ns" made 21 scrapes a second.
const MinInterval = 100 * time.Millisecond

// checkDurations refuses intervals and timeouts under MinInterval (0 is the default).
func (c *Config) checkDurations(f *file) []error {
	var errs []error
	floor := func(key toml.Key, nth int, d Duration) {
		if d.Duration > 0 && d.Duration < MinInterval {
			errs = append(errs, f.errorf(key, nth, "%s %s is under the %s floor", strings.Join(key, "."), d.Duration, MinInterval))
		}
	}
	floor(toml.Key{"interval"}, 0, c.Interval)
	floor(toml.Key{"window"}, 0, c.Window)
	if c.Prometheus != nil {
		floor(toml.Key{"prometheus", "interval"}, 0, c.Prometheus.Interval)
	}
	for i, e := range c.Endpoints {
		floor(toml.Key{"endpoint", "interval"}, i, e.Interval)
		floor(toml.Key{"endpoint", "timeout"}, i, e.Timeout)
	}
	return errs
}

func (c *Config) check(f *file) []error {
	errs := c.checkDurations(f)
	if c.Theme != "" {
		if _, ok := themes.ByName(c.Theme); !ok {
			errs = append(errs, f.errorf(toml.Key{"theme"}, 0, "theme %q is not one of %s", c.Theme, strings.Join(themes.Names(), ", ")))
		}
	}
	if c.Prometheus != nil {
		if err := checkURL(c.Prometheus.URL); err != nil {
			errs = append(errs, f.errorf(toml.Key{"prometheus", "url"}, 0, "prometheus url: %v", err))
		}
		if s := strings.TrimSpace(c.Prometheus.Selector); s != "" && !(strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}")) {
			errs = append(errs, f.errorf(toml.Key{"prometheus", "selector"}, 0, "selector %q: want label matchers in braces, e.g. {job=\"vllm\"}", s))
		}
		if err := keyEnvError(c.Prometheus.APIKeyEnv, c.AllowKeyEnv); err != nil {
			errs = append(errs, f.errorf(toml.Key{"prometheus", "api_key_env"}, 0, "prometheus: %v", err))
		}
	}
	names := map[string]bool{}
	for i, e := range c.Endpoints {
		switch {
		case strings.TrimSpace(e.Name) == "":
			errs = append(errs, f.errorf(toml.Key{"endpoint"}, i, "endpoint %d has no name", i+1))
		case names[e.Name]:
			errs = append(errs, f.errorf(toml.Key{"endpoint", "name"}, i, "endpoint %q is named twice", e.Name))
		}
		names[e.Name] = true
		if err := checkURL(e.URL); err != nil {
			errs = append(errs, f.errorf(toml.Key{"endpoint", "url"}, i, "endpoint %q url: %v", e.Name, err))
		}
		if err := keyEnvError(e.APIKeyEnv, c.AllowKeyEnv); err != nil {
			errs = append(errs, f.errorf(toml.Key{"endpoint", "api_key_env"}, i, "endpoint %q: %v", e.Name, err))
		}
		if e.MaxNumSeqs < 0 {
			errs = append(errs, f.errorf(toml.Key{"endpoint", "max_num_seqs"}, i, "endpoint %q: max_num_seqs must be positive", e.Name))
		}
	}
	fleets := map[string]bool{}
	for i, fl := range c.Fleets {
		if strings.TrimSpace(fl.Name) == "" || fleets[fl.Name] {
			errs = append(errs, f.errorf(toml.Key{"fleet"}, i, "fleet %d needs a name of its own", i+1))
		}
		fleets[fl.Name] = true
		switch {
		case len(fl.Endpoints) == 0 && fl.Selector == "":
			errs = append(errs, f.errorf(toml.Key{"fleet"}, i, "fleet %q names no endpoints and no selector", fl.Name))
		case len(fl.Endpoints) > 0 && fl.Selector != "":
			errs = append(errs, f.errorf(toml.Key{"fleet", "selector"}, i, "fleet %q has both endpoints and a selector; give one", fl.Name))
		case fl.Selector != "" && c.Prometheus == nil:
			errs = append(errs, f.errorf(toml.Key{"fleet", "selector"}, i, "fleet %q has a selector but the file has no [prometheus] url", fl.Name))
		}
		for _, n := range fl.Endpoints {
			if !names[n] {
				errs = append(errs, f.errorf(toml.Key{"fleet", "endpoints"}, i, "fleet %q names endpoint %q, which no [[endpoint]] defines", fl.Name, n))
			}
		}
	}
	return errs
}

func checkURL(raw string) error {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return errors.New("missing")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("scheme %q: want http or https", u.Scheme)
	case u.Host == "":
		return errors.New("no host")
	case u.User != nil:
		return errors.New("user info in the URL is a secret in the file; use api_key_env")
	}
	return nil
}

// APIKey reads the key an api_key_env names (Parse checked the name against the file's
// allow_key_env). An empty name is no key; a name whose variable is unset or empty is an error
// that names the variable (never a value), and what is no variable's name is not repeated.
func APIKey(env string, getenv func(string) string) (string, error) {
	if env == "" {
		return "", nil
	}
	if !envNameRE.MatchString(env) {
		return "", errNotAName
	}
	if v := getenv(env); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("environment variable %s (api_key_env) is not set", env)
}

// Thresholds are the verdicts' thresholds with the file's SLOs.
func (c *Config) Thresholds() diagnose.Thresholds {
	th := diagnose.DefaultThresholds()
	th.TTFTP99, th.ITLP99 = c.SLO.TTFTP99.Duration, c.SLO.ITLP99.Duration
	return th
}

// Endpoint finds an endpoint by name.
func (c *Config) Endpoint(name string) (Endpoint, bool) {
	for _, e := range c.Endpoints {
		if e.Name == name {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Fleet finds a fleet by name.
func (c *Config) Fleet(name string) (Fleet, bool) {
	for _, f := range c.Fleets {
		if f.Name == name {
			return f, true
		}
	}
	return Fleet{}, false
}

// FleetEndpoints are the endpoints a fleet names, in its order.
func (c *Config) FleetEndpoints(f Fleet) []Endpoint {
	out := make([]Endpoint, 0, len(f.Endpoints))
	for _, n := range f.Endpoints {
		if e, ok := c.Endpoint(n); ok {
			out = append(out, e)
		}
	}
	return out
}
