package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileDir holds crafted config files.
var hostileDir = filepath.Join("..", "..", "..", "testdata", "hostile", "config")

// Every crafted file is refused cheaply with one line (or, for many errors, a bounded few)
// that names the file and the line, with no control byte and no pasted key.
func TestHostileConfigFiles(t *testing.T) {
	for _, c := range []struct {
		file, want string
		lines      int // lines of the error (1 unless many)
	}{
		{"deep-dotted-key.toml", ":1: a key of more than 16 dotted parts", 1},
		{"deep-table-header.toml", ":1: a key of more than 16 dotted parts", 1},
		{"deep-inline-table.toml", ":1: arrays and inline tables nested more than 16 deep", 1},
		{"deep-array.toml", ":1: arrays and inline tables nested more than 16 deep", 1},
		{"long-string.toml", ":1: a string longer than 16 KiB", 1},
		{"long-literal-string.toml", ":166: a string longer than 16 KiB", 1},
		{"long-unknown-key.toml", `:1: unknown key "kkkk`, 1}, // cut to one line
		{"many-keys.toml", ":10001: more than 10000 keys", 1},
		{"many-unknown-keys.toml", `:1: unknown key "unknown_0"`, maxErrorLines + 1},
		{"escapes-in-value.toml", `:1: theme "\x1b]0;pwned\a\x1b[2Jneon" is not one of`, 1},
		{"interval-1ns.toml", ":1: interval 1ns is under the 100ms floor", 1},
		{"key-pasted.toml", ":3: prometheus: api_key_env must name an environment variable, and this is not a name", 1},
		{"aws-secret.toml", `:3: prometheus: api_key_env "AWS_SECRET_ACCESS_KEY" names another service's credential`, 1},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(hostileDir, c.file)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Load(path, env(nil))
			runtime.ReadMemStats(&after)
			require.Error(t, err)
			msg := err.Error()
			lines := strings.Split(msg, "\n")
			require.Len(t, lines, c.lines, "%.2000s", msg)
			assert.True(t, strings.HasPrefix(lines[0], path+":"), lines[0])
			assert.Contains(t, msg, c.want)
			for _, l := range lines {
				assert.LessOrEqual(t, len(l), maxErrorLine+len("…"))
				assert.NotContains(t, l, "\x1b")
			}
			assert.NotContains(t, msg, "sk-proj")
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "bounded work before refusing")
		})
	}
}

// The same checks hold for what the fuzzer finds: seed it with the corpus.
func FuzzParseHostile(f *testing.F) {
	entries, _ := os.ReadDir(hostileDir)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(hostileDir, e.Name())); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("f.toml", data)
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				if len(l) > maxErrorLine+len("…") {
					t.Fatalf("an error line of %d bytes", len(l))
				}
			}
		}
	})
}

// A file over the size cap is refused before it is read whole.
func TestConfigTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.toml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("# padding\n", MaxFileBytes/10+1)), 0o600))
	_, err := Load(path, env(nil))
	assert.EqualError(t, err, path+": larger than 1024 KiB; a config file is a few dozen lines")
}

// An unreadable default file is warned about and skipped; an unreadable explicit one is an
// error; a missing default one is nothing.
func TestUnreadableDefaultConfig(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "vllmtop", "config.toml"), 0o700)) // a directory: unreadable as a file
	c, err := Load("", env(map[string]string{"XDG_CONFIG_HOME": dir}))
	require.NoError(t, err)
	assert.Contains(t, c.Warning, "config: "+filepath.Join(dir, "vllmtop", "config.toml")+" is not a regular file; going on without it")
	assert.Empty(t, c.Path)
	_, err = Load(filepath.Join(dir, "vllmtop", "config.toml"), env(nil))
	assert.ErrorContains(t, err, "is not a regular file")
	c, err = Load("", env(map[string]string{"XDG_CONFIG_HOME": t.TempDir()}))
	require.NoError(t, err)
	assert.Empty(t, c.Warning)
}
